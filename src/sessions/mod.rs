//! Sessions: the record on disk, the live session around the session
//! machine (its running turn, its waiters) and the registry that finds them
//! by ID, request ID and workspace.

pub(crate) mod failure_text;
pub(crate) mod live_turn;
pub(crate) mod old;
pub(crate) mod prompt_log;
pub(crate) mod recording;
pub(crate) mod turn_now;
pub(crate) mod view;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use room_machines::session::{self as machine, TurnSeq};
use room_machines::Millis;
use serde::{Deserialize, Serialize};

use crate::harness::mcp::McpServers;
use crate::harness::options::{Effort, Options as HarnessOptions};
use crate::harness::Harness;
use crate::journal::Journal;
use crate::supervise::{TurnKey, TurnRecord};
use live_turn::LiveTurn;
use prompt_log::PromptLog;
use recording::Recording;

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
    /// The ACP agent, by its name in the config's `acp_agents`, for an
    /// `acp` session; none for another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
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
    /// Who answers the harness's approval requests (`auto` when not given).
    #[serde(default, skip_serializing_if = "is_auto")]
    pub approvals: machine::ApprovalMode,
    /// The most the session's turns may cost in all (USD), if limited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// The most tokens the session's turns may use in all, if limited.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "whole_number"
    )]
    pub max_tokens: Option<u64>,
    /// The model the harness runs, in its CLI's naming.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// How hard the model works.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// Text added to the harness's system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// The MCP servers the harness gets (their `env` and `headers` values
    /// are secrets: kept here, in the private record, and given only to
    /// the CLI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<McpServers>,
    /// The first prompt's images, as the session knows them (their bytes
    /// wait in its image store).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<machine::Attachment>,
}

impl Start {
    /// What the app chose for the harness.
    pub(crate) fn harness_options(&self) -> HarnessOptions<'_> {
        HarnessOptions {
            model: self.model.as_deref(),
            effort: self.effort,
            instructions: self.instructions.as_deref(),
        }
    }
}

/// A count as JSON may write it: a whole number, `1.0` too (JSON Schema's
/// integers are whole numbers, whatever their notation).
fn whole_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    use serde::de::Error;
    match Option::<f64>::deserialize(d)? {
        None => Ok(None),
        Some(n) if n.fract() == 0.0 && (0.0..=1e15).contains(&n) => Ok(Some(n as u64)),
        Some(_) => Err(D::Error::custom(
            "max_tokens must be a whole number from 1 to 1000000000000",
        )),
    }
}

fn is_auto(mode: &machine::ApprovalMode) -> bool {
    *mode == machine::ApprovalMode::Auto
}

fn thread() -> Kind {
    Kind::Thread
}

/// A session's record on disk (one JSON file per session): the start
/// request, the session machine's [`machine::Record`] (its stage, queue,
/// pause, current turn, error), and what only the runtime knows, side by
/// side at the top level. The format before the session machine is read by
/// [`old`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RecordFile {
    /// `cr_` + 32 lowercase hex.
    pub id: String,
    /// What the start asked for.
    #[serde(flatten)]
    pub start: Start,
    /// The session machine's persisted core.
    #[serde(flatten)]
    pub core: machine::Record,
    /// The runtime's own measurements.
    #[serde(flatten)]
    pub extras: Extras,
    /// The supervisor's record of the current turn's process (its key, pid,
    /// process group, start time, boot and cgroup), so a restart after a
    /// kill -9 kills what survives; written with the machine's turn, before
    /// the turn gets its prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_process: Option<TurnRecord>,
}

/// What the runtime measures and shows beside the machine's record.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Extras {
    /// Unix ms of the start.
    pub created_ms: u64,
    /// Harness startup time of the last launch that started one: from its
    /// startup permit to the event that named the session.
    #[serde(default)]
    pub agent_start_ms: Option<u64>,
    /// How the first launch's check for a project copy ended (a failed copy
    /// with its reason), once it has; shown as the view's `copy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy: Option<room_machines::launch::WaitEnd>,
}

/// A session as the timer and the pool know it: its own handle, no
/// registry lookup.
pub(crate) type SessionHandle = Weak<Mutex<Hosted>>;

