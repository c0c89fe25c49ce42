//! What the app chooses for a session's harness (model, effort,
//! instructions): refused with the rule named when no CLI could take it,
//! shown in the view and capabilities, and passed to each CLI its own way
//! (what the fake harnesses saw) on every turn: the first, a warm and a
//! cold follow-up, after a restart, and after a relaunch.

use std::time::Duration;

use room_kit::events::{all_events, await_turns_ended};
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// Instructions with what a shell or an option parser would take apart.
const INSTRUCTIONS: &str = "--answer in French; \"quote\" $HOME\nsecond line";

fn options() -> Value {
    json!({"model": "claude-fake-2", "effort": "high", "instructions": INSTRUCTIONS})
}

/// Sends `prompt` to session `id`, which takes it.
fn send(svc: &Service, id: &str, prompt: &str) {
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({ "prompt": prompt }),
    );
    assert_eq!(status, 200, "{v}");
}

/// claude's options on its command line, in the order it gets them.
fn claude_options(argv: &Value) -> Vec<String> {
    let argv: Vec<&str> = argv
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut seen = Vec::new();
    for w in argv.windows(2) {
        if ["--model", "--effort", "--append-system-prompt"].contains(&w[0]) {
            seen.push(format!("{} {}", w[0], w[1]));
        }
    }
    seen
}

fn claude_wanted() -> Vec<String> {
    vec![
        "--model claude-fake-2".into(),
        "--effort high".into(),
        format!("--append-system-prompt {INSTRUCTIONS}"),
    ]
}

#[test]
fn claude_gets_the_model_effort_and_instructions_on_every_turn() {
    let mut svc = Service::start(ROOM_CORE, json!({"linger_ms": 3000}));
    let folder = svc.folder("claude-options");
    let s = svc.start_session(start_body(&folder, "claude", options()));
    let id = s["id"].as_str().unwrap().to_string();
    assert_eq!(
        (&s["model"], &s["effort"], &s["instructions"]),
        (
            &json!("claude-fake-2"),
            &json!("high"),
            &json!(INSTRUCTIONS)
        )
    );
    await_turns_ended(&svc, &id, 1);
    // A warm follow-up goes to the same process.
    send(&svc, &id, "warm");
    await_turns_ended(&svc, &id, 2);
    // After a restart the next turn resumes in a new process, as it does
    // after a relaunch.
    svc.kill9();
    svc.start_again();
    svc.await_listen();
    let view = svc.session(&id);
    assert_eq!(view["model"], "claude-fake-2", "{view}");
    send(&svc, &id, "after the restart");
    svc.await_record(&folder, 2, Duration::from_secs(10));
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/relaunch"),
        json!({"mode": "restart"}),
    );
    assert_eq!(status, 200, "{v}");
    send(&svc, &id, "after the relaunch");
    let records = wait_until("a third process", Duration::from_secs(10), || {
        let r = svc.records_in(&folder);
        (r.len() >= 3 && r[2]["prompts"] == json!(["after the relaunch"])).then_some(r)
    });
    assert_eq!(records[0]["prompts"][1], "warm", "{}", records[0]);
    for r in &records {
        assert_eq!(claude_options(&r["argv"]), claude_wanted(), "{r}");
    }
    // Each turn's start says the model it ran.
    let starts: Vec<Value> = all_events(&svc, &id, 1024)
        .into_iter()
        .filter(|e| e["kind"] == "turn_started")
        .map(|e| e["data"]["model"].clone())
        .collect();
    assert_eq!(starts.len(), 4, "{starts:?}");
    assert!(starts.iter().all(|m| m == "claude-fake-2"), "{starts:?}");
    let argv = records[1]["argv"].as_array().unwrap();
    assert!(argv.contains(&json!("--resume")), "{argv:?}");
}

