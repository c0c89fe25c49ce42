//! Conformance: room-core running the real `claude` and `codex` (from npm),
//! each pointed at the loopback fake model server, which records what the
//! model was asked. The fakes make the other tests fast; these decide
//! whether a feature works with the CLIs room-core exists for.
//!
//! Outside CI a check whose CLI (or root, or the `room-agent` account) is
//! absent is reported as ignored, its reason in brackets beside its name
//! (libtest-mimic: `cargo test` cannot ignore a test at run time); with
//! `ROOM_CORE_CI=1` it runs and fails. The last two need no real CLI and
//! always run.

mod real_support;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use libtest_mimic::Arguments;

use real_support::{asked, mcp_probe, model_calls, seen, tool_result, trial, Real};
use room_kit::fake_model::TURN;
use room_kit::{
    agent_account, chown_tree, land_project, mark, start_body, wait_until, FakeWebsite, Service,
    AGENT, TOKEN,
};
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// What the seed-000 project puts in front of each CLI's model: its
/// instructions marker and the skills it lists.
fn project_signs(harness: &str) -> &'static [&'static str] {
    match harness {
        "claude" => &[
            "CLAUDE_MD_MARKER_7731",
            "probe-claude-real",
            "probe-agents-linked",
        ],
        _ => &["AGENTS_MD_MARKER_4412", "probe-agents-real"],
    }
}

/// The fake model's plain answer (fixtures/fake_model_server.py).
const PLAIN_TEXT: &str = "FAKE_MODEL_REPLY";

fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

// ------------------------------------------------------------ seed 000

/// With `project_copy`, the harness starts once the files have landed (the
/// app's order: missing, copying, files, ready) and its first model
/// request carries the project's instructions and skills.
fn a_promised_copy_reaches_the_first_request(test: &str, harness: &str) {
    let Some(real) = Real::start(test, harness, json!({}), vec![]) else {
        return;
    };
    let folder = real.svc.folder("code");
    let s = real
        .svc
        .start_session(start_body(&folder, harness, json!({"project_copy": true})));
    let id = id_of(&s);
    let waiting_on = |m: &str| {
        real.svc
            .await_session(&id, &format!("waiting on {m}"), |v| {
                v["waiting_for"]["mark"] == m
            })
    };
    waiting_on("missing");
    mark(&folder, "copying");
    waiting_on("copying");
    land_project(&folder);
    assert_eq!(real.model.requests(), Vec::<Value>::new(), "no turn yet");
    mark(&folder, "ready");

    let requests = real.model.await_answers(harness, 1);
    let v = real.await_idle(&id);
    assert!(
        v["native_id"].as_str().is_some_and(|n| !n.is_empty()),
        "{v}"
    );
    let first = seen(&requests[0]);
    for sign in project_signs(harness) {
        assert!(
            first.contains(sign),
            "{harness}'s first request lacks {sign}"
        );
    }
}

fn claude_with_a_promised_copy_sees_claude_md_and_both_skills() {
    a_promised_copy_reaches_the_first_request(
        "claude_with_a_promised_copy_sees_claude_md_and_both_skills",
        "claude",
    );
}

fn codex_with_a_promised_copy_sees_agents_md_and_its_skill() {
    a_promised_copy_reaches_the_first_request(
        "codex_with_a_promised_copy_sees_agents_md_and_its_skill",
        "codex",
    );
}

/// The control, seed 000's bug: no `project_copy`, the files land 2 s
/// after the start (and after the harness has asked its model), and the
/// first request carries none of them.
fn files_that_land_late_are_missed(test: &str, harness: &str) {
    let Some(real) = Real::start(test, harness, json!({}), vec![]) else {
        return;
    };
    let folder = real.svc.folder("code");
    let started = Instant::now();
    let s = real
        .svc
        .start_session(start_body(&folder, harness, json!({})));
    wait_until("the first turn's request", TURN, || {
        (!real.model.turn_requests(harness).is_empty()).then_some(())
    });
    if let Some(rest) = Duration::from_secs(2).checked_sub(started.elapsed()) {
        std::thread::sleep(rest);
    }
    land_project(&folder);
    let requests = real.model.await_answers(harness, 1);
    real.await_idle(&id_of(&s));
    let first = seen(&requests[0]);
    for sign in project_signs(harness) {
        assert!(
            !first.contains(sign),
            "{harness}'s first request has {sign}, from files that landed after it started"
        );
    }
}

fn claude_without_a_copy_misses_files_that_land_late() {
    files_that_land_late_are_missed(
        "claude_without_a_copy_misses_files_that_land_late",
        "claude",
    );
}

