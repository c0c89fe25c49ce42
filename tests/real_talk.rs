//! The real CLIs on their protocols (claude's stream-json, codex's app
//! server), against the loopback fake model: approvals relayed to the app,
//! a steer that reaches the running turn, an interrupt that leaves nothing
//! running and the conversation resumable, and a warm follow-up in the
//! process that ran the turn before. Each check is ignored, with why, where
//! the CLI (or root and the agent account) is missing, and fails instead
//! in CI (`ROOM_CORE_CI=1`).

mod real_support;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use libtest_mimic::Arguments;
use real_support::{asked, model_calls, seen, tool_result, trial, Real};
use room_kit::fake_model::TURN;
use room_kit::procs::{alive, turn_processes};
use room_kit::{agent_account, chown_tree, start_body, temp_root, wait_until};
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// A service running the real `harness` as the agent account (which
/// `approvals: app` needs), with `extra` config, and its `code` folder,
/// owned by that account. `None` where the CLI, root or the account is
/// missing (outside CI).
fn asking_real(test: &str, harness: &str, extra: Value) -> Option<(Real, PathBuf)> {
    let agent = agent_account(test)?;
    let sock_dir = temp_root();
    std::fs::set_permissions(&sock_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut config = json!({
        "agent_uid": agent.uid.as_raw(),
        "agent_socket": sock_dir.join("agent.sock"),
    });
    room_kit::merge(&mut config, extra);
    let real = Real::start(test, harness, config, vec![])?;
    let (uid, gid) = (agent.uid.as_raw(), agent.gid.as_raw());
    chown_tree(&real.dir, uid, gid);
    let folder = real.svc.folder("code");
    std::fs::create_dir_all(&folder).unwrap();
    chown_tree(&folder, uid, gid);
    Some((real, folder))
}

/// `harness` asks the app before a write, and runs only what it allows; a
/// denial's message reaches the model.
fn asks_the_app_before_a_write(test: &str, harness: &str) {
    let Some((real, folder)) = asking_real(test, harness, json!({})) else {
        return;
    };

    let allowed = folder.join("allowed.txt");
    let s = real.svc.start_session(start_body(
        &folder,
        harness,
        json!({"approvals": "app", "prompt": format!("TOOL_WRITE {} yes", allowed.display())}),
    ));
    let id = id_of(&s);
    let request = real.await_kind(&id, "approval_requested", 1).remove(0);
    let path = allowed.display().to_string();
    match harness {
        "claude" => {
            assert_eq!(request["tool"], "Write", "{request}");
            assert_eq!(request["input"]["file_path"], path);
        }
        _ => {
            assert_eq!(request["tool"], "command", "{request}");
            let command = request["input"]["command"].as_str().unwrap_or_default();
            assert!(command.contains(&path), "{request}");
        }
    }
    assert!(!allowed.exists(), "written before the app answered");
    let pending = real.svc.session(&id)["pending_approvals"].clone();
    assert_eq!(pending[0]["id"], request["id"], "{pending}");
    let (status, v) = real.svc.post(
        &format!("/v1/sessions/{id}/approvals/{}", request["id"]),
        json!({"decision": "allow"}),
    );
    assert_eq!(status, 200, "{v}");
    real.await_idle(&id);
    assert_eq!(
        std::fs::read_to_string(&allowed).ok().as_deref(),
        Some("yes\n"),
        "the allowed write"
    );

    // Denied with a message: nothing is written and the model reads it.
    let denied = folder.join("denied.txt");
    let (status, v) = real.svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": format!("TOOL_WRITE {} no", denied.display())}),
    );
    assert_eq!(status, 200, "{v}");
    let request = real.await_kind(&id, "approval_requested", 2).remove(1);
    let (status, v) = real.svc.post(
        &format!("/v1/sessions/{id}/approvals/{}", request["id"]),
        json!({"decision": "deny", "message": "NOT_THIS_FILE_3141"}),
    );
    assert_eq!(status, 200, "{v}");
    real.await_idle(&id);
    assert!(!denied.exists(), "the denied write ran");
    // claude gives the message as the tool's result; codex's decline has
    // no room for one, so it follows as a steer of the same turn.
    let requests = real.model.turn_requests(harness);
    let after = match harness {
        "claude" => requests.iter().rev().find_map(tool_result),
        _ => requests.last().map(seen),
    };
    let after = after.expect("a request after the denied tool call");
    assert!(after.contains("NOT_THIS_FILE_3141"), "{after}");
    let resolved = real.await_kind(&id, "approval_resolved", 2);
    assert_eq!(
        (&resolved[1]["decision"], &resolved[1]["by"]),
        (&json!("deny"), &json!("app"))
    );
}

