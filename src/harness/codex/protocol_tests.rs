use super::*;
use crate::harness::transcripts::{self, transcripts};
use serde_json::json;

/// What codex printed in `name`, decoded.
fn from_cli(name: &str) -> Vec<Incoming> {
    transcripts::printed("codex", name)
        .iter()
        .map(|l| decode(l))
        .collect()
}

fn notes(got: &[Incoming]) -> Vec<&Notification> {
    got.iter()
        .filter_map(|m| match m {
            Incoming::Notification(n) => Some(n),
            _ => None,
        })
        .collect()
}

#[test]
fn every_recorded_request_decodes_to_one_the_talker_reads() {
    for (name, lines) in transcripts("codex") {
        for e in lines.iter().filter(|e| e["dir"] == "from_cli") {
            let line = e["msg"].to_string();
            match decode(&line) {
                Incoming::RequestWithoutId { method } => panic!("{name}: no id: {method}"),
                Incoming::Request {
                    request: ServerRequest::Other { method },
                    ..
                } => panic!("{name}: a request not read: {method}"),
                Incoming::Other if e["msg"].get("id").is_some() => {
                    panic!("{name}: an answer not read: {line}")
                }
                _ => {}
            }
        }
    }
}

#[test]
fn a_turn_reads_as_started_usage_completed() {
    let got = from_cli("turn");
    let n = notes(&got);
    let thread = got
        .iter()
        .find_map(|m| match m {
            Incoming::Response { result, .. } => thread_id(result),
            _ => None,
        })
        .unwrap();
    assert!(!thread.is_empty());
    let started: Vec<_> = n
        .iter()
        .filter_map(|n| match n {
            Notification::TurnStarted { turn_id } => Some(turn_id.clone()),
            _ => None,
        })
        .collect();
    let completed: Vec<_> = n
        .iter()
        .filter_map(|n| match n {
            Notification::TurnCompleted {
                turn_id, failed, ..
            } => Some((turn_id.clone(), *failed)),
            _ => None,
        })
        .collect();
    assert_eq!(started.len(), 2);
    assert_eq!(
        completed,
        started
            .iter()
            .map(|t| (t.clone(), false))
            .collect::<Vec<_>>()
    );
    let usage: Vec<_> = n
        .iter()
        .filter_map(|n| match n {
            Notification::TokenUsage(report) => Some(*report),
            _ => None,
        })
        .collect();
    // The fake model's 10 input hold 3 cached and 7 cache-write
    // (fixtures/fake_model_server.py); the total grows by each request.
    assert_eq!(usage, [total(0, 5, 3, 7), total(0, 10, 6, 14)]);
}

fn total(i: u64, o: u64, r: u64, w: u64) -> UsageReport {
    UsageReport::Total(Usage {
        input_tokens: i,
        output_tokens: o,
        cache_read_tokens: r,
        cache_write_tokens: w,
        cost_usd: None,
    })
}

#[test]
fn token_usage_reports_the_threads_running_total_with_cached_input_split_out() {
    let usage = |e: Value| match decode(&e.to_string()) {
        Incoming::Notification(Notification::TokenUsage(report)) => Some(report),
        _ => None,
    };
    let odd = json!({"method": "thread/tokenUsage/updated", "params": {
        "tokenUsage": {"total": {"inputTokens": 100, "cachedInputTokens": -3,
                                 "outputTokens": "5"}}}});
    assert_eq!(usage(odd), Some(total(100, 0, 0, 0)));
    for none in [
        json!({"method": "thread/tokenUsage/updated"}),
        json!({"method": "thread/tokenUsage/updated",
               "params": {"tokenUsage": {"total": [1, 2]}}}),
        json!({"method": "turn/completed",
               "params": {"tokenUsage": {"total": {"inputTokens": 1}}}}),
    ] {
        assert_eq!(usage(none.clone()), None, "{none}");
    }
}

#[test]
fn approval_requests_decode_with_their_item() {
    let got = from_cli("approval_session");
    let (id, req) = got
        .iter()
        .find_map(|m| match m {
            Incoming::Request {
                id,
                request: ServerRequest::CommandApproval(r),
            } => Some((id, r)),
            _ => None,
        })
        .unwrap();
    assert_eq!(*id, RequestId::Number(0));
    assert!(req
        .reason
        .as_deref()
        .unwrap()
        .starts_with("FAKE_MODEL_ESCALATE"));
    assert!(req.command.as_deref().unwrap().contains("session.txt"));
    assert_eq!(req.cwd.as_deref(), Some("<work>"));
    let got = from_cli("file_change_approval");
    let req = got
        .iter()
        .find_map(|m| match m {
            Incoming::Request {
                request: ServerRequest::FileChangeApproval(r),
                ..
            } => Some(r),
            _ => None,
        })
        .unwrap();
    let paths = notes(&got)
        .into_iter()
        .find_map(|n| match n {
            Notification::FileChangeStarted { id, paths } if Some(id) == req.item_id.as_ref() => {
                Some(paths.clone())
            }
            _ => None,
        })
        .unwrap();
    assert!(paths[0].starts_with("/nonexistent-room-proto/"));
}

#[test]
fn an_interrupted_turn_completes_not_failed() {
    let got = from_cli("interrupt_pending_approval");
    assert!(got.iter().any(|m| matches!(m, Incoming::Request { .. })));
    assert!(notes(&got)
        .iter()
        .any(|n| matches!(n, Notification::TurnCompleted { failed: false, .. })));
}