fn codex_without_a_copy_misses_files_that_land_late() {
    files_that_land_late_are_missed("codex_without_a_copy_misses_files_that_land_late", "codex");
}

// --------------------------------------------------------------- resume

/// The first event names the native session, and a second message
/// resumes it: the model sees the first exchange.
fn a_second_message_resumes_the_conversation(test: &str, harness: &str) {
    let Some(real) = Real::start(test, harness, json!({}), vec![]) else {
        return;
    };
    let folder = real.svc.folder("code");
    let s = real.svc.start_session(start_body(
        &folder,
        harness,
        json!({"prompt": "FIRST_PROMPT_5521"}),
    ));
    let id = id_of(&s);
    real.model.await_answers(harness, 1);
    let first = real.await_idle(&id);
    let native_id = first["native_id"]
        .as_str()
        .expect("a native ID")
        .to_string();

    let (status, v) = real.svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "SECOND_PROMPT_7710"}),
    );
    assert_eq!(status, 200, "{v}");
    let requests = real.model.await_answers(harness, 2);
    let second = real.await_idle(&id);
    assert_eq!(second["native_id"], json!(native_id), "the same session");
    let last = requests.last().unwrap();
    assert_eq!(asked(harness, last), "SECOND_PROMPT_7710");
    let history = seen(last);
    assert!(
        history.contains("FIRST_PROMPT_5521"),
        "{harness} resumed without the first prompt"
    );
    assert!(
        history.contains(PLAIN_TEXT),
        "{harness} resumed without the first answer"
    );
}

fn claude_resumes_its_session_on_the_next_message() {
    a_second_message_resumes_the_conversation(
        "claude_resumes_its_session_on_the_next_message",
        "claude",
    );
}

fn codex_resumes_its_session_on_the_next_message() {
    a_second_message_resumes_the_conversation(
        "codex_resumes_its_session_on_the_next_message",
        "codex",
    );
}

// ---------------------------------------------------------------- usage

/// What one model request uses, as room-core counts it, for `harness`: the
/// fake model reports 10 input (for codex, 3 of them cached and 7 written
/// to the cache), 5 output, 3 cache read, 7 cache write.
fn per_request(harness: &str) -> [u64; 4] {
    match harness {
        "claude" => [10, 5, 3, 7],
        _ => [0, 5, 3, 7],
    }
}

fn tokens(usage: &Value) -> [u64; 4] {
    [
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
    ]
    .map(|k| {
        usage[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k} in {usage}"))
    })
}

/// A first turn (one model request) and a resumed turn that runs a tool
/// (two): each `turn_ended` carries what the fake model reported for that
/// turn's requests, whatever running sums the CLI prints beside them
/// (claude's `total_cost_usd`, codex's thread total), and the view adds
/// them up.
fn a_turns_usage_is_what_the_model_reported(test: &str, harness: &str) {
    let Some(real) = Real::start(test, harness, json!({}), vec![]) else {
        return;
    };
    let folder = real.svc.folder("code");
    let s = real
        .svc
        .start_session(start_body(&folder, harness, json!({"prompt": "USAGE_ONE"})));
    let id = id_of(&s);
    real.model.await_answers(harness, 1);
    real.await_idle(&id);
    let first = model_calls(&real.model);
    let tool = format!("TOOL_RUN echo used > {}/used.txt", folder.display());
    let (status, v) = real.svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": tool}),
    );
    assert_eq!(status, 200, "{v}");
    real.model.await_answers(harness, 2);
    let view = real.await_idle(&id);
    let calls = [first, model_calls(&real.model) - first];
    assert_eq!(
        calls,
        [1, 2],
        "the model's log: {:#?}",
        real.model.requests()
    );

    let ended: Vec<Value> = room_kit::events::all_events(&real.svc, &id, 1024)
        .into_iter()
        .filter(|e| e["kind"] == "turn_ended")
        .map(|e| e["data"]["usage"].clone())
        .collect();
    assert_eq!(ended.len(), 2, "{ended:?}");
    for (usage, n) in ended.iter().zip(calls) {
        let want = per_request(harness).map(|f| f * n as u64);
        assert_eq!(tokens(usage), want, "{harness}: {usage}");
    }
    assert_eq!(
        tokens(&view["usage"]),
        per_request(harness).map(|f| f * 3),
        "{view}"
    );
    match harness {
        // claude prices each turn; the second asked twice as much.
        "claude" => {
            let cost = |u: &Value| u["cost_usd"].as_f64().expect("a cost");
            let (one, two) = (cost(&ended[0]), cost(&ended[1]));
            assert!(one > 0.0 && (two - 2.0 * one).abs() < 1e-9, "{ended:?}");
            assert!((cost(&view["usage"]) - 3.0 * one).abs() < 1e-9, "{view}");
        }
        _ => {
            assert!(ended.iter().all(|u| u["cost_usd"].is_null()), "{ended:?}");
            assert!(view["usage"]["cost_usd"].is_null(), "{view}");
        }
    }
}

