//! The HTTP API's answers to bad and repeated input: status codes and the
//! exact sentences the app shows.

use std::time::Duration;

use room_kit::*;
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

#[test]
fn a_missing_or_wrong_token_is_unauthorized() {
    let svc = Service::start(ROOM_CORE, json!({}));
    for token in [None, Some("wrong")] {
        let (status, v) = svc.call_with("GET", "/v1/capabilities", None, token);
        assert_eq!(status, 401);
        assert_eq!(v, json!({"error": "unauthorized"}));
    }
}

#[test]
fn capabilities_list_project_copy() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let (status, v) = svc.get("/v1/capabilities");
    assert_eq!(status, 200);
    assert!(v["capabilities"]
        .as_array()
        .unwrap()
        .contains(&json!("project_copy")));
}

#[test]
fn bad_start_requests_are_refused_with_a_sentence() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("code");
    let parent = "cr_00000000000000000000000000000001";
    let cases = [
        (
            start_body(&folder, "claude", json!({"bogus": 1})),
            422,
            "unknown_field",
            "Unknown field \"bogus\". Known fields: workspace, folder, harness, agent, kind, parent, shared_sandbox, request_id, plan_only, project_copy, prompt, approvals, max_cost_usd, max_tokens, model, effort, instructions, mcp_servers, attachments.",
        ),
        (
            start_body(&folder, "claude", json!({"kind": "side_chat", "parent": parent, "project_copy": true})),
            422,
            "project_copy_refused",
            "A side chat works in its parent's folder, so it cannot take a project copy.",
        ),
        (
            start_body(&folder, "codex", json!({"kind": "child", "parent": parent, "shared_sandbox": true, "project_copy": true})),
            422,
            "project_copy_refused",
            "A shared-sandbox child works in its parent's folder, so it cannot take a project copy.",
        ),
        (
            start_body(std::path::Path::new("relative/code"), "claude", json!({})),
            422,
            "invalid_field",
            "The folder must be an absolute path.",
        ),
        (
            start_body(&folder, "claude", json!({"workspace": " "})),
            422,
            "invalid_field",
            "The workspace must not be empty.",
        ),
        (
            start_body(&folder, "claude", json!({"kind": "child"})),
            422,
            "invalid_field",
            "A side chat or child needs its parent session.",
        ),
        (
            json!([1, 2]),
            422,
            "invalid_body",
            "The body must be a JSON object.",
        ),
        (
            start_body(&folder, "acp", json!({})),
            422,
            "invalid_field",
            "An acp session names its agent: \"agent\", one of the config's acp_agents.",
        ),
        (
            start_body(&folder, "claude", json!({"agent": "gemini"})),
            422,
            "invalid_field",
            "\"agent\" names an ACP agent: it goes with \"harness\": \"acp\".",
        ),
        (
            start_body(&folder, "acp", json!({"agent": "gemini", "model": "opus"})),
            422,
            "invalid_field",
            "An ACP agent takes no model from room-core: its own config chooses it.",
        ),
        (
            start_body(&folder, "acp", json!({"agent": "gemini", "plan_only": true})),
            422,
            "invalid_field",
            "An ACP agent's own config decides what it may change: room-core cannot make it plan only.",
        ),
        (
            start_body(&folder, "acp", json!({"agent": "gemini"})),
            409,
            "unknown_agent",
            "The config's acp_agents has no agent \"gemini\" (it names none).",
        ),
    ];
    for (body, status, code, message) in cases {
        let (got, v) = svc.post("/v1/sessions", body.clone());
        assert_eq!(
            (got, &v["code"], &v["error"]),
            (status, &json!(code), &json!(message)),
            "{body}"
        );
    }
    // An unknown harness names the allowed ones.
    let (status, v) = svc.post("/v1/sessions", start_body(&folder, "claud", json!({})));
    assert_eq!(status, 422);
    assert_eq!(v["code"], "invalid_field");
    assert_eq!(
        v["error"],
        "Invalid body: unknown variant `claud`, expected one of `claude`, `codex`, `acp`."
    );
    // A missing field names it.
    let (status, v) = svc.post("/v1/sessions", json!({"workspace": "w", "folder": folder}));
    assert_eq!(status, 422);
    assert_eq!(v["error"], "Invalid body: missing field `harness`.");
    // Nothing was started or registered.
    assert_eq!(svc.get("/v1/workspaces/ws-code").0, 404);
}