/// How many allowed writes [`claude_runs_every_allowed_write`] asks for.
const ALLOWS: usize = 20;

/// Every write the app allows runs: claude 2.1.332 validates an allow's
/// `updatedInput` as a record and, without one, sometimes fails the tool
/// ("Tool permission request failed: ZodError … updatedInput … expected
/// record, received undefined") and writes nothing, as it did once in
/// the check above. One session of [`ALLOWS`] turns, each in a process of
/// its own (`linger_ms: 0`: a process's first tool call, as there), each
/// allowed by the app and checked by the file it wrote.
fn claude_runs_every_allowed_write() {
    let test = "claude_runs_every_allowed_write";
    let Some((real, folder)) = asking_real(test, "claude", json!({"linger_ms": 0})) else {
        return;
    };
    let path = |i: usize| folder.join(format!("allowed-{i}.txt"));
    let prompt = |i: usize| format!("TOOL_WRITE {} yes {i}", path(i).display());
    let s = real.svc.start_session(start_body(
        &folder,
        "claude",
        json!({"approvals": "app", "prompt": prompt(0)}),
    ));
    let id = id_of(&s);
    for i in 0..ALLOWS {
        if i > 0 {
            let (status, v) = real.svc.post(
                &format!("/v1/sessions/{id}/messages"),
                json!({"prompt": prompt(i)}),
            );
            assert_eq!(status, 200, "{v}");
        }
        let request = real.await_kind(&id, "approval_requested", i + 1).remove(i);
        assert_eq!(request["tool"], "Write", "{request}");
        assert_eq!(request["input"]["file_path"], path(i).display().to_string());
        let (status, v) = real.svc.post(
            &format!("/v1/sessions/{id}/approvals/{}", request["id"]),
            json!({"decision": "allow"}),
        );
        assert_eq!(status, 200, "{v}");
        real.await_idle(&id);
        let result = real
            .model
            .turn_requests("claude")
            .iter()
            .rev()
            .find_map(tool_result)
            .unwrap_or_default();
        assert_eq!(
            std::fs::read_to_string(path(i)).ok().as_deref(),
            Some(format!("yes {i}\n").as_str()),
            "allowed write {i} of {ALLOWS} did not run; the tool's result: {result}"
        );
    }
}

/// A `harness` session in the service's `code` folder with `prompt`: its ID.
fn session_with(real: &Real, harness: &str, prompt: &str) -> String {
    let folder = real.svc.folder("code");
    let s = real
        .svc
        .start_session(start_body(&folder, harness, json!({ "prompt": prompt })));
    id_of(&s)
}

/// Waits until the model has answered a turn request of `harness` with a
/// reply `f` accepts (`tool:<name>`, `slow_text`, ...).
fn await_reply(real: &Real, harness: &str, what: &str, f: impl Fn(&str) -> bool) {
    wait_until(what, TURN, || {
        real.model
            .turn_requests(harness)
            .iter()
            .any(|r| r["reply"].as_str().is_some_and(&f))
            .then_some(())
    });
}

