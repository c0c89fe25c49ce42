//! What each turn used, as its harness reported it, against the real binary
//! with the fake harnesses (which report usage as the real CLIs do on
//! their protocols): `turn_ended.usage`, the session view's totals (across a
//! restart), `/metrics` token counters; and each prompt's text in its
//! `prompt_queued`.

use room_kit::events::{all_events, turn_ended};
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

fn usage(i: u64, o: u64, r: u64, w: u64, cost: Value) -> Value {
    json!({"input_tokens": i, "output_tokens": o, "cache_read_tokens": r,
           "cache_write_tokens": w, "cost_usd": cost})
}

/// The data of the session's events of `kind`, oldest first.
fn data_of(svc: &Service, id: &str, kind: &str) -> Vec<Value> {
    all_events(svc, id, 1024)
        .into_iter()
        .filter(|e| e["kind"] == kind)
        .map(|e| e["data"].clone())
        .collect()
}

/// Waits until the session has ended `n` turns and is idle.
fn await_turns(svc: &Service, id: &str, n: usize) {
    svc.await_session(id, &format!("{n} turns done"), |v| {
        v["state"] == "idle"
            && all_events(svc, id, 1024)
                .iter()
                .filter(|e| turn_ended(e))
                .count()
                == n
    });
}

/// A metric's value in the exposition text.
fn metric(text: &str, series: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn each_turn_says_what_it_used_and_the_session_and_metrics_add_it_up() {
    let mut svc = Service::start(ROOM_CORE, json!({}));
    // A first turn (one model request), then one that runs a tool (two).
    let mut ids = Vec::new();
    for harness in ["claude", "codex"] {
        let folder = svc.folder(harness);
        let s = svc.start_session(start_body(&folder, harness, json!({"prompt": "hello"})));
        let id = s["id"].as_str().unwrap().to_string();
        await_turns(&svc, &id, 1);
        let (status, v) = svc.post(
            &format!("/v1/sessions/{id}/messages"),
            json!({"prompt": "run: true"}),
        );
        assert_eq!(status, 200, "{v}");
        await_turns(&svc, &id, 2);
        ids.push((harness, id));
    }

    // claude reports each turn's figures and cost; codex its thread's
    // running total (the turn's figures are its growth), no cost, and an
    // input count that holds the cached tokens (room-core's input is the rest).
    let want = |harness: &str, n: u64| match harness {
        "claude" => {
            let usd = [0.0001756, 0.0003512, 0.0005268][n as usize - 1];
            usage(10 * n, 5 * n, 3 * n, 7 * n, json!(usd))
        }
        _ => usage(0, 5 * n, 3 * n, 7 * n, Value::Null),
    };
    for (harness, id) in &ids {
        let ended = data_of(&svc, id, "turn_ended");
        let used: Vec<&Value> = ended.iter().map(|d| &d["usage"]).collect();
        assert_eq!(used, [&want(harness, 1), &want(harness, 2)], "{harness}");
        let v = svc.session(id);
        assert_eq!(v["usage"], want(harness, 3), "{harness}: {v}");
        // Each prompt's text is in the journal, for any client to show.
        assert_eq!(
            data_of(&svc, id, "prompt_queued"),
            [
                json!({"prompt": 1, "text": "hello", "text_truncated": false}),
                json!({"prompt": 2, "text": "run: true", "text_truncated": false}),
            ]
        );
    }
    let text = svc.get("/metrics").1;
    let text = text.as_str().unwrap();
    for (harness, figures) in [("claude", [30, 15, 9, 21]), ("codex", [0, 15, 9, 21])] {
        for (kind, n) in ["input", "output", "cache_read", "cache_write"]
            .iter()
            .zip(figures)
        {
            let series = format!("room_core_tokens_total{{harness=\"{harness}\",kind=\"{kind}\"}}");
            assert_eq!(metric(text, &series), Some(n), "{series}\n{text}");
        }
    }

    // The totals are on record: a restart shows the same.
    svc.restart();
    for (harness, id) in &ids {
        assert_eq!(svc.session(id)["usage"], want(harness, 3), "{harness}");
    }
}

#[test]
fn a_turn_that_reports_nothing_says_null_and_a_new_session_shows_zero() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let (id, _, _) = svc.running_session("quiet");
    assert_eq!(
        svc.session(&id)["usage"],
        usage(0, 0, 0, 0, Value::Null),
        "nothing used yet"
    );
    // Stopped (SIGTERM) before its harness printed its result.
    let (status, v) = svc.post(&format!("/v1/sessions/{id}/stop"), json!({}));
    assert_eq!(status, 200, "{v}");
    let ended = data_of(&svc, &id, "turn_ended");
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert_eq!(ended[0]["by"], "stop");
    assert_eq!(ended[0]["usage"], Value::Null);
    assert_eq!(svc.session(&id)["usage"], usage(0, 0, 0, 0, Value::Null));
}

#[test]
fn a_prompt_too_long_for_a_journal_line_is_cut_in_its_event_and_whole_for_the_harness() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("long");
    // 1,048,000 bytes of text: the request fits its 1 MiB cap, the event's
    // text is cut to a journal line's 1 MiB less 1 KiB, at a char boundary.
    let prompt = "é".repeat(524_000);
    let s = svc.start_session(start_body(&folder, "claude", json!({"prompt": prompt})));
    let id = s["id"].as_str().unwrap();
    let record = svc.await_record(&folder, 1, std::time::Duration::from_secs(10));
    assert_eq!(record["prompt"], json!(prompt), "the harness got all of it");
    let queued = data_of(&svc, id, "prompt_queued");
    assert_eq!(queued[0]["text"], json!("é".repeat(523_776)));
    assert_eq!(queued[0]["text_truncated"], true);
}
