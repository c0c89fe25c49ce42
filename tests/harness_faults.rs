//! What a harness (or a prompt) may do wrong, and what the session shows:
//! a harness that never names its session (a codex that never answers its
//! handshake) times out and gives its startup permit back; prompts of any size go on stdin (a NUL byte is refused at
//! the API); 4 MiB of stderr neither blocks nor breaks a turn and its end
//! shows in the error; a stdout line that is not UTF-8, or one over the
//! cap, is skipped, reported (`output_dropped`) and reading goes on. Every
//! event lands in the journal.

use std::time::{Duration, Instant};

use room_kit::events::journal;
use room_kit::procs::{alive, turn_processes};
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

#[test]
fn a_silent_harness_times_out_gives_its_permit_back_and_the_next_start_runs() {
    let svc = Service::start(
        ROOM_CORE,
        json!({"startup_permits": 1, "startup_timeout_ms": 1000}),
    );
    let silent = svc.folder("silent");
    let next = svc.folder("next");
    let t0 = Instant::now();
    let a = svc.start_session(start_body(
        &silent,
        "claude",
        json!({"prompt": "silent: 600"}),
    ));
    let a = id_of(&a);
    // The second start waits behind the silent one's permit.
    let b = svc.start_session(start_body(&next, "claude", json!({"prompt": "hello"})));
    let v = svc.await_session(&a, "the startup timeout", |v| v["state"] == "failed");
    assert!(
        t0.elapsed() >= Duration::from_millis(1000),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(
        v["error"],
        "claude did not start within 1 s: it never named its session; its prompt stays queued for a relaunch",
        "{v}"
    );
    // The permit came back: the next start runs.
    let record = svc.await_record(&next, 1, Duration::from_secs(10));
    assert_eq!(record["prompt"], "hello");
    svc.await_session(&id_of(&b), "the next start", |v| v["state"] == "idle");
    // The silent harness is gone (whether or not it had got as far as
    // recording itself) and its prompt waits for a relaunch.
    wait_until("the silent harness to die", Duration::from_secs(10), || {
        let held = svc
            .records_in(&silent)
            .first()
            .map(|r| r["pid"].as_u64().unwrap() as u32);
        let gone = held.map_or(true, |p| !alive(p));
        (gone && turn_processes(&a).is_empty()).then_some(())
    });
    let v = svc.await_session(&a, "its prompt back in the queue", |v| {
        v["queue"]["length"] == 1
    });
    assert_eq!(v["state"], "failed", "{v}");
}

#[test]
fn a_codex_that_never_answers_its_handshake_fails_its_launch_and_leaves_nothing() {
    let root = temp_root();
    let mute = root.join("mute-codex");
    // Reads its stdin, answers nothing.
    std::fs::write(&mute, "#!/bin/sh\nexec cat >/dev/null\n").unwrap();
    std::fs::set_permissions(&mute, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let svc = Service::start(
        ROOM_CORE,
        json!({"codex_program": mute, "startup_timeout_ms": 1000}),
    );
    let folder = svc.folder("mute");
    let s = svc.start_session(start_body(&folder, "codex", json!({"prompt": "hello"})));
    let id = id_of(&s);
    let v = svc.await_session(&id, "the startup timeout", |v| v["state"] == "failed");
    assert_eq!(
        v["error"],
        "codex did not start within 1 s: it never named its session; its prompt stays queued for a relaunch",
        "{v}"
    );
    wait_until("nothing of it to run", Duration::from_secs(10), || {
        turn_processes(&id).is_empty().then_some(())
    });
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn a_200_kib_prompt_runs_and_a_nul_byte_is_refused() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("code");
    let big = format!("{}end", "p".repeat(200 << 10));
    // As the first prompt.
    let s = svc.start_session(start_body(&folder, "codex", json!({"prompt": big})));
    let id = id_of(&s);
    let first = svc.await_record(&folder, 1, Duration::from_secs(10));
    assert_eq!(first["prompt"].as_str().map(str::len), Some(big.len()));
    svc.await_session(&id, "the first turn", |v| v["state"] == "idle");
    // As a message.
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": big}),
    );
    assert_eq!(status, 200, "{v}");
    let second = svc.await_record(&folder, 2, Duration::from_secs(10));
    assert_eq!(second["prompt"], json!(big));
    let v = svc.await_session(&id, "the second turn", |v| v["state"] == "idle");
    assert_eq!(v["error"], Value::Null, "{v}");
    // A NUL byte: refused before anything is queued.
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "a\u{0}b"}),
    );
    assert_eq!(
        (status, v["code"].as_str()),
        (422, Some("invalid_field")),
        "{v}"
    );
    assert!(v["error"].as_str().unwrap().contains("NUL"), "{v}");
    let other = svc.folder("other");
    let (status, v) = svc.post(
        "/v1/sessions",
        start_body(&other, "claude", json!({"prompt": "\u{0}"})),
    );
    assert_eq!(status, 422, "{v}");
    assert_eq!(svc.session(&id)["queue"]["length"], 0);
}

