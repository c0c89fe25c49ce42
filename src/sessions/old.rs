//! Records written before the session machine: read once, at the first
//! start of a service that has the machine, and written back in the new
//! format. The mapping is docs/machines.md's ("Records written before this
//! machine"):
//!
//! - `state: closed | failed` → stage `closed | failed`; else
//!   `waiting_start: true` → `starting` (the start waits again); else
//!   `started`;
//! - an `in_flight` prompt (the turn that ran when the service died) goes to
//!   the head of the queue only if the start had not started: a started
//!   session's running turn is not run again (the rule of that runtime);
//! - `queue` strings become prompts numbered from 1, `next_prompt` after
//!   them; `next_turn` is 1; no turn is on record (that runtime kept none).

use std::collections::VecDeque;

use room_machines::session::{Failure, Prompt, Record as Core, Stage};
use serde::Deserialize;
use serde_json::Value;

use super::{Extras, RecordFile, Start};

/// A record as the runtime before the session machine wrote it.
#[derive(Debug, Deserialize)]
struct Old {
    id: String,
    #[serde(flatten)]
    start: Start,
    state: OldState,
    #[serde(default)]
    native_id: Option<String>,
    #[serde(default)]
    queue: Vec<String>,
    #[serde(default)]
    paused: bool,
    #[serde(default)]
    waiting_start: bool,
    #[serde(default)]
    agent_start_ms: Option<u64>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    created_ms: u64,
    #[serde(default)]
    in_flight: Option<String>,
    #[serde(default)]
    copy: Option<room_machines::launch::WaitEnd>,
}

/// That runtime's `state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum OldState {
    Pending,
    Running,
    Idle,
    Closed,
    Failed,
}

/// Whether `v` is a record in the format before the session machine (it has
/// `state` and no `stage`).
pub(crate) fn is_old(v: &Value) -> bool {
    v.get("stage").is_none() && v.get("state").is_some()
}

/// Reads a record in the format before the session machine.
pub(crate) fn upgrade(v: Value) -> Result<RecordFile, serde_json::Error> {
    let old: Old = serde_json::from_value(v)?;
    let stage = match old.state {
        OldState::Closed => Stage::Closed,
        OldState::Failed => Stage::Failed,
        _ if old.waiting_start => Stage::Starting,
        _ => Stage::Started,
    };
    let mut texts: VecDeque<String> = old.queue.into();
    if let Some(prompt) = old.in_flight {
        if stage == Stage::Starting {
            texts.push_front(prompt);
        }
    }
    let queue: VecDeque<Prompt> = texts
        .into_iter()
        .zip(1..)
        .map(|(text, id)| Prompt {
            id,
            text: text.into(),
            choice: Default::default(),
            attachments: Vec::new(),
        })
        .collect();
    let core = Core {
        stage,
        native_id: old.native_id,
        next_prompt: queue.len() as u64 + 1,
        queue,
        paused: old.paused,
        turn: None,
        error: old.error.map(Failure::Recorded),
        next_turn: 1,
        ..Core::new()
    };
    Ok(RecordFile {
        id: old.id,
        start: old.start,
        core,
        extras: Extras {
            created_ms: old.created_ms,
            agent_start_ms: old.agent_start_ms,
            copy: old.copy,
        },
        turn_process: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn old(fields: Value) -> Value {
        let mut v = json!({
            "id": "cr_0123456789abcdef0123456789abcdef",
            "workspace": "ws", "folder": "/w/code", "harness": "claude",
            "kind": "thread", "parent": null, "shared_sandbox": false,
            "request_id": "r1", "plan_only": false, "project_copy": true,
            "prompt": "first",
            "state": "pending", "native_id": null, "queue": ["first"],
            "paused": false, "waiting_start": true, "agent_start_ms": null,
            "error": null, "created_ms": 1700000000000u64, "in_flight": null
        });
        for (k, f) in fields.as_object().unwrap() {
            v[k] = f.clone();
        }
        v
    }

    fn texts(r: &RecordFile) -> Vec<(u64, &str)> {
        r.core
            .queue
            .iter()
            .map(|p| (p.id, p.text.as_str()))
            .collect()
    }

    #[test]
    fn a_waiting_start_is_starting_and_keeps_its_prompt_in_flight() {
        let v = old(json!({"queue": ["second"], "in_flight": "first"}));
        assert!(is_old(&v));
        let r = upgrade(v).unwrap();
        assert_eq!(r.core.stage, Stage::Starting);
        assert_eq!(texts(&r), [(1, "first"), (2, "second")]);
        assert_eq!((r.core.next_prompt, r.core.next_turn), (3, 1));
        assert_eq!(r.start.request_id.as_deref(), Some("r1"));
        assert_eq!(r.extras.created_ms, 1700000000000);
        // Written back in the new format, it reads as one.
        let again = serde_json::to_value(&r).unwrap();
        assert!(!is_old(&again), "{again}");
        let back: RecordFile = serde_json::from_value(again).unwrap();
        assert_eq!(back.core, r.core);
    }

    #[test]
    fn a_started_session_drops_the_turn_it_was_running() {
        let v = old(json!({
            "state": "running", "waiting_start": false, "native_id": "n1",
            "queue": ["b", "c"], "in_flight": "a", "paused": true,
            "agent_start_ms": 412, "copy": "landed"
        }));
        let r = upgrade(v).unwrap();
        assert_eq!(r.core.stage, Stage::Started);
        assert_eq!(texts(&r), [(1, "b"), (2, "c")]);
        assert!(r.core.paused);
        assert_eq!(r.core.native_id.as_deref(), Some("n1"));
        assert_eq!(r.extras.agent_start_ms, Some(412));
        assert_eq!(r.extras.copy, Some(room_machines::launch::WaitEnd::Landed));
    }

    #[test]
    fn closed_and_failed_stay_what_they_were() {
        let closed = upgrade(old(json!({"state": "closed", "waiting_start": false}))).unwrap();
        assert_eq!(closed.core.stage, Stage::Closed);
        let failed = upgrade(old(json!({
            "state": "failed", "waiting_start": false, "error": "claude exited"
        })))
        .unwrap();
        assert_eq!(failed.core.stage, Stage::Failed);
        assert_eq!(
            failed.core.error,
            Some(Failure::Recorded("claude exited".into()))
        );
    }
}
