//! Warm follow-ups with the fake claude and codex: a process outlives its turn by
//! `linger_ms`, a message within it runs in that process, and after it the
//! process is gone and the next message spawns and resumes.

use std::time::Duration;

use room_kit::events::{all_events, await_turns_ended, turn_ended};
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

/// Waits until session `id` has journalled `n` turn ends and is idle;
/// their data.
fn await_ended(svc: &Service, id: &str, n: usize) -> Vec<Value> {
    await_turns_ended(svc, id, n)
        .into_iter()
        .map(|e| e["data"].clone())
        .collect()
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
    // The turn's start is journalled before anything its process printed
    // for it, though the prompt went to the process before the start was
    // durable.
    let events = all_events(&svc, &id, 1024);
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    let first_end = kinds.iter().position(|k| *k == "turn_ended").unwrap();
    let second_start = kinds.iter().rposition(|k| *k == "turn_started").unwrap();
    assert_eq!(events[second_start]["data"]["turn"], 2, "{kinds:?}");
    assert!(
        !kinds[first_end..second_start].contains(&"harness"),
        "{kinds:?}"
    );
    assert!(kinds[second_start..].contains(&"harness"), "{kinds:?}");
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
    // Its folder recorded after it: nothing more is journalled of it.
    room_kit::events::await_turn_diff(svc, &id, 1);
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
    // Its harness printed for turn 2 (served, so durable): the restore
    // does not run its prompt again, though no record was written since
    // turn 1 (a warm follow-up writes only its prompt's log line).
    wait_until("a line of turn 2", Duration::from_secs(10), || {
        let events = all_events(&svc, &id, 1024);
        let started = events
            .iter()
            .position(|e| e["kind"] == "turn_started" && e["data"]["turn"] == 2)?;
        events[started..]
            .iter()
            .any(|e| e["kind"] == "harness")
            .then_some(())
    });
    assert_eq!(on_record(&svc, &id)["turn"]["seq"], 1);
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

/// Stops process `pid` (SIGSTOP): it reads nothing and prints nothing.
fn stop_process(pid: u32) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGSTOP,
    )
    .unwrap();
}

/// The session's record as the service last wrote it.
fn on_record(svc: &Service, id: &str) -> Value {
    let path = svc.state.join("sessions").join(format!("{id}.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn after_a_kill_9_a_warm_prompt_its_harness_never_began_runs_once_in_a_new_process() {
    let mut svc = Service::start(ROOM_CORE, json!({"linger_ms": 60_000}));
    let (id, pid) = lingering(&svc, "crash-silent");
    let folder = svc.folder("crash-silent");
    // Stopped, it reads nothing of the follow-up and prints nothing.
    stop_process(pid);
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "second"}),
    );
    assert_eq!(status, 200, "{v}");
    // Acknowledged with the prompt in its log; the journal says turn 2
    // started once its folder is recorded, with the record still the one
    // of turn 1.
    wait_until("turn 2 started", Duration::from_secs(10), || {
        all_events(&svc, &id, 1024)
            .iter()
            .any(|e| e["kind"] == "turn_started" && e["data"]["turn"] == 2)
            .then_some(())
    });
    assert_eq!(on_record(&svc, &id)["turn"]["seq"], 1);
    let log =
        std::fs::read_to_string(svc.state.join("sessions").join(format!("{id}.prompts"))).unwrap();
    assert!(log.contains(r#""text":"second""#), "{log}");
    svc.kill9();
    svc.start_again();
    svc.await_listen();
    assert!(
        exited_within(pid, Duration::from_secs(10)).is_some(),
        "the restore killed it"
    );
    let ended = await_ended(&svc, &id, 3);
    assert_eq!(
        (&ended[1]["turn"], &ended[1]["by"]),
        (&json!(2), &json!("restore")),
        "{ended:?}"
    );
    assert_eq!(
        (&ended[2]["turn"], &ended[2]["by"]),
        (&json!(3), &Value::Null),
        "{ended:?}"
    );
    let events = all_events(&svc, &id, 1024);
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "prompt_requeued" && e["data"] == json!({"prompt": 2, "turn": 2})),
        "{events:?}"
    );
    // Run once, in a new process that resumed the session.
    let records = svc.records_in(&folder);
    assert_eq!(records.len(), 2, "{records:?}");
    assert_eq!(records[1]["prompts"], json!(["second"]));
    assert_eq!(records[1]["native_id"], svc.session(&id)["native_id"]);
}

