//! The HTTP API for the app (tiny_http).

use crate::service::Shared;

/// The running HTTP API and the sessions behind it.
pub struct Server;

/// Starts the HTTP API.
pub fn start(_shared: &Shared) -> std::io::Result<Server> {
    Ok(Server)
}

impl Server {
    /// Stops serving; waiting starts stay persisted and wait again next run.
    pub fn stop(self) {}
}
