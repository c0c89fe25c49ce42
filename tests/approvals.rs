//! Approvals relayed to the app, steering and the protocol's interrupt,
//! with the fake claude on its stream-json protocol and the fake codex on
//! its app server (fixtures/fake_harness.py: an `ask: <command>` prompt
//! asks before it runs the command, and records the answer; a `sleep:`
//! turn records what is steered into it).

use std::path::Path;
use std::time::Duration;

use room_kit::events::{all_events, await_event, kinds};
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// A service whose harnesses run as the agent account, and that account.
fn asking_service(test: &str, extra: Value) -> Option<(Service, nix::unistd::User)> {
    let agent = agent_account(test)?;
    let root = temp_root();
    let mut config = json!({
        "agent_uid": agent.uid.as_raw(),
        "agent_socket": root.join("agent.sock"),
    });
    merge(&mut config, extra);
    let svc = Service::start(ROOM_CORE, config);
    std::fs::create_dir_all(svc.folder("")).unwrap();
    Some((svc, agent))
}

/// Starts an `approvals: app` claude session in `name`'s folder with
/// `prompt`, and waits for its first approval request: the session's ID,
/// its folder and the request's event data.
fn ask_app(svc: &Service, name: &str, prompt: &str) -> (String, std::path::PathBuf, Value) {
    ask_app_of(svc, "claude", name, prompt)
}

/// [`ask_app`] with `harness`.
fn ask_app_of(
    svc: &Service,
    harness: &str,
    name: &str,
    prompt: &str,
) -> (String, std::path::PathBuf, Value) {
    let folder = svc.folder(name);
    let s = svc.start_session(start_body(
        &folder,
        harness,
        json!({"approvals": "app", "prompt": prompt}),
    ));
    let id = s["id"].as_str().unwrap().to_string();
    assert_eq!(s["approvals"], "app");
    let events = await_event(svc, &id, "an approval request", |e| {
        e["kind"] == "approval_requested"
    });
    let request = events
        .iter()
        .find(|e| e["kind"] == "approval_requested")
        .unwrap()["data"]
        .clone();
    (id, folder, request)
}

fn decide(svc: &Service, id: &str, n: &Value, body: Value) -> (u16, Value) {
    svc.post(&format!("/v1/sessions/{id}/approvals/{n}"), body)
}

fn resolved(svc: &Service, id: &str) -> Vec<Value> {
    all_events(svc, id, 1024)
        .into_iter()
        .filter(|e| e["kind"] == "approval_resolved")
        .map(|e| e["data"].clone())
        .collect()
}

/// The fake harness's record once its turn has the answer.
fn answered_record(svc: &Service, folder: &Path) -> Value {
    wait_until("the harness's answer", Duration::from_secs(10), || {
        svc.records_in(folder)
            .into_iter()
            .find(|r| r["answers"].is_array())
    })
}