#[test]
fn bad_json_is_400_and_a_large_body_is_413() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let (status, v) = svc.call("POST", "/v1/sessions", Some("{\"workspace\": "));
    assert_eq!(status, 400);
    assert_eq!(v["code"], "bad_json");
    assert_eq!(
        v["error"],
        "The body is not valid JSON: EOF while parsing a value at line 1 column 14."
    );
    // 1 MiB but for a start and a message, which may carry images
    // (tests/hostile_http.rs refuses theirs past 28 MiB).
    let big = format!("{{\"max_tokens\": 1, \"x\": \"{}\"}}", "x".repeat(1 << 20));
    let (status, v) = svc.call("POST", "/v1/sessions/cr_x/budget", Some(&big));
    assert_eq!(status, 413);
    assert_eq!(
        v,
        json!({"error": "The body is larger than 1 MiB.", "code": "too_large"})
    );
}

#[test]
fn a_retry_returns_the_same_session_and_a_different_one_conflicts() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("code");
    let body = start_body(
        &folder,
        "claude",
        json!({"request_id": "req-1", "project_copy": true}),
    );
    let first = svc.start_session(body.clone());

    // project_copy and plan_only may differ.
    let mut same = body.clone();
    same["project_copy"] = json!(false);
    same["plan_only"] = json!(true);
    let (status, v) = svc.post("/v1/sessions", same);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["id"], first["id"]);

    let mut other = body;
    other["harness"] = json!("codex");
    let (status, v) = svc.post("/v1/sessions", other);
    assert_eq!(status, 409);
    assert_eq!(v["code"], "request_conflict");
    assert_eq!(
        v["error"],
        json!(format!(
            "Request ID req-1 already started session {} with a different harness.",
            first["id"].as_str().unwrap()
        ))
    );
}

#[test]
fn workspaces_are_unknown_until_a_start_registers_them() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let (status, v) = svc.get("/v1/workspaces/ws-1");
    assert_eq!(status, 404);
    assert_eq!(
        v,
        json!({
            "error": "No workspace ws-1 is registered yet; a session start registers it.",
            "code": "workspace_not_found"
        })
    );
    let folder = svc.folder("code");
    svc.start_session(start_body(
        &folder,
        "codex",
        json!({"workspace": "ws-1", "project_copy": true}),
    ));
    let (status, v) = svc.get("/v1/workspaces/ws-1");
    assert_eq!(status, 200);
    assert_eq!(
        v,
        json!({"id": "ws-1", "folder": folder, "status_file": status_file(&folder)})
    );
}