#[test]
fn codex_gets_the_model_and_instructions_on_its_thread_and_the_effort_on_each_turn() {
    let svc = Service::start(ROOM_CORE, json!({"linger_ms": 3000}));
    let folder = svc.folder("codex-options");
    let body = json!({"model": "gpt-fake-2", "effort": "minimal", "instructions": INSTRUCTIONS});
    let s = svc.start_session(start_body(&folder, "codex", body));
    let id = s["id"].as_str().unwrap().to_string();
    await_turns_ended(&svc, &id, 1);
    send(&svc, &id, "warm");
    await_turns_ended(&svc, &id, 2);
    let record = svc.await_record(&folder, 1, Duration::from_secs(10));
    assert_eq!(record["thread"]["method"], "thread/start");
    assert_eq!(
        (
            &record["thread"]["model"],
            &record["thread"]["developerInstructions"]
        ),
        (&json!("gpt-fake-2"), &json!(INSTRUCTIONS)),
        "{record}"
    );
    assert_eq!(record["efforts"], json!(["minimal", "minimal"]));
    // A session started without options passes none.
    let plain = svc.folder("codex-plain");
    let s = svc.start_session(start_body(&plain, "codex", json!({})));
    assert_eq!(
        (&s["model"], &s["effort"], &s["instructions"]),
        (&Value::Null, &Value::Null, &Value::Null)
    );
    let record = svc.await_record(&plain, 1, Duration::from_secs(10));
    let plain_id = s["id"].as_str().unwrap();
    let started = wait_until("the turn's start", Duration::from_secs(10), || {
        all_events(&svc, plain_id, 1024)
            .into_iter()
            .find(|e| e["kind"] == "turn_started")
    });
    assert!(
        started["data"].get("model").is_none(),
        "no model chosen, none said: {started}"
    );
    assert_eq!(
        (
            &record["thread"]["model"],
            &record["thread"]["developerInstructions"],
            &record["efforts"]
        ),
        (&Value::Null, &Value::Null, &json!([null]))
    );
}

#[test]
fn options_no_cli_could_take_are_refused_with_the_rule_named() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("refused");
    let model_rule = "model must be 1 to 128 characters of letters, digits and . _ : / @ -, not starting with -.";
    let cases = [
        (
            "claude",
            json!({"model": "--dangerously-skip-permissions"}),
            model_rule.to_string(),
        ),
        ("claude", json!({"model": "a b"}), model_rule.to_string()),
        (
            "claude",
            json!({"model": "m".repeat(129)}),
            model_rule.to_string(),
        ),
        (
            "claude",
            json!({"effort": "minimal"}),
            "claude takes effort low, medium, high, xhigh or max, not minimal.".into(),
        ),
        (
            "codex",
            json!({"effort": "max"}),
            "codex takes effort minimal, low, medium, high or xhigh, not max.".into(),
        ),
        (
            "codex",
            json!({"instructions": "x".repeat(16385)}),
            "instructions must be at most 16384 characters; these have 16385.".into(),
        ),
        (
            "codex",
            json!({"instructions": "  "}),
            "instructions must not be empty or only whitespace.".into(),
        ),
        (
            "claude",
            json!({"instructions": "a\u{0}b"}),
            "instructions must not contain a NUL byte (\\u0000).".into(),
        ),
    ];
    for (harness, extra, error) in cases {
        let (status, v) = svc.post("/v1/sessions", start_body(&folder, harness, extra.clone()));
        assert_eq!(
            (status, &v["code"], v["error"].as_str().unwrap_or_default()),
            (422, &json!("invalid_field"), error.as_str()),
            "{extra}"
        );
    }
    let (status, v) = svc.post(
        "/v1/sessions",
        start_body(&folder, "claude", json!({"effort": "extreme"})),
    );
    assert_eq!(
        (status, v["error"].as_str().unwrap()),
        (
            422,
            "Invalid body: effort must be minimal, low, medium, high, xhigh or max, not \"extreme\"."
        ),
        "{v}"
    );
    let (_, list) = svc.get("/v1/sessions");
    assert_eq!(list["sessions"], json!([]), "nothing was started");
}

#[test]
fn a_retry_with_other_options_is_a_conflict_that_names_the_first() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("retry");
    let first = start_body(
        &folder,
        "claude",
        json!({"request_id": "r-1", "model": "opus", "effort": "low"}),
    );
    let (status, v) = svc.post("/v1/sessions", first.clone());
    assert_eq!(status, 201, "{v}");
    let (status, again) = svc.post("/v1/sessions", first);
    assert_eq!((status, &again["id"]), (200, &v["id"]));
    let other = start_body(
        &folder,
        "claude",
        json!({"request_id": "r-1", "model": "opus", "effort": "high"}),
    );
    let (status, conflict) = svc.post("/v1/sessions", other);
    assert_eq!(status, 409, "{conflict}");
    assert!(
        conflict["error"].as_str().unwrap().contains("effort"),
        "{conflict}"
    );
}

#[test]
fn capabilities_list_each_clis_options() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let (status, v) = svc.get("/v1/capabilities");
    assert_eq!(status, 200);
    assert!(
        v["capabilities"]
            .as_array()
            .unwrap()
            .contains(&json!("session_options")),
        "{v}"
    );
    assert_eq!(
        v["options"]["claude"],
        json!({"model": true, "instructions": true,
               "effort": ["low", "medium", "high", "xhigh", "max"]})
    );
    assert_eq!(
        v["options"]["codex"],
        json!({"model": true, "instructions": true,
               "effort": ["minimal", "low", "medium", "high", "xhigh"]})
    );
}

