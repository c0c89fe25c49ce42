//! Conformance: room-core running a real ACP agent from npm, Zed's
//! `claude-agent-acp` (pinned in .ci/run; it runs the real `claude`, which
//! `CLAUDE_CODE_EXECUTABLE` names), as the agent account against the
//! loopback fake model: the seed-000 copy wait, approvals allowed and
//! denied, usage, a warm follow-up, an interrupt mid-tool and a restart.
//!
//! Outside CI a check whose agent, CLI, root or account is absent is
//! reported as ignored, its reason beside its name; with `ROOM_CORE_CI=1`
//! it runs and fails.

// The shared support's other readers are other checks'.
#[allow(dead_code)]
mod real_support;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use libtest_mimic::Arguments;

use real_support::{asked, seen, trial, Real};
use room_kit::events::all_events;
use room_kit::fake_model::TURN;
use room_kit::procs::turn_processes;
use room_kit::{
    agent_account, chown_tree, land_project, mark, real_cli, start_body, temp_root, wait_until,
};
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// The agent's program, as npm installs it.
const AGENT_PROGRAM: &str = "claude-agent-acp";

/// The agent's name in the config's `acp_agents`.
const AGENT_NAME: &str = "claude-acp";

/// A service whose `acp_agents` holds claude-agent-acp, run as the agent
/// account (which `approvals: app` needs) with `extra` config, and its
/// `code` folder, owned by that account; `None` where anything is missing
/// (outside CI).
fn acp_real(test: &str, extra: Value) -> Option<(Real, PathBuf)> {
    let agent = agent_account(test)?;
    let program = real_cli(test, AGENT_PROGRAM)?;
    let claude = real_cli(test, "claude")?;
    let sock_dir = temp_root();
    std::fs::set_permissions(&sock_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut config = json!({
        "agent_uid": agent.uid.as_raw(),
        "agent_socket": sock_dir.join("agent.sock"),
        "acp_agents": {AGENT_NAME: {"command": program}},
    });
    room_kit::merge(&mut config, extra);
    let env = vec![(
        "CLAUDE_CODE_EXECUTABLE".to_string(),
        claude.display().to_string(),
    )];
    let real = Real::start(test, "claude", config, env)?;
    let (uid, gid) = (agent.uid.as_raw(), agent.gid.as_raw());
    chown_tree(&real.dir, uid, gid);
    let folder = real.svc.folder("code");
    std::fs::create_dir_all(&folder).unwrap();
    chown_tree(&folder, uid, gid);
    Some((real, folder))
}

/// The body that starts an ACP session of the agent in `folder`.
fn acp_body(folder: &std::path::Path, extra: Value) -> Value {
    let mut body = start_body(folder, "acp", json!({"agent": AGENT_NAME}));
    room_kit::merge(&mut body, extra);
    body
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// The data of the session's events of `kind`, once there are `n`.
fn await_kind(real: &Real, id: &str, kind: &str, n: usize) -> Vec<Value> {
    wait_until(&format!("{n} {kind} of {id}"), TURN, || {
        let found: Vec<Value> = all_events(&real.svc, id, 1024)
            .into_iter()
            .filter(|e| e["kind"] == kind)
            .map(|e| e["data"].clone())
            .collect();
        (found.len() >= n).then_some(found)
    })
}

fn post(real: &Real, path: &str, body: Value) -> Value {
    let (status, v) = real.svc.post(path, body);
    assert_eq!(status, 200, "{path}: {v}");
    v
}

/// Seed 000 through ACP: with `project_copy` the agent starts once the
/// files have landed, and its first model request holds the project's
/// CLAUDE.md as the agent read it.
fn a_promised_copy_reaches_the_agents_first_request() {
    let test = "acp_a_promised_copy_reaches_the_agents_first_request";
    let Some((real, folder)) = acp_real(test, json!({})) else {
        return;
    };
    let s = real
        .svc
        .start_session(acp_body(&folder, json!({"project_copy": true})));
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
    let requests = real.model.await_answers("claude", 1);
    let v = real.await_idle(&id);
    assert!(
        v["native_id"].as_str().is_some_and(|n| !n.is_empty()),
        "{v}"
    );
    assert!(
        seen(&requests[0]).contains("CLAUDE_MD_MARKER_7731"),
        "the agent's first request lacks the project's CLAUDE.md"
    );
}

/// The agent asks before a write: the app's allow runs it, its denial
/// does not.
fn asks_the_app_before_a_write() {
    let test = "acp_asks_the_app_before_a_write";
    let Some((real, folder)) = acp_real(test, json!({})) else {
        return;
    };
    let allowed = folder.join("allowed.txt");
    let prompt = format!("TOOL_WRITE {} yes", allowed.display());
    let s = real.svc.start_session(acp_body(
        &folder,
        json!({"approvals": "app", "prompt": prompt}),
    ));
    let id = id_of(&s);
    let request = await_kind(&real, &id, "approval_requested", 1).remove(0);
    assert_eq!(request["tool"], "edit", "{request}");
    assert_eq!(
        request["input"]["rawInput"]["file_path"],
        allowed.display().to_string()
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
    let prompt = format!("TOOL_WRITE {} no", denied.display());
    post(
        &real,
        &format!("/v1/sessions/{id}/messages"),
        json!({ "prompt": prompt }),
    );
    let request = await_kind(&real, &id, "approval_requested", 2).remove(1);
    let answer = format!("/v1/sessions/{id}/approvals/{}", request["id"]);
    post(&real, &answer, json!({"decision": "deny"}));
    real.await_idle(&id);
    assert!(!denied.exists(), "the denied write ran");
    let resolved = await_kind(&real, &id, "approval_resolved", 2);
    assert_eq!(
        (&resolved[1]["decision"], &resolved[1]["by"]),
        (&json!("deny"), &json!("app"))
    );
}

/// A turn's `turn_ended` carries the tokens the fake model reported and
/// a cost; the next message runs in the same process (no new one), in the
/// same conversation; a steer asked for waits as the next turn.
fn a_follow_up_is_warm_and_each_turn_reports_its_usage() {
    let test = "acp_a_follow_up_is_warm_and_each_turn_reports_its_usage";
    let Some((real, folder)) = acp_real(test, json!({"linger_ms": 60_000})) else {
        return;
    };
    let s = real
        .svc
        .start_session(acp_body(&folder, json!({"prompt": "WARM_FIRST_4242"})));
    let id = id_of(&s);
    real.model.await_answers("claude", 1);
    real.await_idle(&id);
    let before = turn_processes(&id);
    assert!(!before.is_empty(), "the agent lingers");
    let v = post(
        &real,
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "WARM_SECOND_4343", "deliver": "steer"}),
    );
    assert_eq!(v["delivered"], "queued", "{v}");
    let requests = real.model.await_answers("claude", 2);
    real.await_idle(&id);
    let last = requests.last().unwrap();
    assert_eq!(asked("claude", last), "WARM_SECOND_4343");
    assert!(
        seen(last).contains("WARM_FIRST_4242"),
        "the same conversation"
    );
    let after = turn_processes(&id);
    let leader = before.iter().min().unwrap();
    assert!(after.contains(leader), "{before:?} then {after:?}");
    let ended = await_kind(&real, &id, "turn_ended", 2);
    for e in &ended {
        let u = &e["usage"];
        let tokens = [
            &u["input_tokens"],
            &u["output_tokens"],
            &u["cache_read_tokens"],
            &u["cache_write_tokens"],
        ];
        assert_eq!(tokens, [&json!(10), &json!(5), &json!(3), &json!(7)], "{e}");
        assert!(u["cost_usd"].as_f64().is_some_and(|c| c > 0.0), "{e}");
    }
    post(&real, &format!("/v1/sessions/{id}/close"), json!({}));
    assert_eq!(turn_processes(&id), Vec::<u32>::new());
}

/// An interrupt while a tool runs ends the turn (`session/cancel`) with
/// nothing of it left running; the next message carries the conversation
/// on in a new process.
fn an_interrupt_mid_tool_leaves_nothing_running() {
    let test = "acp_an_interrupt_mid_tool_leaves_nothing_running";
    let Some((real, folder)) = acp_real(test, json!({"linger_ms": 60_000})) else {
        return;
    };
    let s = real.svc.start_session(acp_body(
        &folder,
        // claude refuses a bare `sleep`: a command that waits as long.
        json!({"prompt": "TOOL_RUN tail -f /dev/null # INTERRUPTED_2236"}),
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
    let ended = await_kind(&real, &id, "turn_ended", 1).remove(0);
    assert_eq!(ended["by"], "interrupt", "{ended}");
    post(
        &real,
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "AFTER_INTERRUPT_1618"}),
    );
    let requests = real.model.await_answers("claude", 1);
    real.await_idle(&id);
    let last = requests.last().unwrap();
    assert_eq!(asked("claude", last), "AFTER_INTERRUPT_1618");
    assert!(
        seen(last).contains("INTERRUPTED_2236"),
        "the conversation was lost"
    );
}

/// After the service restarts, the next message carries the conversation
/// on (`session/load`).
fn a_restart_carries_the_conversation_on() {
    let test = "acp_a_restart_carries_the_conversation_on";
    let Some((mut real, folder)) = acp_real(test, json!({})) else {
        return;
    };
    let s = real
        .svc
        .start_session(acp_body(&folder, json!({"prompt": "BEFORE_RESTART_5150"})));
    let id = id_of(&s);
    real.model.await_answers("claude", 1);
    real.await_idle(&id);
    real.svc.restart();
    post(
        &real,
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "AFTER_RESTART_5151"}),
    );
    let requests = real.model.await_answers("claude", 2);
    real.await_idle(&id);
    let last = requests.last().unwrap();
    assert_eq!(asked("claude", last), "AFTER_RESTART_5151");
    assert!(
        seen(last).contains("BEFORE_RESTART_5150"),
        "the conversation was lost"
    );
}

/// The checks, each needing the agent, claude, root and the account.
const CHECKS: &[(&str, fn())] = &[
    (
        "acp_a_promised_copy_reaches_the_agents_first_request",
        a_promised_copy_reaches_the_agents_first_request,
    ),
    (
        "acp_asks_the_app_before_a_write",
        asks_the_app_before_a_write,
    ),
    (
        "acp_a_follow_up_is_warm_and_each_turn_reports_its_usage",
        a_follow_up_is_warm_and_each_turn_reports_its_usage,
    ),
    (
        "acp_an_interrupt_mid_tool_leaves_nothing_running",
        an_interrupt_mid_tool_leaves_nothing_running,
    ),
    (
        "acp_a_restart_carries_the_conversation_on",
        a_restart_carries_the_conversation_on,
    ),
];

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let trials = CHECKS
        .iter()
        .map(|(name, check)| trial(name, Some(AGENT_PROGRAM), true, *check))
        .collect();
    libtest_mimic::run(&args, trials).exit_code()
}
