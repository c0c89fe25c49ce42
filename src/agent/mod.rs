//! The agent socket for room-cli (Unix socket, SO_PEERCRED).

use crate::service::Shared;

/// The running agent socket.
pub struct Server;

/// Starts the agent socket.
pub fn start(_shared: &Shared) -> std::io::Result<Server> {
    Ok(Server)
}

impl Server {
    /// Stops accepting and removes the socket file.
    pub fn stop(self) {}
}
