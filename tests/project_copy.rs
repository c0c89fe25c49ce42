//! Seed 000: a launch must not start the harness before the project's files
//! have landed. Each test starts the real room-core with the fake harnesses,
//! which record the names they see in their folder as they start.

use std::time::{Duration, Instant};

use room_kit::*;
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// A first turn must come well inside the 10 s grace of `room-cli files wait`.
const AT_ONCE: Duration = Duration::from_secs(4);

#[test]
fn harness_starts_once_a_running_project_copy_lands() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("code");
    mark(&folder, "copying\n");
    let s = svc.start_session(start_body(&folder, "codex", json!({})));
    let id = s["id"].as_str().unwrap();

    std::thread::sleep(Duration::from_secs(1));
    let v = svc.session(id);
    assert_eq!(v["state"], "pending", "{v}");
    assert_eq!(v["native_id"], serde_json::Value::Null);
    assert_eq!(v["waiting_for"]["what"], "project_copy");
    assert_eq!(v["waiting_for"]["mark"], "copying");
    assert!(svc.records().is_empty(), "the harness ran during the copy");

    land_project(&folder);
    mark(&folder, "ready\n");
    let record = svc.await_record(&folder, 1, Duration::from_secs(5));
    assert_eq!(names(&record), PROJECT_NAMES);
    let v = svc.await_session(id, "the native ID", |v| !v["native_id"].is_null());
    assert_eq!(v["native_id"], record["native_id"]);
    assert_eq!(v["waiting_for"], serde_json::Value::Null);
    assert!(v["agent_start_ms"].is_u64(), "{v}");
}

#[test]
fn a_mark_left_by_a_dead_copy_holds_no_start() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("code");
    mark(&folder, "copying\n");
    let six_minutes_ago = std::time::SystemTime::now() - Duration::from_secs(6 * 60);
    std::fs::File::options()
        .write(true)
        .open(status_file(&folder))
        .unwrap()
        .set_modified(six_minutes_ago)
        .unwrap();

    let t0 = Instant::now();
    svc.start_session(start_body(&folder, "claude", json!({})));
    svc.await_record(&folder, 1, AT_ONCE);
    assert!(
        t0.elapsed() < AT_ONCE,
        "first turn after {:?}",
        t0.elapsed()
    );
}

#[test]
fn a_promised_copy_holds_the_harness_until_its_status_file_says_it_landed() {
    let svc = Service::start(ROOM_CORE, json!({}));
    // A child in a Personal project: its code goes into <sandbox>/code, and
    // the status file sits next to it, in the sandbox root.
    let folder = svc.folder("sandbox-child-1").join("code");
    let body = start_body(
        &folder,
        "claude",
        json!({
            "workspace": "personal-child-1",
            "kind": "child",
            "parent": "cr_00000000000000000000000000000001",
            "request_id": "req-child-1",
            "project_copy": true,
        }),
    );
    let s = svc.start_session(body.clone());
    let id = s["id"].as_str().unwrap();

    // The app learns the folder from the workspace the start registered.
    let (status, ws) = svc.get("/v1/workspaces/personal-child-1");
    assert_eq!(status, 200, "{ws}");
    assert_eq!(ws["folder"], json!(folder));
    assert_eq!(ws["status_file"], json!(status_file(&folder)));

    std::thread::sleep(Duration::from_millis(700));
    let v = svc.session(id);
    assert_eq!(v["state"], "pending", "{v}");
    assert_eq!(v["waiting_for"]["mark"], "missing");

    mark(&folder, "copying\n");
    svc.await_session(id, "the copying mark", |v| {
        v["waiting_for"]["mark"] == "copying"
    });
    land_project(&folder);
    std::thread::sleep(Duration::from_millis(300));
    assert!(svc.records().is_empty(), "the harness ran before ready");
    assert_eq!(svc.session(id)["state"], "pending");

    mark(&folder, "ready\n");
    let record = svc.await_record(&folder, 1, Duration::from_secs(5));
    assert_eq!(names(&record), PROJECT_NAMES);

    // The retry without the field returns the same session.
    let mut retry = body;
    retry.as_object_mut().unwrap().remove("project_copy");
    let (status, again) = svc.post("/v1/sessions", retry);
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["id"], s["id"]);
}

#[test]
fn no_copy_or_a_failed_one_starts_the_harness_at_once() {
    let svc = Service::start(ROOM_CORE, json!({}));
    // A blank Personal thread: its folder does not exist yet.
    let personal = svc.folder("personal-thread");
    // A blank project thread: an empty folder.
    let project = svc.folder("project-thread");
    std::fs::create_dir_all(&project).unwrap();
    // A promised copy that failed.
    let failed = svc.folder("failed-copy");
    mark(&failed, "failed: the upload was cancelled\n");

    for (folder, extra) in [
        (&personal, json!({})),
        (&project, json!({})),
        (&failed, json!({"project_copy": true})),
    ] {
        let t0 = Instant::now();
        let s = svc.start_session(start_body(folder, "codex", extra));
        svc.await_record(folder, 1, AT_ONCE);
        assert!(
            t0.elapsed() < AT_ONCE,
            "{}: {:?}",
            folder.display(),
            t0.elapsed()
        );
        let id = s["id"].as_str().unwrap();
        svc.await_session(id, "the session to start", |v| v["state"] != "pending");
    }
}

