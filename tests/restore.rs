//! What a restart does to a session that had already started (what
//! docs/architecture.md says): it comes back idle with its native ID, not
//! through a relaunch; the turn that was running when Core died is not run
//! again, and what was queued runs at once as its next turn, resuming the
//! native session.

mod common;

use std::time::Duration;

use common::{start_body, Service};
use serde_json::json;

/// Far more than a turn of the fake harness needs, far less than a copy wait.
const AT_ONCE: Duration = Duration::from_secs(4);

#[test]
fn a_started_session_is_restored_idle_and_runs_its_queue_without_a_relaunch() {
    let mut svc = Service::start(json!({}));
    let folder = svc.folder("restored");
    std::fs::create_dir_all(&folder).unwrap();
    let s = svc.start_session(start_body(&folder, "claude", json!({"prompt": "first"})));
    let id = s["id"].as_str().unwrap().to_string();
    let messages = format!("/v1/sessions/{id}/messages");
    let first = svc.await_record(&folder, 1, AT_ONCE);
    svc.await_session(&id, "the first turn to end", |v| v["state"] == "idle");

    // Core dies while a turn runs and a prompt waits behind it.
    let (status, v) = svc.post(&messages, json!({"prompt": "sleep: 3"}));
    assert!(status < 300, "{v}");
    svc.await_record(&folder, 2, AT_ONCE);
    let (status, v) = svc.post(&messages, json!({"prompt": "queued"}));
    assert!(status < 300, "{v}");
    svc.await_session(&id, "the prompt to queue", |v| v["queue"]["length"] == 1);
    svc.kill9();
    svc.start_again();

    // The queued prompt runs at once, resuming the native session...
    let third = svc.await_record(&folder, 3, AT_ONCE);
    assert_eq!(third["prompt"], "queued", "{third}");
    assert_eq!(third["native_id"], first["native_id"], "{third}");
    let v = svc.await_session(&id, "the queued turn to end", |v| v["state"] == "idle");
    assert_eq!(v["native_id"], first["native_id"], "{v}");
    assert_eq!(v["queue"]["length"], 0, "{v}");
    // ...and the turn that was running is not run again.
    let prompts: Vec<_> = svc
        .records_in(&folder)
        .iter()
        .map(|r| r["prompt"].clone())
        .collect();
    assert_eq!(
        prompts,
        vec![json!("first"), json!("sleep: 3"), json!("queued")]
    );
}
