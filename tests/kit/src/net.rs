//! Loopback ports.

/// A free loopback port (bound, then let go), for a server whose address
/// must be known before it starts.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