fn claude_reports_each_turns_usage_as_the_model_did() {
    a_turns_usage_is_what_the_model_reported(
        "claude_reports_each_turns_usage_as_the_model_did",
        "claude",
    );
}

fn codex_reports_each_turns_usage_as_the_model_did() {
    a_turns_usage_is_what_the_model_reported(
        "codex_reports_each_turns_usage_as_the_model_did",
        "codex",
    );
}

// ------------------------------------------------------- write, plan_only

/// A normal turn writes the file the model asks for; a `plan_only` turn's
/// write is refused by the CLI and the file stays absent.
fn normal_turns_write_and_plan_only_turns_do_not(test: &str, harness: &str) {
    let Some(real) = Real::start(test, harness, json!({}), vec![]) else {
        return;
    };
    let edit = real.svc.folder("edit");
    let plan = real.svc.folder("plan");
    let made = edit.join("made.txt");
    let planned = plan.join("planned.txt");
    let normal = real.svc.start_session(start_body(
        &edit,
        harness,
        json!({"prompt": format!("TOOL_WRITE {} made-by-{harness}", made.display())}),
    ));
    let plan_only = real.svc.start_session(start_body(
        &plan,
        harness,
        json!({
            "plan_only": true,
            "prompt": format!("TOOL_WRITE {} planned", planned.display()),
        }),
    ));
    let requests = real.model.await_answers(harness, 2);
    real.await_idle(&id_of(&normal));
    real.await_idle(&id_of(&plan_only));

    assert_eq!(
        std::fs::read_to_string(&made).ok().as_deref(),
        Some(format!("made-by-{harness}\n").as_str()),
        "the normal turn wrote the file"
    );
    assert!(
        !planned.exists(),
        "the plan_only turn wrote {}",
        planned.display()
    );
    // The plan_only turn did ask for the write and got a refusal: claude's
    // plan mode asks (over its stream-json protocol) and room-core denies,
    // codex's read-only sandbox refuses.
    let refusal = requests
        .iter()
        .filter(|r| seen(r).contains("planned.txt"))
        .find_map(tool_result)
        .expect("the plan_only turn's tool call came back with a result");
    let why = match harness {
        "claude" => "a plan_only session changes nothing",
        _ => "Read-only file system",
    };
    assert!(
        refusal.contains(why),
        "{harness} answered the write with {refusal:?}"
    );
}

fn claude_writes_in_a_normal_turn_and_not_in_a_plan_only_turn() {
    normal_turns_write_and_plan_only_turns_do_not(
        "claude_writes_in_a_normal_turn_and_not_in_a_plan_only_turn",
        "claude",
    );
}

fn codex_writes_in_a_normal_turn_and_not_in_a_plan_only_turn() {
    normal_turns_write_and_plan_only_turns_do_not(
        "codex_writes_in_a_normal_turn_and_not_in_a_plan_only_turn",
        "codex",
    );
}

// -------------------------------------------------------------- prompts

/// Prompts that look like options, a bare `--`, several lines, 200 KiB.
fn awkward_prompts() -> Vec<String> {
    let line = format!("{}\n", "0123456789abcdef".repeat(64));
    vec![
        "-x".into(),
        "--help".into(),
        "--".into(),
        "line one\n  line two\n\nline four\n".into(),
        line.repeat(200),
    ]
}

/// Each awkward prompt reaches the model as its text, in order, in one
/// resumed session.
fn awkward_prompts_reach_the_model(test: &str, harness: &str) {
    let Some(real) = Real::start(test, harness, json!({}), vec![]) else {
        return;
    };
    let prompts = awkward_prompts();
    let folder = real.svc.folder("code");
    let s = real
        .svc
        .start_session(start_body(&folder, harness, json!({"prompt": prompts[0]})));
    let id = id_of(&s);
    for p in &prompts[1..] {
        let (status, v) = real
            .svc
            .post(&format!("/v1/sessions/{id}/messages"), json!({"prompt": p}));
        assert_eq!(status, 200, "{v}");
    }
    let requests = real.model.await_answers(harness, prompts.len());
    let v = real.await_idle(&id);
    assert!(v["native_id"].is_string(), "{v}");
    assert_eq!(v["error"], Value::Null, "{v}");
    let got: Vec<String> = requests.iter().map(|r| asked(harness, r)).collect();
    assert_eq!(got.len(), prompts.len());
    for (g, p) in got.iter().zip(&prompts) {
        assert!(
            g == p,
            "{harness} was asked {:?}… instead of {:?}…",
            &g[..g.len().min(40)],
            &p[..p.len().min(40)]
        );
    }
}

