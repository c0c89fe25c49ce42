//! Sessions: the persisted record, the in-memory session around it (launch
//! machine, running turn) and the registry that finds them by ID, request ID
//! and workspace.

pub mod view;

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use room_machines::{Launch, Millis};
use serde::{Deserialize, Serialize};

use crate::harness::Harness;

/// What kind of session the app started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A top-level thread.
    Thread,
    /// A side chat in its parent's folder.
    SideChat,
    /// A child thread (own sandbox unless `shared_sandbox`).
    Child,
}

/// A session's state on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// The launch has not started the harness yet (this includes the copy wait).
    Pending,
    /// A turn is in progress.
    Running,
    /// Started, no turn running.
    Idle,
    /// Closed by the app.
    Closed,
    /// The harness could not be started.
    Failed,
}

/// What a start asked for: the body of `POST /v1/sessions`, and the part of
/// a session's record a retry is compared against.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Start {
    /// The app's workspace ID.
    pub workspace: String,
    /// The folder the harness runs in (absolute).
    pub folder: PathBuf,
    /// Which harness.
    pub harness: Harness,
    /// Which kind of session (`thread` when not given).
    #[serde(default = "thread")]
    pub kind: Kind,
    /// The parent session, for side chats and children.
    #[serde(default)]
    pub parent: Option<String>,
    /// A child that shares its parent's sandbox.
    #[serde(default)]
    pub shared_sandbox: bool,
    /// The app's idempotency key.
    #[serde(default)]
    pub request_id: Option<String>,
    /// Plan only (no edits).
    #[serde(default)]
    pub plan_only: bool,
    /// The app is about to copy the project into `folder`.
    #[serde(default)]
    pub project_copy: bool,
    /// The first prompt; kept to compare retries.
    #[serde(default)]
    pub prompt: Option<String>,
}

fn thread() -> Kind {
    Kind::Thread
}

/// What is persisted for a session (one JSON file per session).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// `cr_` + 32 lowercase hex.
    pub id: String,
    /// What the start asked for (its fields sit at the record's top level).
    #[serde(flatten)]
    pub start: Start,
    /// The state (`pending` while `waiting_start`).
    pub state: SessionState,
    /// The harness's own session ID, once its first event named it.
    pub native_id: Option<String>,
    /// Prompts not run yet, oldest first.
    pub queue: VecDeque<String>,
    /// Stop paused the queue; resume unpauses it.
    pub paused: bool,
    /// The start has not launched its harness yet: a restart waits again.
    pub waiting_start: bool,
    /// Harness startup time of the launch, from permit to harness up.
    pub agent_start_ms: Option<u64>,
    /// Why the session failed.
    pub error: Option<String>,
    /// Unix ms of the start.
    pub created_ms: u64,
    /// The prompt of the running turn. A launch's first turn that dies before
    /// its harness reported in (service stop, kill -9) gets it back in the
    /// queue on restore, so the restored start does not lose its prompt.
    #[serde(default)]
    pub in_flight: Option<String>,
    /// How the launch's check for a project copy ended (a failed copy with
    /// its reason), once it has; shown as the view's `copy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy: Option<room_machines::launch::WaitEnd>,
}

/// A live session: the record plus what only exists while the service runs.
#[derive(Debug)]
pub struct Session {
    /// The persisted part.
    pub rec: Record,
    /// The launch in progress (first start or relaunch).
    pub launch: Option<Launch>,
    /// The deadline last armed on the timer for this launch.
    pub armed: Option<Millis>,
    /// When the launch got its startup permit (for `agent_start`).
    pub permit_at: Option<Millis>,
    /// The pid (and process group) of the running turn.
    pub turn: Option<u32>,
    /// The running turn was killed by stop, close or restart on purpose.
    pub turn_killed: bool,
    /// The launch's timeline, when `record_timelines` is set.
    pub recording: Option<room_machines::timeline::Run>,
    /// This session's own handle, for the timer (no registry lookup when a
    /// deadline fires).
    pub me: Weak<Mutex<Session>>,
}

impl Session {
    /// A session around a record, with nothing running.
    pub fn new(rec: Record) -> Session {
        Session {
            rec,
            launch: None,
            armed: None,
            permit_at: None,
            turn: None,
            turn_killed: false,
            recording: None,
            me: Weak::new(),
        }
    }

    /// A shared session around a record that knows its own handle.
    pub fn shared(rec: Record) -> SessionRef {
        Arc::new_cyclic(|me| {
            let mut s = Session::new(rec);
            s.me = me.clone();
            Mutex::new(s)
        })
    }
}

/// A shared handle to one session; its lock is the per-session lock.
pub type SessionRef = Arc<Mutex<Session>>;

/// Locks a session, surviving a poisoned lock.
pub fn lock(s: &SessionRef) -> MutexGuard<'_, Session> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// All sessions by ID, request ID, and the folders of registered workspaces.
#[derive(Debug, Default)]
pub struct Registry {
    /// Session ID → session.
    pub by_id: HashMap<String, SessionRef>,
    /// Request ID → session ID.
    pub by_request: HashMap<String, String>,
    /// Workspace ID → folder, registered by a start.
    pub workspaces: HashMap<String, PathBuf>,
}

impl Registry {
    /// Adds a session and registers its request ID and workspace.
    pub fn insert(&mut self, rec: &Record, session: SessionRef) {
        if let Some(r) = &rec.start.request_id {
            self.by_request.insert(r.clone(), rec.id.clone());
        }
        self.workspaces
            .insert(rec.start.workspace.clone(), rec.start.folder.clone());
        self.by_id.insert(rec.id.clone(), session);
    }
}

/// A new session ID: `cr_` + a UUID v4 in 32 lowercase hex.
pub fn new_id() -> String {
    format!("cr_{}", uuid::Uuid::new_v4().simple())
}