/// A session as the service hosts it: the session machine, the start it
/// came from, and what only exists while the service runs (the turn's
/// process, the timer, the callers waiting for a turn to end).
pub(crate) struct Hosted {
    /// `cr_` + 32 lowercase hex.
    pub id: String,
    /// What the start asked for.
    pub start: Start,
    /// The session's rules and state.
    pub machine: machine::Session,
    /// The runtime's measurements.
    pub extras: Extras,
    /// The supervisor's record of the machine's current turn, by turn number.
    pub supervised: Option<(TurnSeq, TurnRecord)>,
    /// A spawn note names a turn the record does not acknowledge yet.
    pub spawn_noted: bool,
    /// The running turn's process, pipes and threads.
    pub live: Option<Box<LiveTurn>>,
    /// The deadline last armed on the timer.
    pub armed: Option<Millis>,
    /// When the current launch got its startup permit (for `agent_start_ms`).
    pub permit_at: Option<Millis>,
    /// Whoever waits for a turn to be gone (an answer to stop, close,
    /// interrupt, relaunch restart).
    pub waiters: Vec<(TurnSeq, Box<dyn FnOnce() + Send>)>,
    /// The session's timeline, when `record_timelines` is set.
    pub recording: Option<Box<Recording>>,
    /// The session's event journal.
    pub journal: Arc<Journal>,
    /// The session's prompt log (the texts of its waiting prompts).
    pub prompts: PromptLog,
    /// Messages whose images are being kept and whose prompts are not
    /// accepted yet: while any is, no image is pruned.
    pub images_arriving: usize,
    /// This session's own handle, for the timer, the pool and turn threads.
    pub me: Weak<Mutex<Hosted>>,
}

impl std::fmt::Debug for Hosted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hosted")
            .field("id", &self.id)
            .field("state", self.machine.state())
            .finish_non_exhaustive()
    }
}

impl Hosted {
    /// A shared session around `machine` that knows its own handle.
    pub(crate) fn shared(
        id: String,
        start: Start,
        machine: machine::Session,
        extras: Extras,
        journal: Arc<Journal>,
        prompts: PromptLog,
    ) -> SessionRef {
        Arc::new_cyclic(|me| {
            Mutex::new(Hosted {
                id,
                start,
                machine,
                extras,
                supervised: None,
                spawn_noted: false,
                live: None,
                armed: None,
                permit_at: None,
                waiters: Vec::new(),
                recording: None,
                journal,
                prompts,
                images_arriving: 0,
                me: me.clone(),
            })
        })
    }

    /// The record to write now. The supervisor's record goes with the
    /// machine's turn it belongs to, and only with it; a turn asked for and
    /// not spawned yet goes with its key (`TurnRecord::planned`), so the
    /// write that records the turn also names what its spawn will be.
    pub(crate) fn record(&self) -> RecordFile {
        let core = self.machine.record().clone();
        let turn_process = match (&core.turn, &self.supervised) {
            (Some(t), Some((seq, r))) if *seq == t.seq => Some(r.clone()),
            (Some(t), _) if t.process().is_none() => TurnKey::new(turn_key(&self.id, t.seq))
                .ok()
                .map(|k| TurnRecord::planned(&k)),
            _ => None,
        };
        RecordFile {
            id: self.id.clone(),
            start: self.start.clone(),
            core,
            extras: self.extras.clone(),
            turn_process,
        }
    }
}

/// The supervisor's key of session `id`'s turn `seq`: it names the turn's
/// cgroup and marks its processes.
pub(crate) fn turn_key(id: &str, seq: TurnSeq) -> String {
    format!("{id}-{seq}")
}

/// The machine's options for a start.
pub(crate) fn options(start: &Start) -> machine::Options {
    machine::Options {
        promised: start.project_copy,
        plan_only: start.plan_only,
        approvals: start.approvals,
        budget: budget(start.max_cost_usd, start.max_tokens),
        choice: machine::ModelChoice {
            model: start.model.clone(),
            effort: start.effort,
        },
        // claude takes `--effort` only as its process starts.
        effort_at_spawn: start.harness == Harness::Claude,
        // An ACP agent asks as its own config says.
        auto_allows: start.harness == Harness::Acp,
    }
}

/// A budget from its wire fields (a cost the API checked is in range).
pub(crate) fn budget(max_cost_usd: Option<f64>, max_tokens: Option<u64>) -> machine::Budget {
    machine::Budget {
        max_cost_usd: max_cost_usd.and_then(machine::Usd::reported),
        max_tokens,
    }
}

