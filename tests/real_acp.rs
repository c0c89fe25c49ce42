//! Conformance: room-core running real ACP agents from npm (pinned in
//! .ci/run), Zed's `claude-agent-acp` (it runs the real `claude`, which
//! `CLAUDE_CODE_EXECUTABLE` names; the fake Anthropic API) and `codex-acp`
//! (codex built in; the fake Responses API), each as the agent account
//! against the loopback fake model, and opencode (its own config naming
//! the fake Responses API): the seed-000 copy wait, approvals allowed and
//! denied, usage, a warm follow-up, an interrupt mid-tool, a restart, the
//! app's MCP server, a prompt's image and a steer mid-prompt (queued); and
//! the steering extension with the claude adapter's successor, which
//! offers it.
//!
//! Outside CI a check whose agent, CLI, root or account is absent is
//! reported as ignored, its reason beside its name; with `ROOM_CORE_CI=1`
//! it runs and fails.

// The shared support's other readers are other checks'.
#[allow(dead_code)]
mod real_support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use libtest_mimic::Arguments;

use real_support::{asked, mcp_probe, seen, trial, Real};
use room_kit::events::all_events;
use room_kit::fake_model::TURN;
use room_kit::procs::turn_processes;
use room_kit::{
    agent_account, chown_tree, land_project, mark, real_cli, start_body, temp_root, wait_until,
};
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// One ACP agent under test.
struct Agent {
    /// Its name in the config's `acp_agents`.
    name: &'static str,
    /// Its program, as npm installs it.
    program: &'static str,
    /// The arguments that start its ACP server.
    args: &'static [&'static str],
    /// The CLI whose model API it speaks (the fake model's naming).
    api: &'static str,
    /// What its first request holds of the seed-000 project.
    marker: &'static str,
    /// The prompt that writes `yes` to a file, asking first.
    write: fn(&std::path::Path) -> String,
    /// The kind of tool call that asks.
    asks_as: &'static str,
    /// The tokens it reports for a one-request turn (the fake model's
    /// fixed figures as it counts them), if it reports any.
    tokens: Option<[u64; 4]>,
    /// It reports a cost.
    cost: bool,
}

/// opencode's config: the fake model as an OpenAI provider (its Responses
/// API) on `port`, and its bash tool asking first.
fn opencode_config(port: u16) -> Value {
    json!({
        "$schema": "https://opencode.ai/config.json",
        "provider": {"fake": {
            "npm": "@ai-sdk/openai",
            "name": "Fake model",
            "options": {"baseURL": format!("http://127.0.0.1:{port}/v1"), "apiKey": "sk-fake-loopback-only"},
            // Images reach the model only where it says it reads them.
            "models": {"gpt-5.5": {
                "name": "Fake",
                "attachment": true,
                "modalities": {"input": ["text", "image"], "output": ["text"]},
            }},
        }},
        "model": "fake/gpt-5.5",
        "permission": {"bash": "ask"},
        "autoupdate": false,
        "share": "disabled",
    })
}

/// The agents, each checked the same way.
const AGENTS: [Agent; 3] = [
    Agent {
        name: "claude-acp",
        program: "claude-agent-acp",
        args: &[],
        api: "claude",
        marker: "CLAUDE_MD_MARKER_7731",
        write: |p| format!("TOOL_WRITE {} yes", p.display()),
        asks_as: "edit",
        tokens: Some([10, 5, 3, 7]),
        cost: true,
    },
    // Its sandbox keeps the folder read-only until a command asks to
    // leave it, which is what it asks about.
    Agent {
        name: "codex-acp",
        program: "codex-acp",
        args: &[],
        api: "codex",
        marker: "AGENTS_MD_MARKER_4412",
        write: |p| format!("TOOL_ESCALATE sh -c 'echo yes > {}'", p.display()),
        asks_as: "execute",
        tokens: None,
        cost: false,
    },
    // Neither claude nor codex: opencode (its config in OPENCODE_CONFIG).
    Agent {
        name: "opencode",
        program: "opencode",
        args: &["acp"],
        api: "codex",
        marker: "AGENTS_MD_MARKER_4412",
        write: |p| format!("TOOL_RUN sh -c 'echo yes > {}'", p.display()),
        asks_as: "execute",
        tokens: Some([0, 5, 3, 7]),
        cost: false,
    },
];

