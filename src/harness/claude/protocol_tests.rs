use super::*;
use crate::harness::transcripts::{self, transcripts};
use serde_json::json;

/// What claude printed in `name`, decoded.
fn from_cli(name: &str) -> Vec<Incoming> {
    transcripts::printed("claude", name)
        .iter()
        .map(|l| decode(l))
        .collect()
}

fn results(got: &[Incoming]) -> Vec<&TurnResult> {
    got.iter()
        .filter_map(|m| match m {
            Incoming::Result(r) => Some(r),
            _ => None,
        })
        .collect()
}

fn turn(i: u64, o: u64, r: u64, w: u64, usd: f64) -> Option<UsageReport> {
    Some(UsageReport::Turn(Usage {
        input_tokens: i,
        output_tokens: o,
        cache_read_tokens: r,
        cache_write_tokens: w,
        cost_usd: room_machines::session::Usd::reported(usd),
    }))
}

/// The figures of a report, without its cost.
fn tokens(report: Option<UsageReport>) -> (u64, u64, u64, u64) {
    let Some(UsageReport::Turn(u)) = report else {
        panic!("a turn's usage: {report:?}")
    };
    (
        u.input_tokens,
        u.output_tokens,
        u.cache_read_tokens,
        u.cache_write_tokens,
    )
}

/// The cost of a report, in USD.
fn usd(report: Option<UsageReport>) -> f64 {
    match report {
        Some(UsageReport::Turn(u)) => u.cost_usd.unwrap().usd(),
        _ => panic!("a turn's usage: {report:?}"),
    }
}

#[test]
fn every_recorded_line_the_talker_reads_decodes_as_such() {
    for (name, lines) in transcripts("claude") {
        for e in lines.iter().filter(|e| e["dir"] == "from_cli") {
            let m = &e["msg"];
            let read = m["type"] == "result"
                || m["type"] == "control_request"
                || m["type"] == "control_cancel_request"
                || m["subtype"] == "init";
            if read {
                let decoded = decode(&m.to_string());
                assert_ne!(decoded, Incoming::Other, "{name}: {m}");
            }
        }
    }
}

#[test]
fn a_turn_starts_with_init_and_ends_with_its_usage() {
    let got = from_cli("turn");
    let inits: Vec<_> = got
        .iter()
        .filter_map(|m| match m {
            Incoming::Init { session_id } => Some(session_id),
            _ => None,
        })
        .collect();
    assert_eq!(inits.len(), 2, "one init per turn");
    assert_eq!(inits[0], inits[1]);
    let results = results(&got);
    assert_eq!(results.len(), 2);
    for r in &results {
        assert_eq!(r.subtype.as_deref(), Some("success"));
        assert!(!r.is_error);
        // The fake model's figures (fixtures/fake_model_server.py).
        assert_eq!(tokens(r.usage), (10, 5, 3, 7));
        assert!(usd(r.usage) > 0.0);
    }
    // Each turn's cost is its own, not the session's running sum.
    assert_eq!(results[0].usage, results[1].usage);
}

/// The events the real CLI printed (fixtures/oneshot/record.py).
fn recorded(name: &str) -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("fixtures/oneshot/claude/{name}.jsonl"));
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().map(str::to_string).collect()
}

/// The usage each of `lines` reports, in order.
fn reports(lines: &[String]) -> Vec<UsageReport> {
    lines
        .iter()
        .filter_map(|l| match decode(l) {
            Incoming::Result(r) => r.usage,
            _ => None,
        })
        .collect()
}

#[test]
fn a_turns_usage_is_its_result_since_the_last_one_not_the_sessions_sum() {
    // One model request: the fake model's 10 / 5 / 3 / 7, at claude's price.
    assert_eq!(
        reports(&recorded("first")),
        [turn(10, 5, 3, 7, 0.0001756).unwrap()]
    );
    // Resumed, two requests: twice that, not the session's 30 / 0.0005268.
    assert_eq!(
        reports(&recorded("resumed")),
        [turn(20, 10, 6, 14, 0.0003512).unwrap()]
    );
}

