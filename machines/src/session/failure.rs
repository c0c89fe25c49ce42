//! Why a session, a launch or a prompt failed, and what became of a cut
//! turn: the machine's reasons, as data. The runtime words them for the
//! app (the session's `error`, the journal's `error` and `prompt_failed`
//! events), since only it knows the harness's name and the app's language.

use serde::{Deserialize, Deserializer, Serialize};

use super::values::{Exit, JournalCap};
use super::values::{PromptId, TurnSeq};
use crate::time::Millis;

/// The most of a harness's own words on why its turn failed that are
/// kept (JSON-escaped bytes): as much as the end of its stderr.
pub const FAILURE_TEXT_MAX: usize = 4096;

/// Why something failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// A launch's first turn did not name its session within the startup
    /// timeout; its prompt stays queued for a relaunch.
    NotStarted {
        /// The startup timeout.
        within_ms: Millis,
    },
    /// A launch's first turn could not be spawned; its prompt stays queued
    /// for a relaunch.
    NotSpawned {
        /// Why, from the spawn.
        reason: String,
    },
    /// A launch's harness exited with a failure before it read its prompt;
    /// its prompt stays queued for a relaunch.
    ExitedBeforePrompt {
        /// How it exited.
        exit: Exit,
        /// The end of its stderr.
        detail: String,
    },
    /// A launch's first turn could not get its prompt; it stays queued for
    /// a relaunch.
    LaunchPromptUndelivered {
        /// The prompt.
        prompt: PromptId,
        /// Why, when the delivery said.
        error: Option<String>,
    },
    /// A launch's harness exited with a failure before it named its session.
    ExitedBeforeNamed {
        /// How it exited.
        exit: Exit,
        /// The end of its stderr.
        detail: String,
    },
    /// A later turn's prompt could not be handed over; the queue is paused
    /// with it first.
    PromptUndelivered {
        /// The prompt.
        prompt: PromptId,
        /// Why.
        error: String,
    },
    /// A later turn could not be spawned; its prompt is dropped.
    PromptNotRun {
        /// The prompt.
        prompt: PromptId,
        /// Why, from the spawn.
        reason: String,
    },
    /// An interrupt came before the prompt reached the harness; the prompt
    /// is dropped.
    InterruptedBeforeDelivery {
        /// The prompt.
        prompt: PromptId,
    },
    /// A turn was cut by a service stop, or by the service ending without
    /// stopping it.
    Cut {
        /// The turn.
        turn: TurnSeq,
        /// Its prompt.
        prompt: PromptId,
        /// What cut it.
        by: CutBy,
        /// The harness had reported in: the prompt is not run again (else
        /// it is queued again).
        reported: bool,
    },
    /// Two turns in a row showed no sign of life within the startup
    /// timeout of getting the same prompt; the prompt is dropped.
    Unresponsive {
        /// The second turn.
        turn: TurnSeq,
        /// The prompt.
        prompt: PromptId,
        /// The startup timeout.
        within_ms: Millis,
    },
    /// The last turn's harness said it failed, and why.
    HarnessSaidFailed {
        /// Its words, cut to `FAILURE_TEXT_MAX`.
        why: String,
    },
    /// The last turn exited with a failure.
    TurnFailed {
        /// How it exited.
        exit: Exit,
        /// The end of its stderr.
        detail: String,
    },
    /// The session's journal is full: the turn's further output was dropped
    /// and the turn ended.
    JournalFull {
        /// The cap it met.
        cap: JournalCap,
        /// The turn.
        turn: TurnSeq,
        /// It was a launch's first turn (the launch failed); else the queue
        /// is paused.
        launch: bool,
    },
    /// A turn resumed one native session and its harness named another:
    /// it could not carry the conversation on (an ACP agent that can
    /// neither load nor resume a session begins a new one). The turn goes
    /// on in the new session.
    NotCarriedOver {
        /// The turn.
        turn: TurnSeq,
        /// The session it resumed.
        resumed: String,
        /// The session its harness began.
        began: String,
    },
    /// Text an earlier room-core recorded before its reasons were data.
    Recorded(String),
}

/// What cut a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CutBy {
    /// A service stop.
    ServiceStop,
    /// The service ended without stopping it (kill -9, a crash).
    ServiceEnd,
}

/// Reads a record's `error`: a failure, or the text an earlier room-core
/// wrote there.
pub(super) fn read_error<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Failure>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Stored {
        Failure(Failure),
        Text(String),
    }
    Ok(
        Option::<Stored>::deserialize(d)?.map(|stored| match stored {
            Stored::Failure(f) => f,
            Stored::Text(text) => Failure::Recorded(text),
        }),
    )
}