#[test]
fn an_allowed_tool_runs_and_a_denied_one_does_not_and_the_model_reads_why() {
    let Some((svc, agent)) = asking_service(
        "an_allowed_tool_runs_and_a_denied_one_does_not_and_the_model_reads_why",
        json!({}),
    ) else {
        return;
    };
    // Allowed: the request is in the view until the app answers.
    let (id, folder, asked) = ask_app(&svc, "allow", "ask: touch allowed.txt && id -u");
    assert_eq!(asked["id"], 1);
    assert_eq!(asked["turn"], 1);
    assert_eq!(asked["tool"], "Bash");
    assert_eq!(
        asked["input"],
        json!({"command": "touch allowed.txt && id -u"})
    );
    assert_eq!(asked["reason"], "the fake harness asks");
    let view = svc.session(&id);
    assert_eq!(view["state"], "running");
    let pending = view["pending_approvals"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{view}");
    assert_eq!(pending[0]["id"], 1);
    assert_eq!(pending[0]["input"], asked["input"]);
    assert!(pending[0]["until_ms"].as_u64().unwrap() > view["created_ms"].as_u64().unwrap());
    assert!(
        !folder.join("allowed.txt").exists(),
        "ran before the answer"
    );

    let (status, v) = decide(&svc, &id, &asked["id"], json!({"decision": "allow"}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["pending_approvals"], json!([]));
    let record = answered_record(&svc, &folder);
    // The allow carries the input asked about, to run as it is.
    assert_eq!(
        record["answers"][0]["response"],
        json!({"behavior": "allow",
               "updatedInput": {"command": "touch allowed.txt && id -u"}})
    );
    assert_eq!(
        record["tool"]["stdout"],
        format!("{}\n", agent.uid),
        "{record}"
    );
    assert!(folder.join("allowed.txt").exists());
    assert_eq!(
        resolved(&svc, &id),
        [json!({"id": 1, "turn": 1, "decision": "allow", "by": "app", "message": null})]
    );
    // Answered: a second answer is refused, as is a number never given.
    let (status, v) = decide(&svc, &id, &asked["id"], json!({"decision": "deny"}));
    assert_eq!(
        (status, v["code"].as_str()),
        (409, Some("approval_answered"))
    );
    assert_eq!(
        v["error"],
        format!("That approval request of session {id} was answered already.")
    );
    for n in ["7", "0", "x"] {
        let (status, v) = svc.post(
            &format!("/v1/sessions/{id}/approvals/{n}"),
            json!({"decision": "allow"}),
        );
        assert_eq!(
            (status, v["code"].as_str()),
            (404, Some("approval_not_found")),
            "{n}"
        );
    }
    let (status, v) = decide(&svc, &id, &json!(1), json!({"decision": "maybe"}));
    assert_eq!(status, 422, "{v}");

    // Denied with a message: the tool does not run; the model reads it.
    let (id, folder, request) = ask_app(&svc, "deny", "ask: touch denied.txt");
    let (status, v) = decide(
        &svc,
        &id,
        &request["id"],
        json!({"decision": "deny", "message": "use make instead"}),
    );
    assert_eq!(status, 200, "{v}");
    let record = answered_record(&svc, &folder);
    assert_eq!(record["denied"], "use make instead", "{record}");
    assert!(record["tool"].is_null());
    assert!(!folder.join("denied.txt").exists());
    svc.await_session(&id, "idle", |v| v["state"] == "idle");
}

#[test]
fn an_allow_runs_exactly_what_was_asked_where_the_app_was_shown_it_cut() {
    let Some((svc, _)) = asking_service(
        "an_allow_runs_exactly_what_was_asked_where_the_app_was_shown_it_cut",
        json!({}),
    ) else {
        return;
    };
    // 300 KiB of input: the app is shown 256 KiB of it.
    let pad = 300 << 10;
    let (id, folder, asked) = ask_app(&svc, "cut", &format!("ask-padded: {pad} touch whole.txt"));
    let shown = asked["input"].as_str().expect("cut to a string");
    assert!(shown.ends_with("(cut at 262144 bytes)"), "{}", shown.len());
    let (status, v) = decide(&svc, &id, &asked["id"], json!({"decision": "allow"}));
    assert_eq!(status, 200, "{v}");
    let record = answered_record(&svc, &folder);
    assert_eq!(
        record["answers"][0]["response"],
        json!({"behavior": "allow", "updatedInput":
               {"command": "touch whole.txt", "description": "x".repeat(pad)}})
    );
    assert!(folder.join("whole.txt").exists());
    svc.await_session(&id, "idle", |v| v["state"] == "idle");
}

#[test]
fn an_unanswered_request_is_denied_at_its_timeout_and_a_stop_denies_what_is_pending() {
    let Some((svc, _)) = asking_service(
        "an_unanswered_request_is_denied_at_its_timeout_and_a_stop_denies_what_is_pending",
        json!({"approval_timeout_ms": 300}),
    ) else {
        return;
    };
    let (id, folder, _) = ask_app(&svc, "timeout", "ask: touch late.txt");
    let record = answered_record(&svc, &folder);
    assert_eq!(
        record["denied"],
        "Denied: nobody answered the approval request in time."
    );
    assert!(!folder.join("late.txt").exists());
    assert_eq!(resolved(&svc, &id)[0]["by"], "timeout");
    let (status, _) = decide(&svc, &id, &json!(1), json!({"decision": "allow"}));
    assert_eq!(status, 409);

    let svc = asking_service(
        "an_unanswered_request_is_denied_at_its_timeout_and_a_stop_denies_what_is_pending",
        json!({}),
    )
    .unwrap()
    .0;
    let (id, folder, asked) = ask_app(&svc, "stop", "ask: touch stopped.txt");
    let (status, v) = svc.post(&format!("/v1/sessions/{id}/stop"), json!({}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["pending_approvals"], json!([]));
    assert_eq!(
        resolved(&svc, &id),
        [json!({"id": 1, "turn": 1, "decision": "deny", "by": "stop", "message": null})]
    );
    let (status, v) = decide(&svc, &id, &asked["id"], json!({"decision": "allow"}));
    assert_eq!(
        (status, v["code"].as_str()),
        (409, Some("approval_answered"))
    );
    assert!(!folder.join("stopped.txt").exists());
}

#[test]
fn codex_asks_the_app_too_and_a_denials_message_follows_as_a_steer() {
    let Some((svc, agent)) = asking_service(
        "codex_asks_the_app_too_and_a_denials_message_follows_as_a_steer",
        json!({}),
    ) else {
        return;
    };
    let (id, folder, asked) = ask_app_of(&svc, "codex", "allow", "ask: touch ok.txt && id -u");
    assert_eq!(asked["tool"], "command");
    assert_eq!(
        asked["input"],
        json!({"command": "touch ok.txt && id -u", "cwd": folder.to_str().unwrap()})
    );
    // codex's own policy asks: `untrusted` for a session whose app answers.
    let record = svc.await_record(&folder, 1, Duration::from_secs(10));
    assert_eq!(record["thread"]["approvalPolicy"], "untrusted", "{record}");
    assert!(!folder.join("ok.txt").exists(), "ran before the answer");
    let (status, v) = decide(&svc, &id, &asked["id"], json!({"decision": "allow"}));
    assert_eq!(status, 200, "{v}");
    let record = wait_until("the command run", Duration::from_secs(10), || {
        svc.records_in(&folder)
            .into_iter()
            .find(|r| r["tool"].is_object())
    });
    assert_eq!(record["answers"][0]["decision"], "accept", "{record}");
    assert_eq!(record["tool"]["stdout"], format!("{}\n", agent.uid));
    svc.await_session(&id, "idle", |v| v["state"] == "idle");

    // A decline has no room for a message: it follows as a steer.
    let (id, folder, asked) = ask_app_of(&svc, "codex", "deny", "ask: touch no.txt");
    let (status, v) = decide(
        &svc,
        &id,
        &asked["id"],
        json!({"decision": "deny", "message": "use make instead"}),
    );
    assert_eq!(status, 200, "{v}");
    let record = wait_until("the message", Duration::from_secs(10), || {
        svc.records_in(&folder)
            .into_iter()
            .find(|r| r["steers"].is_array())
    });
    assert_eq!(record["steers"], json!(["use make instead"]), "{record}");
    assert_eq!(record["answers"][0]["decision"], "decline", "{record}");
    assert!(!folder.join("no.txt").exists());
    svc.await_session(&id, "idle", |v| v["state"] == "idle");
}

#[test]
fn approvals_app_needs_another_account_and_auto_denies_at_once() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("own");
    for harness in ["claude", "codex"] {
        let (status, v) = svc.post(
            "/v1/sessions",
            start_body(&folder, harness, json!({"approvals": "app"})),
        );
        assert_eq!(
            (status, v["code"].as_str()),
            (422, Some("approvals_refused")),
            "{v}"
        );
        let why = v["error"].as_str().unwrap();
        assert!(why.contains("could read the API token"), "{why}");
    }
    // auto (the default): denied by the modes, nothing journalled of it.
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({"prompt": "ask: touch auto.txt"}),
    ));
    let id = s["id"].as_str().unwrap();
    assert_eq!(s["approvals"], "auto");
    let record = answered_record(&svc, &folder);
    assert!(
        record["denied"]
            .as_str()
            .unwrap()
            .starts_with("Denied: this session's permission settings do not allow it"),
        "{record}"
    );
    svc.await_session(id, "idle", |v| v["state"] == "idle");
    let kinds = kinds(&all_events(&svc, id, 1024));
    assert!(
        !kinds.iter().any(|k| k.starts_with("approval_")),
        "{kinds:?}"
    );
}