/// An agent that offers the steering extension: the claude adapter's
/// successor, @agentclientprotocol/claude-agent-acp (installed beside the
/// pinned one by .ci/run, as `claude-agent-acp-next`). Only the steering
/// check runs with it: its default mode decides its tools itself, which
/// the other checks' approvals assume it does not.
const STEERING_AGENT: Agent = Agent {
    name: "claude-acp-next",
    program: "claude-agent-acp-next",
    ..AGENTS[0]
};

/// A service whose `acp_agents` holds claude-agent-acp, run as the agent
/// account (which `approvals: app` needs) with `extra` config, and its
/// `code` folder, owned by that account; `None` where anything is missing
/// (outside CI).
fn acp_real(test: &str, a: &Agent, extra: Value) -> Option<(Real, PathBuf)> {
    let agent = agent_account(test)?;
    let program = real_cli(test, a.program)?;
    let sock_dir = temp_root();
    std::fs::set_permissions(&sock_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let opencode = sock_dir.join("opencode.json");
    let mut config = json!({
        "agent_uid": agent.uid.as_raw(),
        "agent_socket": sock_dir.join("agent.sock"),
        "acp_agents": {a.name: {
            "command": program,
            "args": a.args,
            "env": ["OPENCODE_CONFIG", "ENABLE_TOOL_SEARCH"],
        }},
    });
    room_kit::merge(&mut config, extra);
    let env = match a.name {
        // claude-agent-acp's SDK does not find the claude installed beside it.
        "claude-acp" | "claude-acp-next" => {
            let claude = real_cli(test, "claude")?.display().to_string();
            vec![
                ("CLAUDE_CODE_EXECUTABLE".to_string(), claude),
                // MCP tools offered at once, not behind a tool search.
                ("ENABLE_TOOL_SEARCH".to_string(), "false".to_string()),
            ]
        }
        "opencode" => vec![("OPENCODE_CONFIG".into(), opencode.display().to_string())],
        _ => vec![],
    };
    let real = Real::start(test, a.api, config, env)?;
    // Read when the agent starts, once the model's port is known.
    let config = opencode_config(real.model.port).to_string();
    std::fs::write(&opencode, config).unwrap();
    let (uid, gid) = (agent.uid.as_raw(), agent.gid.as_raw());
    chown_tree(&opencode, uid, gid);
    chown_tree(&real.dir, uid, gid);
    let folder = real.svc.folder("code");
    std::fs::create_dir_all(&folder).unwrap();
    chown_tree(&folder, uid, gid);
    Some((real, folder))
}

/// The body that starts an ACP session of agent `a` in `folder`.
fn acp_body(a: &Agent, folder: &std::path::Path, extra: Value) -> Value {
    let mut body = start_body(folder, "acp", json!({"agent": a.name}));
    room_kit::merge(&mut body, extra);
    body
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// Waits for session `id` to be idle, then asserts that a model request
/// asked `prompt` with `earlier` in it (the same conversation). Some agents
/// (opencode) ask the model other things beside the turn (a title): the
/// request is looked for, not taken to be the last.
fn carried_on(real: &Real, a: &Agent, id: &str, prompt: &str, earlier: &str) {
    real.await_idle(id);
    let requests = real.model.turn_requests(a.api);
    assert!(
        requests
            .iter()
            .any(|r| asked(a.api, r) == prompt && seen(r).contains(earlier)),
        "no request asked {prompt} with {earlier} before it: {:?}",
        requests.iter().map(|r| asked(a.api, r)).collect::<Vec<_>>()
    );
}

fn post(real: &Real, path: &str, body: Value) -> Value {
    let (status, v) = real.svc.post(path, body);
    assert_eq!(status, 200, "{path}: {v}");
    v
}

/// What agent `a`'s `initialize` offered, once the capabilities probe
/// has its answer (an error there fails the check).
fn offers(real: &Real, a: &Agent) -> Value {
    wait_until("the agent's offers", TURN, || {
        let v = real.svc.get("/v1/capabilities").1;
        let agent = &v["acp_agents"][a.name];
        assert_eq!(agent["error"], Value::Null, "{agent}");
        agent["initialize"]
            .is_object()
            .then(|| agent["initialize"].clone())
    })
}

/// Starts a session of agent `a` whose prompt streams `chunks` slow
/// chunks (`SLOW_TEXT`), and once the second has come, sends `steer` with
/// `deliver: steer`: the session's ID, and the answer.
fn steer_mid_prompt(
    real: &Real,
    a: &Agent,
    folder: &Path,
    chunks: u32,
    steer: &str,
) -> (String, Value) {
    let slow = format!("SLOW_TEXT {chunks} 200");
    let s = real
        .svc
        .start_session(acp_body(a, folder, json!({ "prompt": slow })));
    let id = id_of(&s);
    let second = format!("SLOW_CHUNK_2_OF_{chunks}");
    wait_until("the prompt's second chunk", TURN, || {
        let text = serde_json::to_string(&all_events(&real.svc, &id, 1024)).unwrap();
        text.contains(&second).then_some(())
    });
    let v = post(
        real,
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": steer, "deliver": "steer"}),
    );
    (id, v)
}

/// Seed 000 through ACP: with `project_copy` the agent starts once the
/// files have landed, and its first turn's model request holds the
/// project's instructions file (CLAUDE.md or AGENTS.md) as the agent read
/// it.
fn a_promised_copy_reaches_the_agents_first_request(test: &str, a: &Agent) {
    let Some((real, folder)) = acp_real(test, a, json!({})) else {
        return;
    };
    let s = real
        .svc
        .start_session(acp_body(a, &folder, json!({"project_copy": true})));
    let id = id_of(&s);
    real.svc.await_session(&id, "waiting on missing", |v| {
        v["waiting_for"]["mark"] == "missing"
    });
    mark(&folder, "copying");
    land_project(&folder);
    let agent = agent_account(test).unwrap();
    chown_tree(&folder, agent.uid.as_raw(), agent.gid.as_raw());
    assert_eq!(real.model.requests(), Vec::<Value>::new(), "no turn yet");
    mark(&folder, "ready");
    let v = real.await_idle(&id);
    assert!(
        v["native_id"].as_str().is_some_and(|n| !n.is_empty()),
        "{v}"
    );
    let requests = real.model.turn_requests(a.api);
    assert!(
        requests.iter().any(|r| seen(r).contains(a.marker)),
        "no request of the agent's first turn holds {}",
        a.marker
    );
}

/// The agent asks before a write: the app's allow runs it, its denial
/// does not.
fn asks_the_app_before_a_write(test: &str, a: &Agent) {
    let Some((real, folder)) = acp_real(test, a, json!({})) else {
        return;
    };
    let allowed = folder.join("allowed.txt");
    let prompt = (a.write)(&allowed);
    let s = real.svc.start_session(acp_body(
        a,
        &folder,
        json!({"approvals": "app", "prompt": prompt}),
    ));
    let id = id_of(&s);
    let request = real.await_kind(&id, "approval_requested", 1).remove(0);
    assert_eq!(request["tool"], a.asks_as, "{request}");
    let path = allowed.display().to_string();
    assert!(
        request["input"]["rawInput"].to_string().contains(&path),
        "{request}"
    );
    assert!(!allowed.exists(), "written before the app answered");
    let answer = format!("/v1/sessions/{id}/approvals/{}", request["id"]);
    post(&real, &answer, json!({"decision": "allow"}));
    real.await_idle(&id);
    assert_eq!(
        std::fs::read_to_string(&allowed).ok().as_deref(),
        Some("yes\n")
    );

    let denied = folder.join("denied.txt");
    let prompt = (a.write)(&denied);
    post(
        &real,
        &format!("/v1/sessions/{id}/messages"),
        json!({ "prompt": prompt }),
    );
    let request = real.await_kind(&id, "approval_requested", 2).remove(1);
    let answer = format!("/v1/sessions/{id}/approvals/{}", request["id"]);
    post(&real, &answer, json!({"decision": "deny"}));
    real.await_idle(&id);
    assert!(!denied.exists(), "the denied write ran");
    let resolved = real.await_kind(&id, "approval_resolved", 2);
    assert_eq!(
        (&resolved[1]["decision"], &resolved[1]["by"]),
        (&json!("deny"), &json!("app"))
    );
}

/// A turn's `turn_ended` carries the tokens the fake model reported and
/// a cost; the next message runs in the same process (no new one), in the
/// same conversation; a steer asked for waits as the next turn.
fn a_follow_up_is_warm_and_each_turn_reports_its_usage(test: &str, a: &Agent) {
    let Some((real, folder)) = acp_real(test, a, json!({"linger_ms": 60_000})) else {
        return;
    };
    let s = real
        .svc
        .start_session(acp_body(a, &folder, json!({"prompt": "WARM_FIRST_4242"})));
    let id = id_of(&s);
    real.await_idle(&id);
    let before = turn_processes(&id);
    assert!(!before.is_empty(), "the agent lingers");
    let v = post(
        &real,
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "WARM_SECOND_4343", "deliver": "steer"}),
    );
    assert_eq!(v["delivered"], "queued", "{v}");
    carried_on(&real, a, &id, "WARM_SECOND_4343", "WARM_FIRST_4242");
    let after = turn_processes(&id);
    let leader = before.iter().min().unwrap();
    assert!(after.contains(leader), "{before:?} then {after:?}");
    let ended = real.await_kind(&id, "turn_ended", 2);
    // codex-acp says no turn's tokens or cost: none is made up for it.
    for (e, want) in ended.iter().filter_map(|e| Some((e, a.tokens?))) {
        let u = &e["usage"];
        let tokens = [
            &u["input_tokens"],
            &u["output_tokens"],
            &u["cache_read_tokens"],
            &u["cache_write_tokens"],
        ];
        assert_eq!(tokens, want.map(|n| json!(n)).each_ref(), "{e}");
        if a.cost {
            assert!(u["cost_usd"].as_f64().is_some_and(|c| c > 0.0), "{e}");
        }
    }
    post(&real, &format!("/v1/sessions/{id}/close"), json!({}));
    assert_eq!(turn_processes(&id), Vec::<u32>::new());
}

