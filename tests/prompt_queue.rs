//! The prompt queue from outside, with the fake claude: prompts run in the
//! order they were accepted whatever way they took (steered, steered and
//! handed back, queued), each answer says truly where its prompt went, the
//! queue holds at most `max_queued_prompts`, and a queued message is an
//! append to the session's prompt log that a kill -9 and a restart read
//! back in order.

use std::collections::BTreeSet;
use std::time::Duration;

use room_kit::events::{all_events, kinds};
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// The number a prompt's text starts with (`"17 …"`).
fn number(text: &Value) -> u64 {
    let text = text.as_str().unwrap_or_default();
    text.split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Waits (at most `limit`) until session `id` is idle with nothing queued.
fn await_drained(svc: &Service, id: &str, limit: Duration) {
    wait_until("idle with an empty queue", limit, || {
        let v = svc.session(id);
        (v["state"] == "idle" && v["queue"]["length"] == 0).then_some(())
    });
}

/// A turn that stops reading its stdin while 300 steers of 2 KiB come: the
/// pipe and the stdin's bound of waiting lines fill, and the steers that do not fit
/// are handed back. Every answer says where its prompt went (`steered`
/// only for one the harness then read), and the prompts run in the order
/// they were accepted: the steers the turn got, then the others as turns
/// of their own, oldest first.
#[test]
fn steers_the_harness_could_not_take_are_queued_in_order_and_say_so() {
    let svc = Service::start(ROOM_CORE, json!({"linger_ms": 30_000}));
    let folder = svc.folder("deaf");
    let listening = svc.folder("deaf-listening");
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({"prompt": format!("deaf-until: {}", listening.display())}),
    ));
    let id = id_of(&s);
    svc.await_session(&id, "its first turn named", |v| {
        v["native_id"].is_string() && v["state"] == "running"
    });
    let pad = "x".repeat(2048);
    let mut answers = Vec::new();
    for n in 0..300 {
        let (status, v) = svc.post(
            &format!("/v1/sessions/{id}/messages"),
            json!({"prompt": format!("{n} {pad}"), "deliver": "steer"}),
        );
        assert_eq!(status, 200, "{v}");
        answers.push((n, v["prompt"].as_u64().unwrap(), v["delivered"].clone()));
    }
    std::fs::create_dir_all(&listening).unwrap();
    let limit = Duration::from_secs(120);
    await_drained(&svc, &id, limit);

    let steered: BTreeSet<u64> = answers
        .iter()
        .filter(|(_, _, d)| d == "steered")
        .map(|(n, _, _)| *n)
        .collect();
    let queued: BTreeSet<u64> = answers
        .iter()
        .filter(|(_, _, d)| d == "queued")
        .map(|(n, _, _)| *n)
        .collect();
    assert_eq!(steered.len() + queued.len(), 300, "{answers:?}");
    assert!(!queued.is_empty(), "the writer's bound was never reached");
    assert!(!steered.is_empty(), "nothing reached the turn");
    // Answers are in the order the prompts were accepted, by number too.
    assert!(answers.windows(2).all(|w| w[0].1 < w[1].1));

    // What the harness read, in order: the steers its first turn got, then
    // each later turn's prompt (the first turn, steered, does not linger:
    // they run in a new process, warm follow-ups after its first).
    let records = svc.records_in(&folder);
    let got_steers: Vec<u64> = records[0]["steers"]
        .as_array()
        .unwrap()
        .iter()
        .map(number)
        .collect();
    let later: Vec<u64> = records
        .iter()
        .flat_map(|r| r["prompts"].as_array().cloned().unwrap_or_default())
        .skip(1)
        .map(|p| number(&p))
        .collect();
    assert_eq!(
        got_steers.iter().copied().collect::<BTreeSet<_>>(),
        steered,
        "`steered` exactly for what the turn read"
    );
    assert_eq!(
        later.iter().copied().collect::<BTreeSet<_>>(),
        queued,
        "`queued` exactly for what ran as a turn"
    );
    let order: Vec<u64> = got_steers.iter().chain(&later).copied().collect();
    let inversions = order.windows(2).filter(|w| w[0] >= w[1]).count();
    assert_eq!(inversions, 0, "prompts ran out of order: {order:?}");

    let events = all_events(&svc, &id, 1024);
    let k = kinds(&events);
    assert!(k.iter().any(|k| k == "prompt_requeued"), "{k:?}");
}