/// A shared handle to one session; its lock is the per-session lock.
pub(crate) type SessionRef = Arc<Mutex<Hosted>>;

/// Locks a session, surviving a poisoned lock.
pub(crate) fn lock(s: &SessionRef) -> MutexGuard<'_, Hosted> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// All sessions by ID, request ID, and the folders of registered workspaces.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    /// Session ID → session.
    pub by_id: HashMap<String, SessionRef>,
    /// Request ID → session ID.
    pub by_request: HashMap<String, String>,
    /// Workspace ID → folder, registered by a start.
    pub workspaces: HashMap<String, PathBuf>,
}

impl Registry {
    /// Adds session `id` and registers its request ID and workspace.
    pub(crate) fn insert(&mut self, id: &str, start: &Start, session: SessionRef) {
        self.reserve(id, start, session);
        self.register_workspace(start);
    }

    /// Adds session `id` and its request ID, before its start is recorded
    /// (see [`Registry::forget`]).
    pub(crate) fn reserve(&mut self, id: &str, start: &Start, session: SessionRef) {
        if let Some(r) = &start.request_id {
            self.by_request.insert(r.clone(), id.to_string());
        }
        self.by_id.insert(id.to_string(), session);
    }

    /// Registers the workspace of a start.
    pub(crate) fn register_workspace(&mut self, start: &Start) {
        self.workspaces
            .insert(start.workspace.clone(), start.folder.clone());
    }

    /// Drops session `id`, whose start could not be recorded.
    pub(crate) fn forget(&mut self, id: &str, start: &Start) {
        self.by_id.remove(id);
        if let Some(r) = &start.request_id {
            if self.by_request.get(r).is_some_and(|x| x == id) {
                self.by_request.remove(r);
            }
        }
    }
}

/// A new session ID: `cr_` + a UUID v4 in 32 lowercase hex.
pub(crate) fn new_id() -> String {
    format!("cr_{}", uuid::Uuid::new_v4().simple())
}

#[cfg(test)]
mod tests {
    use super::*;
    use room_machines::copy::Observation;
    use room_machines::session::LaunchInput;

    fn start() -> Start {
        serde_json::from_value(serde_json::json!({
            "workspace": "w", "folder": "/w/code", "harness": "claude", "prompt": "hi"
        }))
        .unwrap()
    }

    #[test]
    fn a_record_names_the_key_of_a_turn_asked_for_and_the_process_of_one_spawned() {
        let start = start();
        let mut m = machine::Session::new(
            machine::Config::default(),
            options(&start),
            start.prompt.clone().map(machine::NewPrompt::from),
            0,
        );
        let journal = Arc::new(Journal::new(std::path::Path::new("/nonexistent"), "cr_a"));
        let prompts = PromptLog::open(std::path::Path::new("/nonexistent"), "cr_a");
        let s = Hosted::shared(
            "cr_a".into(),
            start,
            m.clone(),
            Extras::default(),
            journal,
            prompts,
        );
        let mut s = lock(&s);
        assert_eq!(s.record().turn_process, None);
        for input in [
            machine::Input::Launch(LaunchInput::Observed(Observation::missing())),
            machine::Input::Launch(LaunchInput::PermitGranted),
        ] {
            m.handle(0, input);
        }
        s.machine = m;
        let planned = s
            .record()
            .turn_process
            .expect("the key of the turn asked for");
        assert_eq!((planned.key.as_str(), planned.pid), ("cr_a-1", None));
        // Once spawned, the supervisor's record of it, and only for its turn.
        let spawned = TurnRecord {
            pid: Some(7),
            ..planned
        };
        s.supervised = Some((1, spawned.clone()));
        assert_eq!(s.record().turn_process, Some(spawned.clone()));
        s.supervised = Some((2, spawned));
        assert_eq!(s.record().turn_process.and_then(|t| t.pid), None);
        // The record reads back as written.
        let text = serde_json::to_string(&s.record()).unwrap();
        let back: RecordFile = serde_json::from_str(&text).unwrap();
        assert_eq!(back.core, *s.machine.record());
        assert_eq!(back.start.prompt.as_deref(), Some("hi"));
    }
}
