//! room-core's own events about a session, for its journal
//! (`<state_dir>/events/<id>.jsonl`, docs/architecture.md, "Event journals"). The runtime
//! adds the sequence number and the Unix-ms time; the event gives the line's
//! `kind` and `data`:
//!
//! ```json
//! {"seq": 7, "at_ms": 1796221684526, "kind": "turn_ended",
//!  "data": {"turn": 2, "prompt": 3, "exit": {"code": 0}, "by": null,
//!           "usage": null}}
//! ```
//!
//! Durations are in ms; the machine's own clock never appears in an event.
//! A [`Failure`] is journalled in words: the runtime says it with the
//! harness's name (`{"message": …}` for `error`, `"error": …` for
//! `prompt_failed`).

use serde::{Deserialize, Serialize};

use super::approval::{ApprovalId, DecidedBy, Decision};
use super::attachment::Attachment;
use super::budget::Budget;
use super::failure::Failure;
use super::record::Shown;
use super::usage::Usage;
use super::values::{EndWhy, PromptId, TurnSeq};
use super::values::{Exit, RelaunchMode};
use crate::launch::{WaitEnd, WaitOn};
use crate::time::Millis;

/// One of room-core's events about a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "data", rename_all = "snake_case")]
pub enum Event {
    /// The state shown to the app changed (the first event of a session, and
    /// after a restore when it differs from the record's).
    State {
        /// The new state.
        state: Shown,
    },
    /// The launch holds for the project copy.
    CopyWaitBegan {
        /// What holds it: a missing mark or `copying`.
        on: WaitOn,
        /// The longest it waits, from the launch's beginning.
        limit_ms: Millis,
    },
    /// The copy wait is over.
    CopyWaitEnded {
        /// Why: landed, a failed copy (with its reason), the limit, …
        why: WaitEnd,
        /// How long it lasted.
        waited_ms: Millis,
    },
    /// A prompt was accepted and queued.
    PromptQueued {
        /// Its number.
        prompt: PromptId,
        /// Its text, cut to fit a journal line when it is longer
        /// ([`PROMPT_TEXT_MAX`](super::PROMPT_TEXT_MAX)); empty in journals
        /// written before events carried it.
        #[serde(default)]
        text: String,
        /// The text was cut.
        #[serde(default)]
        text_truncated: bool,
        /// The images it carries (their kind, size and sha256, not their
        /// bytes).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<Attachment>,
    },
    /// A prompt was handed to the running turn (`deliver: steer`).
    PromptSteered {
        /// Its number.
        prompt: PromptId,
        /// The turn that got it.
        turn: TurnSeq,
        /// Its text, cut as `PromptQueued`'s is.
        text: String,
        /// The text was cut.
        text_truncated: bool,
    },
    /// A turn got its prompt.
    TurnStarted {
        /// The turn.
        turn: TurnSeq,
        /// Its prompt.
        prompt: PromptId,
        /// The native session it resumes.
        resume: Option<String>,
        /// The model it runs, when the start chose one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// The session was forked from session `parent` after its turn
    /// `after_turn`: its conversation goes on from there.
    Forked {
        /// The session it was forked from.
        parent: String,
        /// The last of that session's turns it holds.
        after_turn: TurnSeq,
    },
    /// The harness named its session.
    NativeId {
        /// The turn whose first event said so.
        turn: TurnSeq,
        /// The harness's session ID.
        native_id: String,
    },
    /// A turn is over.
    TurnEnded {
        /// The turn.
        turn: TurnSeq,
        /// Its prompt.
        prompt: PromptId,
        /// How its process ended; null for a restored turn the restore killed.
        exit: Option<Exit>,
        /// Who ended it on purpose; null when it ended by itself.
        by: Option<EndWhy>,
        /// What its harness reported it used; null when it reported nothing
        /// (or only a running total whose start is unknown).
        #[serde(default)]
        usage: Option<Usage>,
    },
    /// A prompt went back to the head of the queue: its turn never reached
    /// the point where it could have run it (never delivered, or the harness
    /// never reported in).
    PromptRequeued {
        /// The prompt.
        prompt: PromptId,
        /// The turn it had.
        turn: TurnSeq,
    },
    /// A turn showed no sign of life within the startup timeout of getting
    /// its prompt: its process is ended, and its prompt runs once more in a
    /// new process that resumes the session (`retried`), or, the second
    /// time, fails.
    Unresponsive {
        /// The turn.
        turn: TurnSeq,
        /// Its prompt.
        prompt: PromptId,
        /// The startup timeout.
        within_ms: Millis,
        /// The prompt runs again; else it fails.
        retried: bool,
    },
    /// A prompt cannot be run; the queue moves on without it.
    PromptFailed {
        /// The prompt.
        prompt: PromptId,
        /// Why.
        failure: Failure,
    },
    /// The app stopped the session.
    Stopped,
    /// The app interrupted a turn.
    Interrupted {
        /// The turn.
        turn: TurnSeq,
    },
    /// The app resumed the queue.
    Resumed,
    /// The app closed the session.
    Closed,
    /// The app relaunched the session.
    Relaunched {
        /// How.
        mode: RelaunchMode,
    },
    /// The service is stopping.
    ServiceStopped,
    /// A turn's harness asks before it runs a tool.
    ApprovalRequested {
        /// The request's number (`POST …/approvals/{approval}` answers it).
        approval: ApprovalId,
        /// The turn.
        turn: TurnSeq,
        /// The tool.
        tool: String,
        /// Its input as the harness gave it (JSON text).
        input: String,
        /// Why the harness asks, when it says.
        reason: Option<String>,
    },
    /// A request was answered (or its turn was gone first).
    ApprovalResolved {
        /// The request.
        approval: ApprovalId,
        /// The turn.
        turn: TurnSeq,
        /// The answer.
        decision: Decision,
        /// Who decided.
        by: DecidedBy,
        /// The app's message, if it gave one.
        message: Option<String>,
    },
    /// The app set the session's budget.
    BudgetSet {
        /// The new budget.
        budget: Budget,
    },
    /// What the session used reached its budget: the running turn is
    /// interrupted, and nothing more runs until the app raises it.
    BudgetSpent {
        /// What it used.
        used: Usage,
        /// Its budget.
        budget: Budget,
    },
    /// Something went wrong; the session's `error` says the same.
    Error {
        /// Why.
        failure: Failure,
    },
}
