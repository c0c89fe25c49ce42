//! Launch and turn lifecycle beyond seed 000's scenarios: the copy limit,
//! service stop, startup permits and a harness that cannot run.

use std::time::{Duration, Instant};

use room_kit::events::journal;
use room_kit::procs::alive;
use room_kit::*;
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

#[test]
fn a_stuck_copy_starts_the_harness_at_its_limit() {
    let svc = Service::start(ROOM_CORE, json!({"copy_wait_ms": 2500}));
    let folder = svc.folder("stuck");
    mark(&folder, "copying\n");
    let t0 = Instant::now();
    let s = svc.start_session(start_body(&folder, "claude", json!({"project_copy": true})));
    let id = s["id"].as_str().unwrap();
    // The 201 shows what the machine knows at once; the first read of the
    // status file follows on the event pool.
    let v = svc.await_session(id, "the wait", |v| !v["waiting_for"].is_null());
    let until = v["waiting_for"]["until_ms"].as_u64().unwrap();
    let since = v["waiting_for"]["since_ms"].as_u64().unwrap();
    assert_eq!(until - since, 2500);
    let record = svc.await_record(&folder, 1, Duration::from_secs(5));
    let waited = t0.elapsed();
    assert!(waited >= Duration::from_millis(2400), "{waited:?}");
    assert!(record["started_ms"].as_u64().unwrap() >= until);
    // agent_start measures harness startup only, never the wait.
    let v = svc.await_session(id, "started", |v| !v["agent_start_ms"].is_null());
    assert!(v["agent_start_ms"].as_u64().unwrap() < 2000, "{v}");
}

#[test]
fn service_stop_ends_the_wait_and_the_start_waits_again() {
    let mut svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("copy");
    let s = svc.start_session(start_body(&folder, "codex", json!({"project_copy": true})));
    let id = s["id"].as_str().unwrap().to_string();
    let t0 = Instant::now();
    svc.stop();
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "stop took {:?}",
        t0.elapsed()
    );
    assert!(svc.records().is_empty());
    svc.start_again();
    let v = svc.session(&id);
    assert_eq!(v["state"], "pending");
    assert_eq!(v["waiting_for"]["mark"], "missing");
    land_project(&folder);
    mark(&folder, "ready\n");
    let record = svc.await_record(&folder, 1, Duration::from_secs(5));
    assert_eq!(names(&record), PROJECT_NAMES);
}

#[test]
fn a_single_startup_permit_is_handed_from_start_to_start() {
    let svc = Service::start(ROOM_CORE, json!({"startup_permits": 1}));
    let folders: Vec<_> = (0..3).map(|n| svc.folder(&format!("blank-{n}"))).collect();
    for f in &folders {
        svc.start_session(start_body(f, "claude", json!({})));
    }
    for f in &folders {
        svc.await_record(f, 1, Duration::from_secs(10));
    }
}

#[test]
fn a_harness_that_cannot_run_fails_the_session() {
    let svc = Service::start(ROOM_CORE, json!({"codex_program": "/nonexistent/codex"}));
    let folder = svc.folder("code");
    let s = svc.start_session(start_body(&folder, "codex", json!({})));
    let v = svc.await_session(s["id"].as_str().unwrap(), "failure", |v| {
        v["state"] == "failed"
    });
    assert_eq!(
        v["error"],
        "codex could not be started: codex is not installed: codex_program in the config names /nonexistent/codex, which does not exist; its prompt stays queued for a relaunch"
    );
    assert_eq!(v["queue"]["length"], 1, "{v}");
    // The permit came back: another start still runs.
    let other = svc.folder("other");
    svc.start_session(start_body(&other, "claude", json!({})));
    svc.await_record(&other, 1, Duration::from_secs(5));
}

