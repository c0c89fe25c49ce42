//! The agent socket for room-cli (Unix socket, SO_PEERCRED).
