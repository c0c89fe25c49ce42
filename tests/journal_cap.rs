//! A session's journal caps against the real binary: a harness that floods
//! its stdout fills the journal to its cap, its turn is ended with the
//! documented error, the rest of its output is read and dropped (it is
//! never blocked), the service's memory stays bounded, and the journal is
//! still served by pages and the stream. A later turn of the full session
//! ends at its first output.

use std::time::Duration;

use room_kit::events::{all_events, journal, turn_ended};
use room_kit::sse::Stream;
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// The cap the flood tests set: a few hundred KiB.
const CAP: u64 = 384 << 10;

/// What room-core's own events may add past the cap (an error, a turn's
/// end, states, a queued prompt, a resume, a turn's start).
const MARGIN: u64 = 8 << 10;

/// The service's resident memory in KiB (`VmRSS` in /proc/PID/status).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

fn journal_len(svc: &Service, id: &str) -> u64 {
    std::fs::metadata(svc.state.join("events").join(format!("{id}.jsonl")))
        .unwrap()
        .len()
}

/// The message `error` and the journal carry for turn `seq`.
fn capped_message(cap: &str, seq: u64) -> String {
    format!(
        "the session's event journal is full (its cap is {cap}): claude's further output in turn {seq} was dropped and the turn ended; the queue is paused, and every later turn of this session ends this way at its first output, so start a new session"
    )
}

/// Waits for turn `seq`'s end in the journal (30 s at most: a flood ends
/// by itself, well inside the kill grace).
fn await_turn_end(svc: &Service, id: &str, seq: u64) -> Vec<Value> {
    wait_until(
        &format!("turn {seq}'s end"),
        Duration::from_secs(30),
        || {
            let events = all_events(svc, id, 1024);
            events
                .iter()
                .any(|e| turn_ended(e) && e["data"]["turn"] == seq)
                .then_some(events)
        },
    )
}

#[test]
fn a_flood_fills_the_journal_to_its_cap_ends_the_turn_and_memory_stays_bounded() {
    let svc = Service::start(
        ROOM_CORE,
        json!({
            "journal_max_bytes": CAP,
            // The flooder ignores SIGTERM: it must finish its flood and exit by
            // itself, which it can only do if its output is read to the end.
            "kill_grace_ms": 60_000,
        }),
    );
    let pid = svc.pid().unwrap();
    let before = rss_kib(pid);
    let folder = svc.folder("flood");
    // 64 MiB of `{}` lines padded to 1 KiB, then 16 MiB of bare `{}` lines
    // (5.6 M of them), in two turns.
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({"prompt": "flood: 67108864 1024"}),
    ));
    let id = s["id"].as_str().unwrap().to_string();
    let events = await_turn_end(&svc, &id, 1);
    let record = svc.await_record(&folder, 1, Duration::from_secs(10));
    let record = wait_until("the flood's end", Duration::from_secs(10), || {
        svc.records_in(&folder)
            .into_iter()
            .find(|r| r["pid"] == record["pid"] && r["flooded"].is_u64())
    });
    assert!(record["flooded"].as_u64().unwrap() >= 64 << 20, "{record}");

    // The journal: the harness's events up to the cap, then the error and
    // the turn's end, which says why.
    let message = capped_message("384 KiB", 1);
    let len = journal_len(&svc, &id);
    assert!(len <= CAP + MARGIN, "the journal is {len} bytes");
    let harness = events.iter().filter(|e| e["kind"] == "harness").count();
    assert!(harness > 300, "only {harness} harness events were kept");
    // The state and the turn's diff (its folder, recorded after it) aside.
    let tail: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] != "state" && e["kind"] != "turn_diff")
        .collect();
    let n = tail.len();
    assert_eq!(tail[n - 2]["kind"], "error", "{:?}", &tail[n - 3..]);
    assert_eq!(tail[n - 2]["data"]["message"], message.as_str());
    assert_eq!(tail[n - 1]["kind"], "turn_ended");
    assert_eq!(tail[n - 1]["data"]["by"], "output_capped");
    // It ran its flood to the end and exited by itself.
    assert_eq!(tail[n - 1]["data"]["exit"], json!({"code": 0}));
    let view = svc.await_session(&id, "idle", |v| v["state"] == "idle");
    assert_eq!(view["error"], message.as_str());
    assert_eq!(view["queue"]["paused"], true);

    // A later turn (after a resume) meets the full journal at its first
    // output and ends the same way.
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "flood: 16777216 3"}),
    );
    assert_eq!(status, 200, "{v}");
    let (status, v) = svc.post(&format!("/v1/sessions/{id}/resume"), json!({}));
    assert_eq!(status, 200, "{v}");
    let events = await_turn_end(&svc, &id, 2);
    let second: Vec<&Value> = events
        .iter()
        .skip_while(|e| !(e["kind"] == "turn_started" && e["data"]["turn"] == 2))
        .collect();
    assert!(
        !second.iter().any(|e| e["kind"] == "harness"),
        "the full journal took turn 2's output: {second:?}"
    );
    let ended = second.iter().find(|e| turn_ended(e)).unwrap();
    assert_eq!(ended["data"]["by"], "output_capped");
    let error = second.iter().find(|e| e["kind"] == "error").unwrap();
    assert_eq!(
        error["data"]["message"],
        capped_message("384 KiB", 2).as_str()
    );
    let len = journal_len(&svc, &id);
    assert!(len <= CAP + MARGIN, "the journal is {len} bytes");

    // 80 MiB went through the service; it holds none of it.
    let after = rss_kib(pid);
    eprintln!(
        "journal {len} bytes (cap {CAP}); service VmRSS {before} KiB before, {after} KiB after"
    );
    assert!(
        after < before + 32 * 1024,
        "VmRSS grew from {before} KiB to {after} KiB"
    );

    // Pages and the stream still serve the whole journal.
    let paged = all_events(&svc, &id, 1024);
    let on_disk = journal(&svc.state, &id);
    assert_eq!(paged, on_disk);
    let mut stream = Stream::open(&svc, &id, None, "");
    assert_eq!(stream.status, 200);
    let streamed = stream.until(|e| e.id == on_disk.last().unwrap()["seq"].as_u64());
    assert_eq!(streamed.len(), on_disk.len());
    for (s, e) in streamed.iter().zip(&on_disk) {
        assert_eq!(s.id, e["seq"].as_u64());
        assert_eq!(s.data, *e);
    }
}

#[test]
fn the_event_cap_ends_a_turn_of_many_small_events() {
    let svc = Service::start(
        ROOM_CORE,
        json!({
            "journal_max_events": 2000,
            "kill_grace_ms": 60_000,
        }),
    );
    let folder = svc.folder("events");
    let s = svc.start_session(start_body(
        &folder,
        "codex",
        json!({"prompt": "flood: 4194304 3"}),
    ));
    let id = s["id"].as_str().unwrap().to_string();
    let events = await_turn_end(&svc, &id, 1);
    // Up to the cap with the harness's events; room-core's own after it.
    let last_harness = events.iter().rposition(|e| e["kind"] == "harness").unwrap();
    assert!(events[last_harness]["seq"].as_u64().unwrap() <= 2000);
    assert!(events.len() < 2000 + 10, "{}", events.len());
    let error = events.iter().find(|e| e["kind"] == "error").unwrap();
    let message = error["data"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "the session's event journal is full (its cap is 2000 events): codex's further output in turn 1 was dropped"
        ),
        "{message}"
    );
    let ended = events.iter().find(|e| turn_ended(e)).unwrap();
    assert_eq!(ended["data"]["by"], "output_capped");
}