#[test]
fn relaunch_restart_kills_the_turn_and_resumes_the_native_session() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("code");
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({"prompt": "sleep: 30"}),
    ));
    let id = s["id"].as_str().unwrap();
    let first = svc.await_record(&folder, 1, Duration::from_secs(5));
    svc.await_session(id, "native ID", |v| !v["native_id"].is_null());
    svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "after"}),
    );
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/relaunch"),
        json!({"mode": "restart"}),
    );
    assert_eq!(status, 200, "{v}");
    let second = svc.await_record(&folder, 2, Duration::from_secs(5));
    assert_eq!(second["prompt"], "after");
    assert_eq!(second["native_id"], first["native_id"]);
    let pid = first["pid"].as_i64().unwrap() as i32;
    wait_until("the first turn to die", Duration::from_secs(5), || {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
            .is_err()
            .then_some(())
    });
}

#[test]
fn the_watch_wakes_a_waiting_start_without_waiting_for_a_poll() {
    // Polls a minute apart: only the inotify watch can start it in time.
    let svc = Service::start(ROOM_CORE, json!({"poll_ms": 60_000}));
    let folder = svc.folder("copy");
    std::fs::create_dir_all(svc.folder("")).unwrap();
    let s = svc.start_session(start_body(&folder, "codex", json!({"project_copy": true})));
    let id = s["id"].as_str().unwrap();
    land_project(&folder);
    mark(&folder, "copying\n");
    svc.await_session(id, "the copying mark", |v| {
        v["waiting_for"]["mark"] == "copying"
    });
    let t0 = Instant::now();
    mark(&folder, "ready\n");
    let record = svc.await_record(&folder, 1, Duration::from_secs(5));
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert_eq!(names(&record), PROJECT_NAMES);
}

#[test]
fn a_first_turn_cut_off_before_its_harness_reported_in_keeps_its_prompt() {
    use std::os::unix::fs::PermissionsExt;
    // A claude that, while `hold` exists, hangs before its first event (its
    // version, which the service asks at start, it says at once).
    let root = temp_root();
    let fake = root.join("slow-claude");
    let real = fixtures_dir().join("fake-claude");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\ncase \"$1\" in --version) exec {} \"$@\";; esac\nd=$(dirname \"$0\")\nif [ -e \"$d/hold\" ]; then echo $$ > \"$d/held.tmp\"; mv \"$d/held.tmp\" \"$d/held.pid\"; exec sleep 30; fi\nexec {} \"$@\"\n",
            real.display(),
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(root.join("hold"), "").unwrap();

    let mut svc = Service::start(ROOM_CORE, json!({"claude_program": fake}));
    let folder = svc.folder("code");
    let s = svc.start_session(start_body(&folder, "claude", json!({"prompt": "first"})));
    let id = s["id"].as_str().unwrap().to_string();
    let held = wait_until("the held harness", Duration::from_secs(5), || {
        std::fs::read_to_string(root.join("held.pid")).ok()
    });
    assert_eq!(svc.session(&id)["state"], "pending");
    svc.kill9();
    let held: u32 = held.trim().parse().unwrap();
    assert!(alive(held), "the held harness outlives the killed service");
    std::fs::remove_file(root.join("hold")).unwrap();

    svc.start_again();
    // The restore kills it first, and its prompt, which it never began,
    // runs again in a new first turn.
    let record = svc.await_record(&folder, 1, Duration::from_secs(5));
    assert!(!alive(held), "the held harness survived the restore");
    assert_eq!(record["prompt"], "first");
    let v = svc.await_session(&id, "the start", |v| v["state"] == "idle");
    assert_eq!(v["native_id"], record["native_id"], "{v}");
    let cut: Vec<serde_json::Value> = journal(&svc.state, &id)
        .into_iter()
        .filter(|e| e["kind"] == "error")
        .map(|e| e["data"]["message"].clone())
        .collect();
    assert_eq!(
        cut,
        [json!("turn 1 was cut by room-core ending without stopping it before claude reported in; prompt 1 is queued again")]
    );
    drop(svc);
    let _ = std::fs::remove_dir_all(&root);
}
