//! A session as `GET /v1/sessions/{id}` shows it: built from what the
//! session machine shows (`shown()`, `launch()`, `record()`) and the
//! runtime's measurements. No rule here: the state is the machine's.

use room_machines::launch::{Phase, WaitEnd, WaitOn};
use room_machines::session::{Approval, Shown};
use serde_json::{json, Value};

use super::{failure_text, Hosted};
use crate::clock::Clock;

/// The wire name of a shown state.
pub(crate) fn state_name(state: Shown) -> &'static str {
    match state {
        Shown::Pending => "pending",
        Shown::Running => "running",
        Shown::Idle => "idle",
        Shown::Closed => "closed",
        Shown::Failed => "failed",
    }
}

/// `waiting_for`: what a waiting launch is held by, or null.
pub(crate) fn waiting_for(s: &Hosted, clock: &Clock) -> Value {
    let Some(launch) = s.machine.launch() else {
        return Value::Null;
    };
    let mark = match launch.state().phase {
        Phase::Waiting(WaitOn::MissingMark) => "missing",
        Phase::Waiting(WaitOn::Copying) => "copying",
        _ => return Value::Null,
    };
    json!({
        "what": "project_copy",
        "mark": mark,
        "since_ms": clock.to_unix(launch.state().began),
        "until_ms": launch.wait_limit().map(|at| clock.to_unix(at)),
    })
}

/// `copy`: how the launch's check for a project copy ended, or null while
/// it has not (or for a session restored from before the field existed).
/// `reason` is a failed copy's reason, null when it gave none.
pub(crate) fn copy(outcome: Option<&WaitEnd>) -> Value {
    let Some(outcome) = outcome else {
        return Value::Null;
    };
    let (name, reason) = match outcome {
        WaitEnd::NoCopy => ("no_copy", None),
        WaitEnd::Landed => ("landed", None),
        WaitEnd::CopyFailed(r) => ("failed", Some(r.as_str()).filter(|r| !r.is_empty())),
        WaitEnd::MarkTooOld => ("mark_too_old", None),
        WaitEnd::MarkInFuture => ("mark_in_future", None),
        WaitEnd::Limit => ("limit", None),
    };
    json!({"outcome": name, "reason": reason})
}

/// The whole view.
pub(crate) fn render(s: &Hosted, clock: &Clock) -> Value {
    let r = s.machine.record();
    let start = &s.start;
    let choice = s.machine.choice_in_force();
    json!({
        "id": s.id,
        "workspace": start.workspace,
        "folder": start.folder,
        "harness": start.harness,
        "agent": start.agent,
        "kind": start.kind,
        "parent": start.parent,
        "shared_sandbox": start.shared_sandbox,
        "request_id": start.request_id,
        "plan_only": start.plan_only,
        "project_copy": start.project_copy,
        "state": state_name(s.machine.shown()),
        "waiting_for": waiting_for(s, clock),
        "copy": copy(s.extras.copy.as_ref()),
        "native_id": r.native_id,
        "queue": {"length": r.queue.len(), "paused": r.paused},
        "agent_start_ms": s.extras.agent_start_ms,
        "error": r.error.as_ref().map(|f| failure_text::describe(f, start.harness.name())),
        "usage": r.usage,
        "approvals": start.approvals,
        "model": choice.model,
        "effort": choice.effort,
        "instructions": start.instructions,
        "mcp_servers": start.mcp_servers.as_ref().map(crate::harness::mcp::shown),
        "budget": r.budget,
        "budget_spent": s.machine.budget_spent(),
        "pending_approvals": pending_approvals(&r.pending_approvals, clock),
        "created_ms": s.extras.created_ms,
    })
}

/// `pending_approvals`: the requests waiting for the app, oldest first.
pub(crate) fn pending_approvals(pending: &[Approval], clock: &Clock) -> Value {
    pending
        .iter()
        .map(|a| {
            json!({
                "id": a.id,
                "turn": a.turn,
                "tool": a.tool,
                "input": tool_input(&a.input),
                "reason": a.reason,
                "until_ms": clock.to_unix(a.until),
            })
        })
        .collect()
}

/// A tool's input as the harness gave it: JSON, shown as JSON (text that
/// is not JSON, which a harness cannot make here, as a string).
pub(crate) fn tool_input(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_copy_shows_its_reason_and_a_bare_failure_none() {
        let failed = WaitEnd::CopyFailed("disk full".into());
        assert_eq!(
            copy(Some(&failed)),
            json!({"outcome": "failed", "reason": "disk full"})
        );
        let bare = WaitEnd::CopyFailed(String::new());
        assert_eq!(
            copy(Some(&bare)),
            json!({"outcome": "failed", "reason": null})
        );
        assert_eq!(
            copy(Some(&WaitEnd::MarkInFuture)),
            json!({"outcome": "mark_in_future", "reason": null})
        );
        assert_eq!(copy(None), Value::Null);
    }
}
