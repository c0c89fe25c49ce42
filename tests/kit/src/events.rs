//! A session's journal: its file, its pages through the API, and awaiting
//! an event in it.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::service::Service;
use crate::time::wait_until;

/// Session `id`'s journal file (`<state>/events/<id>.jsonl`), one event a
/// line.
pub fn journal(state: &Path, id: &str) -> Vec<Value> {
    std::fs::read_to_string(state.join("events").join(format!("{id}.jsonl")))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A session's whole journal, read through pages of `limit`.
pub fn all_events(svc: &Service, id: &str, limit: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let mut after = 0;
    loop {
        let (status, page) = svc.get(&format!(
            "/v1/sessions/{id}/events?after={after}&limit={limit}"
        ));
        assert_eq!(status, 200, "{page}");
        let events = page["events"].as_array().unwrap().clone();
        if events.is_empty() {
            assert_eq!(page["next_after"], after);
            return out;
        }
        after = page["next_after"].as_u64().unwrap();
        assert_eq!(after, events.last().unwrap()["seq"].as_u64().unwrap());
        out.extend(events);
    }
}

/// Waits (10 s at most) until the session's journal has an event for which
/// `f` holds; returns the journal so far.
pub fn await_event(svc: &Service, id: &str, what: &str, f: impl Fn(&Value) -> bool) -> Vec<Value> {
    wait_until(what, Duration::from_secs(10), || {
        let events = all_events(svc, id, 1024);
        events.iter().any(&f).then_some(events)
    })
}

/// Waits (10 s at most) for turn `turn`'s `turn_diff` (journalled once its
/// folder is recorded after it, which may be after the session shows
/// idle); returns its data.
pub fn await_turn_diff(svc: &Service, id: &str, turn: u64) -> Value {
    let is_it = |e: &Value| e["kind"] == "turn_diff" && e["data"]["turn"] == turn;
    await_event(svc, id, &format!("turn {turn}'s diff"), is_it)
        .into_iter()
        .find(is_it)
        .expect("awaited")["data"]
        .clone()
}

/// The kinds of `events`, state events left out.
pub fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_string())
        .filter(|k| k != "state")
        .collect()
}

/// Whether `e` is a `turn_ended`.
pub fn turn_ended(e: &Value) -> bool {
    e["kind"] == "turn_ended"
}

/// Waits (10 s at most) until session `id` has journalled `n` turn ends
/// and is idle; returns its `turn_ended` events.
pub fn await_turns_ended(svc: &Service, id: &str, n: usize) -> Vec<Value> {
    wait_until(
        &format!("{n} turns of {id} ended"),
        Duration::from_secs(10),
        || {
            let ended: Vec<Value> = all_events(svc, id, 1024)
                .into_iter()
                .filter(turn_ended)
                .collect();
            (ended.len() >= n && svc.session(id)["state"] == "idle").then_some(ended)
        },
    )
}
