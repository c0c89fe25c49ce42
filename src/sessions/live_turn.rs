//! The running turn's process as its session holds it: what the turn's
//! effects act on, until the turn is gone.

use std::sync::Arc;

use room_machines::session::TurnSeq;

use crate::runtime::harness_io::{TurnInput, TurnWork};
use crate::sessions::turn_now::TurnNow;
use crate::supervise::Tree;

/// The running turn's process, as the session holds it.
#[derive(Debug)]
pub(crate) struct LiveTurn {
    /// The turn.
    pub seq: TurnSeq,
    /// The same, for the poller's and the worker's reports.
    pub(crate) now: TurnNow,
    /// Its tree, for signals.
    pub(crate) tree: Tree,
    /// Its stdin.
    pub(crate) input: TurnInput,
    /// Its work queue, held until the prompt is handed over.
    pub(crate) work: Arc<TurnWork>,
    /// Its prompt, until it is handed over.
    pub(crate) prompt: Option<String>,
}
