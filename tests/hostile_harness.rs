//! A harness's stdout as hostile input, against the real service and the
//! fake harness (fixtures/fake_harness.py): a line nested past the limit,
//! a 1 GiB line, floods of lines that are not JSON or not UTF-8. Each is
//! reported in the session's events (`harness_line_rejected`,
//! `output_dropped`) with exact counts, a flood costs at most one event a
//! second, every page and stream still parses in a parser with a recursion
//! limit (serde_json's, here), and the turn goes on.

use std::path::PathBuf;
use std::time::Duration;

use room_kit::events::all_events;
use room_kit::sse::Stream;
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// Runs `prompt` as the first turn of a `harness` session in `name`'s
/// folder and waits, at most `limit`, for the turn's end: the session's ID
/// and the fake harness's record.
fn run(svc: &Service, harness: &str, name: &str, prompt: &str, limit: Duration) -> (String, Value) {
    let folder: PathBuf = svc.folder(name);
    let s = svc.start_session(start_body(&folder, harness, json!({ "prompt": prompt })));
    let id = s["id"].as_str().unwrap().to_string();
    wait_until(&format!("{name}'s turn to end"), limit, || {
        of_kind(svc, &id, "turn_ended").first().map(drop)
    });
    let v = svc.session(&id);
    assert_eq!(v["error"], Value::Null, "{v}");
    let record = svc.await_record(&folder, 1, Duration::from_secs(10));
    (id, record)
}

/// The data of session `id`'s events of `kind`, read through pages: each
/// page is parsed by serde_json, whose recursion limit is 128.
fn of_kind(svc: &Service, id: &str, kind: &str) -> Vec<Value> {
    all_events(svc, id, 1024)
        .into_iter()
        .filter(|e| e["kind"] == kind)
        .map(|e| e["data"].clone())
        .collect()
}

fn nested(depth: usize) -> String {
    "[".repeat(depth) + &"]".repeat(depth)
}

#[test]
fn a_line_nested_past_the_limit_is_reported_and_every_page_and_stream_parses() {
    let svc = Service::start(ROOM_CORE, json!({}));
    for harness in ["claude", "codex"] {
        // 100 levels: served as printed.
        let (id, _) = run(
            &svc,
            harness,
            &format!("{harness}-100"),
            "deep-line: 100",
            Duration::from_secs(10),
        );
        let served: Vec<Value> = of_kind(&svc, &id, "harness")
            .into_iter()
            .filter(|d| d.is_array())
            .collect();
        assert_eq!(served.len(), 1, "{harness}");
        assert_eq!(served[0].to_string(), nested(100));
        assert_eq!(
            of_kind(&svc, &id, "harness_line_rejected"),
            Vec::<Value>::new()
        );
        // 101 and 100,000 levels: reported with their start, not served.
        for depth in [101, 100_000] {
            let name = format!("{harness}-{depth}");
            let prompt = format!("deep-line: {depth}");
            let (id, _) = run(&svc, harness, &name, &prompt, Duration::from_secs(10));
            assert_eq!(
                of_kind(&svc, &id, "harness_line_rejected"),
                [
                    json!({"turn": 1, "why": "too_deep", "lines": 1, "bytes": 2 * depth,
                        "prefix": nested(depth).chars().take(256).collect::<String>()})
                ],
                "{name}"
            );
            assert!(
                of_kind(&svc, &id, "harness").iter().all(|d| !d.is_array()),
                "{name}"
            );
            // The stream, as an EventSource reads it: each event's data
            // parses in serde_json too.
            let mut stream = Stream::open(&svc, &id, None, "");
            let events = stream.until(|e| e.event == "turn_ended");
            assert!(events.iter().any(|e| e.event == "harness_line_rejected"));
        }
    }
}

