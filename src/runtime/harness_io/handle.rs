//! The way to the poller: what it is asked to do, and its wake-up.

use std::sync::Arc;

use crossbeam_channel::Sender;
use nix::sys::eventfd::EventFd;

use crate::supervise::Ended;

/// What the poller is asked to do.
pub(crate) enum Command {
    /// Lines wait for room in process `id`'s stdin.
    Write(u64),
    /// Process `id`'s worker caught up: read its stdout again.
    Resume(u64),
    /// The watcher's first look at process `id`'s tree, once it exited,
    /// found these pids running.
    LeftBehind(u64, Vec<u32>),
    /// The session gave process `id`'s tree up (`AbandonTree`).
    GiveUp(u64),
    /// Nothing of process `id`'s tree is left, or it was given up.
    TreeGone(u64, Ended),
    /// The runtime is gone.
    Stop,
}

/// The way to the poller: its commands and its wake-up; cheap to clone.
#[derive(Clone)]
pub(crate) struct IoHandle {
    pub(super) tx: Sender<Command>,
    pub(super) wake: Arc<EventFd>,
}

impl IoHandle {
    /// Sends `command` and wakes the poller; false if it is gone.
    pub(super) fn send(&self, command: Command) -> bool {
        self.tx.send(command).is_ok() && self.wake.write(1).is_ok()
    }
}