/// An interrupt while a tool runs ends the turn (`session/cancel`) with
/// nothing of it left running; the next message carries the conversation
/// on in a new process.
fn an_interrupt_mid_tool_leaves_nothing_running(test: &str, a: &Agent) {
    let Some((real, folder)) = acp_real(test, a, json!({"linger_ms": 60_000})) else {
        return;
    };
    let s = real.svc.start_session(acp_body(
        a,
        &folder,
        // claude refuses a bare `sleep`: a command that waits as long.
        // Escalated (codex-acp: outside its sandbox, which needs a
        // bubblewrap the test machine need not have; claude: its Bash).
        json!({"prompt": "TOOL_ESCALATE tail -f /dev/null # INTERRUPTED_2236"}),
    ));
    let id = id_of(&s);
    wait_until("the command running", TURN, || {
        turn_processes(&id)
            .into_iter()
            .any(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.starts_with(b"tail\0-f\0"))
            })
            .then_some(())
    });
    post(&real, &format!("/v1/sessions/{id}/interrupt"), json!({}));
    assert_eq!(turn_processes(&id), Vec::<u32>::new());
    let ended = real.await_kind(&id, "turn_ended", 1).remove(0);
    assert_eq!(ended["by"], "interrupt", "{ended}");
    post(
        &real,
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "AFTER_INTERRUPT_1618"}),
    );
    carried_on(&real, a, &id, "AFTER_INTERRUPT_1618", "INTERRUPTED_2236");
}