#[test]
fn a_steer_reaches_the_running_turn_and_with_none_running_it_queues() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let (id, folder, _) = svc.running_session("steer");
    await_event(&svc, &id, "the session named", |e| e["kind"] == "native_id");
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "use the other file", "deliver": "steer"}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["delivered"], "steered");
    assert_eq!(v["queue"]["length"], 0);
    let record = wait_until("the steer", Duration::from_secs(10), || {
        svc.records_in(&folder)
            .into_iter()
            .find(|r| r["steers"].is_array())
    });
    assert_eq!(record["steers"], json!(["use the other file"]));
    let events = all_events(&svc, &id, 1024);
    let steered: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "prompt_steered")
        .collect();
    assert_eq!(
        steered[0]["data"],
        json!({"prompt": 2, "turn": 1, "text": "use the other file", "text_truncated": false})
    );

    // No turn running: it queues, and runs as the next turn.
    svc.post(&format!("/v1/sessions/{id}/interrupt"), json!({}));
    svc.await_session(&id, "idle", |v| v["state"] == "idle");
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "next", "deliver": "steer"}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["delivered"], "queued");
    let second = svc.await_record(&folder, 2, Duration::from_secs(10));
    assert_eq!(second["prompt"], "next");
    // A plain message says where it went too.
    let (_, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "more"}),
    );
    assert_eq!(v["delivered"], "queued");
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "x", "deliver": "now"}),
    );
    assert_eq!(status, 422, "{v}");
}

