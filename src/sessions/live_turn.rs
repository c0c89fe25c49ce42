//! The running turn's process as its session holds it: what the turn's
//! effects act on, until the turn is gone.

use std::process::ChildStdout;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use room_machines::session::TurnSeq;

use crate::sessions::turn_input::TurnInput;
use crate::supervise::Tree;

/// The turn a harness process serves now: the one it was spawned for,
/// then each warm follow-up it is handed (`ContinueTurn`). The threads that
/// follow the process read it as they report, so what they feed names the
/// turn the process runs.
#[derive(Debug, Clone)]
pub struct TurnNow(Arc<AtomicU64>);

impl TurnNow {
    /// A process spawned for turn `seq`.
    pub fn new(seq: TurnSeq) -> TurnNow {
        TurnNow(Arc::new(AtomicU64::new(seq)))
    }

    /// The turn it serves now.
    pub fn get(&self) -> TurnSeq {
        self.0.load(Ordering::SeqCst)
    }

    /// It serves turn `seq` from now on.
    pub fn set(&self, seq: TurnSeq) {
        self.0.store(seq, Ordering::SeqCst)
    }
}

/// The running turn's process, as the session holds it.
#[derive(Debug)]
pub struct LiveTurn {
    /// The turn.
    pub seq: TurnSeq,
    /// The same, for the threads that follow the process.
    pub(crate) now: TurnNow,
    /// Its tree, for signals.
    pub(crate) tree: Tree,
    /// Its stdin's writer.
    pub(crate) input: TurnInput,
    /// Its stdout, until the reader starts.
    pub(crate) stdout: Option<ChildStdout>,
    /// Its prompt as its stdin gets it, until it is handed over.
    pub(crate) prompt: Option<Vec<u8>>,
    /// The stdout reader, once started; the exit watcher waits for it.
    pub(crate) reader: Option<JoinHandle<()>>,
}