/// A steer reaches the model in the turn whose command runs, with the
/// command's result.
fn takes_a_steer_in_the_turn_whose_tool_runs(test: &str, harness: &str) {
    let Some(real) = Real::start(test, harness, json!({}), vec![]) else {
        return;
    };
    let id = session_with(&real, harness, "TOOL_RUN sleep 3");
    // The model has asked for the command: the tool runs now.
    await_reply(&real, harness, "the tool call", |r| r.starts_with("tool:"));
    let (status, v) = real.svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "STEERED_2718", "deliver": "steer"}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["delivered"], "steered");
    real.await_idle(&id);
    let requests = real.model.turn_requests(harness);
    let with_steer = requests
        .iter()
        .find(|r| seen(r).contains("STEERED_2718"))
        .expect("the steer reached the model");
    assert!(
        tool_result(with_steer).is_some(),
        "the steer came with the tool's result, in the same turn"
    );
    let ended = real.await_kind(&id, "turn_ended", 1);
    assert_eq!(ended.len(), 1, "one turn: {ended:?}");
    assert_eq!(ended[0]["exit"], json!({"code": 0}));
    // The tool call, then one answer to its result and the steer together.
    assert_eq!(model_calls(&real.model), 2);
}

fn claude_interrupted_mid_answer_keeps_it_and_leaves_nothing_running() {
    let test = "claude_interrupted_mid_answer_keeps_it_and_leaves_nothing_running";
    let Some(real) = Real::start(test, "claude", json!({}), vec![]) else {
        return;
    };
    let id = session_with(&real, "claude", "SLOW_TEXT 400 50");
    await_reply(&real, "claude", "the answer streaming", |r| {
        r == "slow_text"
    });
    std::thread::sleep(Duration::from_millis(500));
    let ended = interrupt_leaves_nothing(&real, &id);
    // claude ended the turn itself (no signal), its last turn failed.
    assert_eq!(ended["exit"], json!({"code": 1}), "{ended}");

    // The resumed turn keeps the interrupted answer.
    resumes_after_an_interrupt(&real, "claude", &id, "SLOW_CHUNK_1_OF_400");
}

/// Interrupts session `id`'s turn: answered once nothing of the turn runs,
/// and the turn ended by the interrupt. Its `turn_ended`.
fn interrupt_leaves_nothing(real: &Real, id: &str) -> Value {
    let (status, v) = real
        .svc
        .post(&format!("/v1/sessions/{id}/interrupt"), json!({}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(turn_processes(id), Vec::<u32>::new());
    let ended = real.await_kind(id, "turn_ended", 1).remove(0);
    assert_eq!(ended["by"], "interrupt", "{ended}");
    ended
}

/// The next message after an interrupt resumes the native session: the
/// model is asked it, with `kept` (of the interrupted turn) in its request.
fn resumes_after_an_interrupt(real: &Real, harness: &str, id: &str, kept: &str) {
    let (status, v) = real.svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "AFTER_INTERRUPT_1618"}),
    );
    assert_eq!(status, 200, "{v}");
    let requests = real.model.await_answers(harness, 1);
    real.await_idle(id);
    let last = requests.last().unwrap();
    assert_eq!(asked(harness, last), "AFTER_INTERRUPT_1618");
    assert!(seen(last).contains(kept), "the resumed turn lost {kept}");
}

/// codex's `turn/interrupt` leaves a running command running: the turn's
/// process ends with its turn, so the interrupt is answered once nothing
/// of the turn runs, and the next turn resumes the thread.
fn codex_interrupted_mid_command_leaves_nothing_running() {
    let test = "codex_interrupted_mid_command_leaves_nothing_running";
    let Some(real) = Real::start(test, "codex", json!({"linger_ms": 60_000}), vec![]) else {
        return;
    };
    let id = session_with(&real, "codex", "TOOL_RUN sleep 60 # INTERRUPTED_2236");
    await_reply(&real, "codex", "the tool call", |r| r.starts_with("tool:"));
    wait_until("the command running", TURN, || {
        turn_processes(&id)
            .into_iter()
            .any(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.starts_with(b"sleep\0"))
            })
            .then_some(())
    });
    let ended = interrupt_leaves_nothing(&real, &id);
    // codex ended the turn itself and exits 0 once its stdin closes.
    assert_eq!(ended["exit"], json!({"code": 0}), "{ended}");

    // The resumed thread holds the interrupted turn's prompt.
    resumes_after_an_interrupt(&real, "codex", &id, "INTERRUPTED_2236");
}