/// After the service restarts, the next message carries the conversation
/// on (`session/load`).
fn a_restart_carries_the_conversation_on(test: &str, a: &Agent) {
    let Some((mut real, folder)) = acp_real(test, a, json!({})) else {
        return;
    };
    let s = real.svc.start_session(acp_body(
        a,
        &folder,
        json!({"prompt": "BEFORE_RESTART_5150"}),
    ));
    let id = id_of(&s);
    real.await_idle(&id);
    real.svc.restart();
    post(
        &real,
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "AFTER_RESTART_5151"}),
    );
    carried_on(&real, a, &id, "AFTER_RESTART_5151", "BEFORE_RESTART_5150");
}

/// The session's MCP server (fixtures/mcp_probe.py) goes to the agent in
/// `session/new`: the agent starts it with its secret environment and
/// asks for its tools; the model calls its tool, which `approvals: auto`
/// allows, and the result comes back to the model. The secret shows
/// nowhere but in the server. claude defers MCP tools behind a tool search
/// unless `ENABLE_TOOL_SEARCH=false` (an agent's `env`); codex finds them
/// through its `tool_search`, which the fake model calls first.
fn an_mcp_server_the_app_gave_serves_the_agent(test: &str, a: &Agent) {
    let Some((real, folder)) = acp_real(test, a, json!({})) else {
        return;
    };
    let log = real.dir.join("probe.log");
    let secret = "probe-secret-6131";
    let s = real.svc.start_session(acp_body(
        a,
        &folder,
        json!({
            "prompt": "TOOL_CALL probe_echo {\"text\": \"hello probe\"}",
            "mcp_servers": mcp_probe::servers(&log, secret),
        }),
    ));
    let id = id_of(&s);
    let result = wait_until("the tool's result back at the model", TURN, || {
        let requests = real.model.turn_requests(a.api);
        requests.iter().find_map(|r| {
            let body = seen(r);
            body.contains("PROBE_RESULT hello probe").then_some(body)
        })
    });
    assert!(
        result.contains("PROBE_RESULT hello probe token=set"),
        "{result}"
    );
    real.await_idle(&id);
    mcp_probe::assert_served(&real, &id, &log, secret, &["tools/call"]);
}