#[test]
fn a_one_gib_line_is_dropped_and_reported_and_the_turn_ends_normally() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let started = std::time::Instant::now();
    let (id, record) = run(
        &svc,
        "codex",
        "gib",
        "huge-lines: 1 1073741824",
        Duration::from_secs(120),
    );
    eprintln!("1 GiB line read and dropped in {:?}", started.elapsed());
    assert_eq!(record["hostile_bytes"], json!([1u64 << 30]));
    assert_eq!(
        of_kind(&svc, &id, "output_dropped"),
        [json!({"turn": 1, "why": "over_cap", "lines": 1, "bytes": 1u64 << 30})]
    );
    // The turn went on: codex named its thread after the line, and ended.
    let v = svc.session(&id);
    assert_eq!(v["native_id"], record["native_id"], "{v}");
    assert_eq!(of_kind(&svc, &id, "turn_ended")[0]["by"], Value::Null);
}

/// Sums the `lines` and `bytes` of `reports`.
fn counted(reports: &[Value]) -> (u64, u64) {
    reports.iter().fold((0, 0), |(l, b), r| {
        (
            l + r["lines"].as_u64().unwrap(),
            b + r["bytes"].as_u64().unwrap(),
        )
    })
}

#[test]
fn a_flood_of_bad_lines_costs_a_report_a_second_and_loses_no_count() {
    let svc = Service::start(ROOM_CORE, json!({}));
    for (name, prompt, kind, why) in [
        (
            "not-json",
            "not-json: 50000",
            "harness_line_rejected",
            "not_json",
        ),
        ("not-utf8", "not-utf8: 50000", "output_dropped", "not_utf8"),
        (
            "over-cap",
            "huge-lines: 20 2000000",
            "output_dropped",
            "over_cap",
        ),
    ] {
        let (id, record) = run(&svc, "claude", name, prompt, Duration::from_secs(60));
        let sizes = record["hostile_bytes"].as_array().unwrap();
        let bytes: u64 = sizes.iter().map(|n| n.as_u64().unwrap()).sum();
        let reports = of_kind(&svc, &id, kind);
        assert_eq!(counted(&reports), (sizes.len() as u64, bytes), "{name}");
        assert!(
            reports.iter().all(|r| r["why"] == why && r["turn"] == 1),
            "{reports:?}"
        );
        if kind == "harness_line_rejected" {
            assert_eq!(reports[0]["prefix"], "not json 0");
            assert_eq!(
                (reports[0]["lines"].as_u64(), reports[0]["bytes"].as_u64()),
                (Some(1), Some(10))
            );
        }
        // At most one report a second, and one at the end.
        let events = all_events(&svc, &id, 1024);
        let at = |kind: &str| {
            events.iter().find(|e| e["kind"] == kind).unwrap()["at_ms"]
                .as_u64()
                .unwrap()
        };
        let seconds = (at("turn_ended") - at("turn_started")) / 1000;
        assert!(
            reports.len() as u64 <= seconds + 2,
            "{name}: {} reports in {seconds} s",
            reports.len()
        );
        // Nothing else of the flood is journalled.
        assert!(events.len() < 20, "{name}: {} events", events.len());
    }
}

#[test]
fn each_turn_of_a_warm_process_reports_its_own_lines_before_it_ends() {
    let svc = Service::start(ROOM_CORE, json!({"linger_ms": 60_000}));
    let (id, _) = run(
        &svc,
        "claude",
        "warm",
        "not-json: 3",
        Duration::from_secs(10),
    );
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "not-json: 2"}),
    );
    assert_eq!(status, 200, "{v}");
    wait_until("the second turn's end", Duration::from_secs(10), || {
        (of_kind(&svc, &id, "turn_ended").len() == 2).then_some(())
    });
    // The first line of each turn at once, the rest when its output ends
    // (its `result`): each turn's counts are whole before its `turn_ended`.
    let mut turn = 1;
    let mut lines = 0;
    for e in all_events(&svc, &id, 1024) {
        let d = &e["data"];
        if e["kind"] == "harness_line_rejected" {
            assert_eq!(d["turn"], turn, "{e}");
            if lines == 0 {
                assert_eq!(
                    (&d["lines"], &d["prefix"]),
                    (&json!(1), &json!("not json 0"))
                );
            }
            lines += d["lines"].as_u64().unwrap();
        } else if e["kind"] == "turn_ended" {
            assert_eq!((d["turn"].as_u64(), lines), (Some(turn), 4 - turn), "{e}");
            (turn, lines) = (turn + 1, 0);
        }
    }
    assert_eq!(turn, 3);
}

