//! sd_notify: tells a service manager (systemd's `Type=notify`) that the
//! service is ready or stopping, by one datagram to `$NOTIFY_SOCKET`. Without
//! that variable it does nothing, so the service runs the same outside
//! systemd. A failed notification is logged, never fatal.

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};

/// The variable systemd sets for a `Type=notify` service.
pub(crate) const NOTIFY_SOCKET: &str = "NOTIFY_SOCKET";

/// Sends `state` (e.g. `READY=1`) to `$NOTIFY_SOCKET`, if set.
pub(crate) fn notify(state: &str) {
    let Some(path) = std::env::var_os(NOTIFY_SOCKET).filter(|p| !p.is_empty()) else {
        return;
    };
    if let Err(e) = send(&path.to_string_lossy(), state) {
        log::warn!("cannot notify the service manager ({state}): {e}");
    }
}

/// Sends `state` to the socket at `path`; a leading `@` names an abstract
/// socket, as systemd writes it.
pub(crate) fn send(path: &str, state: &str) -> std::io::Result<()> {
    let addr = match path.strip_prefix('@') {
        Some(name) => SocketAddr::from_abstract_name(name.as_bytes())?,
        None => SocketAddr::from_pathname(path)?,
    };
    let socket = UnixDatagram::unbound()?;
    socket.send_to_addr(state.as_bytes(), &addr)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_reaches_a_path_and_an_abstract_socket() {
        let dir = std::env::temp_dir().join(format!("rc-notify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify.sock");
        let server = UnixDatagram::bind(&path).unwrap();
        send(path.to_str().unwrap(), "READY=1").unwrap();
        let mut buf = [0u8; 64];
        let n = server.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");

        let name = format!("rc-notify-test-{}", std::process::id());
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let server = UnixDatagram::bind_addr(&addr).unwrap();
        send(&format!("@{name}"), "STOPPING=1").unwrap();
        let n = server.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"STOPPING=1");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