/// A 1x1 PNG, in base64.
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// A start's image reaches the model through an agent whose `initialize`
/// said it takes images, in base64 as the app gave it; one that said it
/// takes none has the start refused (409 `images_not_taken`).
fn an_image_reaches_the_model_where_the_agent_takes_images(test: &str, a: &Agent) {
    let Some((real, folder)) = acp_real(test, a, json!({})) else {
        return;
    };
    let offers = offers(&real, a);
    let png = json!({"type": "image", "media_type": "image/png", "data": PNG_B64});
    let body = acp_body(
        a,
        &folder,
        json!({"prompt": "PICTURE_7070 what is in it?", "attachments": [png]}),
    );
    if offers["images"] == false {
        let (status, v) = real.svc.post("/v1/sessions", body);
        assert_eq!(
            (status, &v["code"]),
            (409, &json!("images_not_taken")),
            "{v}"
        );
        return;
    }
    let id = id_of(&real.svc.start_session(body));
    real.await_idle(&id);
    // Some agents (opencode) ask the model for a title too, without it.
    let asked: Vec<String> = real
        .model
        .turn_requests(a.api)
        .iter()
        .map(seen)
        .filter(|r| r.contains("PICTURE_7070"))
        .collect();
    assert!(asked.iter().any(|r| r.contains(PNG_B64)), "{asked:?}");
    let view = real.svc.session(&id);
    assert_eq!(view["error"], Value::Null, "{view}");
}