#[test]
fn session_actions_refuse_what_does_not_apply() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let (status, v) = svc.get("/v1/sessions/cr_0123");
    assert_eq!(
        (status, v["error"].as_str()),
        (404, Some("No session cr_0123."))
    );
    let (status, v) = svc.call("DELETE", "/v1/sessions/cr_0123", None);
    assert_eq!(
        (status, v["code"].as_str(), v["error"].as_str()),
        (
            405,
            Some("method_not_allowed"),
            Some("/v1/sessions/cr_0123 takes GET, not DELETE.")
        )
    );
    let (status, v) = svc.call("GET", "/v1/sessions/cr_0123/stop", None);
    assert_eq!(
        (status, v["error"].as_str()),
        (405, Some("/v1/sessions/cr_0123/stop takes POST, not GET."))
    );
    let (status, v) = svc.call("GET", "/v2/anything", None);
    assert_eq!(
        (status, v["error"].as_str()),
        (404, Some("No route GET /v2/anything."))
    );

    let folder = svc.folder("code");
    let s = svc.start_session(start_body(&folder, "claude", json!({"project_copy": true})));
    let id = s["id"].as_str().unwrap();
    assert!(id.starts_with("cr_") && id.len() == 35, "{id}");

    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/relaunch"),
        json!({"mode": "resume"}),
    );
    assert_eq!(status, 409);
    assert_eq!(v["code"], "session_starting");
    assert_eq!(
        v["error"],
        json!(format!("Session {id} is still starting; it cannot be relaunched before its harness has started."))
    );
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/relaunch"),
        json!({"mode": "reboot"}),
    );
    assert_eq!(status, 422);
    assert_eq!(
        v["error"],
        "Invalid body: unknown variant `reboot`, expected one of `resume`, `wake`, `restart`."
    );
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"text": "hi"}),
    );
    assert_eq!((status, v["code"].as_str()), (422, Some("unknown_field")));

    svc.post(&format!("/v1/sessions/{id}/close"), json!({}));
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "hi"}),
    );
    assert_eq!(status, 409);
    assert_eq!(
        v,
        json!({"error": format!("Session {id} is closed."), "code": "session_finished"})
    );
}

#[test]
fn prompts_run_in_order_one_turn_at_a_time_resuming_the_native_session() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("code");
    let s = svc.start_session(start_body(
        &folder,
        "codex",
        json!({"prompt": "sleep: 0.3"}),
    ));
    let id = s["id"].as_str().unwrap();
    for p in ["two", "three"] {
        svc.post(&format!("/v1/sessions/{id}/messages"), json!({"prompt": p}));
    }
    let third = svc.await_record(&folder, 3, Duration::from_secs(10));
    let records = svc.records_in(&folder);
    let prompts: Vec<_> = records.iter().map(|r| r["prompt"].clone()).collect();
    assert_eq!(prompts, [json!("sleep: 0.3"), json!("two"), json!("three")]);
    assert_eq!(third["native_id"], records[0]["native_id"]);
    assert_eq!(
        third["argv"],
        json!([
            "app-server",
            "-c",
            "sandbox_workspace_write.network_access=true"
        ])
    );
    // The third process resumed the thread the first one started.
    assert_eq!(records[0]["thread"]["method"], "thread/start");
    assert_eq!(
        third["thread"],
        json!({"method": "thread/resume", "approvalPolicy": "never",
               "sandbox": "workspace-write", "cwd": folder.to_str().unwrap(),
               "model": null, "developerInstructions": null})
    );
    let v = svc.await_session(id, "idle", |v| v["state"] == "idle");
    assert_eq!(v["native_id"], records[0]["native_id"]);
    assert_eq!(v["queue"], json!({"length": 0, "paused": false}));
}

#[test]
fn stop_kills_the_running_turn_and_pauses_the_queue() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("code");
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({"prompt": "sleep: 30"}),
    ));
    let id = s["id"].as_str().unwrap();
    svc.await_record(&folder, 1, Duration::from_secs(5));
    svc.await_session(id, "running", |v| v["state"] == "running");
    svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "later"}),
    );
    let (status, _) = svc.post(&format!("/v1/sessions/{id}/stop"), json!({}));
    assert_eq!(status, 200);
    let v = svc.await_session(id, "idle after stop", |v| v["state"] == "idle");
    assert_eq!(v["queue"], json!({"length": 1, "paused": true}));
    svc.post(&format!("/v1/sessions/{id}/resume"), json!({}));
    let second = svc.await_record(&folder, 2, Duration::from_secs(5));
    assert_eq!(second["prompt"], "later");
}