/// What a line over the cap is refused with, `bytes` long.
fn over_cap(bytes: u64) -> String {
    format!(
        "Denied: room-core cannot read this request: its line is {bytes} bytes, over the \
         1047552 bytes a line of a harness's output may take."
    )
}

#[test]
fn a_request_over_the_cap_is_answered_at_once_and_the_app_is_told() {
    let svc = Service::start(ROOM_CORE, json!({}));
    for harness in ["claude", "codex"] {
        // A Write of a 10 MiB file; codex: a 10 MiB command.
        let (id, record) = run(
            &svc,
            harness,
            harness,
            "huge-ask: 10485760",
            Duration::from_secs(60),
        );
        let bytes = record["asked_bytes"].as_u64().unwrap();
        assert!(bytes > 10 << 20, "{bytes}");
        let message = over_cap(bytes);
        // What the harness got on its stdin, at once.
        let answer = &record["answers"][0];
        let (request, tool) = match harness {
            "claude" => {
                assert_eq!(answer["subtype"], "success", "{answer}");
                assert_eq!(
                    answer["response"],
                    json!({"behavior": "deny", "message": message})
                );
                ("can_use_tool", "Write")
            }
            _ => {
                assert_eq!(answer, &json!({"decision": "decline"}));
                // codex's decline has no room for why: it follows as a steer.
                assert_eq!(record["steers"], json!([message]));
                ("item/commandExecution/requestApproval", "command")
            }
        };
        // What the app sees: the refusal and the line dropped, no approval.
        assert_eq!(
            of_kind(&svc, &id, "request_refused"),
            [
                json!({"turn": 1, "request": request, "tool": tool, "bytes": bytes,
                    "reason": "over_cap", "message": message, "answered": true})
            ]
        );
        assert_eq!(
            of_kind(&svc, &id, "output_dropped"),
            [json!({"turn": 1, "why": "over_cap", "lines": 1, "bytes": bytes})]
        );
        assert_eq!(
            of_kind(&svc, &id, "approval_requested"),
            Vec::<Value>::new()
        );
        assert_eq!(svc.session(&id)["pending_approvals"], json!([]));
    }
}

#[test]
fn requests_room_core_cannot_take_are_answered_at_once_saying_why() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let long = "i".repeat(300);
    for harness in ["claude", "codex"] {
        let (id, record) = run(&svc, harness, harness, "bad-asks", Duration::from_secs(20));
        let sizes: Vec<u64> = record["asked_bytes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_u64().unwrap())
            .collect();
        let answers = &record["answers"];
        let refused = of_kind(&svc, &id, "request_refused");
        // Each line's ID (null: none room-core can answer), and the reason.
        let (expected, request): (Vec<(Value, &str)>, &str) = match harness {
            "claude" => (
                vec![
                    (json!("no-tool"), "no_tool"),
                    (json!("not-object"), "input_not_object"),
                    (json!(long), "id_too_long"),
                    (json!("deep"), "too_deep"),
                    (json!("not-json"), "not_json"),
                    (json!("not-utf8"), "not_utf8"),
                    (Value::Null, "no_id"),
                ],
                "can_use_tool",
            ),
            _ => (
                vec![
                    (json!("params"), "params_not_object"),
                    (json!(long), "id_too_long"),
                    (json!("deep"), "too_deep"),
                    (json!("not-json"), "not_json"),
                    (json!("not-utf8"), "not_utf8"),
                    (json!("input"), "not_utf8"),
                    (Value::Null, "no_id"),
                ],
                "item/commandExecution/requestApproval",
            ),
        };
        assert_eq!(refused.len(), expected.len(), "{refused:?}");
        for (((rid, reason), r), bytes) in expected.iter().zip(&refused).zip(&sizes) {
            let what = format!("{harness} {rid}: {r}");
            assert_eq!(r["turn"], 1, "{what}");
            assert_eq!(r["reason"], *reason, "{what}");
            assert_eq!(r["bytes"], *bytes, "{what}");
            assert_eq!(r["answered"], !rid.is_null(), "{what}");
            let Some(rid) = rid.as_str() else { continue };
            let answer = &answers[rid];
            match (harness, rid) {
                ("claude", _) => {
                    assert_eq!(r["request"], request, "{what}");
                    assert_eq!(
                        answer["response"],
                        json!({"behavior": "deny", "message": r["message"]}),
                        "{what}"
                    );
                }
                ("codex", "input") => {
                    assert_eq!(r["request"], "item/tool/requestUserInput", "{what}");
                    assert_eq!(
                        answer["error"],
                        json!({"code": -32600, "message": r["message"]}),
                        "{what}"
                    );
                }
                _ => {
                    assert_eq!(
                        (&r["request"], &r["tool"]),
                        (&json!(request), &json!("command"))
                    );
                    assert_eq!(answer, &json!({"decision": "decline"}), "{what}");
                }
            }
        }
        assert_eq!(answers.as_object().unwrap().len(), 6, "{answers}");
        // The turn went on to its end.
        assert_eq!(of_kind(&svc, &id, "turn_ended")[0]["by"], Value::Null);
    }
}

