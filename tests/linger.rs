//! Warm follow-ups with the fake claude and codex: a process outlives its turn by
//! `linger_ms`, a message within it runs in that process, and after it the
//! process is gone and the next message spawns and resumes.

use std::time::Duration;

use room_kit::events::{all_events, turn_ended};
use room_kit::procs::{alive, exited_within, turn_processes};
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

fn ended(svc: &Service, id: &str) -> Vec<Value> {
    all_events(svc, id, 1024)
        .into_iter()
        .filter(turn_ended)
        .map(|e| e["data"].clone())
        .collect()
}

/// Waits until session `id` has journalled `n` turn ends and is idle.
fn await_ended(svc: &Service, id: &str, n: usize) -> Vec<Value> {
    wait_until(
        &format!("{n} turns of {id} ended"),
        Duration::from_secs(10),
        || {
            let e = ended(svc, id);
            (e.len() >= n && svc.session(id)["state"] == "idle").then_some(e)
        },
    )
}

#[test]
fn a_claude_follow_up_within_the_linger_spawns_nothing_and_one_after_it_resumes() {
    follow_ups("claude");
}

#[test]
fn a_codex_follow_up_within_the_linger_spawns_nothing_and_one_after_it_resumes() {
    follow_ups("codex");
}

/// A follow-up within the linger runs in the process of the turn before;
/// one after it spawns a process that resumes the native session.
fn follow_ups(harness: &str) {
    let svc = Service::start(ROOM_CORE, json!({"linger_ms": 3000}));
    let folder = svc.folder("warm");
    let s = svc.start_session(start_body(&folder, harness, json!({"prompt": "first"})));
    let id = s["id"].as_str().unwrap().to_string();
    let first = await_ended(&svc, &id, 1);
    // Its end is journalled at once; its process waits.
    assert_eq!(
        (&first[0]["exit"], &first[0]["by"]),
        (&Value::Null, &Value::Null),
        "{first:?}"
    );
    let record = svc.await_record(&folder, 1, Duration::from_secs(10));
    let pid = record["pid"].as_u64().unwrap() as u32;
    assert!(alive(pid), "the process lingers");

    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "second"}),
    );
    assert_eq!(status, 200, "{v}");
    let both = await_ended(&svc, &id, 2);
    assert_eq!(both[1]["turn"], 2);
    let records = svc.records_in(&folder);
    assert_eq!(records.len(), 1, "no second process: {records:?}");
    let record = wait_until("the second prompt", Duration::from_secs(5), || {
        svc.records_in(&folder)
            .into_iter()
            .find(|r| r["prompts"] == json!(["first", "second"]))
    });
    assert_eq!(record["pid"], pid, "the same process");
    assert!(alive(pid), "it lingers again after the second turn");

    // After the linger it exits by itself, and nothing of the session runs.
    assert!(
        exited_within(pid, Duration::from_secs(10)).is_some(),
        "it outlived its linger"
    );
    assert_eq!(turn_processes(&id), Vec::<u32>::new());
    assert_eq!(ended(&svc, &id).len(), 2, "its exit journals no turn");
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "third"}),
    );
    assert_eq!(status, 200, "{v}");
    let third = svc.await_record(&folder, 2, Duration::from_secs(10));
    assert_ne!(third["pid"], pid);
    let native = svc.session(&id)["native_id"].clone();
    assert_eq!(third["native_id"], native, "{third}");
    if harness == "claude" {
        let argv: Vec<&str> = third["argv"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            argv.windows(2)
                .any(|w| w[0] == "--resume" && native == json!(w[1])),
            "{argv:?}"
        );
    } else {
        assert_eq!(third["thread"]["method"], "thread/resume", "{third}");
    }
}

/// A session in `name`'s folder whose first turn is done and whose
/// process lingers: its ID and that process.
fn lingering(svc: &Service, name: &str) -> (String, u32) {
    let folder = svc.folder(name);
    let s = svc.start_session(start_body(&folder, "claude", json!({"prompt": "one"})));
    let id = s["id"].as_str().unwrap().to_string();
    await_ended(svc, &id, 1);
    let pid = svc.await_record(&folder, 1, Duration::from_secs(10))["pid"]
        .as_u64()
        .unwrap() as u32;
    assert!(alive(pid), "it lingers");
    (id, pid)
}

#[test]
fn stop_and_close_end_a_lingering_process_before_they_answer() {
    let svc = Service::start(ROOM_CORE, json!({"linger_ms": 60_000}));
    for end in ["stop", "close"] {
        let (id, pid) = lingering(&svc, end);
        let (status, v) = svc.post(&format!("/v1/sessions/{id}/{end}"), json!({}));
        assert_eq!(status, 200, "{v}");
        assert!(!alive(pid), "{end} answered with the process still there");
        assert_eq!(turn_processes(&id), Vec::<u32>::new());
        // The turn had ended already: nothing more is said of it.
        assert_eq!(ended(&svc, &id).len(), 1);
    }
    // And an interrupt finds nothing to interrupt.
    let (id, pid) = lingering(&svc, "interrupt");
    let before = all_events(&svc, &id, 1024).len();
    let (status, _) = svc.post(&format!("/v1/sessions/{id}/interrupt"), json!({}));
    assert_eq!(status, 200);
    assert!(alive(pid), "an interrupt ends no lingering process");
    assert_eq!(all_events(&svc, &id, 1024).len(), before);
}

#[test]
fn after_a_kill_9_a_warm_turn_and_its_process_are_killed_and_said_cut() {
    let mut svc = Service::start(ROOM_CORE, json!({"linger_ms": 60_000}));
    let (id, pid) = lingering(&svc, "crash");
    // The warm turn runs in the lingering process.
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "sleep: 60"}),
    );
    assert_eq!(status, 200, "{v}");
    // On record as begun (its harness named the session for turn 2), so
    // the restore does not run its prompt again.
    let path = svc.state.join("sessions").join(format!("{id}.json"));
    wait_until("turn 2 on record as begun", Duration::from_secs(10), || {
        let record: Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
        (record["turn"]["seq"] == 2 && record["turn"]["reported"] == true).then_some(())
    });
    svc.kill9();
    assert!(alive(pid), "a kill -9 of the service leaves it");
    svc.start_again();
    svc.await_listen();
    assert!(
        exited_within(pid, Duration::from_secs(10)).is_some(),
        "the restore killed it"
    );
    assert_eq!(turn_processes(&id), Vec::<u32>::new());
    let view = svc.await_session(&id, "idle", |v| v["state"] == "idle");
    let ended = ended(&svc, &id);
    assert_eq!(ended.last().unwrap()["turn"], 2, "{ended:?}");
    assert_eq!(ended.last().unwrap()["by"], "restore");
    assert!(
        view["error"]
            .as_str()
            .unwrap()
            .starts_with("turn 2 was cut"),
        "{view}"
    );
}