/// A turn whose model request the model refuses fails: the CLI says so on
/// its protocol (claude's `result` with `is_error`, codex's
/// `turn/completed` `failed`), the session's error holds the model's
/// words, and nothing of the turn lingers.
fn says_why_a_turn_failed(test: &str, harness: &str) {
    let config = json!({"linger_ms": 60_000});
    let Some(real) = Real::start(test, harness, config, vec![]) else {
        return;
    };
    let id = session_with(&real, harness, "MODEL_FAIL FAKE_MODEL_REFUSED_7070");
    let v = wait_until("the failed turn", TURN, || {
        let v = real.svc.session(&id);
        (v["state"] == "idle" && !v["error"].is_null()).then_some(v)
    });
    let error = v["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("the last turn failed: ") && error.contains("FAKE_MODEL_REFUSED_7070"),
        "{v}"
    );
    wait_until("nothing of it to run", TURN, || {
        turn_processes(&id).is_empty().then_some(())
    });
}

/// The session's processes and the turn each is marked with.
fn marked(id: &str) -> Vec<(u32, String)> {
    let marker = format!("ROOM_CORE_TURN={id}-");
    turn_processes(id)
        .into_iter()
        .filter_map(|pid| {
            let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            let turn = env
                .split(|b| *b == 0)
                .find_map(|e| e.strip_prefix(marker.as_bytes()))?;
            Some((pid, String::from_utf8_lossy(turn).into_owned()))
        })
        .collect()
}

/// A follow-up within the linger goes to the process of the turn before.
fn takes_a_follow_up_in_its_lingering_process(test: &str, harness: &str) {
    let config = json!({"linger_ms": 60_000});
    let Some(real) = Real::start(test, harness, config, vec![]) else {
        return;
    };
    let id = session_with(&real, harness, "WARM_FIRST_4242");
    real.model.await_answers(harness, 1);
    real.await_idle(&id);
    let before = marked(&id);
    assert!(!before.is_empty(), "{harness} lingers");
    assert!(before.iter().all(|(_, turn)| turn == "1"), "{before:?}");

    let (status, v) = real.svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "WARM_SECOND_4343"}),
    );
    assert_eq!(status, 200, "{v}");
    let requests = real.model.await_answers(harness, 2);
    real.await_idle(&id);
    let last = requests.last().unwrap();
    assert_eq!(asked(harness, last), "WARM_SECOND_4343");
    assert!(
        seen(last).contains("WARM_FIRST_4242"),
        "the same conversation"
    );
    // No process was spawned for turn 2: all are turn 1's, the same ones.
    let after = marked(&id);
    assert!(after.iter().all(|(_, turn)| turn == "1"), "{after:?}");
    let leader = before.iter().map(|(pid, _)| *pid).min().unwrap();
    assert!(after.iter().any(|(pid, _)| *pid == leader), "{after:?}");
    let ended = real.await_kind(&id, "turn_ended", 2);
    assert_eq!(ended[1]["turn"], 2);

    // Close ends the lingering process before it answers.
    let (status, _) = real
        .svc
        .post(&format!("/v1/sessions/{id}/close"), json!({}));
    assert_eq!(status, 200);
    assert_eq!(turn_processes(&id), Vec::<u32>::new());
}

