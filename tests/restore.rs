//! What a restart does to a session that had already started (what
//! docs/architecture.md says): it comes back idle with its native ID, not
//! through a relaunch; the turn that was running when Core died is not run
//! again, and what was queued runs at once as its next turn, resuming the
//! native session.

use std::time::Duration;

use room_kit::procs::{alive, pid_in, turn_processes};
use room_kit::{start_body, Service};
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// Far more than a turn of the fake harness needs, far less than a copy wait.
const AT_ONCE: Duration = Duration::from_secs(4);

#[test]
fn a_started_session_is_restored_idle_and_runs_its_queue_without_a_relaunch() {
    let mut svc = Service::start(ROOM_CORE, json!({}));
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

#[test]
fn after_a_kill_9_mid_turn_the_survivor_is_killed_before_the_next_turn_and_its_prompt_is_reported()
{
    // The supervision this machine chooses (a cgroup where it can), and
    // process groups, where survivors are found by pid, start time and marker.
    for mode in ["auto", "process_group"] {
        survivor_is_killed_first(mode);
    }
}

fn survivor_is_killed_first(mode: &str) {
    let mut svc = Service::start(ROOM_CORE, json!({ "supervision": mode }));
    let folder = svc.folder("code");
    std::fs::create_dir_all(&folder).unwrap();
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({"prompt": "run: echo $$ > tool.pid; sleep 600"}),
    ));
    let id = s["id"].as_str().unwrap().to_string();
    let harness = svc.await_record(&folder, 1, AT_ONCE)["pid"]
        .as_u64()
        .unwrap() as u32;
    let tool = pid_in(&folder.join("tool.pid"));
    svc.await_session(&id, "the turn to run", |v| v["state"] == "running");
    svc.kill9();
    // The turn outlives the service that started it...
    assert!(alive(harness) && alive(tool), "{harness} {tool}");

    svc.start_again();
    // ...until the restore kills it, before anything else runs.
    let v = svc.await_session(&id, "the survivor to be killed", |v| v["state"] == "idle");
    assert!(!alive(harness) && !alive(tool), "{harness} {tool}");
    assert!(turn_processes(&id).is_empty());
    assert_eq!(
        v["error"],
        "turn 1 was cut by room-core ending without stopping it; claude had begun prompt 1, which is not run again",
        "{v}"
    );
    // The next turn runs alone: the old one was gone when it started (a
    // zombie counts as gone: it runs nothing, and its new parent, init
    // here, may never reap it).
    let check = format!(
        "run: for p in {harness} {tool}; do s=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null | cut -d' ' -f1); [ -n \"$s\" ] && [ \"$s\" != Z ] && echo alive || echo gone; done"
    );
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({ "prompt": check }),
    );
    assert_eq!(status, 200, "{v}");
    svc.await_record(&folder, 2, AT_ONCE);
    let second = room_kit::wait_until("the check's output", AT_ONCE, || {
        svc.records_in(&folder)
            .get(1)
            .filter(|r| !r["tool"].is_null())
            .cloned()
    });
    assert_eq!(second["tool"]["stdout"], "gone\ngone\n", "{second}");
    assert_eq!(second["native_id"], svc.records_in(&folder)[0]["native_id"]);
    // The cut prompt was not run again.
    assert_eq!(svc.records_in(&folder).len(), 2);
    let ended: Vec<serde_json::Value> = room_kit::events::journal(&svc.state, &id)
        .into_iter()
        .filter(|e| e["kind"] == "turn_ended")
        .map(|e| e["data"].clone())
        .collect();
    assert_eq!(
        ended[0],
        json!({"turn": 1, "prompt": 1, "exit": null, "by": "restore", "usage": null})
    );
}

#[test]
fn a_record_in_the_format_before_the_session_machine_is_restored_and_rewritten() {
    let mut svc = Service::start(ROOM_CORE, json!({}));
    svc.stop();
    let folder = svc.folder("old");
    std::fs::create_dir_all(&folder).unwrap();
    let id = "cr_0123456789abcdef0123456789abcdef";
    let old = json!({
        "id": id,
        "workspace": "ws-old", "folder": folder, "harness": "claude",
        "kind": "thread", "parent": null, "shared_sandbox": false,
        "request_id": "req-old", "plan_only": false, "project_copy": false,
        "prompt": "first",
        "state": "running", "native_id": "native-old", "queue": ["queued"],
        "paused": false, "waiting_start": false, "agent_start_ms": 321,
        "error": null, "created_ms": 1700000000000u64, "in_flight": "first"
    });
    let path = put_record(&svc, id, &old);
    svc.start_again();
    // Started: the turn that ran is not run again; the queue runs, resuming.
    let record = svc.await_record(&folder, 1, AT_ONCE);
    assert_eq!(record["prompt"], "queued");
    assert_eq!(record["native_id"], "native-old");
    let v = svc.await_session(id, "the queued turn to end", |v| v["state"] == "idle");
    assert_eq!(v["agent_start_ms"], 321, "{v}");
    assert_eq!(v["created_ms"], 1700000000000u64, "{v}");
    // The file is in the new format now.
    let new: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(new["stage"], "started", "{new}");
    assert!(
        new.get("state").is_none() && new.get("waiting_start").is_none(),
        "{new}"
    );
    assert_eq!(new["request_id"], "req-old");
    // And a retry of its start still finds it.
    let (status, v) = svc.post(
        "/v1/sessions",
        json!({"workspace": "ws-old", "folder": folder, "harness": "claude",
               "request_id": "req-old", "prompt": "first"}),
    );
    assert_eq!((status, v["id"].as_str()), (200, Some(id)), "{v}");
}

