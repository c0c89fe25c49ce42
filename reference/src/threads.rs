//! Threads the website started (session ID → sandbox, project, owner,
//! agent), so a thread's room-cli calls (`"session": id`) are scoped, and
//! the launches already made per scope, so a retried `launch` with the same
//! `request_id` starts nothing new.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use room_core::harness::Harness;

/// One thread: `<state_dir>/threads/<session id>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thread {
    /// Core's session ID.
    pub id: String,
    /// Its owner.
    pub owner: String,
    /// Its project.
    pub project: String,
    /// The sandbox whose Core runs it.
    pub sandbox: String,
    /// Its agent.
    pub agent: Harness,
    /// The loop whose run or script started it, if one did.
    #[serde(default)]
    pub started_by_loop: Option<String>,
    /// The launch's `request_id`, if it came from a launch.
    #[serde(default)]
    pub request_id: Option<String>,
    /// Unix ms the website recorded it (after Core accepted the start).
    pub created_ms: u64,
}

impl Thread {
    /// What the website answers about a thread.
    pub fn view(&self) -> Value {
        json!({
            "id": self.id,
            "owner": self.owner,
            "project": self.project,
            "sandbox": self.sandbox,
            "agent": self.agent,
            "loop": self.started_by_loop,
            "request_id": self.request_id,
            "created_ms": self.created_ms,
        })
    }
}

/// How many launches per scope are remembered (oldest forgotten first): the
/// idempotency window of a scope's `request_id`s.
pub const LAUNCHES_KEPT: usize = 500;

/// The launches made for one scope (a loop, or a thread):
/// `<state_dir>/launches/<scope id>.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launches {
    /// `(request_id, session id)`, oldest first.
    pub made: Vec<(String, String)>,
}

impl Launches {
    /// The session an earlier launch with `request_id` started.
    pub fn find(&self, request_id: &str) -> Option<&str> {
        self.made
            .iter()
            .find(|(r, _)| r == request_id)
            .map(|(_, s)| s.as_str())
    }

    /// Remembers a launch, forgetting the oldest beyond [`LAUNCHES_KEPT`].
    pub fn add(&mut self, request_id: &str, session: &str) {
        self.made
            .push((request_id.to_string(), session.to_string()));
        if self.made.len() > LAUNCHES_KEPT {
            let extra = self.made.len() - LAUNCHES_KEPT;
            self.made.drain(..extra);
        }
    }
}