#[test]
fn metrics_show_the_histograms_and_sessions_by_state() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("code");
    mark(&folder, "failed: no space\n");
    let s = svc.start_session(start_body(&folder, "claude", json!({"project_copy": true})));
    svc.await_session(s["id"].as_str().unwrap(), "started", |v| {
        v["state"] != "pending" && !v["agent_start_ms"].is_null()
    });
    let (status, text) = svc.get("/metrics");
    assert_eq!(status, 200);
    let text = text.as_str().unwrap().to_string();
    for line in [
        "# TYPE room_core_agent_start_seconds histogram",
        "room_core_agent_start_seconds_count 1",
        "# TYPE room_core_copy_wait_seconds histogram",
        "# TYPE room_core_sessions gauge",
        "room_core_sessions{state=\"pending\"} 0",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

#[test]
fn a_start_that_cannot_be_recorded_is_refused_and_never_runs() {
    let svc = Service::start(ROOM_CORE, json!({}));
    // The sessions folder becomes a file: every record write fails.
    let sessions = svc.state.join("sessions");
    std::fs::remove_dir_all(&sessions).unwrap();
    std::fs::write(&sessions, "not a folder").unwrap();
    let folder = svc.folder("code");
    let (status, v) = svc.post("/v1/sessions", start_body(&folder, "codex", json!({})));
    assert_eq!(
        (status, v["code"].as_str()),
        (500, Some("state_unwritable")),
        "{v}"
    );
    let expected = format!("Cannot record the session in {}: ", svc.state.display());
    assert!(v["error"].as_str().unwrap().starts_with(&expected), "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .ends_with(". It was not started."),
        "{v}"
    );
    // Refused before anything was registered or launched.
    let (status, _) = svc.get("/v1/workspaces/ws-code");
    assert_eq!(status, 404);
    assert!(svc.records().is_empty());
}

#[test]
fn agent_start_measures_only_a_harness_that_started() {
    let svc = Service::start(ROOM_CORE, json!({}));
    // No prompt: the launch completes without a harness process.
    let mut body = start_body(&svc.folder("blank"), "codex", json!({}));
    body.as_object_mut().unwrap().remove("prompt");
    let s = svc.start_session(body);
    let id = s["id"].as_str().unwrap();
    let v = svc.await_session(id, "idle", |v| v["state"] == "idle");
    assert_eq!(v["agent_start_ms"], serde_json::Value::Null, "{v}");
    // A start with a prompt spawns its harness: one measurement.
    let folder = svc.folder("code");
    let s = svc.start_session(start_body(&folder, "codex", json!({})));
    svc.await_session(s["id"].as_str().unwrap(), "measured", |v| {
        !v["agent_start_ms"].is_null()
    });
    let (_, text) = svc.get("/metrics");
    let text = text.as_str().unwrap();
    assert!(
        text.contains("room_core_agent_start_seconds_count 1\n"),
        "{text}"
    );
}

#[test]
fn a_command_with_a_body_it_does_not_take_is_refused_and_changes_nothing() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("code");
    let s = svc.start_session(start_body(&folder, "claude", json!({"project_copy": true})));
    let id = s["id"].as_str().unwrap();
    for command in ["stop", "interrupt", "resume", "close"] {
        let path = format!("/v1/sessions/{id}/{command}");
        for (body, status, code) in [
            ("null", 422, "invalid_body"),
            ("\u{0}", 400, "bad_json"),
            ("\u{7f}random bytes", 400, "bad_json"),
            (r#"{"now": true}"#, 422, "unknown_field"),
            (r#"{"a": 1, "a": 2}"#, 422, "duplicate_field"),
        ] {
            let (got, v) = svc.call("POST", &path, Some(body));
            assert_eq!(
                (got, v["code"].as_str()),
                (status, Some(code)),
                "{command} {body:?}: {v}"
            );
        }
    }
    let v = svc.session(id);
    assert_eq!(
        (v["state"].as_str(), v["queue"]["paused"].as_bool()),
        (Some("pending"), Some(false)),
        "nothing acted: {v}"
    );
    let (status, v) = svc.call("POST", &format!("/v1/sessions/{id}/stop"), Some(""));
    assert_eq!(status, 200, "an empty body is no body: {v}");
}

#[test]
fn a_method_a_path_does_not_take_is_405_with_allow() {
    let svc = Service::start(ROOM_CORE, json!({}));
    for (method, path, allow) in [
        ("DELETE", "/v1/sessions", "GET, POST"),
        ("GET", "/v1/sessions/cr_1/stop", "POST"),
        ("PUT", "/v1/health", "GET"),
    ] {
        let answer = ureq::request(method, &format!("{}{path}", svc.base))
            .set("Authorization", &format!("Bearer {TOKEN}"))
            .timeout(Duration::from_secs(10))
            .call();
        let Err(ureq::Error::Status(405, r)) = answer else {
            panic!("{method} {path}: {answer:?}");
        };
        assert_eq!(r.header("Allow"), Some(allow), "{method} {path}");
    }
}

#[test]
fn the_list_takes_an_empty_after_as_none_and_an_unknown_one_is_not_found() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("code");
    let s = svc.start_session(start_body(&folder, "claude", json!({"project_copy": true})));
    let id = s["id"].as_str().unwrap();
    let (status, v) = svc.get("/v1/sessions?after=&limit=1");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["sessions"][0]["id"], json!(id), "from the first: {v}");
    let (status, v) = svc.get(&format!("/v1/sessions?after={id}"));
    assert_eq!((status, v["sessions"].clone()), (200, json!([])), "{v}");
    let (status, v) = svc.get("/v1/sessions?after=cr_00000000000000000000000000000000");
    assert_eq!(status, 404);
    assert_eq!(
        v,
        json!({"code": "session_not_found", "error": "No session cr_00000000000000000000000000000000 to list after."})
    );
}