fn claude_gets_awkward_prompts_as_text() {
    awkward_prompts_reach_the_model("claude_gets_awkward_prompts_as_text", "claude");
}

fn codex_gets_awkward_prompts_as_text() {
    awkward_prompts_reach_the_model("codex_gets_awkward_prompts_as_text", "codex");
}

// --------------------------------------------------- the agent account

/// The website token the service signs in with; no harness may see it.
const WEBSITE_TOKEN: &str = "website-token-for-core-only";

/// A harness runs as the agent account (its HOME, USER and groups), with
/// ROOM_CORE_SOCKET and without the service's tokens; its tool command's
/// room-cli reaches Core, which forwards as the harness's session.
fn a_tool_reaches_core_as_its_session(test: &str, harness: &str) {
    let Some(agent) = agent_account(test) else {
        return;
    };
    let web = FakeWebsite::start();
    // The agent socket outside the state dir, where the agent can reach it.
    let sock_dir = room_kit::temp_root();
    std::fs::set_permissions(&sock_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let socket = sock_dir.join("agent.sock");
    let config = json!({
        "agent_uid": agent.uid.as_raw(),
        "agent_socket": socket,
        "website_url": web.url,
        "website_token": WEBSITE_TOKEN,
        // Named for the harness, but their values are the tokens.
        "harness_env": ["COPY_OF_THE_API_ONE", "COPY_OF_THE_WEBSITE_ONE"],
    });
    // Copies of both tokens in the service's environment: Core keeps them
    // from its harnesses. And root's own credentials, which are not on the
    // allowlist.
    let env = vec![
        ("COPY_OF_THE_API_ONE".to_string(), TOKEN.to_string()),
        ("COPY_OF_THE_WEBSITE_ONE".into(), WEBSITE_TOKEN.into()),
        (
            "AWS_SECRET_ACCESS_KEY".into(),
            "root-aws-secret-9d1e".into(),
        ),
        ("SUDO_USER".into(), "root-sudo-user-4b2a".into()),
    ];
    let Some(real) = Real::start(test, harness, config, env) else {
        return;
    };
    let (uid, gid) = (agent.uid.as_raw(), agent.gid.as_raw());
    // The CLIs' homes and the session's folder are the agent's, as the app
    // would make them; room-cli is copied where the agent can run it.
    chown_tree(&real.dir, uid, gid);
    let bin = real.dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let cli = bin.join("room-cli");
    std::fs::copy(env!("CARGO_BIN_EXE_room-cli"), &cli).unwrap();
    let folder = real.svc.folder("code");
    std::fs::create_dir_all(&folder).unwrap();
    chown_tree(&folder, uid, gid);

    let f = folder.display();
    let tool = format!(
        "TOOL_RUN id -un > {f}/id.txt; id -G > {f}/groups.txt; env > {f}/env.txt; \
         {} thread list > {f}/cli.txt 2>&1; echo \"exit=$?\" >> {f}/cli.txt",
        cli.display()
    );
    let s = real
        .svc
        .start_session(start_body(&folder, harness, json!({"prompt": tool})));
    let id = id_of(&s);
    real.model.await_answers(harness, 1);
    real.await_idle(&id);

    let read = |name: &str| {
        std::fs::read_to_string(folder.join(name)).unwrap_or_else(|e| {
            panic!(
                "{name}: {e}; the model saw {:?}",
                real.model
                    .turn_requests(harness)
                    .last()
                    .and_then(tool_result)
            )
        })
    };
    assert_eq!(read("id.txt"), format!("{}\n", AGENT));
    let groups: Vec<u32> = read("groups.txt")
        .split_whitespace()
        .map(|g| g.parse().unwrap())
        .collect();
    assert!(
        groups.contains(&gid) && !groups.contains(&0),
        "groups {groups:?}"
    );
    let env = read("env.txt");
    let has = |line: String| env.lines().any(|l| l == line);
    assert!(
        has(format!("ROOM_CORE_SOCKET={}", socket.display())),
        "{env}"
    );
    assert!(has(format!("HOME={}", agent.dir.display())), "{env}");
    assert!(has(format!("USER={}", AGENT)), "{env}");
    assert!(has(format!("LOGNAME={}", AGENT)), "{env}");
    assert!(!env.contains(TOKEN), "the API token reached the harness");
    assert!(
        !env.contains(WEBSITE_TOKEN),
        "the website token reached the harness"
    );
    for secret in ["root-aws-secret-9d1e", "root-sudo-user-4b2a"] {
        assert!(!env.contains(secret), "{secret} reached the harness: {env}");
    }

    let out = read("cli.txt");
    assert!(
        out.contains("{\"ok\":true}") && out.ends_with("exit=0\n"),
        "room-cli said {out:?}"
    );
    let calls = web.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].1["session"], json!(id), "{calls:?}");
}

