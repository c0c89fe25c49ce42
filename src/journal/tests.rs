//! The journal's unit tests: seqs, pages, torn lines, the recent window,
//! staging, notification and the registry.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use super::*;
use serde_json::json;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rc-journal-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn kinds(events: &[Journalled]) -> Vec<(u64, String)> {
    events.iter().map(|e| (e.seq, e.kind.clone())).collect()
}

#[test]
fn events_get_gapless_seqs_and_pages_resume_after_any_seq() {
    let dir = temp("pages");
    let j = Journal::new(&dir, "cr_a");
    assert_eq!(j.last_seq().unwrap(), 0);
    let batch: Vec<NewEvent> = (0..5)
        .map(|n| NewEvent::new(format!("k{n}"), &json!({"n": n})))
        .collect();
    let written = j.append(batch, 42).unwrap();
    assert_eq!(
        written.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    assert_eq!(
        kinds(&j.page(0, 2).unwrap()),
        [(1, "k0".into()), (2, "k1".into())]
    );
    assert_eq!(
        kinds(&j.page(3, 10).unwrap()),
        [(4, "k3".into()), (5, "k4".into())]
    );
    assert!(j.page(5, 10).unwrap().is_empty());
    assert!(j.page(99, 10).unwrap().is_empty());
    // Reopened (a restart): the seqs go on.
    let j = Journal::new(&dir, "cr_a");
    let e = j
        .append(vec![NewEvent::new("after", &json!({}))], 43)
        .unwrap();
    assert_eq!(e[0].seq, 6);
    assert_eq!(j.page(5, 10).unwrap()[0].at_ms, 43);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_harness_event_is_kept_as_printed() {
    let dir = temp("raw");
    let j = Journal::new(&dir, "cr_b");
    let printed = r#"{"type":"system","subtype":"init","z":1,"a":[1, 2]}"#;
    j.append(vec![NewEvent::harness(printed).unwrap()], 1)
        .unwrap();
    let e = &j.page(0, 1).unwrap()[0];
    assert_eq!(e.kind, "harness");
    assert_eq!(e.data.get(), printed);
    assert_eq!(
        NewEvent::harness("not json").err(),
        Some(Unservable::NotJson)
    );
    assert_eq!(NewEvent::harness("{} {}").err(), Some(Unservable::NotJson));
    assert_eq!(NewEvent::harness(" \t").err(), Some(Unservable::Blank));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_torn_last_line_is_dropped_at_open_and_never_served() {
    let dir = temp("torn");
    let j = Journal::new(&dir, "cr_c");
    j.append(vec![NewEvent::new("one", &json!({}))], 1).unwrap();
    drop(j);
    let path = dir.join("cr_c.jsonl");
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(br#"{"seq":2,"at_ms":2,"kind":"tw"#).unwrap();
    drop(f);
    let j = Journal::new(&dir, "cr_c");
    assert_eq!(j.last_seq().unwrap(), 1);
    assert_eq!(kinds(&j.page(0, 10).unwrap()), [(1, "one".into())]);
    let e = j.append(vec![NewEvent::new("two", &json!({}))], 3).unwrap();
    assert_eq!(e[0].seq, 2);
    assert_eq!(kinds(&j.page(1, 10).unwrap()), [(2, "two".into())]);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp("mode");
    let j = Journal::new(&dir, "cr_d");
    j.append(vec![NewEvent::new("x", &json!({}))], 1).unwrap();
    let mode = std::fs::metadata(j.path()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn one(kind: &str) -> Vec<NewEvent> {
    vec![NewEvent::new(kind, &json!({}))]
}

#[test]
fn the_recent_window_serves_the_tail_and_the_file_the_rest() {
    let dir = temp("recent");
    let j = Journal::new(&dir, "cr_e");
    let n = RECENT_EVENTS as u64 + 50;
    for i in 0..n {
        j.append(vec![NewEvent::new(format!("k{i}"), &json!(i))], i)
            .unwrap();
    }
    // The window holds the last RECENT_EVENTS; older seqs need the file.
    assert!(j.recent(0, 10).is_none());
    let tail = j.recent(n - 3, 10).unwrap();
    assert_eq!(
        tail.iter().map(|l| l.seq).collect::<Vec<_>>(),
        [n - 2, n - 1, n]
    );
    assert!(j.recent(n, 10).unwrap().is_empty());
    // Memory and file give the same bytes.
    let from_file = Journal::new(&dir, "cr_e");
    assert!(
        from_file.recent(n - 3, 10).is_none(),
        "recent never reads the file"
    );
    let a = j.lines(n - 3, 10).unwrap();
    let b = from_file.lines(0, 3).unwrap();
    assert_eq!(
        from_file.recent(n - 3, 10).unwrap().len(),
        3,
        "a scan fills the window"
    );
    assert_eq!(
        b[0].json,
        std::fs::read_to_string(j.path())
            .unwrap()
            .lines()
            .next()
            .unwrap()
    );
    assert_eq!(a, from_file.lines(n - 3, 10).unwrap());
    assert_eq!(j.lines(10, 5).unwrap(), from_file.lines(10, 5).unwrap());
    assert_eq!(j.lines(10, 5).unwrap()[0].kind, "k10");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_event_too_long_for_the_window_is_read_from_the_file() {
    let dir = temp("long");
    let j = Journal::new(&dir, "cr_f");
    j.append(one("small"), 1).unwrap();
    let big = "x".repeat(RECENT_BYTES + 1);
    j.append(vec![NewEvent::new("big", &json!(big))], 2)
        .unwrap();
    assert!(j.recent(0, 10).is_none());
    assert!(j.recent(1, 10).is_none());
    let lines = j.lines(0, 10).unwrap();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1].kind, "big");
    j.append(one("after"), 3).unwrap();
    assert_eq!(j.recent(2, 10).unwrap()[0].kind, "after");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn staged_events_are_written_first_with_the_next_append() {
    let dir = temp("staged");
    let j = Journal::new(&dir, "cr_g");
    j.stage(NewEvent::new("first", &json!({})));
    j.stage(NewEvent::new("second", &json!({})));
    assert_eq!(j.last_seq().unwrap(), 0, "staging writes nothing");
    j.append(one("third"), 5).unwrap();
    assert_eq!(
        kinds(&j.page(0, 10).unwrap()),
        [
            (1, "first".into()),
            (2, "second".into()),
            (3, "third".into())
        ]
    );
    assert!(j.flush(6).unwrap().is_empty());
    j.stage(NewEvent::new("fourth", &json!({})));
    assert_eq!(j.flush(7).unwrap()[0].seq, 4);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn subscribers_see_every_append_and_the_close() {
    let dir = temp("watch");
    let j = Journal::new(&dir, "cr_h");
    j.append(one("before"), 1).unwrap();
    let mut rx = j.subscribe().unwrap();
    assert_eq!(
        *rx.borrow_and_update(),
        Tail {
            last: 1,
            closed: false
        }
    );
    j.append(one("a"), 2).unwrap();
    assert!(rx.has_changed().unwrap());
    assert_eq!(rx.borrow_and_update().last, 2);
    j.close();
    assert!(rx.has_changed().unwrap());
    assert_eq!(
        *rx.borrow_and_update(),
        Tail {
            last: 2,
            closed: true
        }
    );
    j.close();
    assert!(!rx.has_changed().unwrap(), "a second close changes nothing");
    assert!(j.is_closed());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn last_of_finds_the_latest_event_of_a_kind_across_pages() {
    let dir = temp("last-of");
    let j = Journal::new(&dir, "cr_i");
    j.append(vec![NewEvent::new("turn", &json!({"turn": 1}))], 1)
        .unwrap();
    let filler: Vec<NewEvent> = (0..MAX_PAGE + 10)
        .map(|_| NewEvent::new("x", &json!(0)))
        .collect();
    j.append(filler, 2).unwrap();
    let e = j.last_of("turn").unwrap().unwrap();
    assert_eq!(e.seq, 1);
    assert_eq!(e.data.get(), r#"{"turn":1}"#);
    assert!(j.last_of("nothing").unwrap().is_none());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_tagged_enum_gives_kind_and_data() {
    #[derive(serde::Serialize)]
    #[serde(tag = "kind", content = "data", rename_all = "snake_case")]
    enum E {
        Stopped,
        TurnEnded { turn: u64 },
    }
    let e = NewEvent::tagged(&E::TurnEnded { turn: 3 });
    assert_eq!(
        (e.kind.as_str(), e.data.get()),
        ("turn_ended", r#"{"turn":3}"#)
    );
    let e = NewEvent::tagged(&E::Stopped);
    assert_eq!((e.kind.as_str(), e.data.get()), ("stopped", "null"));
}

#[test]
fn the_registry_shares_one_journal_and_counts_what_is_written() {
    let state = temp("registry");
    let journals = Journals::new(&state, Caps::NONE);
    assert!(journals.peek("cr_j").is_none());
    assert!(journals.last_activity("cr_j").is_none());
    let a = journals.get("cr_j");
    let b = journals.get("cr_j");
    assert!(Arc::ptr_eq(&a, &b));
    a.append(one("x"), 1234).unwrap();
    journals.get("cr_k").append(one("y"), 1).unwrap();
    assert_eq!(journals.written(), 2);
    assert_eq!(journals.last_activity("cr_j"), Some(1234));
    assert_eq!(a.path(), dir(&state).join("cr_j.jsonl"));
    std::fs::remove_dir_all(&state).unwrap();
}