#[test]
fn a_result_without_per_turn_models_falls_back_to_its_tokens_and_odd_figures_read_as_none() {
    let usage = |e: Value| match decode(&e.to_string()) {
        Incoming::Result(r) => r.usage,
        _ => None,
    };
    let e = json!({"type": "result", "total_cost_usd": 9.0,
        "usage": {"input_tokens": 10, "output_tokens": -5, "cache_read_input_tokens": "3",
                  "cache_creation_input_tokens": 7}});
    assert_eq!(
        usage(e),
        Some(UsageReport::Turn(Usage {
            input_tokens: 10,
            cache_write_tokens: 7,
            ..Usage::default()
        }))
    );
    let two_models = json!({"type": "result", "model_usage_since_last_result": {
        "a": {"inputTokens": 1, "costUSD": 0.25}, "b": {"outputTokens": 2, "costUSD": -1},
        "c": "not a model"}});
    assert_eq!(usage(two_models), turn(1, 2, 0, 0, 0.25));
    for none in [
        json!({"type": "result"}),
        json!({"type": "result", "usage": [10, 5]}),
        json!({"type": "assistant", "usage": {"input_tokens": 1}}),
    ] {
        assert_eq!(usage(none.clone()), None, "{none}");
    }
}

#[test]
fn can_use_tool_decodes_with_its_input_and_reason() {
    let got = from_cli("approval_allow");
    let (id, req) = got
        .iter()
        .find_map(|m| match m {
            Incoming::ControlRequest {
                request_id,
                request: CliRequest::CanUseTool(r),
            } => Some((request_id, r)),
            _ => None,
        })
        .unwrap();
    assert!(!id.is_empty());
    assert_eq!(req.tool_name, "Write");
    let input: Value = serde_json::from_str(req.input.get()).unwrap();
    assert_eq!(input["file_path"], "<work>/allowed.txt");
    let outside = from_cli("auto_modes")
        .into_iter()
        .find_map(|m| match m {
            Incoming::ControlRequest {
                request: CliRequest::CanUseTool(r),
                ..
            } => Some(r),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        outside.decision_reason.as_deref(),
        Some("Path is outside allowed working directories")
    );
}

#[test]
fn an_interrupt_cancels_the_pending_request_and_ends_the_turn_in_error() {
    let got = from_cli("interrupt_pending_approval");
    let asked = got
        .iter()
        .find_map(|m| match m {
            Incoming::ControlRequest {
                request_id,
                request: CliRequest::CanUseTool(_),
            } => Some(request_id.clone()),
            _ => None,
        })
        .unwrap();
    assert!(got
        .iter()
        .any(|m| matches!(m, Incoming::ControlCancel { request_id } if *request_id == asked)));
    assert!(results(&got)[0].is_error);
    let got = from_cli("interrupt_mid_answer");
    let cut = results(&got).into_iter().find(|r| r.is_error).unwrap();
    assert!(tokens(cut.usage).1 > 0, "an estimate of the cut answer");
}

/// What room-core writes equals what the drivers wrote to the real CLI.
#[test]
fn encoders_write_what_the_real_cli_was_sent() {
    let sent: Vec<Value> = transcripts("claude")
        .into_iter()
        .flat_map(|(_, lines)| lines)
        .filter(|e| e["dir"] == "to_cli")
        .map(|e| e["msg"].clone())
        .collect();
    let has = |line: String| {
        let v: Value = serde_json::from_str(&line).unwrap();
        assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
        assert!(sent.contains(&v), "never sent: {v}");
    };
    has(interrupt("int-1"));
    has(user_message("hello"));
    let answers: Vec<&Value> = sent.iter().map(|s| &s["response"]["response"]).collect();
    let raw = |v: Value| RawValue::from_string(v.to_string()).unwrap();
    // An allow with the input to run, as the approval_error scenario
    // sent it (claude ran it).
    let input = raw(json!({"file_path": "<work>/rewritten.txt", "content": "rewritten\n"}));
    let line = permission_response("x", "Write", Decision::Allow { input: &input });
    let v: Value = serde_json::from_str(&line).unwrap();
    assert!(answers.contains(&&v["response"]["response"]), "{v}");
    let line = permission_response("x", "Write", Decision::Deny { message: "no" });
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        v["response"],
        json!({"subtype": "success", "request_id": "x",
               "response": {"behavior": "deny", "message": "no"}})
    );
    // The input and the whole-tool session rule as the allow_session
    // scenario sent them.
    let input = raw(json!({"command": "sh -c 'echo y > <work>/whole.txt'",
                           "description": "Run what the test asked"}));
    let line = permission_response("x", "Bash", Decision::AllowForSession { input: &input });
    let v: Value = serde_json::from_str(&line).unwrap();
    assert!(answers.contains(&&v["response"]["response"]), "{v}");
    let line = error_response("x", "APP_ERROR_TEXT");
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["response"]["subtype"], "error");
    assert!(sent
        .iter()
        .any(|s| s["response"]["error"] == v["response"]["error"]));
}

