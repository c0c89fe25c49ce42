//! Which turn a harness process serves now, shared by the threads that
//! follow the process.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use room_machines::session::TurnSeq;

/// The turn a harness process serves now: the one it was spawned for,
/// then each warm follow-up it is handed (`ContinueTurn`). The threads that
/// follow the process read it as they report, so what they feed names the
/// turn the process runs.
#[derive(Debug, Clone)]
pub(crate) struct TurnNow(Arc<AtomicU64>);

impl TurnNow {
    /// A process spawned for turn `seq`.
    pub(crate) fn new(seq: TurnSeq) -> TurnNow {
        TurnNow(Arc::new(AtomicU64::new(seq)))
    }

    /// The turn it serves now.
    pub(crate) fn get(&self) -> TurnSeq {
        self.0.load(Ordering::SeqCst)
    }

    /// It serves turn `seq` from now on.
    pub(crate) fn set(&self, seq: TurnSeq) {
        self.0.store(seq, Ordering::SeqCst)
    }
}