fn claude_tool_runs_room_cli_as_its_session_under_the_agent_account() {
    a_tool_reaches_core_as_its_session(
        "claude_tool_runs_room_cli_as_its_session_under_the_agent_account",
        "claude",
    );
}

fn codex_tool_runs_room_cli_as_its_session_under_the_agent_account() {
    a_tool_reaches_core_as_its_session(
        "codex_tool_runs_room_cli_as_its_session_under_the_agent_account",
        "codex",
    );
}

// ------------------------------------------- with the fakes: always run

fn blank_prompts_are_refused_at_the_api() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("code");
    let refusal = json!({
        "error": "The prompt must not be empty or only whitespace.",
        "code": "invalid_field",
    });
    for blank in ["", " \n\t"] {
        let (status, v) = svc.post(
            "/v1/sessions",
            start_body(&folder, "claude", json!({"prompt": blank})),
        );
        assert_eq!((status, &v), (422, &refusal));
    }
    let s = svc.start_session(start_body(&folder, "codex", json!({})));
    let (status, v) = svc.post(
        &format!("/v1/sessions/{}/messages", id_of(&s)),
        json!({"prompt": ""}),
    );
    assert_eq!((status, v), (422, refusal));
}

fn awkward_prompts_reach_the_fake_harnesses_on_stdin() {
    let svc = Service::start(ROOM_CORE, json!({}));
    for harness in ["claude", "codex"] {
        let prompts = awkward_prompts();
        let folder = svc.folder(harness);
        let s = svc.start_session(start_body(&folder, harness, json!({"prompt": prompts[0]})));
        for p in &prompts[1..] {
            svc.post(
                &format!("/v1/sessions/{}/messages", id_of(&s)),
                json!({"prompt": p}),
            );
        }
        let last = svc.await_record(&folder, prompts.len(), Duration::from_secs(20));
        let records = svc.records_in(&folder);
        let got: Vec<&str> = records
            .iter()
            .map(|r| r["prompt"].as_str().unwrap())
            .collect();
        assert_eq!(got, prompts.iter().map(String::as_str).collect::<Vec<_>>());
        let argv = last["argv"].as_array().unwrap();
        assert!(
            !argv
                .iter()
                .any(|a| prompts.contains(&a.as_str().unwrap().to_string())),
            "{argv:?}"
        );
    }
}

// ------------------------------------------------------------ session options

/// What the app chose reaches the model on every request of a session's
/// turns, the first and a follow-up: the model by name, the instructions
/// in what the model is told, the effort as the CLI says it.
fn options_reach_the_model(test: &str, harness: &str, model: &str, effort: &str) {
    let Some(real) = Real::start(test, harness, json!({}), vec![]) else {
        return;
    };
    let folder = real.svc.folder("code");
    let instructions = "INSTRUCTIONS_MARK_3141: answer in one short line.";
    let s = real.svc.start_session(start_body(
        &folder,
        harness,
        json!({"prompt": "first", "model": model, "effort": effort, "instructions": instructions}),
    ));
    let id = id_of(&s);
    real.model.await_answers(harness, 1);
    real.await_idle(&id);
    let (status, v) = real.svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "second"}),
    );
    assert_eq!(status, 200, "{v}");
    let requests = real.model.await_answers(harness, 2);
    real.await_idle(&id);
    for r in &requests {
        let body = &r["body"];
        assert_eq!(body["model"], model, "{harness}: {}", seen(r));
        assert!(
            instructions_seen(harness, body).contains("INSTRUCTIONS_MARK_3141"),
            "{harness}: {}",
            seen(r)
        );
        assert_eq!(
            effort_seen(harness, body),
            Some(effort.to_string()),
            "{}",
            seen(r)
        );
    }
}

