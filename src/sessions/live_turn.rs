//! The running turn's process as its session holds it: what the turn's
//! effects act on, until the turn is gone.

use std::process::ChildStdout;
use std::thread::JoinHandle;

use room_machines::session::TurnSeq;

use super::turn_input::TurnInput;
use super::turn_now::TurnNow;
use crate::supervise::Tree;

/// The running turn's process, as the session holds it.
#[derive(Debug)]
pub(crate) struct LiveTurn {
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
    /// Its prompt, until it is handed over.
    pub(crate) prompt: Option<String>,
    /// The stdout reader, once started; the exit watcher waits for it.
    pub(crate) reader: Option<JoinHandle<()>>,
}
