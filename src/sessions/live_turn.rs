//! The running turn's process as its session holds it: what the turn's
//! effects act on, until the turn is gone.

use std::sync::Arc;

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
    /// Its output's work, held until the prompt is handed over
    /// (`DeliverPrompt` marks it [`Held::handing_over`] before it says the
    /// prompt, and releases it once the turn's start is journalled).
    pub(crate) held: Option<Arc<dyn Held>>,
    /// Its prompt and the images it carries, until it is handed over.
    pub(crate) prompt: Option<(String, Vec<room_machines::session::Attachment>)>,
    /// A file written for the process (claude's MCP config), removed with
    /// it.
    pub(crate) file: Option<TurnFile>,
}

/// A turn's output work while it is held: the turn's work queue
/// (`harness_io::turn_work::TurnWork`), named by what the prompt's
/// hand-over does with it, so the session holds it without naming the
/// poller's types.
pub(crate) trait Held: Send + Sync {
    /// The prompt is about to be said: the harness may answer it, and
    /// exit, before the release, which must follow.
    fn handing_over(&self);
    /// The prompt is handed over: the worker may go.
    fn release(&self);
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