#[test]
fn a_turn_its_harness_says_failed_shows_why_and_does_not_linger() {
    // Lingering on: a failed turn's process still ends with its turn.
    let svc = Service::start(ROOM_CORE, json!({"linger_ms": 60_000}));
    for harness in ["claude", "codex"] {
        let folder = svc.folder(harness);
        let s = svc.start_session(start_body(
            &folder,
            harness,
            json!({"prompt": "fail: the model went away"}),
        ));
        let id = id_of(&s);
        let v = svc.await_session(&id, "the failed turn", |v| {
            v["state"] == "idle" && !v["error"].is_null()
        });
        assert_eq!(
            v["error"], "the last turn failed: the model went away",
            "{v}"
        );
        wait_until("nothing of it to run", Duration::from_secs(10), || {
            turn_processes(&id).is_empty().then_some(())
        });
        let ended: Vec<Value> = journal(&svc.state, &id)
            .into_iter()
            .filter(|e| e["kind"] == "turn_ended")
            .collect();
        // It ended with its process (claude exits 1 after a failed turn,
        // codex 0 whatever its turn did), not at once to linger.
        let code = if harness == "claude" { 1 } else { 0 };
        assert_eq!(ended.len(), 1, "{ended:?}");
        assert_eq!(ended[0]["data"]["exit"], json!({"code": code}), "{ended:?}");
        // The next message runs.
        let (status, v) = svc.post(
            &format!("/v1/sessions/{id}/messages"),
            json!({"prompt": "again"}),
        );
        assert_eq!(status, 200, "{v}");
        let v = svc.await_session(&id, "the next turn", |v| {
            v["state"] == "idle" && v["error"].is_null()
        });
        assert_eq!(v["queue"]["length"], 0, "{v}");
    }
}

#[test]
fn four_mib_of_stderr_ends_the_turn_normally_and_its_tail_is_the_error() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("code");
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({"prompt": "stderr: 4194304 3"}),
    ));
    let id = id_of(&s);
    let v = svc.await_session(&id, "the turn to end", |v| {
        v["state"] == "idle" && !v["error"].is_null()
    });
    let error = v["error"].as_str().unwrap();
    // It exited with its own code: no broken pipe, no signal.
    assert!(
        error.starts_with("the last turn failed (exit code 3): "),
        "{error:.200}"
    );
    assert!(
        error.ends_with("the end of stderr"),
        "{}",
        &error[error.len() - 100..]
    );
    assert!(error.len() < 5000, "the error holds {} bytes", error.len());
    assert!(!v["native_id"].is_null(), "{v}");
}