/// MCP servers' secret values, which only the CLI may see.
const SECRET: &str = "s3cret-value-7781";
const HEADER_SECRET: &str = "Bearer s3cret-header-7782";

fn mcp_servers() -> Value {
    json!({
        "probe": {"command": "/usr/bin/env", "args": ["--", "x"], "env": {"PROBE_TOKEN": SECRET}},
        "web": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": HEADER_SECRET}},
    })
}

/// No secret of [`mcp_servers`] in `text`.
fn no_secret(what: &str, text: &str) {
    assert!(
        !text.contains(SECRET) && !text.contains("s3cret-header"),
        "{what} holds a secret: {text}"
    );
}

/// A session of `harness` with [`mcp_servers`], its first turn over: its
/// ID and what its harness recorded. Its view shows the servers' variables
/// and headers by name only.
fn mcp_session(svc: &Service, harness: &str) -> (String, Value) {
    let folder = svc.folder(&format!("mcp-{harness}"));
    let s = svc.start_session(start_body(
        &folder,
        harness,
        json!({"mcp_servers": mcp_servers()}),
    ));
    let id = s["id"].as_str().unwrap().to_string();
    assert_eq!(
        s["mcp_servers"],
        json!({
            "probe": {"command": "/usr/bin/env", "args": ["--", "x"], "env": ["PROBE_TOKEN"]},
            "web": {"url": "https://mcp.example.com/mcp", "headers": ["Authorization"]},
        })
    );
    await_turns_ended(svc, &id, 1);
    let record = svc.await_record(&folder, 1, Duration::from_secs(10));
    no_secret("the argv", &record["argv"].to_string());
    no_secret("the harness's environment", &record["env"].to_string());
    (id, record)
}

/// No secret of [`mcp_servers`] where the app, the log or the agent's other
/// readers look: session `id`'s view and journal, and the service's log.
fn no_secret_served(svc: &Service, id: &str) {
    no_secret("the view", &svc.session(id).to_string());
    let journal = serde_json::to_string(&all_events(svc, id, 1024)).unwrap();
    no_secret("the journal", &journal);
    no_secret("the log", &svc.log());
}

#[test]
fn claude_reads_its_mcp_servers_from_a_private_file_that_goes_with_its_process() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let (id, record) = mcp_session(&svc, "claude");
    let seen = &record["mcp_config"];
    assert_eq!(
        seen["content"],
        json!({"mcpServers": {
            "probe": {"type": "stdio", "command": "/usr/bin/env", "args": ["--", "x"], "env": {"PROBE_TOKEN": SECRET}},
            "web": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": HEADER_SECRET}},
        }}),
        "{record}"
    );
    assert_eq!(seen["mode"], "0o600");
    let path = std::path::PathBuf::from(seen["path"].as_str().unwrap());
    assert_eq!(
        path.parent().unwrap(),
        svc.state.join("room-core-turn-files")
    );
    // Its servers' tools are allowed as claude's own are (auto approvals);
    // the file is gone with its process.
    let args: Vec<&str> = record["argv"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        args[args.len() - 4..],
        ["--allowedTools", "Bash", "mcp__probe", "mcp__web"]
    );
    assert!(args
        .windows(2)
        .any(|w| w == ["--mcp-config", seen["path"].as_str().unwrap()]));
    wait_until(
        "the file gone with its process",
        Duration::from_secs(10),
        || (!path.exists()).then_some(()),
    );
    no_secret_served(&svc, &id);
}

#[test]
fn codex_gets_its_mcp_servers_in_its_threads_config() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let (id, record) = mcp_session(&svc, "codex");
    assert_eq!(
        record["thread"]["config"],
        // Under `approvals: auto` their tools run without asking, as
        // claude's do.
        json!({"mcp_servers": {
            "probe": {"command": "/usr/bin/env", "args": ["--", "x"], "env": {"PROBE_TOKEN": SECRET},
                      "default_tools_approval_mode": "approve"},
            "web": {"url": "https://mcp.example.com/mcp", "http_headers": {"Authorization": HEADER_SECRET},
                    "default_tools_approval_mode": "approve"},
        }}),
        "{record}"
    );
    no_secret_served(&svc, &id);
}

