//! What the routes share: the front end's handles ([`Front`]) and what a
//! JSON route's answer needs ([`Ctx`]).

use std::sync::Arc;

use tokio::sync::{watch, Semaphore};

use super::limits::MAX_STREAMS;
use crate::runtime::Runtime;

/// What every request needs.
pub(crate) struct Front {
    /// The sessions.
    pub runtime: Arc<Runtime>,
    /// The bearer token.
    pub token: String,
    /// Becomes `true` when the service stops (streams end then).
    pub stop: watch::Receiver<bool>,
    /// Places for event streams (`MAX_STREAMS`).
    pub streams: Arc<Semaphore>,
    /// Places for bodies over `MAX_BODY` (`LARGE_BODIES`).
    pub large_bodies: Arc<Semaphore>,
}

impl Front {
    /// Event streams open now.
    pub(crate) fn streams_open(&self) -> usize {
        MAX_STREAMS.saturating_sub(self.streams.available_permits())
    }
}

/// What a JSON route's answer needs besides the runtime.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    /// The sessions.
    pub rt: &'a Runtime,
    /// Event streams open now (for health and metrics).
    pub streams_open: usize,
}