/// A `deliver: steer` message mid-prompt goes to an agent that offers the
/// steering extension as `_session/steering`: the answer says `steered`,
/// the model is asked the steered text in the same turn (after the first
/// prompt, in the same conversation), the turn ends once and nothing is
/// requeued. The agent's capabilities say it takes steers.
fn a_steer_joins_the_running_prompt_of_an_agent_that_offers_steering(test: &str, a: &Agent) {
    let Some((real, folder)) = acp_real(test, a, json!({"linger_ms": 60_000})) else {
        return;
    };
    let offers = offers(&real, a);
    assert_eq!(offers["steering"], true, "{offers}");
    let (id, v) = steer_mid_prompt(&real, a, &folder, 60, "STEERED_8181");
    assert_eq!(v["delivered"], "steered", "{v}");
    carried_on(&real, a, &id, "STEERED_8181", "SLOW_TEXT 60 200");
    let kinds: Vec<String> = all_events(&real.svc, &id, 1024)
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_string())
        .collect();
    let count = |k: &str| kinds.iter().filter(|x| *x == k).count();
    assert_eq!(count("prompt_steered"), 1, "{kinds:?}");
    assert_eq!(count("prompt_requeued"), 0, "{kinds:?}");
    assert_eq!(count("turn_ended"), 1, "{kinds:?}");
}

/// A `deliver: steer` message mid-prompt to an agent that offers no
/// steering extension waits as the next turn: the answer says `queued`,
/// nothing is steered, and the next turn asks it in the same
/// conversation.
fn a_steer_mid_prompt_waits_as_the_next_turn(test: &str, a: &Agent) {
    let Some((real, folder)) = acp_real(test, a, json!({"linger_ms": 60_000})) else {
        return;
    };
    let (id, v) = steer_mid_prompt(&real, a, &folder, 30, "QUEUED_STEER_9191");
    assert_eq!(v["delivered"], "queued", "{v}");
    let ended = real.await_kind(&id, "turn_ended", 2);
    assert_eq!(ended[1]["prompt"], 2, "{ended:?}");
    carried_on(&real, a, &id, "QUEUED_STEER_9191", "SLOW_TEXT 30 200");
    let steered = all_events(&real.svc, &id, 1024)
        .iter()
        .filter(|e| e["kind"] == "prompt_steered")
        .count();
    assert_eq!(steered, 0);
}