/// A claude that answers its prompt and exits at once, with a line that is
/// not JSON after its `result` (as the console's replay prints).
const INSTANT: &str = r#"#!/bin/sh
case "$1" in --version) echo "2.1.332 (answers at once)"; exit 0 ;; esac
read -r _prompt
printf '%s\n' '{"type":"system","subtype":"init","session_id":"instant-1"}' \
  '{"type":"result","subtype":"success","is_error":false,"session_id":"instant-1","result":"done"}' \
  'not json after the result'
"#;

/// A harness may read its prompt, print its whole turn and exit while the
/// turn's start is still being journalled (the prompt is said first, the
/// start journalled, then the output let go): its output and its end wait
/// for the start, and not a line of it is lost. Each of 24 sessions'
/// journals holds the init, the result and the report of the line after
/// it, before its `turn_ended`.
#[test]
fn a_harness_that_answers_and_exits_before_its_start_is_journalled_loses_no_line() {
    let dir = TempDir::new("instant-claude");
    let program = dir.path().join("instant-claude");
    std::fs::write(&program, INSTANT).unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let svc = Service::start(ROOM_CORE, json!({ "claude_program": program }));
    let ids: Vec<String> = (0..24)
        .map(|i| {
            let folder = svc.folder(&format!("instant-{i}"));
            let s = svc.start_session(start_body(&folder, "claude", json!({"prompt": "hi"})));
            s["id"].as_str().unwrap().to_string()
        })
        .collect();
    for id in &ids {
        wait_until(
            &format!("{id}'s turn to end"),
            Duration::from_secs(30),
            || of_kind(&svc, id, "turn_ended").first().map(drop),
        );
    }
    let mut lost = Vec::new();
    for id in &ids {
        let kinds: Vec<String> = all_events(&svc, id, 1024)
            .into_iter()
            .filter_map(|e| {
                let d = &e["data"];
                match e["kind"].as_str()? {
                    "harness" => Some(format!("harness {}", d["type"].as_str()?)),
                    "harness_line_rejected" => Some(format!("rejected {}", d["prefix"].as_str()?)),
                    k @ ("turn_started" | "turn_ended") => Some(k.to_string()),
                    _ => None,
                }
            })
            .collect();
        let whole = [
            "turn_started",
            "harness system",
            "harness result",
            "rejected not json after the result",
            "turn_ended",
        ];
        if kinds != whole {
            lost.push(format!("{id}: {kinds:?}"));
        }
    }
    assert!(lost.is_empty(), "{}\n{}", lost.join("\n"), svc.log());
}