/// Writes `record` as session `id`'s record in the (stopped) service's
/// state dir, as a run before this one left it; returns its path.
fn put_record(svc: &Service, id: &str, record: &serde_json::Value) -> std::path::PathBuf {
    let path = svc.state.join("sessions").join(format!("{id}.json"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, record.to_string()).unwrap();
    path
}

/// A `sleep` marked as turn 1 of session `id`: it stands for a spawn the
/// record never acknowledged. Returns it and a prompt that prints whether
/// it still runs (`alive`) or not (`gone`; a zombie counts as gone).
fn marked_survivor(id: &str) -> (std::process::Child, String) {
    let survivor = std::process::Command::new("sleep")
        .arg("600")
        .env("ROOM_CORE_TURN", format!("{id}-1"))
        .spawn()
        .unwrap();
    let pid = survivor.id();
    let check = format!(
        "run: s=$(sed 's/.*) //' /proc/{pid}/stat 2>/dev/null | cut -d' ' -f1); [ -n \"$s\" ] && [ \"$s\" != Z ] && echo alive || echo gone"
    );
    (survivor, check)
}

/// The check prompt ran in `folder` once the restart had SIGKILLed the
/// survivor. The survivor is killed here if that failed, so no `sleep`
/// outlives the test.
fn assert_killed_before_the_prompt_ran(
    svc: &Service,
    folder: &std::path::Path,
    mut survivor: std::process::Child,
) {
    let ran = room_kit::wait_until("the prompt's turn", AT_ONCE, || {
        svc.records_in(folder)
            .first()
            .filter(|r| !r["tool"].is_null())
            .cloned()
    });
    let gone = survivor.try_wait().unwrap();
    if gone.is_none() {
        let _ = survivor.kill();
        let _ = survivor.wait();
    }
    assert_eq!(ran["tool"]["stdout"], "gone\n", "{ran}");
    let status = gone.expect("the survivor was reaped after it was killed");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "{status:?}"
    );
}

#[test]
fn a_spawn_whose_record_names_only_its_key_is_killed_before_its_session_runs_again() {
    // A kill -9 between the record that names a turn's key and the one
    // that names its process: the process was never acknowledged.
    let mut svc = Service::start(ROOM_CORE, json!({}));
    svc.stop();
    let folder = svc.folder("planned");
    std::fs::create_dir_all(&folder).unwrap();
    let id = "cr_fedcba9876543210fedcba9876543210";
    let (survivor, check) = marked_survivor(id);
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let record = json!({
        "id": id, "workspace": "ws-planned", "folder": folder, "harness": "codex",
        "kind": "thread", "parent": null, "shared_sandbox": false, "request_id": null,
        "plan_only": false, "project_copy": false, "prompt": null,
        "stage": "started", "native_id": null, "queue": [], "paused": false,
        "turn": {"seq": 1, "prompt": {"id": 1, "text": check}, "launch": false,
                 "process": null, "delivered": false, "reported": false, "ending": null},
        "error": null, "next_prompt": 2, "next_turn": 2,
        "created_ms": 1700000000000u64, "agent_start_ms": null,
        "turn_process": {"key": format!("{id}-1"), "boot_id": boot.trim()}
    });
    put_record(&svc, id, &record);
    svc.start_again();
    // The prompt never reached a harness: it runs now, in a turn of its
    // own, once the unacknowledged process is gone.
    assert_killed_before_the_prompt_ran(&svc, &folder, survivor);
}

#[test]
fn a_first_turn_known_only_from_its_spawn_note_is_killed_before_its_session_runs_again() {
    // A kill -9 between a launch's first spawn (noted, not yet on record)
    // and the record that acknowledges it; the record still says the start
    // has not started.
    let mut svc = Service::start(ROOM_CORE, json!({}));
    svc.stop();
    let folder = svc.folder("noted");
    std::fs::create_dir_all(&folder).unwrap();
    let id = "cr_5a0e5a0e5a0e5a0e5a0e5a0e5a0e5a0e";
    let (survivor, check) = marked_survivor(id);
    let record = json!({
        "id": id, "workspace": "ws-noted", "folder": folder, "harness": "codex",
        "kind": "thread", "parent": null, "shared_sandbox": false, "request_id": null,
        "plan_only": false, "project_copy": false, "prompt": check,
        "stage": "starting", "native_id": null,
        "queue": [{"id": 1, "text": check}], "paused": false, "turn": null,
        "error": null, "next_prompt": 2, "next_turn": 1,
        "created_ms": 1700000000000u64, "agent_start_ms": null
    });
    let path = put_record(&svc, id, &record);
    let note = path.with_file_name(format!("{id}.spawning"));
    std::fs::write(&note, format!("{id}-1")).unwrap();
    svc.start_again();
    assert_killed_before_the_prompt_ran(&svc, &folder, survivor);
    assert!(!note.exists(), "the note is read once");
}

#[test]
fn a_second_record_of_a_session_under_another_name_is_skipped_and_said() {
    let mut svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("once");
    let s = svc.start_session(start_body(&folder, "claude", json!({})));
    let id = s["id"].as_str().unwrap().to_string();
    svc.await_session(&id, "the first turn to end", |v| v["state"] == "idle");
    svc.stop();
    let sessions = svc.state.join("sessions");
    let copy = sessions.join("copy-of-a-record.json");
    std::fs::copy(sessions.join(format!("{id}.json")), &copy).unwrap();
    svc.start_again();
    let (status, list) = svc.get("/v1/sessions");
    assert_eq!(status, 200, "{list}");
    let listed = list["sessions"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{list}");
    assert_eq!(listed[0]["id"], id.as_str());
    let said = format!(
        "skipping {}: it holds session {id}, whose record is {id}.json",
        copy.display()
    );
    assert!(svc.log().contains(&said), "the log says {said:?}");
}