#[test]
fn a_line_that_is_not_utf8_or_too_long_is_skipped_reported_and_reading_goes_on() {
    let svc = Service::start(ROOM_CORE, json!({}));
    for (name, prompt, dropped) in [
        (
            "bad",
            "bad-utf8",
            json!({"turn": 1, "why": "not_utf8", "lines": 1, "bytes": 24}),
        ),
        (
            "long",
            "long-line: 2000000",
            json!({"turn": 1, "why": "over_cap", "lines": 1, "bytes": 2_000_000}),
        ),
    ] {
        let folder = svc.folder(name);
        let s = svc.start_session(start_body(&folder, "codex", json!({"prompt": prompt})));
        let id = id_of(&s);
        let record = svc.await_record(&folder, 1, Duration::from_secs(10));
        // The event after the skipped line still names the session.
        let v = svc.await_session(&id, "the turn to end", |v| v["state"] == "idle");
        assert_eq!(v["native_id"], record["native_id"], "{v}");
        assert_eq!(v["error"], Value::Null, "{v}");
        let harness: Vec<Value> = journal(&svc.state, &id)
            .into_iter()
            .filter(|e| e["kind"] == "harness")
            .map(|e| e["data"].clone())
            .collect();
        // The answer to room-core's `initialize`, first; `turn/completed`, last.
        assert!(harness[0]["result"]["userAgent"].is_string(), "{harness:?}");
        assert_eq!(harness.last().unwrap()["method"], "turn/completed");
        // The app sees what was dropped.
        let reported: Vec<Value> = journal(&svc.state, &id)
            .into_iter()
            .filter(|e| e["kind"] == "output_dropped")
            .map(|e| e["data"].clone())
            .collect();
        assert_eq!(reported, [dropped], "{name}");
    }
}

#[test]
fn every_event_is_journalled_in_order_with_the_harness_events_inside_its_turn() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("code");
    let s = svc.start_session(start_body(&folder, "claude", json!({"prompt": "hi"})));
    let id = id_of(&s);
    svc.await_session(&id, "the turn to end", |v| v["state"] == "idle");
    let events = wait_until(
        "the turn's end in the journal",
        Duration::from_secs(5),
        || {
            let events = journal(&svc.state, &id);
            events
                .iter()
                .any(|e| e["kind"] == "turn_ended")
                .then_some(events)
        },
    );
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    let at = |k: &str| {
        kinds
            .iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("no {k} in {kinds:?}"))
    };
    assert_eq!(events[at("state")]["data"], json!({"state": "pending"}));
    assert!(at("prompt_queued") < at("turn_started"), "{kinds:?}");
    assert!(at("turn_started") < at("harness"), "{kinds:?}");
    assert!(at("harness") < at("native_id"), "{kinds:?}");
    let last_harness = kinds.iter().rposition(|k| *k == "harness").unwrap();
    assert!(last_harness < at("turn_ended"), "{kinds:?}");
    assert_eq!(
        events[at("turn_ended")]["data"],
        json!({"turn": 1, "prompt": 1, "exit": {"code": 0}, "by": null,
               // The fake claude's one model request.
               "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 3,
                         "cache_write_tokens": 7, "cost_usd": 0.0001756}})
    );
}

#[test]
fn a_harness_that_exits_at_once_fails_its_launch_with_its_exit_and_stderr() {
    let bin = temp_root();
    let program = bin.join("claude-that-fails");
    std::fs::write(
        &program,
        "#!/bin/sh\n# Closes its stdin first, as a CLI refusing its flags does.\nexec 0<&-\necho \"error: unknown option '--verbose'\" >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    for run in 0..3 {
        let svc = Service::start(ROOM_CORE, json!({"claude_program": program}));
        let folder = svc.folder(&format!("code{run}"));
        let s = svc.start_session(start_body(&folder, "claude", json!({})));
        let id = id_of(&s);
        let v = svc.await_session(&id, "the launch to fail", |v| v["state"] == "failed");
        // Whether its stdin closed before the prompt was written or after,
        // the error says how it exited and what it printed.
        let error = v["error"].as_str().unwrap();
        assert!(
            error.starts_with("claude exited (exit code 1) before it ")
                && error.contains(": error: unknown option '--verbose'"),
            "{error}"
        );
    }
    let _ = std::fs::remove_dir_all(&bin);
}