#[test]
fn mcp_servers_no_cli_could_run_are_refused_naming_the_server_not_the_secret() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("mcp-refused");
    let cases = [
        (
            json!({"p": {"command": "bin/mcp-server", "env": {"T": SECRET}}}),
            "MCP server p: command \"bin/mcp-server\" must be an absolute path or a program's name (found on PATH).",
        ),
        (
            json!({"p": {"url": "https://x", "headers": {"X": format!("{SECRET}\nInjected: yes")}}}),
            "MCP server p: the value of header X must be at most 4096 characters on one line.",
        ),
        (
            json!({"bad-name": {"command": "/usr/bin/env"}}),
            "MCP server name \"bad-name\" must be a letter or _ then letters, digits and _, at most 64 characters.",
        ),
    ];
    for (servers, error) in cases {
        let (status, v) = svc.post(
            "/v1/sessions",
            start_body(&folder, "claude", json!({"mcp_servers": servers})),
        );
        assert_eq!(
            (status, v["error"].as_str().unwrap_or_default()),
            (422, error),
            "{v}"
        );
    }
    // Another set of servers on a retry is a conflict that says which field.
    let body = |token: &str| {
        start_body(
            &folder,
            "claude",
            json!({"request_id": "mcp-1", "mcp_servers": {"p": {"command": "/usr/bin/env", "env": {"T": token}}}}),
        )
    };
    let (status, _) = svc.post("/v1/sessions", body("one"));
    assert_eq!(status, 201);
    let (status, v) = svc.post("/v1/sessions", body("two"));
    assert_eq!(status, 409, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .ends_with("with a different mcp_servers."),
        "{v}"
    );
    no_secret("the log", &svc.log());
}

/// Sends `prompt` to session `id` choosing `choice` (`model`, `effort`):
/// the status and answer.
fn send_choosing(svc: &Service, id: &str, prompt: &str, choice: Value) -> (u16, Value) {
    let mut body = json!({ "prompt": prompt });
    body.as_object_mut()
        .unwrap()
        .extend(choice.as_object().unwrap().clone());
    svc.post(&format!("/v1/sessions/{id}/messages"), body)
}

/// The model each of session `id`'s `turn_started` events names.
fn started_models(svc: &Service, id: &str) -> Vec<Value> {
    all_events(svc, id, 1024)
        .into_iter()
        .filter(|e| e["kind"] == "turn_started")
        .map(|e| e["data"]["model"].clone())
        .collect()
}