#[test]
fn a_seq_is_digits_only_in_the_query_and_in_last_event_id() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("code");
    let s = svc.start_session(start_body(&folder, "claude", json!({"project_copy": true})));
    let id = s["id"].as_str().unwrap();
    // %2B is "+", which u64's own parser would take.
    for (path, message) in [
        (
            format!("/v1/sessions/{id}/events?after=%2B1"),
            "The parameter after must be a whole number, not \"+1\".",
        ),
        (
            "/v1/sessions?limit=%2B5".to_string(),
            "The parameter limit must be a whole number, not \"+5\".",
        ),
        (
            format!("/v1/sessions/{id}/events?after=18446744073709551616"),
            "The parameter after must be a whole number, not \"18446744073709551616\".",
        ),
    ] {
        let (status, v) = svc.get(&path);
        assert_eq!(
            (status, v),
            (422, json!({"code": "invalid_parameter", "error": message})),
            "{path}"
        );
    }
    let (status, v) = svc.get(&format!(
        "/v1/sessions/{id}/events?after=18446744073709551615"
    ));
    assert_eq!(status, 200, "the largest seq is a seq: {v}");
    let stream = format!("/v1/sessions/{id}/stream");
    for (last_event_id, after, message) in [
        (
            &b"+2"[..],
            "",
            "Last-Event-ID must be an event's seq, not \"+2\".",
        ),
        (
            &b"\xff1"[..],
            "",
            "Last-Event-ID must be an event's seq, not \"\u{fffd}1\".",
        ),
        (
            &b"2"[..],
            "?after=x",
            "The parameter after must be a whole number, not \"x\".",
        ),
    ] {
        let (status, body) = raw_get(&svc, &format!("{stream}{after}"), last_event_id);
        assert_eq!(status, 422, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            v,
            json!({"code": "invalid_parameter", "error": message}),
            "{last_event_id:?} {after}"
        );
    }
}

/// A GET with the token and a `Last-Event-ID` of any bytes (ureq sends only
/// visible ASCII), read to the end: its status and body.
fn raw_get(svc: &Service, path: &str, last_event_id: &[u8]) -> (u16, String) {
    use std::io::{Read, Write};
    let addr = svc.base.trim_start_matches("http://");
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\nLast-Event-ID: "
    )
    .into_bytes();
    request.extend_from_slice(last_event_id);
    request.extend_from_slice(b"\r\n\r\n");
    conn.write_all(&request).unwrap();
    let mut answer = Vec::new();
    conn.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer.split_once("\r\n\r\n").unwrap().1.to_string();
    (status, body)
}