#[test]
fn odd_lines_are_other_never_a_panic() {
    for line in [
        "",
        "not json",
        "[]",
        "null",
        "\"result\"",
        "{",
        "{}",
        "{\"type\":\"control_request\"}",
        "{\"type\":\"control_request\",\"request_id\":7}",
        "{\"type\":\"control_response\",\"response\":[]}",
        "{\"type\":\"system\",\"subtype\":\"init\"}",
        "{\"type\":\"result\",\"usage\":{\"input_tokens\":-1,\"output_tokens\":1e300},\"total_cost_usd\":\"x\"}",
        "{\"type\":\"control_request\",\"request_id\":\"r\",\"request\":{\"subtype\":\"can_use_tool\"}}",
    ] {
        let _ = decode(line);
    }
    for other in [
        "not json",
        "[1]",
        "{}",
        "{\"type\":\"system\",\"subtype\":\"init\"}",
    ] {
        assert_eq!(decode(other), Incoming::Other, "{other}");
    }
    // A request without an id cannot be answered, and says so.
    assert_eq!(
        decode("{\"type\":\"control_request\",\"request_id\":7,\"request\":{\"subtype\":\"can_use_tool\",\"tool_name\":\"W\"}}"),
        Incoming::RequestWithoutId {
            subtype: Some("can_use_tool".into()),
            tool_name: Some("W".into())
        }
    );
    // A can_use_tool without a tool name, or whose input is not an
    // object, is still a request to answer (with a denial).
    assert_eq!(
        decode("{\"type\":\"control_request\",\"request_id\":\"r\",\"request\":{\"subtype\":\"can_use_tool\"}}"),
        Incoming::ControlRequest {
            request_id: "r".into(),
            request: CliRequest::BadCanUseTool {
                tool_name: None,
                why: Why::NoTool
            }
        }
    );
    assert_eq!(
        decode("{\"type\":\"control_request\",\"request_id\":\"r\",\"request\":{\"subtype\":\"can_use_tool\",\"tool_name\":\"Bash\",\"input\":[1]}}"),
        Incoming::ControlRequest {
            request_id: "r".into(),
            request: CliRequest::BadCanUseTool {
                tool_name: Some("Bash".into()),
                why: Why::InputNotObject
            }
        }
    );
    // The input is kept as printed, even where serde cannot read the
    // line as a struct (a repeated key).
    let Incoming::ControlRequest {
        request: CliRequest::CanUseTool(req),
        ..
    } = decode(
        r#"{"type":"control_request","request_id":"r","request":{"subtype":"can_use_tool","tool_name":"W","input":{"b": 1.0, "a":[ ]}}}"#,
    )
    else {
        panic!("a request")
    };
    assert_eq!(req.input.get(), r#"{"b": 1.0, "a":[ ]}"#);
    let Incoming::ControlRequest {
        request: CliRequest::CanUseTool(req),
        ..
    } = decode(
        r#"{"type":"control_request","request_id":"r","request":{"subtype":"can_use_tool","tool_name":"W","input":{"a":1},"input":{"b":2}}}"#,
    )
    else {
        panic!("a request")
    };
    assert_eq!(req.input.get(), r#"{"b":2}"#);
    let Incoming::Result(r) = decode(
        "{\"type\":\"result\",\"usage\":{\"input_tokens\":-1,\"output_tokens\":7},\"total_cost_usd\":\"x\"}",
    ) else {
        panic!("a result with odd fields is still a result")
    };
    assert_eq!(tokens(r.usage), (0, 7, 0, 0));
    let deep = "[".repeat(100_000);
    assert_eq!(decode(&deep), Incoming::Other);
}

transcripts::decode_never_panics!(super::decode, "claude");
