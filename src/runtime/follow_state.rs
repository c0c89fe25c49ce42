//! What the read side shares with the rest of the runtime: every
//! session's journal, and whether the service is starting, ready or
//! stopping.

use std::sync::atomic::AtomicU8;

use crate::journal::Journals;

/// The journals and the service's readiness.
#[derive(Debug)]
pub(super) struct Follow {
    /// Every session's journal, shared by its writers and readers.
    pub journals: Journals,
    /// Starting, [`READY`] or [`STOPPING`].
    pub(super) phase: AtomicU8,
}

/// `Follow::phase`: both sockets serve.
pub(super) const READY: u8 = 1;
/// `Follow::phase`: the stop has begun.
pub(super) const STOPPING: u8 = 2;

impl Follow {
    /// The journals of `state_dir`, each with `caps`; not ready.
    pub(super) fn new(state_dir: &std::path::Path, caps: crate::journal::Caps) -> Follow {
        Follow {
            journals: Journals::new(state_dir, caps),
            phase: AtomicU8::new(0),
        }
    }
}