/// A message's model and effort reach the model from its turn on: a model
/// switched in the lingering process (claude's `set_model`, codex's
/// `turn/start`), then an effort (codex in place, claude in a new process
/// that resumes the session), then a turn that chooses nothing runs with
/// both still.
fn a_message_switches_model_and_effort(
    test: &str,
    harness: &str,
    models: [&str; 2],
    efforts: [&str; 2],
) {
    let Some(real) = Real::start(test, harness, json!({"linger_ms": 60000}), vec![]) else {
        return;
    };
    let folder = real.svc.folder("code");
    let s = real.svc.start_session(start_body(
        &folder,
        harness,
        json!({"prompt": "first", "model": models[0], "effort": efforts[0]}),
    ));
    let id = id_of(&s);
    real.model.await_answers(harness, 1);
    real.await_idle(&id);
    let steps = [
        json!({"prompt": "second", "model": models[1]}),
        json!({"prompt": "third", "effort": efforts[1]}),
        json!({"prompt": "fourth"}),
    ];
    for (n, body) in steps.into_iter().enumerate() {
        let (status, v) = real.svc.post(&format!("/v1/sessions/{id}/messages"), body);
        assert_eq!(status, 200, "{v}");
        real.model.await_answers(harness, n + 2);
        real.await_idle(&id);
    }
    let requests = real.model.await_answers(harness, 4);
    let seen_by_model: Vec<(String, Option<String>)> = requests
        .iter()
        .map(|r| {
            let body = &r["body"];
            (
                body["model"].as_str().unwrap_or_default().to_string(),
                effort_seen(harness, body),
            )
        })
        .collect();
    let want = |m: &str, e: &str| (m.to_string(), Some(e.to_string()));
    assert_eq!(
        seen_by_model,
        [
            want(models[0], efforts[0]),
            want(models[1], efforts[0]),
            want(models[1], efforts[1]),
            want(models[1], efforts[1]),
        ],
        "{harness}"
    );
    let view = real.svc.session(&id);
    assert_eq!(view["error"], Value::Null, "{view}");
    // claude takes a new effort only in a new process; codex in place.
    let spawns = real.svc.log().matches(" started (pid ").count();
    let want = if harness == "claude" { 2 } else { 1 };
    assert_eq!(spawns, want, "{harness}'s processes:\n{}", real.svc.log());
}

fn claude_switches_model_and_effort_when_a_message_asks() {
    a_message_switches_model_and_effort(
        "claude_switches_model_and_effort_when_a_message_asks",
        "claude",
        ["claude-fake-2", "claude-fake-3"],
        ["low", "max"],
    );
}

fn codex_switches_model_and_effort_when_a_message_asks() {
    a_message_switches_model_and_effort(
        "codex_switches_model_and_effort_when_a_message_asks",
        "codex",
        ["gpt-fake-2", "gpt-fake-3"],
        ["low", "high"],
    );
}

/// A 1x1 PNG, in base64.
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
/// A 1x1 GIF, in base64.
const GIF_B64: &str = "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7";

/// A prompt's images reach the model, the start's and then a warm
/// follow-up's, each in the request of its own turn: claude sends an
/// `image` block (`source.data`), codex an `input_image` (a `data:` URL);
/// either way the bytes the app gave, in base64.
fn images_reach_the_model(test: &str, harness: &str) {
    let Some(real) = Real::start(test, harness, json!({"linger_ms": 60000}), vec![]) else {
        return;
    };
    let folder = real.svc.folder("code");
    let png = json!({"type": "image", "media_type": "image/png", "data": PNG_B64});
    let s = real.svc.start_session(start_body(
        &folder,
        harness,
        json!({"prompt": "what is in the picture?", "attachments": [png]}),
    ));
    let id = id_of(&s);
    real.model.await_answers(harness, 1);
    real.await_idle(&id);
    let gif = json!({"type": "image", "media_type": "image/gif", "data": GIF_B64});
    let (status, v) = real.svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "and this one?", "attachments": [gif]}),
    );
    assert_eq!(status, 200, "{v}");
    let requests = real.model.await_answers(harness, 2);
    real.await_idle(&id);
    let (first, second) = (seen(&requests[0]), seen(&requests[1]));
    assert!(first.contains(PNG_B64), "{harness}: {first}");
    assert!(!first.contains(GIF_B64), "{harness}: {first}");
    match harness {
        "claude" => {
            assert!(second.contains(GIF_B64), "{second}");
            assert!(second.contains("\"media_type\":\"image/gif\""), "{second}");
        }
        // codex sends a PNG as it is, and another kind re-encoded as a PNG:
        // the follow-up's message is an image, then its text.
        _ => {
            let last = last_user_message(&requests[1]["body"]);
            let kinds: Vec<&str> = last.iter().filter_map(|c| c["type"].as_str()).collect();
            assert_eq!(kinds, ["input_image", "input_text"], "{second}");
            let url = last[0]["image_url"].as_str().unwrap_or_default();
            assert!(url.starts_with("data:image/"), "{url}");
            assert_ne!(url, format!("data:image/png;base64,{PNG_B64}"), "{second}");
            assert_eq!(last[1]["text"], "and this one?");
        }
    }
    let view = real.svc.session(&id);
    assert_eq!(view["error"], Value::Null, "{view}");
}

