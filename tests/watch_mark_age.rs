//! An unpromised start held by a `copying` mark is let go when the mark
//! turns `mark_max_age_ms` old: the launch reads the file again at
//! that moment, with no poll (polls are a minute apart here).

use std::time::{Duration, UNIX_EPOCH};

use room_kit::*;
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

const MAX_AGE_MS: u64 = 1_500;

#[test]
fn an_unpromised_start_is_released_when_its_mark_ages_past_mark_max_age() {
    let svc = Service::start(
        ROOM_CORE,
        json!({"poll_ms": 60_000, "mark_max_age_ms": MAX_AGE_MS}),
    );
    let folder = svc.folder("code");
    mark(&folder, "copying\n");
    let marked_ms = std::fs::metadata(status_file(&folder))
        .unwrap()
        .modified()
        .unwrap()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;

    let s = svc.start_session(start_body(&folder, "codex", json!({})));
    let id = s["id"].as_str().unwrap();
    let v = svc.await_session(id, "the wait", |v| !v["waiting_for"].is_null());
    assert_eq!(v["waiting_for"]["mark"], "copying", "{v}");

    let record = svc.await_record(&folder, 1, Duration::from_secs(5));
    let started = record["started_ms"].as_u64().unwrap();
    let age = started.saturating_sub(marked_ms);
    assert!(
        (MAX_AGE_MS..MAX_AGE_MS + 1_000).contains(&age),
        "the harness started when the mark was {age} ms old\n{}",
        svc.log()
    );
    let v = svc.await_session(id, "the launch to end", |v| v["state"] != "pending");
    assert_eq!(
        v["copy"],
        json!({"outcome": "mark_too_old", "reason": null})
    );
}