#[test]
fn a_message_switches_a_lingering_claudes_model_in_place_and_its_effort_in_a_new_process() {
    let mut svc = Service::start(ROOM_CORE, json!({"linger_ms": 30000}));
    let folder = svc.folder("claude-switch");
    let body = json!({"model": "claude-fake-2", "effort": "high"});
    let s = svc.start_session(start_body(&folder, "claude", body));
    let id = s["id"].as_str().unwrap().to_string();
    await_turns_ended(&svc, &id, 1);

    // The model changes in the lingering process: `set_model`, then the prompt.
    let (status, v) = send_choosing(&svc, &id, "on opus", json!({"model": "opus"}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        (&v["delivered"], &v["prompt"]),
        (&json!("queued"), &json!(2))
    );
    await_turns_ended(&svc, &id, 2);
    let records = svc.records_in(&folder);
    assert_eq!(records.len(), 1, "the same process: {records:?}");
    assert_eq!(records[0]["set_models"], json!(["opus"]), "{}", records[0]);
    assert_eq!(records[0]["prompts"][1], "on opus");
    let view = svc.session(&id);
    assert_eq!(
        (&view["model"], &view["effort"]),
        (&json!("opus"), &json!("high"))
    );

    // An effort claude takes only as it starts: a new process, resuming.
    let (status, v) = send_choosing(&svc, &id, "harder", json!({"effort": "max"}));
    assert_eq!(status, 200, "{v}");
    let second = svc.await_record(&folder, 2, Duration::from_secs(10));
    assert_eq!(second["prompts"], json!(["harder"]));
    assert_eq!(
        claude_options(&second["argv"]),
        ["--model opus", "--effort max"],
        "{second}"
    );
    assert!(second["argv"]
        .as_array()
        .unwrap()
        .contains(&json!("--resume")));
    await_turns_ended(&svc, &id, 3);

    // What is in force survives a restart.
    svc.kill9();
    svc.start_again();
    svc.await_listen();
    let view = svc.session(&id);
    assert_eq!(
        (&view["model"], &view["effort"]),
        (&json!("opus"), &json!("max")),
        "{view}"
    );
    send(&svc, &id, "after the restart");
    let third = svc.await_record(&folder, 3, Duration::from_secs(10));
    assert_eq!(
        claude_options(&third["argv"]),
        ["--model opus", "--effort max"]
    );
    await_turns_ended(&svc, &id, 4);
    assert_eq!(
        started_models(&svc, &id),
        [
            json!("claude-fake-2"),
            json!("opus"),
            json!("opus"),
            json!("opus")
        ]
    );
}

#[test]
fn a_message_switches_codexs_model_and_effort_on_its_turn_and_after() {
    let svc = Service::start(ROOM_CORE, json!({"linger_ms": 30000}));
    let folder = svc.folder("codex-switch");
    let s = svc.start_session(start_body(&folder, "codex", json!({"effort": "low"})));
    let id = s["id"].as_str().unwrap().to_string();
    await_turns_ended(&svc, &id, 1);
    let (status, v) = send_choosing(
        &svc,
        &id,
        "switch",
        json!({"model": "gpt-fake-3", "effort": "xhigh"}),
    );
    assert_eq!(status, 200, "{v}");
    await_turns_ended(&svc, &id, 2);
    send(&svc, &id, "after");
    await_turns_ended(&svc, &id, 3);
    let records = svc.records_in(&folder);
    assert_eq!(records.len(), 1, "one process: {records:?}");
    let r = &records[0];
    // codex keeps a turn's model for the turns after it; the effort goes
    // with every turn.
    assert_eq!(r["turn_models"], json!([null, "gpt-fake-3", null]), "{r}");
    assert_eq!(r["efforts"], json!(["low", "xhigh", "xhigh"]), "{r}");
    assert_eq!(
        started_models(&svc, &id),
        [Value::Null, json!("gpt-fake-3"), json!("gpt-fake-3")]
    );
}

#[test]
fn a_message_choosing_what_its_cli_cannot_take_is_refused_and_queues_nothing() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("switch-refused");
    let s = svc.start_session(start_body(&folder, "claude", json!({})));
    let id = s["id"].as_str().unwrap().to_string();
    await_turns_ended(&svc, &id, 1);
    let cases = [
        (
            json!({"model": "-x"}),
            "model must be 1 to 128 characters of letters, digits and . _ : / @ -, not starting with -.",
        ),
        (
            json!({"model": "opus", "deliver": "steer"}),
            "A steered message joins the running turn as text: model, effort and attachments go \
             with a queued message.",
        ),
    ];
    for (choice, error) in cases {
        let (status, v) = send_choosing(&svc, &id, "x", choice.clone());
        assert_eq!(
            (status, &v["code"], v["error"].as_str().unwrap_or_default()),
            (422, &json!("invalid_field"), error),
            "{choice}"
        );
    }
    // The session's CLI decides which efforts it takes: its state, a 409.
    let (status, v) = send_choosing(&svc, &id, "x", json!({"effort": "minimal"}));
    assert_eq!(
        (status, &v["code"], v["error"].as_str().unwrap_or_default()),
        (
            409,
            &json!("effort_not_taken"),
            "This session runs claude, which takes effort low, medium, high, xhigh or max, not minimal."
        )
    );
    let prompts: Vec<Value> = all_events(&svc, &id, 1024)
        .into_iter()
        .filter(|e| e["kind"] == "prompt_queued")
        .collect();
    assert_eq!(prompts.len(), 1, "only the first prompt: {prompts:?}");
}

#[test]
fn a_model_switch_claude_refuses_keeps_the_prompt_first_and_says_why() {
    let svc = Service::start(ROOM_CORE, json!({"linger_ms": 30000}));
    let folder = svc.folder("claude-switch-refused");
    let s = svc.start_session(start_body(&folder, "claude", json!({})));
    let id = s["id"].as_str().unwrap().to_string();
    await_turns_ended(&svc, &id, 1);
    let (status, v) = send_choosing(&svc, &id, "never ran", json!({"model": "refused-model"}));
    assert_eq!(status, 200, "{v}");
    let view = wait_until("the queue paused", Duration::from_secs(10), || {
        let v = svc.session(&id);
        (v["queue"]["paused"] == true && v["state"] == "idle").then_some(v)
    });
    assert_eq!(view["queue"]["length"], 1, "{view}");
    let error = view["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(
            "claude did not switch to the model \"refused-model\": Model 'refused-model' is not available"
        ),
        "{view}"
    );
    let records = svc.records_in(&folder);
    assert_eq!(
        records[0]["prompts"].as_array().unwrap().len(),
        1,
        "it never ran"
    );
}