/// The content of the last user message of a codex Responses request.
fn last_user_message(body: &Value) -> Vec<Value> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .find(|i| i["role"] == "user")
        .and_then(|m| m["content"].as_array().cloned())
        .unwrap_or_default()
}

fn claude_sees_the_images_a_prompt_carries() {
    images_reach_the_model("claude_sees_the_images_a_prompt_carries", "claude");
}

fn codex_sees_the_images_a_prompt_carries() {
    images_reach_the_model("codex_sees_the_images_a_prompt_carries", "codex");
}

/// Where each CLI puts the instructions: claude in its system prompt's
/// last block, codex in a developer message of its input.
fn instructions_seen(harness: &str, body: &Value) -> String {
    match harness {
        "claude" => body["system"]
            .as_array()
            .and_then(|blocks| blocks.last())
            .map(|b| b["text"].to_string())
            .unwrap_or_default(),
        _ => body["input"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["role"] == "developer")
            .map(|i| i["content"].to_string())
            .collect(),
    }
}

/// The effort a model request carries, as each CLI words it.
fn effort_seen(harness: &str, body: &Value) -> Option<String> {
    let e = match harness {
        "claude" => &body["output_config"]["effort"],
        _ => &body["reasoning"]["effort"],
    };
    e.as_str().map(str::to_string)
}

fn claude_runs_the_model_effort_and_instructions_the_app_chose() {
    options_reach_the_model(
        "claude_runs_the_model_effort_and_instructions_the_app_chose",
        "claude",
        "claude-fake-2",
        "high",
    );
}

fn codex_runs_the_model_effort_and_instructions_the_app_chose() {
    options_reach_the_model(
        "codex_runs_the_model_effort_and_instructions_the_app_chose",
        "codex",
        "gpt-fake-2",
        "low",
    );
}

// ------------------------------------------------------------ MCP servers

/// A session's MCP server (fixtures/mcp_probe.py) is started by the CLI
/// with its secret environment and asked for its tools; the model calls
/// its tool, which runs without asking (`approvals: auto`), and the result
/// comes back to the model. The secret shows nowhere but in the server.
/// Both CLIs defer MCP tools behind a tool search: claude offers them at
/// once with `ENABLE_TOOL_SEARCH=false` (passed as an operator's
/// `harness_env`); codex finds them through its `tool_search`, which the
/// fake model calls first.
fn an_mcp_server_serves_the_cli(test: &str, harness: &str) {
    let env = vec![("ENABLE_TOOL_SEARCH".to_string(), "false".to_string())];
    let config = json!({"harness_env": ["ENABLE_TOOL_SEARCH"]});
    let Some(real) = Real::start(test, harness, config, env) else {
        return;
    };
    let folder = real.svc.folder("code");
    let log = real.dir.join("probe.log");
    let secret = "probe-secret-5523";
    let s = real.svc.start_session(start_body(
        &folder,
        harness,
        json!({
            "prompt": "TOOL_CALL probe_echo {\"text\": \"hello probe\"}",
            "mcp_servers": mcp_probe::servers(&log, secret),
        }),
    ));
    let id = id_of(&s);
    let requests = real.model.await_answers(harness, 1);
    real.await_idle(&id);
    mcp_probe::assert_served(
        &real,
        &id,
        &log,
        secret,
        &["initialize", "tools/list", "tools/call"],
    );
    let result = requests
        .iter()
        .find_map(tool_result)
        .expect("the tool's result went back to the model");
    assert!(
        result.contains("PROBE_RESULT hello probe token=set"),
        "{harness}: {result}"
    );
    let journal =
        serde_json::to_string(&room_kit::events::all_events(&real.svc, &id, 1024)).unwrap();
    assert!(journal.contains("PROBE_RESULT"), "the call is journalled");
}

fn claude_calls_an_mcp_servers_tool_the_app_gave_it() {
    an_mcp_server_serves_the_cli("claude_calls_an_mcp_servers_tool_the_app_gave_it", "claude");
}

fn codex_calls_an_mcp_servers_tool_the_app_gave_it() {
    an_mcp_server_serves_the_cli("codex_calls_an_mcp_servers_tool_the_app_gave_it", "codex");
}

