//! What an approval request is, who answers it and how: the values the
//! session's inputs, effects, events and record share.

use serde::{Deserialize, Serialize};

use super::values::{EndWhy, TurnSeq};
use crate::time::Millis;

/// `approval_timeout_ms`: how long a request waits for the app.
pub const APPROVAL_TIMEOUT: Millis = 10 * 60 * 1000;

/// The most requests one session holds pending; more are denied at once.
pub const MAX_PENDING: usize = 64;

/// An approval's number in its session: 1, 2, 3 …
pub type ApprovalId = u64;

/// Who answers the harness's approval requests (the session's `approvals`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// The configured permission modes decide; what they leave to ask about
    /// is denied.
    #[default]
    Auto,
    /// The app decides each request.
    App,
}

/// An answer to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run the tool this once.
    Allow,
    /// Do not run it.
    Deny,
    /// Run it, and the same tool again in this session without asking.
    AllowForSession,
}

/// Who or what decided a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// The app.
    App,
    /// The session's permission modes (`approvals: auto`).
    Modes,
    /// Nobody answered within the approval timeout.
    Timeout,
    /// The session held `MAX_PENDING` requests already.
    TooMany,
    /// The turn was being ended, and why.
    TurnEnding(EndWhy),
    /// The turn's process was gone: nothing is answered.
    TurnGone,
}

/// A request the app has not answered yet (persisted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// Its number in the session.
    pub id: ApprovalId,
    /// The turn whose harness asked.
    pub turn: TurnSeq,
    /// The harness's own name for the request, echoed in the answer.
    pub harness_ref: String,
    /// The tool.
    pub tool: String,
    /// Its input as the harness gave it (JSON text).
    pub input: String,
    /// Why the harness asks, when it says.
    pub reason: Option<String>,
    /// When it is denied if the app has not answered.
    pub until: Millis,
}

/// What a harness's approval request says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The harness's own name for the request, echoed in the answer.
    pub harness_ref: String,
    /// The tool.
    pub tool: String,
    /// Its input as the harness gave it (JSON text).
    pub input: String,
    /// Why the harness asks, when it says.
    pub reason: Option<String>,
}