#[test]
fn refused_steers_and_resumes_are_errors_with_their_ids() {
    let errors: Vec<_> = from_cli("steer_refused")
        .into_iter()
        .filter_map(|m| match m {
            Incoming::Error { id, message } => Some((id, message)),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 2);
    assert_eq!(errors[0].1, "no active turn to steer");
}

/// What room-core writes equals what the drivers wrote to the real CLI.
#[test]
fn encoders_write_what_the_real_cli_was_sent() {
    let sent: Vec<Value> = transcripts("codex")
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
    has(initialize(
        1,
        ClientInfo {
            name: "room-core-probe",
            title: Some("room-core protocol probe"),
            version: "0.0.0",
        },
    ));
    has(initialized());
    // What the transcripts' threads were opened with.
    let opened = |approval_policy| ThreadStartParams {
        cwd: "<work>",
        approval_policy,
        sandbox: SandboxMode::WorkspaceWrite,
        model: None,
        developer_instructions: None,
        config: None,
    };
    for policy in [
        ApprovalPolicy::Never,
        ApprovalPolicy::OnRequest,
        ApprovalPolicy::Untrusted,
    ] {
        has(thread_start(2, &opened(policy)));
    }
    // The ids in the transcripts are per process; find the ones used.
    let find = |method: &str| {
        sent.iter()
            .find(|s| s["method"] == method)
            .unwrap_or_else(|| panic!("no {method} sent"))
            .clone()
    };
    let s = find("thread/resume");
    let p = &s["params"];
    has(thread_resume(
        s["id"].as_u64().unwrap(),
        &ThreadResumeParams {
            thread_id: p["threadId"].as_str().unwrap(),
            open: opened(ApprovalPolicy::Never),
        },
    ));
    let s = find("turn/start");
    has(turn_start(
        s["id"].as_u64().unwrap(),
        s["params"]["threadId"].as_str().unwrap(),
        s["params"]["input"][0]["text"].as_str().unwrap(),
        &[],
        None,
        None,
    ));
    let s = find("turn/steer");
    let p = &s["params"];
    has(turn_steer(
        s["id"].as_u64().unwrap(),
        p["threadId"].as_str().unwrap(),
        p["expectedTurnId"].as_str().unwrap(),
        p["input"][0]["text"].as_str().unwrap(),
    ));
    let s = find("turn/interrupt");
    has(turn_interrupt(
        s["id"].as_u64().unwrap(),
        s["params"]["threadId"].as_str().unwrap(),
        s["params"]["turnId"].as_str().unwrap(),
    ));
    for d in [
        Decision::Accept,
        Decision::AcceptForSession,
        Decision::Decline,
    ] {
        let v: Value = serde_json::from_str(&approval_answer(&RequestId::Number(0), d)).unwrap();
        assert!(
            sent.iter().any(|s| s.get("result") == v.get("result")),
            "never sent: {v}"
        );
    }
    let v: Value =
        serde_json::from_str(&error_answer(&RequestId::Text("a".into()), -32000, "m")).unwrap();
    assert_eq!(
        v,
        json!({"jsonrpc": "2.0", "id": "a", "error": {"code": -32000, "message": "m"}})
    );
}

#[test]
fn odd_lines_are_other_never_a_panic() {
    for line in [
        "",
        "not json",
        "[]",
        "{}",
        "{\"id\":null}",
        "{\"id\":1.5,\"result\":{}}",
        "{\"method\":7}",
        "{\"method\":\"turn/completed\",\"params\":{\"turn\":{\"id\":1}}}",
        "{\"method\":\"thread/tokenUsage/updated\",\"params\":{\"tokenUsage\":{\"total\":{\"inputTokens\":-3},\"last\":[]}}}",
        "{\"method\":\"item/commandExecution/requestApproval\",\"id\":{\"x\":1},\"params\":null}",
        "{\"method\":\"item/commandExecution/requestApproval\",\"id\":3,\"params\":[1]}",
    ] {
        let _ = decode(line);
    }
    for other in [
        "not json",
        "{}",
        "{\"id\":1.5,\"result\":{}}",
        "{\"method\":\"turn/completed\",\"params\":{\"turn\":{\"id\":1}}}",
        "{\"method\":\"thread/tokenUsage/updated\",\"params\":{\"tokenUsage\":{\"total\":[1,2],\"last\":{}}}}",
    ] {
        assert_eq!(decode(other), Incoming::Other, "{other}");
    }
    // A request whose id cannot be read cannot be answered.
    assert_eq!(
        decode("{\"method\":\"x\",\"id\":{\"x\":1}}"),
        Incoming::RequestWithoutId { method: "x".into() }
    );
    // A known request whose parameters do not fit is still a request,
    // to be declined.
    assert_eq!(
        decode("{\"method\":\"item/commandExecution/requestApproval\",\"id\":3,\"params\":[1]}"),
        Incoming::Request {
            id: RequestId::Number(3),
            request: ServerRequest::BadApproval {
                method: COMMAND_APPROVAL.into(),
                why: Why::ParamsNotObject,
            }
        }
    );
    let Incoming::Notification(Notification::TokenUsage(UsageReport::Total(total))) = decode(
        "{\"method\":\"thread/tokenUsage/updated\",\"params\":{\"tokenUsage\":{\"total\":{\"inputTokens\":-3,\"outputTokens\":4},\"last\":{}}}}",
    ) else {
        panic!("odd counts still make a usage update")
    };
    assert_eq!((total.input_tokens, total.output_tokens), (0, 4));
    let deep = "{\"a\":".repeat(100_000);
    assert_eq!(decode(&deep), Incoming::Other);
}

transcripts::decode_never_panics!(super::decode, "codex");