// ------------------------------------------------------------ the list

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let trials = vec![
        trial(
            "claude_sees_the_images_a_prompt_carries",
            Some("claude"),
            false,
            claude_sees_the_images_a_prompt_carries,
        ),
        trial(
            "codex_sees_the_images_a_prompt_carries",
            Some("codex"),
            false,
            codex_sees_the_images_a_prompt_carries,
        ),
        trial(
            "claude_switches_model_and_effort_when_a_message_asks",
            Some("claude"),
            false,
            claude_switches_model_and_effort_when_a_message_asks,
        ),
        trial(
            "codex_switches_model_and_effort_when_a_message_asks",
            Some("codex"),
            false,
            codex_switches_model_and_effort_when_a_message_asks,
        ),
        trial(
            "claude_calls_an_mcp_servers_tool_the_app_gave_it",
            Some("claude"),
            false,
            claude_calls_an_mcp_servers_tool_the_app_gave_it,
        ),
        trial(
            "codex_calls_an_mcp_servers_tool_the_app_gave_it",
            Some("codex"),
            false,
            codex_calls_an_mcp_servers_tool_the_app_gave_it,
        ),
        trial(
            "claude_runs_the_model_effort_and_instructions_the_app_chose",
            Some("claude"),
            false,
            claude_runs_the_model_effort_and_instructions_the_app_chose,
        ),
        trial(
            "codex_runs_the_model_effort_and_instructions_the_app_chose",
            Some("codex"),
            false,
            codex_runs_the_model_effort_and_instructions_the_app_chose,
        ),
        trial(
            "claude_with_a_promised_copy_sees_claude_md_and_both_skills",
            Some("claude"),
            false,
            claude_with_a_promised_copy_sees_claude_md_and_both_skills,
        ),
        trial(
            "codex_with_a_promised_copy_sees_agents_md_and_its_skill",
            Some("codex"),
            false,
            codex_with_a_promised_copy_sees_agents_md_and_its_skill,
        ),
        trial(
            "claude_without_a_copy_misses_files_that_land_late",
            Some("claude"),
            false,
            claude_without_a_copy_misses_files_that_land_late,
        ),
        trial(
            "codex_without_a_copy_misses_files_that_land_late",
            Some("codex"),
            false,
            codex_without_a_copy_misses_files_that_land_late,
        ),
        trial(
            "claude_resumes_its_session_on_the_next_message",
            Some("claude"),
            false,
            claude_resumes_its_session_on_the_next_message,
        ),
        trial(
            "codex_resumes_its_session_on_the_next_message",
            Some("codex"),
            false,
            codex_resumes_its_session_on_the_next_message,
        ),
        trial(
            "claude_reports_each_turns_usage_as_the_model_did",
            Some("claude"),
            false,
            claude_reports_each_turns_usage_as_the_model_did,
        ),
        trial(
            "codex_reports_each_turns_usage_as_the_model_did",
            Some("codex"),
            false,
            codex_reports_each_turns_usage_as_the_model_did,
        ),
        trial(
            "claude_writes_in_a_normal_turn_and_not_in_a_plan_only_turn",
            Some("claude"),
            false,
            claude_writes_in_a_normal_turn_and_not_in_a_plan_only_turn,
        ),
        trial(
            "codex_writes_in_a_normal_turn_and_not_in_a_plan_only_turn",
            Some("codex"),
            false,
            codex_writes_in_a_normal_turn_and_not_in_a_plan_only_turn,
        ),
        trial(
            "claude_gets_awkward_prompts_as_text",
            Some("claude"),
            false,
            claude_gets_awkward_prompts_as_text,
        ),
        trial(
            "codex_gets_awkward_prompts_as_text",
            Some("codex"),
            false,
            codex_gets_awkward_prompts_as_text,
        ),
        trial(
            "claude_tool_runs_room_cli_as_its_session_under_the_agent_account",
            Some("claude"),
            true,
            claude_tool_runs_room_cli_as_its_session_under_the_agent_account,
        ),
        trial(
            "codex_tool_runs_room_cli_as_its_session_under_the_agent_account",
            Some("codex"),
            true,
            codex_tool_runs_room_cli_as_its_session_under_the_agent_account,
        ),
        trial(
            "blank_prompts_are_refused_at_the_api",
            None,
            false,
            blank_prompts_are_refused_at_the_api,
        ),
        trial(
            "awkward_prompts_reach_the_fake_harnesses_on_stdin",
            None,
            false,
            awkward_prompts_reach_the_fake_harnesses_on_stdin,
        ),
    ];
    libtest_mimic::run(&args, trials).exit_code()
}