#[test]
fn a_claude_that_breaks_the_protocol_is_answered_within_bounds() {
    breaks_the_protocol(
        "a_claude_that_breaks_the_protocol_is_answered_within_bounds",
        "claude",
    );
}

#[test]
fn a_codex_that_breaks_the_protocol_is_answered_within_bounds() {
    breaks_the_protocol(
        "a_codex_that_breaks_the_protocol_is_answered_within_bounds",
        "codex",
    );
}

/// `harness` (the fake's `hostile-protocol`) sends a line that is not
/// JSON, a request room-core does not serve, an answer nobody asked for, a
/// request with a 300 KiB input and then 70 requests at once.
fn breaks_the_protocol(test: &str, harness: &str) {
    let Some((svc, _)) = asking_service(test, json!({})) else {
        return;
    };
    let folder = svc.folder("hostile");
    let s = svc.start_session(start_body(
        &folder,
        harness,
        json!({"approvals": "app", "prompt": "hostile-protocol"}),
    ));
    let id = s["id"].as_str().unwrap().to_string();
    // What it got back: an error for the request room-core does not serve,
    // and a denial for each request past the 64 that may wait; nothing for
    // the request without an ID or the answer nobody asked for.
    // 70 requests, each journalled durably: a loaded machine's fsyncs can
    // take a while, and the bound is for a hang, not a speed.
    let record = wait_until("the harness's answers", Duration::from_secs(60), || {
        svc.records_in(&folder)
            .into_iter()
            .find(|r| r["answers"].as_object().is_some_and(|a| a.len() >= 8))
    });
    let answers = record["answers"].as_object().unwrap();
    let too_many = "Denied: too many approval requests are waiting in this session.";
    match harness {
        "claude" => assert_eq!(answers["h1"]["subtype"], "error", "{record}"),
        _ => assert_eq!(answers["h1"]["error"]["code"], -32601, "{record}"),
    }
    for i in 63..70 {
        let answer = &answers[&format!("q{i}")];
        match harness {
            "claude" => assert_eq!(
                answer["response"],
                json!({"behavior": "deny", "message": too_many}),
                "q{i}"
            ),
            _ => assert_eq!(answer, &json!({"decision": "decline"}), "q{i}"),
        }
    }
    assert_eq!(answers.len(), 8, "{answers:?}");
    // The app sees each request room-core answered itself: the one it
    // does not serve, the one without an ID, and (claude, whose talker
    // holds each waiting request's input) those past the 64 waiting.
    let refused: Vec<(Value, Value)> = all_events(&svc, &id, 1024)
        .into_iter()
        .filter(|e| e["kind"] == "request_refused")
        .map(|e| (e["data"]["reason"].clone(), e["data"]["answered"].clone()))
        .collect();
    let mut expected = vec![(json!("not_served"), json!(true))];
    if harness == "claude" {
        expected.insert(0, (json!("no_id"), json!(false)));
        expected.extend((63..70).map(|_| (json!("too_many_waiting"), json!(true))));
    }
    assert_eq!(refused, expected);
    let view = svc.await_session(&id, "64 pending", |v| {
        v["pending_approvals"].as_array().unwrap().len() == 64
    });
    let pending = view["pending_approvals"].as_array().unwrap();
    let big = pending[0]["input"].as_str().expect("cut to a string");
    assert!(big.ends_with("(cut at 262144 bytes)"), "{}", big.len());
    assert!(big.len() < 300 << 10);
    let (status, _) = svc.get("/v1/health");
    assert_eq!(status, 200);

    // A stop denies every pending request and the turn ends.
    let (status, v) = svc.post(&format!("/v1/sessions/{id}/stop"), json!({}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["pending_approvals"], json!([]));
    let by_stop = resolved(&svc, &id)
        .iter()
        .filter(|r| r["by"] == "stop" && r["decision"] == "deny")
        .count();
    assert_eq!(by_stop, 64);
}
