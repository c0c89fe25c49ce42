//! The persisted core of a session record: its one state enum ([`Stage`]),
//! its prompt queue, the pause, the current turn and what the turns used. The runtime writes
//! this (flattened into its session record, beside the start request) every
//! time the machine emits `Persist`, and hands it back to
//! [`Session::restore`](super::Session::restore) after a restart.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::approval::{Approval, ApprovalId};
use super::budget::Budget;
use super::choice::ModelChoice;
use super::failure::{read_error, Failure};
use super::usage::Usage;

pub use super::phase::{Phase, Run, Turn};
pub use super::prompt::{NewPrompt, Prompt, Text};
pub use super::values::{Cut, EndWhy, Process, PromptId, TurnSeq};

/// Where a session is in its life: the one state enum, persisted.
///
/// What the app sees ([`Shown`]) follows from it, from whether a launch is
/// live and from whether a turn exists; nothing else says whether the
/// session has started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The start has not started its harness yet: the first launch (copy
    /// wait, permit, first turn until the harness names its session). A
    /// restart begins the launch again, with a new wait.
    Starting,
    /// The harness has started at least once; later turns resume it. A
    /// restart never waits again.
    Started,
    /// Closed by the app: nothing starts, ever.
    Closed,
    /// A launch failed (`error` says why); a relaunch may bring it back.
    Failed,
}

/// The state shown to the app (`state` in the session view).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shown {
    /// A launch is in progress: the copy wait, the permit, the first turn
    /// until the harness names its session; also a relaunch.
    Pending,
    /// Started and a turn exists.
    Running,
    /// Started and no turn.
    Idle,
    /// Closed by the app.
    Closed,
    /// A launch failed.
    Failed,
}

/// The persisted part of a session: the core of its record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Where the session is in its life.
    pub stage: Stage,
    /// What its turns may use in all.
    #[serde(default, skip_serializing_if = "Budget::is_unlimited")]
    pub budget: Budget,
    /// The harness's own session ID, once a turn's first event named it.
    #[serde(default)]
    pub native_id: Option<String>,
    /// Prompts not run yet, oldest first.
    #[serde(default)]
    pub queue: VecDeque<Prompt>,
    /// Stop paused the queue; resume unpauses it.
    #[serde(default)]
    pub paused: bool,
    /// The current turn: at most one, ever.
    #[serde(default)]
    pub turn: Option<Turn>,
    /// Why the session failed, why its last turn failed, or what happened
    /// to a cut turn.
    #[serde(default, deserialize_with = "read_error")]
    pub error: Option<Failure>,
    /// The number the next accepted prompt gets.
    #[serde(default = "one")]
    pub next_prompt: PromptId,
    /// The number the next turn gets.
    #[serde(default = "one")]
    pub next_turn: TurnSeq,
    /// Approval requests of the current turn that wait for the app.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_approvals: Vec<Approval>,
    /// The number the next approval request gets.
    #[serde(default = "one")]
    pub next_approval: ApprovalId,
    /// What the session's ended turns used, added up.
    #[serde(default, skip_serializing_if = "Usage::is_none")]
    pub usage: Usage,
    /// The native session's running total as its harness last reported it
    /// (codex reports a total, not a turn's figures): what the next total
    /// is measured from. Zero when a turn names a new native session; none
    /// while unknown (a session recorded before totals were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_total: Option<Usage>,
    /// The prompt that runs again because the turn it was handed to showed
    /// no sign of life in time: a second such turn fails it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrying: Option<PromptId>,
    /// The model and effort messages chose, in force from the turn that
    /// ran each (over the start's, [`Options::choice`]).
    ///
    /// [`Options::choice`]: super::Options::choice
    #[serde(default, skip_serializing_if = "ModelChoice::is_empty")]
    pub chosen: ModelChoice,
    /// Where a rewind cut the conversation, until a turn has run from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<Cut>,
}

fn one() -> u64 {
    1
}

impl Record {
    /// A new start's record: not started, nothing queued yet.
    pub fn new() -> Record {
        Record {
            stage: Stage::Starting,
            budget: Budget::default(),
            native_id: None,
            queue: VecDeque::new(),
            paused: false,
            turn: None,
            error: None,
            next_prompt: 1,
            next_turn: 1,
            pending_approvals: Vec::new(),
            next_approval: 1,
            usage: Usage::default(),
            native_total: None,
            retrying: None,
            chosen: ModelChoice::default(),
            cut: None,
        }
    }
}

impl Record {
    /// The record as its session knows it, from the record as it was last
    /// written and the prompt log's prompts: every logged prompt accepted
    /// after the write (numbered from its `next_prompt` on) waits in the
    /// queue, in its place; the others are already in the record or gone.
    pub fn with_logged(mut self, logged: impl IntoIterator<Item = Prompt>) -> Record {
        let written = self.next_prompt;
        for prompt in logged {
            if prompt.id < written || self.queue.iter().any(|p| p.id == prompt.id) {
                continue;
            }
            self.next_prompt = self.next_prompt.max(prompt.id + 1);
            let at = self.queue.partition_point(|p| p.id < prompt.id);
            self.queue.insert(at, prompt);
        }
        self
    }
}

impl Default for Record {
    fn default() -> Self {
        Record::new()
    }
}