/// A fork after the session's latest turn carries the whole conversation
/// into a session of its own (`session/fork`) where the agent offers
/// forks, and is refused (409 `conversation_uncut`) where it does not;
/// a fork after an earlier turn is refused either way (ACP forks a whole
/// session).
fn a_fork_after_the_latest_turn_carries_the_conversation_on(test: &str, a: &Agent) {
    let Some((real, folder)) = acp_real(test, a, json!({})) else {
        return;
    };
    let offers = offers(&real, a);
    let s = real
        .svc
        .start_session(acp_body(a, &folder, json!({"prompt": "FORK_ONE_1111"})));
    let id = id_of(&s);
    real.await_idle(&id);
    room_kit::events::await_turn_diff(&real.svc, &id, 1);
    let agent = agent_account(test).unwrap();
    let fork_folder = real.svc.folder("fork");
    std::fs::create_dir_all(&fork_folder).unwrap();
    chown_tree(&fork_folder, agent.uid.as_raw(), agent.gid.as_raw());
    let fork = |at: u64, prompt: &str| {
        real.svc.post(
            &format!("/v1/sessions/{id}/fork"),
            json!({"at_turn": at, "folder": fork_folder, "workspace": "forked", "prompt": prompt}),
        )
    };
    if offers["fork"] == false {
        let (status, v) = fork(1, "FORK_TWO_2222");
        assert_eq!(
            (status, &v["code"]),
            (409, &json!("conversation_uncut")),
            "{v}"
        );
        assert!(
            v["error"].as_str().unwrap().contains("forks no session"),
            "{v}"
        );
        return;
    }
    let (status, v) = fork(1, "FORK_TWO_2222");
    assert_eq!(status, 201, "{v}");
    let fid = id_of(&v);
    carried_on(&real, a, &fid, "FORK_TWO_2222", "FORK_ONE_1111");
    let (parent, forked) = (real.svc.session(&id), real.svc.session(&fid));
    assert_ne!(
        parent["native_id"], forked["native_id"],
        "a session of its own"
    );
    assert_eq!(forked["error"], Value::Null, "{forked}");
    // After a later turn of the parent's, turn 1 is no longer its latest.
    post(
        &real,
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "FORK_THREE_3333"}),
    );
    real.await_idle(&id);
    room_kit::events::await_turn_diff(&real.svc, &id, 2);
    let again = real.svc.folder("fork-again");
    std::fs::create_dir_all(&again).unwrap();
    chown_tree(&again, agent.uid.as_raw(), agent.gid.as_raw());
    let (status, v) = real.svc.post(
        &format!("/v1/sessions/{id}/fork"),
        json!({"at_turn": 1, "folder": again, "workspace": "forked"}),
    );
    assert_eq!(
        (status, &v["code"]),
        (409, &json!("conversation_uncut")),
        "{v}"
    );
}

/// The checks, each run for every agent; each needs the agent, root and
/// the account.
type Check = fn(&str, &Agent);
const CHECKS: [(&str, Check); 9] = [
    (
        "a_promised_copy_reaches_the_agents_first_request",
        a_promised_copy_reaches_the_agents_first_request,
    ),
    ("asks_the_app_before_a_write", asks_the_app_before_a_write),
    (
        "a_follow_up_is_warm_and_each_turn_reports_its_usage",
        a_follow_up_is_warm_and_each_turn_reports_its_usage,
    ),
    (
        "an_interrupt_mid_tool_leaves_nothing_running",
        an_interrupt_mid_tool_leaves_nothing_running,
    ),
    (
        "a_restart_carries_the_conversation_on",
        a_restart_carries_the_conversation_on,
    ),
    (
        "an_mcp_server_the_app_gave_serves_the_agent",
        an_mcp_server_the_app_gave_serves_the_agent,
    ),
    (
        "an_image_reaches_the_model_where_the_agent_takes_images",
        an_image_reaches_the_model_where_the_agent_takes_images,
    ),
    (
        "a_steer_mid_prompt_waits_as_the_next_turn",
        a_steer_mid_prompt_waits_as_the_next_turn,
    ),
    (
        "a_fork_after_the_latest_turn_carries_the_conversation_on",
        a_fork_after_the_latest_turn_carries_the_conversation_on,
    ),
];

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    for (i, agent) in AGENTS.iter().enumerate() {
        for (check, run) in CHECKS {
            let name = format!("{}_{check}", agent.name.replace('-', "_"));
            let test = name.clone();
            trials.push(trial(&name, Some(agent.program), true, move || {
                run(&test, &AGENTS[i])
            }));
        }
    }
    let name = "claude_acp_next_a_steer_joins_the_running_prompt_of_an_agent_that_offers_steering";
    trials.push(trial(name, Some(STEERING_AGENT.program), true, move || {
        a_steer_joins_the_running_prompt_of_an_agent_that_offers_steering(name, &STEERING_AGENT)
    }));
    libtest_mimic::run(&args, trials).exit_code()
}