#[test]
fn a_stopped_claude_follow_up_is_ended_and_its_prompt_runs_once_in_a_new_process() {
    stopped_follow_up("claude");
}

#[test]
fn a_stopped_codex_follow_up_is_ended_and_its_prompt_runs_once_in_a_new_process() {
    stopped_follow_up("codex");
}

/// A lingering process stopped with SIGSTOP reads nothing of its warm
/// follow-up: at `startup_timeout_ms` it is ended (nothing of it left), an
/// `unresponsive` event says so, and the prompt runs once in a new process
/// that resumes the session.
fn stopped_follow_up(harness: &str) {
    let svc = Service::start(
        ROOM_CORE,
        json!({"linger_ms": 60_000, "startup_timeout_ms": 1500, "kill_grace_ms": 500}),
    );
    let folder = svc.folder("stopped");
    let s = svc.start_session(start_body(&folder, harness, json!({"prompt": "first"})));
    let id = s["id"].as_str().unwrap().to_string();
    await_ended(&svc, &id, 1);
    let pid = svc.await_record(&folder, 1, Duration::from_secs(10))["pid"]
        .as_u64()
        .unwrap() as u32;
    stop_process(pid);
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "second"}),
    );
    assert_eq!(status, 200, "{v}");
    let ended = await_ended(&svc, &id, 3);
    assert!(!alive(pid), "the stopped process is gone");
    let events = all_events(&svc, &id, 1024);
    let unresponsive: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "unresponsive")
        .map(|e| &e["data"])
        .collect();
    assert_eq!(
        unresponsive,
        [&json!({"turn": 2, "prompt": 2, "within_ms": 1500, "retried": true})]
    );
    assert_eq!(ended[1]["turn"], 2);
    assert_eq!(ended[1]["by"], "no_sign_of_life");
    assert_eq!(
        (&ended[2]["turn"], &ended[2]["by"]),
        (&json!(3), &Value::Null)
    );
    let view = svc.session(&id);
    assert_eq!(view["error"], Value::Null, "{view}");
    // Once, in a new process that resumed the session.
    let records = svc.records_in(&folder);
    assert_eq!(records.len(), 2, "{records:?}");
    assert_eq!(records[0]["prompts"], json!(["first"]));
    assert_eq!(records[1]["prompts"], json!(["second"]));
    assert_eq!(records[1]["native_id"], view["native_id"]);
}

/// A follow-up whose harness never begins it, in its lingering process and
/// again in a new one, fails with an error that says so; nothing of either
/// is left and the session is idle.
#[test]
fn a_follow_up_with_no_sign_of_life_twice_fails_with_a_clear_error() {
    let svc = Service::start(
        ROOM_CORE,
        json!({"linger_ms": 60_000, "startup_timeout_ms": 1500, "kill_grace_ms": 500}),
    );
    let (id, _) = lingering(&svc, "silent-twice");
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "silent: 30"}),
    );
    assert_eq!(status, 200, "{v}");
    let ended = await_ended(&svc, &id, 3);
    assert_eq!(ended[2]["by"], "no_sign_of_life");
    let events = all_events(&svc, &id, 1024);
    let retried: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "unresponsive")
        .map(|e| &e["data"]["retried"])
        .collect();
    assert_eq!(retried, [&json!(true), &json!(false)]);
    let failed = events
        .iter()
        .find(|e| e["kind"] == "prompt_failed")
        .expect("the prompt failed");
    let error = "claude showed no sign of life within 1.5 s of getting prompt 2, twice (the second time in turn 3, a new process): the prompt was not run";
    assert_eq!(failed["data"], json!({"prompt": 2, "error": error}));
    assert_eq!(svc.session(&id)["error"], error);
    assert_eq!(turn_processes(&id), Vec::<u32>::new());
}
