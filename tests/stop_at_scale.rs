//! A service stop with 10,000 quiet sessions: it journals nothing into a
//! session it does not change, so SIGTERM is answered in one pass of locks
//! instead of 10,000 journal syncs.

use std::time::{Duration, Instant};

use room_kit::events::journal;
use room_kit::*;
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// The sessions the test restores.
const SESSIONS: usize = 10_000;

#[test]
fn a_stop_with_ten_thousand_idle_sessions_journals_none_of_them_and_ends_quickly() {
    let mut svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("idle");
    let s = svc.start_session(start_body(&folder, "claude", json!({})));
    let id = s["id"].as_str().unwrap().to_string();
    svc.await_session(&id, "the first turn to end", |v| v["state"] == "idle");
    svc.stop();
    let journal_before = journal(&svc.state, &id).len();

    // 10,000 more records like it, as a run before this one left them.
    let sessions = svc.state.join("sessions");
    let template = std::fs::read_to_string(sessions.join(format!("{id}.json"))).unwrap();
    let ids: Vec<String> = (0..SESSIONS)
        .map(|n| format!("cr_{:032x}", 0xabcd_0000_0000u64 + n as u64))
        .collect();
    for other in &ids {
        let record = template.replace(&id, other);
        std::fs::write(sessions.join(format!("{other}.json")), record).unwrap();
    }
    svc.start_again();
    let (status, health) = svc.get("/v1/health");
    assert_eq!(status, 200, "{health}");
    assert_eq!(svc.session(&ids[SESSIONS - 1])["state"], "idle");

    let t = Instant::now();
    svc.stop();
    let took = t.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "SIGTERM took {took:?} with {SESSIONS} idle sessions"
    );
    assert!(
        svc.log().ends_with("stopped\n"),
        "a clean stop, not the backstop"
    );
    assert_eq!(
        journal(&svc.state, &id).len(),
        journal_before,
        "the stop changed nothing, so it journalled nothing"
    );
    let journalled = ids
        .iter()
        .filter(|other| {
            svc.state
                .join("events")
                .join(format!("{other}.jsonl"))
                .exists()
        })
        .count();
    assert_eq!(journalled, 0, "no quiet session got a journal entry");
    eprintln!("stop with {SESSIONS} idle sessions: {took:?}");
}