#[test]
fn a_waiting_start_holds_up_no_other_start() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut waiting = Vec::new();
    for n in 0..cpus + 1 {
        let folder = svc.folder(&format!("copy-{n}"));
        let s = svc.start_session(start_body(&folder, "claude", json!({"project_copy": true})));
        waiting.push(s["id"].as_str().unwrap().to_string());
    }
    for id in &waiting {
        svc.await_session(id, "the wait", |v| !v["waiting_for"].is_null());
    }

    let blank = svc.folder("blank");
    let t0 = Instant::now();
    svc.start_session(start_body(&blank, "claude", json!({})));
    svc.await_record(&blank, 1, AT_ONCE);
    assert!(
        t0.elapsed() < AT_ONCE,
        "blank start after {:?}",
        t0.elapsed()
    );
    for id in &waiting {
        assert_eq!(svc.session(id)["state"], "pending");
    }
    assert_eq!(svc.records().len(), 1);
}

#[test]
fn stop_and_close_during_the_wait() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let stopped = svc.folder("stopped");
    let closed = svc.folder("closed");
    let a = svc.start_session(start_body(
        &stopped,
        "claude",
        json!({"project_copy": true}),
    ));
    let b = svc.start_session(start_body(&closed, "codex", json!({"project_copy": true})));
    let (a, b) = (a["id"].as_str().unwrap(), b["id"].as_str().unwrap());

    // Stop completes during the wait and pauses the queue.
    let t0 = Instant::now();
    let (status, v) = svc.post(&format!("/v1/sessions/{a}/stop"), json!({}));
    assert_eq!(status, 200, "{v}");
    assert!(t0.elapsed() < Duration::from_secs(1));
    assert_eq!(v["state"], "pending");
    assert_eq!(v["queue"], json!({"length": 1, "paused": true}));
    // A prompt sent meanwhile queues.
    let (status, v) = svc.post(
        &format!("/v1/sessions/{a}/messages"),
        json!({"prompt": "next"}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["queue"]["length"], 2);

    // Close ends the wait; the harness never starts.
    let (status, v) = svc.post(&format!("/v1/sessions/{b}/close"), json!({}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["state"], "closed");

    for folder in [&stopped, &closed] {
        land_project(folder);
        mark(folder, "ready\n");
    }
    // The stopped session starts in the copied folder with its queue paused.
    let v = svc.await_session(a, "the stopped session to start", |v| v["state"] == "idle");
    assert_eq!(v["queue"], json!({"length": 2, "paused": true}));
    assert!(svc.records_in(&stopped).is_empty(), "a paused queue ran");

    let (status, _) = svc.post(&format!("/v1/sessions/{a}/resume"), json!({}));
    assert_eq!(status, 200);
    let first = svc.await_record(&stopped, 1, Duration::from_secs(5));
    assert_eq!(names(&first), PROJECT_NAMES);
    let second = svc.await_record(&stopped, 2, Duration::from_secs(5));
    assert_eq!(second["prompt"], "next");
    assert_eq!(second["native_id"], first["native_id"]);

    // By now the closed session's copy has been ready for several polls.
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        svc.records_in(&closed).is_empty(),
        "a closed session's harness ran"
    );
    assert_eq!(svc.session(b)["state"], "closed");
}

#[test]
fn restart_during_the_wait_and_resume_after_the_copy() {
    let mut svc = Service::start(ROOM_CORE, json!({}));
    // A session that starts before the restart.
    let started = svc.folder("started");
    std::fs::create_dir_all(&started).unwrap();
    let s = svc.start_session(start_body(&started, "claude", json!({"prompt": "first"})));
    let started_id = s["id"].as_str().unwrap().to_string();
    let first = svc.await_record(&started, 1, AT_ONCE);
    svc.await_session(&started_id, "the first turn to end", |v| {
        v["state"] == "idle"
    });

    // A promised start into a folder with no mark yet.
    let copy = svc.folder("copy");
    let w = svc.start_session(start_body(&copy, "codex", json!({"project_copy": true})));
    let waiting_id = w["id"].as_str().unwrap().to_string();
    svc.await_session(&waiting_id, "the wait", |v| !v["waiting_for"].is_null());

    // kill -9 mid-wait; the started session's folder is marked copying again.
    svc.kill9();
    mark(&started, "copying\n");
    svc.start_again();

    let v = svc.session(&waiting_id);
    assert_eq!(v["state"], "pending", "{v}");
    assert_eq!(v["waiting_for"]["mark"], "missing", "{v}");
    land_project(&copy);
    mark(&copy, "ready\n");
    let record = svc.await_record(&copy, 1, Duration::from_secs(5));
    assert_eq!(names(&record), PROJECT_NAMES);

    // The started session resumes at once with the same native ID.
    let v = svc.session(&started_id);
    assert_eq!(v["state"], "idle", "{v}");
    assert_eq!(v["native_id"], first["native_id"]);
    let (status, v) = svc.post(
        &format!("/v1/sessions/{started_id}/relaunch"),
        json!({"mode": "resume"}),
    );
    assert_eq!(status, 200, "{v}");
    svc.await_session(&started_id, "the relaunch", |v| v["state"] != "pending");
    let t0 = Instant::now();
    svc.post(
        &format!("/v1/sessions/{started_id}/messages"),
        json!({"prompt": "again"}),
    );
    let second = svc.await_record(&started, 2, AT_ONCE);
    assert!(t0.elapsed() < AT_ONCE);
    assert_eq!(second["native_id"], first["native_id"]);
    let argv: Vec<&str> = second["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let resume = argv
        .iter()
        .position(|a| *a == "--resume")
        .expect("--resume");
    assert_eq!(json!(argv[resume + 1]), first["native_id"]);
}
