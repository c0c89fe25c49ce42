//! The running turn's process as its session holds it: what the turn's
//! effects act on, until the turn is gone.

use room_machines::session::TurnSeq;

use crate::agent::turn_files::TurnFile;
use crate::runtime::harness_io::stdin::TurnInput;
use crate::sessions::turn_now::TurnNow;
use crate::supervise::Tree;

/// The running turn's process, as the session holds it.
pub(crate) struct LiveTurn {
    /// The turn.
    pub seq: TurnSeq,
    /// The process, as the poller names it.
    pub(crate) id: u64,
    /// The same, for the poller's and the worker's reports.
    pub(crate) now: TurnNow,
    /// Its tree, for signals.
    pub(crate) tree: Tree,
    /// Its stdin.
    pub(crate) input: TurnInput,
    /// Lets its output's work go, once the prompt is handed over (the
    /// queue is held until then).
    pub(crate) release: Option<Box<dyn FnOnce() + Send>>,
    /// Its prompt and the images it carries, until it is handed over.
    pub(crate) prompt: Option<(String, Vec<room_machines::session::Attachment>)>,
    /// A file written for the process (claude's MCP config), removed with
    /// it.
    pub(crate) file: Option<TurnFile>,
}

impl std::fmt::Debug for LiveTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveTurn")
            .field("seq", &self.seq)
            .field("tree", &self.tree)
            .field("input", &self.input)
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}
