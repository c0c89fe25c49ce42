//! A session as `GET /v1/sessions/{id}` shows it.

use room_machines::launch::{Phase, WaitOn};
use serde_json::{json, Value};

use super::{Session, SessionState};
use crate::runtime::clock::Clock;

/// The wire state: `pending` while a launch has not started the harness.
pub fn state(s: &Session) -> SessionState {
    match s.rec.state {
        SessionState::Closed | SessionState::Failed => s.rec.state,
        _ if s.launch.is_some() || s.rec.waiting_start => SessionState::Pending,
        _ if s.turn.is_some() => SessionState::Running,
        _ => SessionState::Idle,
    }
}

/// `waiting_for`: what a waiting launch is held by, or null.
pub fn waiting_for(s: &Session, clock: &Clock, copy_wait: u64) -> Value {
    let Some(launch) = &s.launch else {
        return Value::Null;
    };
    let mark = match launch.state().phase {
        Phase::Waiting(WaitOn::MissingMark) => "missing",
        Phase::Waiting(WaitOn::Copying) => "copying",
        _ => return Value::Null,
    };
    let began = launch.state().began;
    json!({
        "what": "project_copy",
        "mark": mark,
        "since_ms": clock.to_unix(began),
        "until_ms": clock.to_unix(began.saturating_add(copy_wait)),
    })
}

/// The whole view.
pub fn render(s: &Session, clock: &Clock, copy_wait: u64) -> Value {
    let r = &s.rec;
    let start = &r.start;
    json!({
        "id": r.id,
        "workspace": start.workspace,
        "folder": start.folder,
        "harness": start.harness,
        "kind": start.kind,
        "parent": start.parent,
        "shared_sandbox": start.shared_sandbox,
        "request_id": start.request_id,
        "plan_only": start.plan_only,
        "project_copy": start.project_copy,
        "state": state(s),
        "waiting_for": waiting_for(s, clock, copy_wait),
        "native_id": r.native_id,
        "queue": {"length": r.queue.len(), "paused": r.paused},
        "agent_start_ms": r.agent_start_ms,
        "error": r.error,
        "created_ms": r.created_ms,
    })
}