/// A harness that exits without reading what waits for its stdin: every
/// steer still waiting is handed back once it is gone, and they run as
/// turns of their own in the order they were accepted, not newest first.
#[test]
fn steers_a_dead_harness_never_read_run_later_in_the_order_they_were_accepted() {
    let svc = Service::start(ROOM_CORE, json!({"linger_ms": 30_000}));
    let folder = svc.folder("deaf-exit");
    let gone = svc.folder("deaf-exit-now");
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({"prompt": format!("deaf-until: {} exit", gone.display())}),
    ));
    let id = id_of(&s);
    svc.await_session(&id, "its first turn named", |v| {
        v["native_id"].is_string() && v["state"] == "running"
    });
    let pad = "x".repeat(2048);
    let mut steered = Vec::new();
    for n in 0..60 {
        let (status, v) = svc.post(
            &format!("/v1/sessions/{id}/messages"),
            json!({"prompt": format!("{n} {pad}"), "deliver": "steer"}),
        );
        assert_eq!((status, &v["delivered"]), (200, &json!("steered")), "{v}");
        steered.push(v["prompt"].as_u64().unwrap());
    }
    std::fs::create_dir_all(&gone).unwrap();
    await_drained(&svc, &id, Duration::from_secs(60));
    let requeued: Vec<u64> = all_events(&svc, &id, 1024)
        .into_iter()
        .filter(|e| e["kind"] == "prompt_requeued")
        .map(|e| e["data"]["prompt"].as_u64().unwrap())
        .collect();
    assert!(requeued.len() >= 2, "{requeued:?}");
    let ran: Vec<u64> = svc
        .records_in(&folder)
        .iter()
        .skip(1)
        .flat_map(|r| r["prompts"].as_array().cloned().unwrap_or_default())
        .map(|p| number(&p))
        .collect();
    assert_eq!(
        ran.len(),
        requeued.len(),
        "each handed back one ran once: {ran:?}"
    );
    assert!(ran.windows(2).all(|w| w[0] < w[1]), "out of order: {ran:?}");
}

#[test]
fn a_full_queue_answers_429_with_how_many_wait_and_queues_nothing() {
    let svc = Service::start(ROOM_CORE, json!({"max_queued_prompts": 3}));
    let folder = svc.folder("full");
    let s = svc.start_session(start_body(&folder, "claude", json!({})));
    let id = id_of(&s);
    svc.await_session(&id, "idle", |v| v["state"] == "idle");
    let (status, _) = svc.post(&format!("/v1/sessions/{id}/stop"), json!({}));
    assert_eq!(status, 200);
    for n in 1..=3 {
        let (status, v) = svc.post(
            &format!("/v1/sessions/{id}/messages"),
            json!({"prompt": format!("{n}")}),
        );
        assert_eq!((status, &v["delivered"]), (200, &json!("queued")), "{v}");
    }
    for deliver in ["queue", "steer"] {
        let (status, v) = svc.post(
            &format!("/v1/sessions/{id}/messages"),
            json!({"prompt": "4", "deliver": deliver}),
        );
        assert_eq!(status, 429, "{v}");
        assert_eq!(v["code"], "queue_full");
        let error = v["error"].as_str().unwrap();
        assert!(
            error.contains("has 3 prompts waiting") && error.contains("max_queued_prompts"),
            "{error}"
        );
    }
    assert_eq!(svc.session(&id)["queue"]["length"], 3);
    let queued: Vec<Value> = all_events(&svc, &id, 100)
        .into_iter()
        .filter(|e| e["kind"] == "prompt_queued")
        .map(|e| e["data"]["text"].clone())
        .collect();
    assert_eq!(
        queued[1..],
        [json!("1"), json!("2"), json!("3")],
        "nothing refused was journalled"
    );
}

/// A queued message writes its prompt to the prompt log and leaves the
/// session's record as it was; a kill -9 and a restart read the two back
/// and run every prompt once, in order.
#[test]
fn queued_prompts_are_appended_and_run_in_order_after_a_kill_9() {
    let mut svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("logged");
    let s = svc.start_session(start_body(&folder, "claude", json!({"prompt": "0 first"})));
    let id = id_of(&s);
    svc.await_session(&id, "idle", |v| v["state"] == "idle");
    let (status, _) = svc.post(&format!("/v1/sessions/{id}/stop"), json!({}));
    assert_eq!(status, 200);
    let state = svc.config()["state_dir"].as_str().unwrap().to_string();
    let record_path = std::path::Path::new(&state).join(format!("sessions/{id}.json"));
    let log_path = std::path::Path::new(&state).join(format!("sessions/{id}.prompts"));
    let record_before = std::fs::read(&record_path).unwrap();
    for n in 1..=5 {
        let (status, v) = svc.post(
            &format!("/v1/sessions/{id}/messages"),
            json!({"prompt": format!("{n} queued-text-{n}")}),
        );
        assert_eq!(status, 200, "{v}");
    }
    assert_eq!(
        std::fs::read(&record_path).unwrap(),
        record_before,
        "a queued message rewrites no record"
    );
    let log = std::fs::read_to_string(&log_path).unwrap();
    for n in 1..=5 {
        assert!(log.contains(&format!("queued-text-{n}")), "{log}");
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&log_path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "prompts are private");

    svc.kill9();
    svc.start_again();
    let v = svc.session(&id);
    assert_eq!(v["queue"], json!({"length": 5, "paused": true}), "{v}");
    let (status, _) = svc.post(&format!("/v1/sessions/{id}/resume"), json!({}));
    assert_eq!(status, 200);
    await_drained(&svc, &id, Duration::from_secs(30));
    let ran: Vec<u64> = svc
        .records_in(&folder)
        .iter()
        .flat_map(|r| r["prompts"].as_array().cloned().unwrap_or_default())
        .map(|p| number(&p))
        .collect();
    assert_eq!(ran, [0, 1, 2, 3, 4, 5], "each once, in order");
    // Nothing waits: the record names no prompt, and the log is emptied.
    let record: Value = serde_json::from_slice(&std::fs::read(&record_path).unwrap()).unwrap();
    assert_eq!(record["queued"], json!([]), "{record}");
    assert!(record.get("queue").is_none(), "{record}");
    assert_eq!(std::fs::metadata(&log_path).map_or(0, |m| m.len()), 0);
}
