//! What a rewind and a fork ask for, as the API parsed them: plain data,
//! apart from the runtime that carries them out, so the API and the
//! runtime both name them without naming each other.

use std::path::PathBuf;

use room_machines::session::{ApprovalMode, TurnSeq};

use crate::harness::options::Effort;

/// What a rewind is asked to do.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rewind {
    /// The turn to go back to.
    pub to_turn: TurnSeq,
    /// Put the folder back.
    pub files: bool,
    /// Cut the harness's conversation after the turn.
    pub conversation: bool,
    /// Only say what it would do.
    pub dry_run: bool,
}

/// What a fork asks for.
#[derive(Debug, Clone)]
pub(crate) struct Fork {
    /// The parent's last turn the fork holds.
    pub at_turn: TurnSeq,
    /// The new session's folder (absent or empty).
    pub folder: PathBuf,
    /// Its workspace.
    pub workspace: String,
    /// Its first message, if any.
    pub prompt: Option<String>,
    /// Over the parent's model, if chosen.
    pub model: Option<String>,
    /// Over the parent's effort, if chosen.
    pub effort: Option<Effort>,
    /// Over the parent's approvals, if chosen.
    pub approvals: Option<ApprovalMode>,
    /// Its budget in USD, over the parent's, if chosen.
    pub max_cost_usd: Option<f64>,
    /// Its budget in tokens, over the parent's, if chosen.
    pub max_tokens: Option<u64>,
}
