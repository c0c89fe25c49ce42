//! How a launch's check for a project copy ended, as the app sees it in the
//! session view (`copy`) and as the log says it: a failed
//! copy's reason, a bare `failed`, and a `copying` mark dated in the future.

use std::time::{Duration, SystemTime};

use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// A first turn must come well inside the 10 s grace of `room-cli files wait`.
const AT_ONCE: Duration = Duration::from_secs(4);

/// Sets the status file's mtime `by` ahead of now.
fn date_ahead(folder: &std::path::Path, by: Duration) {
    std::fs::File::options()
        .write(true)
        .open(status_file(folder))
        .unwrap()
        .set_modified(SystemTime::now() + by)
        .unwrap();
}

fn started(svc: &Service, id: &str) -> Value {
    svc.await_session(id, "the launch to end", |v| v["state"] != "pending")
}

/// Starts a session in `folder` whose harness must run at once; returns its
/// view once the launch is over.
fn start_at_once(svc: &Service, folder: &std::path::Path, extra: Value) -> Value {
    let s = svc.start_session(start_body(folder, "codex", extra));
    svc.await_record(folder, 1, AT_ONCE);
    started(svc, s["id"].as_str().unwrap())
}

#[test]
fn a_failed_copys_reason_shows_in_the_session_view() {
    let svc = Service::start(ROOM_CORE, json!({}));
    // Failed before the start: the first read ends the check.
    let early = svc.folder("early");
    mark(&early, "failed: disk full\n");
    let v = start_at_once(&svc, &early, json!({"project_copy": true}));
    let id = v["id"].as_str().unwrap();
    assert_eq!(
        v["copy"],
        json!({"outcome": "failed", "reason": "disk full"})
    );
    assert_eq!(v["error"], Value::Null);
    assert!(
        svc.log()
            .contains(&format!("{id}: the project copy failed (disk full)")),
        "{}",
        svc.log()
    );

    // Failed during the wait.
    let late = svc.folder("late");
    let s = svc.start_session(start_body(&late, "codex", json!({"project_copy": true})));
    let id = s["id"].as_str().unwrap();
    assert_eq!(s["copy"], Value::Null, "{s}");
    mark(&late, "failed: the upload was cancelled\n");
    svc.await_record(&late, 1, AT_ONCE);
    let v = started(&svc, id);
    assert_eq!(
        v["copy"],
        json!({"outcome": "failed", "reason": "the upload was cancelled"})
    );

    // The other outcomes, by name.
    let landed = svc.folder("landed");
    mark(&landed, "ready\n");
    let blank = svc.folder("blank");
    for (folder, outcome) in [(&landed, "landed"), (&blank, "no_copy")] {
        let v = start_at_once(&svc, folder, json!({}));
        assert_eq!(v["copy"], json!({"outcome": outcome, "reason": null}));
    }
}

#[test]
fn a_bare_failed_mark_starts_the_harness_at_once_with_no_reason() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("code");
    mark(&folder, "failed\n");
    let v = start_at_once(&svc, &folder, json!({"project_copy": true}));
    assert_eq!(v["copy"], json!({"outcome": "failed", "reason": null}));
    assert!(svc
        .log()
        .contains("the project copy failed (no reason given)"));
}

#[test]
fn a_copying_mark_dated_over_a_minute_ahead_holds_no_unpromised_start() {
    // Polled, not watched, and often: the warning must still come once.
    let svc = Service::start(ROOM_CORE, json!({"watch": false, "poll_ms": 20}));
    let future = svc.folder("future");
    mark(&future, "copying\n");
    date_ahead(&future, Duration::from_secs(10 * 60));

    // Unpromised: clock trouble, not a fresh copy; the harness starts.
    let v = start_at_once(&svc, &future, json!({}));
    assert_eq!(
        v["copy"],
        json!({"outcome": "mark_in_future", "reason": null})
    );

    // Promised: held as by any copying mark, and reported once.
    let held = svc.folder("held");
    mark(&held, "copying\n");
    date_ahead(&held, Duration::from_secs(10 * 60));
    let s = svc.start_session(start_body(&held, "codex", json!({"project_copy": true})));
    let id = s["id"].as_str().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let v = svc.session(id);
    assert_eq!(v["state"], "pending", "{v}");
    assert_eq!(v["waiting_for"]["mark"], "copying", "{v}");
    let log = svc.log();
    let warned = log
        .lines()
        .filter(|l| l.contains(id) && l.contains("clock trouble"))
        .count();
    assert_eq!(warned, 1, "{log}");

    // A mark less than a minute ahead is a fresh copy: it holds.
    let near = svc.folder("near");
    mark(&near, "copying\n");
    date_ahead(&near, Duration::from_secs(30));
    let s = svc.start_session(start_body(&near, "codex", json!({})));
    let id = s["id"].as_str().unwrap();
    let v = svc.await_session(id, "the wait", |v| !v["waiting_for"].is_null());
    assert_eq!(v["waiting_for"]["mark"], "copying", "{v}");
}
