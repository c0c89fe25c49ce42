//! A damaged session journal against the real binary with the fake
//! harnesses: a flipped byte in the middle costs that one event and nothing
//! after it (pages, the stream, later turns), is logged and reported in a
//! `journal_repaired` event, and nothing is cut; an unfinished last line is
//! copied aside before it is cut.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use room_kit::events::{all_events, await_event, await_turn_diff, turn_ended};
use room_kit::sse::Stream;
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// A session whose first turn printed 30 events and is over: its id and
/// its journal's events.
fn session_with_events(svc: &Service, name: &str) -> (String, Vec<Value>) {
    let s = svc.start_session(start_body(
        &svc.folder(name),
        "claude",
        json!({"prompt": "stamps: 30 0"}),
    ));
    let id = s["id"].as_str().unwrap().to_string();
    await_event(svc, &id, "the turn's end", turn_ended);
    svc.await_session(&id, "idle", |v| v["state"] == "idle");
    // The turn's diff follows its end once the folder is recorded, maybe
    // after the idle state: the last event either way.
    await_event(svc, &id, "the idle state", |e| {
        e["kind"] == "state" && e["data"]["state"] == "idle"
    });
    await_turn_diff(svc, &id, 1);
    let events = all_events(svc, &id, 1024);
    (id, events)
}

fn journal_file(svc: &Service, id: &str) -> PathBuf {
    svc.state.join("events").join(format!("{id}.jsonl"))
}

#[test]
fn a_flipped_byte_mid_journal_costs_that_event_only_and_is_reported() {
    let mut svc = Service::start(ROOM_CORE, json!({}));
    let (id, before) = session_with_events(&svc, "flip");
    let n = before.len();
    assert!(n >= 35, "{n} events");
    svc.stop();

    // One bit of the middle line's first byte: `{` becomes DEL.
    let path = journal_file(&svc, &id);
    let mut bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), n);
    let mid = n / 2;
    let offset = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(mid - 1)
        .map(|(i, _)| i + 1)
        .unwrap();
    let lost = mid as u64 + 1;
    bytes[offset] ^= 0x04;
    std::fs::write(&path, &bytes).unwrap();
    svc.start_again();

    // Every other event, as it was, then the report.
    let after = all_events(&svc, &id, 7);
    let kept: Vec<&Value> = before.iter().filter(|e| e["seq"] != lost).collect();
    assert_eq!(kept.len(), n - 1);
    assert_eq!(after[..n - 1].iter().collect::<Vec<_>>(), kept);
    let report = after
        .iter()
        .find(|e| e["kind"] == "journal_repaired")
        .unwrap_or_else(|| panic!("no journal_repaired in {after:#?}"));
    let line_len = bytes[offset..].iter().position(|b| *b == b'\n').unwrap() + 1;
    assert_eq!(
        report["data"]["skipped"],
        json!([{"offset": offset, "bytes": line_len, "lines": 1, "after_seq": lost - 1}])
    );
    assert_eq!(report["data"]["lines"], 1);
    assert_eq!(report["seq"], n as u64 + 1, "the next seq after the last");
    let log = svc.log();
    assert!(
        log.contains(&format!(
            "{}: skipping 1 damaged lines ({line_len} bytes), kept in the file and not served: \
             {line_len} bytes (1 lines) at byte {offset} after seq {}",
            path.display(),
            lost - 1
        )),
        "{log}"
    );
    // Nothing cut: the damaged line is still there.
    let now = std::fs::read(&path).unwrap();
    assert_eq!(&now[..bytes.len()], &bytes[..]);

    // The stream goes across the skipped event.
    let mut stream = Stream::open(&svc, &id, Some(lost - 2), "");
    assert_eq!(stream.status, 200);
    let got = stream.until(|e| e.id == Some(lost + 1));
    assert_eq!(
        got.iter().map(|e| e.id.unwrap()).collect::<Vec<_>>(),
        [lost - 1, lost + 1]
    );

    // A later turn goes on after the report, with no gap; a restart
    // reports nothing again.
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "again"}),
    );
    assert_eq!(status, 200, "{v}");
    let events = await_event(&svc, &id, "the second turn's end", |e| {
        turn_ended(e) && e["data"]["turn"] == 2
    });
    let from = events
        .iter()
        .position(|e| e["seq"] == report["seq"])
        .unwrap();
    for (i, e) in events[from..].iter().enumerate() {
        assert_eq!(e["seq"], report["seq"].as_u64().unwrap() + i as u64);
    }
    svc.await_session(&id, "idle", |v| v["state"] == "idle");
    svc.restart();
    let again = all_events(&svc, &id, 1024);
    let reports = again
        .iter()
        .filter(|e| e["kind"] == "journal_repaired")
        .count();
    assert_eq!(reports, 1, "{again:#?}");
}

#[test]
fn an_unfinished_last_line_is_copied_aside_before_it_is_cut() {
    let mut svc = Service::start(ROOM_CORE, json!({}));
    let (id, before) = session_with_events(&svc, "torn");
    svc.kill9();
    let path = journal_file(&svc, &id);
    let mut bytes = std::fs::read(&path).unwrap();
    let whole = bytes.len();
    let torn = format!(r#"{{"seq":{},"at_ms":1,"kind":"harn"#, before.len() + 1);
    bytes.extend_from_slice(torn.as_bytes());
    bytes.extend_from_slice(&[0; 100]);
    std::fs::write(&path, &bytes).unwrap();
    svc.start_again();

    let after = all_events(&svc, &id, 1024);
    assert_eq!(after[..before.len()], before[..]);
    assert!(
        after.iter().all(|e| e["kind"] != "journal_repaired"),
        "nothing served was lost: {after:#?}"
    );
    let copy = svc
        .state
        .join("events")
        .join(format!("{id}.jsonl.damaged-1"));
    assert_eq!(std::fs::read(&copy).unwrap(), &bytes[whole..]);
    let mode = std::fs::metadata(&copy).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(&std::fs::read(&path).unwrap()[..whole], &bytes[..whole]);
    let log = svc.log();
    assert!(
        log.contains(&format!(
            "{}: its last {} bytes (from byte {whole}) are an unfinished line",
            path.display(),
            bytes.len() - whole
        )) && log.contains(&copy.display().to_string()),
        "{log}"
    );
}