/// A follow-up to a lingering process stopped with SIGSTOP: the process
/// never begins it, so at `startup_timeout_ms` it is ended (nothing of it
/// left), `unresponsive` says so, and the prompt runs once, in a new
/// process that resumes the conversation.
fn runs_a_follow_up_its_stopped_process_never_began(test: &str, harness: &str) {
    let config = json!({"linger_ms": 60_000, "startup_timeout_ms": 10_000});
    let Some(real) = Real::start(test, harness, config, vec![]) else {
        return;
    };
    let id = session_with(&real, harness, "STOPPED_FIRST_5151");
    real.model.await_answers(harness, 1);
    real.await_idle(&id);
    let lingering: Vec<u32> = marked(&id).into_iter().map(|(pid, _)| pid).collect();
    assert!(!lingering.is_empty(), "{harness} lingers");
    for pid in &lingering {
        let pid = nix::unistd::Pid::from_raw(*pid as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    }
    let (status, v) = real.svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "STOPPED_FOLLOW_UP_6262"}),
    );
    assert_eq!(status, 200, "{v}");
    let unresponsive = real.await_kind(&id, "unresponsive", 1).remove(0);
    assert_eq!(
        unresponsive,
        json!({"turn": 2, "prompt": 2, "within_ms": 10_000, "retried": true})
    );
    let ended = real.await_kind(&id, "turn_ended", 3);
    assert_eq!(
        (&ended[1]["turn"], &ended[1]["by"]),
        (&json!(2), &json!("no_sign_of_life"))
    );
    assert_eq!(
        (&ended[2]["turn"], &ended[2]["by"]),
        (&json!(3), &json!(null))
    );
    let v = real.await_idle(&id);
    assert_eq!(v["error"], Value::Null, "{v}");
    for pid in &lingering {
        assert!(!alive(*pid), "stopped process {pid} left behind");
    }
    // Asked once, by the new process, in the same conversation.
    let requests = real.model.turn_requests(harness);
    let asked_it: Vec<&Value> = requests
        .iter()
        .filter(|r| asked(harness, r) == "STOPPED_FOLLOW_UP_6262")
        .collect();
    assert_eq!(asked_it.len(), 1, "asked {} times", asked_it.len());
    assert!(seen(asked_it[0]).contains("STOPPED_FIRST_5151"), "resumed");
    assert!(marked(&id).iter().all(|(_, turn)| turn == "3"));
}

/// A check of one CLI, given the test's name and the CLI.
type Check = fn(&str, &str);

/// The checks both CLIs take: a name (after the CLI's), whether it needs
/// the agent account, and the check.
const BOTH: [(&str, bool, Check); 5] = [
    (
        "asks_the_app_before_a_write_and_runs_only_what_it_allows",
        true,
        asks_the_app_before_a_write,
    ),
    (
        "takes_a_steer_in_the_turn_whose_tool_runs",
        false,
        takes_a_steer_in_the_turn_whose_tool_runs,
    ),
    (
        "takes_a_follow_up_in_its_lingering_process",
        false,
        takes_a_follow_up_in_its_lingering_process,
    ),
    ("says_why_a_turn_failed", false, says_why_a_turn_failed),
    (
        "runs_a_follow_up_its_stopped_process_never_began",
        false,
        runs_a_follow_up_its_stopped_process_never_began,
    ),
];

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    for harness in ["claude", "codex"] {
        for (name, as_agent, check) in BOTH {
            let name = format!("{harness}_{name}");
            let test = name.clone();
            trials.push(trial(&name, Some(harness), as_agent, move || {
                check(&test, harness)
            }));
        }
    }
    trials.push(trial(
        "claude_interrupted_mid_answer_keeps_it_and_leaves_nothing_running",
        Some("claude"),
        false,
        claude_interrupted_mid_answer_keeps_it_and_leaves_nothing_running,
    ));
    trials.push(trial(
        "claude_runs_every_allowed_write",
        Some("claude"),
        true,
        claude_runs_every_allowed_write,
    ));
    trials.push(trial(
        "codex_interrupted_mid_command_leaves_nothing_running",
        Some("codex"),
        false,
        codex_interrupted_mid_command_leaves_nothing_running,
    ));
    libtest_mimic::run(&args, trials).exit_code()
}
