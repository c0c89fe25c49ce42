//! A harness CLI that is not there: no fake stands in for it. A launch of
//! a missing CLI fails saying which CLI and which config field names it;
//! `GET /v1/capabilities` says which CLIs are installed, where, and the
//! version each says it is, asked once at start without ever holding a
//! request; the service's binaries hold no path into the fixtures.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// An executable shell script `name` in `dir` with `body` after the `#!`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `GET /v1/capabilities`'s `harnesses`, once `done` holds for it.
fn harnesses(svc: &Service, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    wait_until(what, Duration::from_secs(10), || {
        let (status, v) = svc.get("/v1/capabilities");
        assert_eq!(status, 200, "{v}");
        done(&v["harnesses"]).then(|| v["harnesses"].clone())
    })
}

#[test]
fn a_cli_not_on_path_fails_its_launch_naming_the_cli_and_the_config_field() {
    // The service's PATH holds no claude, and its config names the bare
    // default: nothing stands in for it.
    let empty = TempDir::new("no-clis");
    let fake_codex = fixtures_dir().join("fake-codex");
    let svc = Service::builder(ROOM_CORE)
        .config(json!({"claude_program": "claude"}))
        .env("PATH", empty.path().to_str().unwrap())
        .start();
    let missing = "claude is not installed: no `claude` on PATH (set claude_program in the config)";
    assert!(svc.log().contains(missing), "{}", svc.log());

    let folder = svc.folder("code");
    let s = svc.start_session(start_body(&folder, "claude", json!({})));
    let v = svc.await_session(s["id"].as_str().unwrap(), "failure", |v| {
        v["state"] == "failed"
    });
    assert_eq!(
        v["error"],
        format!("claude could not be started: {missing}; its prompt stays queued for a relaunch")
    );
    assert_eq!(v["queue"]["length"], 1, "{v}");

    // The other harness is there: the service says so, with its version.
    let h = harnesses(&svc, "codex's version", |h| {
        h["codex"]["version"].is_string()
    });
    assert_eq!(
        h,
        json!({
            "claude": {"installed": false, "program": "claude", "error": missing},
            "codex": {"installed": true, "program": fake_codex, "version": "codex-cli 0.171.0 (fake codex)"},
        })
    );
}

#[test]
fn capabilities_list_the_configured_programs_and_their_versions() {
    let svc = Service::start(ROOM_CORE, json!({"codex_program": "/nonexistent/codex"}));
    let (status, v) = svc.get("/v1/capabilities");
    assert_eq!(status, 200);
    assert_eq!(
        v["capabilities"],
        json!(["project_copy", "session_options"])
    );
    let h = harnesses(&svc, "claude's version", |h| {
        h["claude"]["version"].is_string()
    });
    assert_eq!(
        h,
        json!({
            "claude": {"installed": true, "program": fixtures_dir().join("fake-claude"),
                       "version": "2.1.332 (fake claude)"},
            "codex": {"installed": false, "program": "/nonexistent/codex",
                      "error": "codex is not installed: codex_program in the config names /nonexistent/codex, which does not exist"},
        })
    );
}

#[test]
fn a_version_check_that_hangs_or_floods_never_holds_a_request() {
    let dir = TempDir::new("version-checks");
    let pid_file = dir.path().join("hanging.pid");
    let env_file = dir.path().join("env");
    let hangs = script(
        dir.path(),
        "claude-hangs",
        &format!("echo $$ > {}\nexec sleep 60", pid_file.display()),
    );
    let floods = script(
        dir.path(),
        "codex-floods",
        &format!(
            "env > {}\nwhile :; do echo 'codex-cli 9.9.9 (floods)'; done",
            env_file.display()
        ),
    );
    let started = Instant::now();
    let svc = Service::builder(ROOM_CORE)
        .config(json!({"claude_program": hangs, "codex_program": floods}))
        .env("ANTHROPIC_API_KEY", "sk-never-for-a-version")
        .start();
    // Asked while claude's check still runs: answered at once, without it.
    let asked = Instant::now();
    let (status, v) = svc.get("/v1/capabilities");
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(status, 200);
    assert_eq!(
        v["harnesses"]["claude"],
        json!({"installed": true, "program": hangs})
    );
    // A flood is cut at the read cap: its first line, long before the deadline.
    let h = harnesses(&svc, "codex's version", |h| {
        h["codex"]["version"].is_string()
    });
    assert_eq!(h["codex"]["version"], "codex-cli 9.9.9 (floods)");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // A hang is ended at the deadline, and says so.
    let h = harnesses(&svc, "claude's check to end", |h| {
        h["claude"]["error"].is_string()
    });
    assert_eq!(
        h["claude"],
        json!({"installed": true, "program": hangs,
               "error": format!("`{} --version` did not finish within 5 s", hangs.display())})
    );
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        procs::exited_within(pid, Duration::from_secs(2)).is_some(),
        "the hanging check still runs"
    );
    // The check runs on a clean environment: the basics, no credential, no socket.
    let env = std::fs::read_to_string(&env_file).unwrap();
    let names: Vec<&str> = env.lines().filter_map(|l| l.split('=').next()).collect();
    assert!(names.contains(&"PATH"), "{env}");
    for name in [
        "ANTHROPIC_API_KEY",
        "ROOM_CORE_SOCKET",
        "FAKE_HARNESS_RECORD",
        "RUST_LOG",
    ] {
        assert!(!names.contains(&name), "{name} reached the check: {env}");
    }
}

#[test]
fn a_version_check_runs_as_the_account_turns_run_as() {
    let test = "a_version_check_runs_as_the_account_turns_run_as";
    let Some(agent) = agent_account(test) else {
        return;
    };
    // A root service asks as the agent account: a program that account
    // could have replaced never runs with more rights than a turn has.
    let dir = TempDir::new("version-account");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let seen = dir.path().join("seen");
    let cli = script(
        dir.path(),
        "claude-id",
        &format!(
            "echo \"$(id -u) $(id -g) $HOME\" > {}\necho 7.0",
            seen.display()
        ),
    );
    // The agent socket outside the state dir (the service's, 0700).
    let sockets = TempDir::new("version-account-sockets");
    let svc = Service::start(
        ROOM_CORE,
        json!({"agent_uid": agent.uid.as_raw(), "agent_socket": sockets.path().join("agent.sock"),
               "claude_program": cli}),
    );
    let h = harnesses(&svc, "claude's version", |h| {
        h["claude"]["version"].is_string()
    });
    assert_eq!(h["claude"]["version"], "7.0", "{h}");
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap().trim(),
        format!("{} {} {}", agent.uid, agent.gid, agent.dir.display())
    );
}

#[test]
fn the_service_binaries_hold_no_path_into_the_fixtures() {
    // Each needle begins with `f`: one pass over the bytes finds them all.
    let needles: [&[u8]; 4] = [b"fixtures", b"fake-claude", b"fake-codex", b"fake_harness"];
    for binary in [ROOM_CORE, env!("CARGO_BIN_EXE_room-cli")] {
        let bytes = std::fs::read(binary).unwrap();
        for (at, _) in bytes.iter().enumerate().filter(|(_, b)| **b == b'f') {
            if let Some(n) = needles.iter().find(|n| bytes[at..].starts_with(n)) {
                let around = &bytes[at.saturating_sub(40)..(at + 40).min(bytes.len())];
                panic!(
                    "{binary} holds {:?}: {:?}",
                    String::from_utf8_lossy(n),
                    String::from_utf8_lossy(around)
                );
            }
        }
    }
}

/// Each ACP agent of the config is listed with what its `initialize` said
/// it offers, asked once at start as a turn would start it; one that
/// answers nothing in time is listed with why, and neither holds a request.
#[test]
fn capabilities_list_each_acp_agent_with_what_its_initialize_offered() {
    let dir = TempDir::new("acp-agents");
    let answer = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentInfo":{"name":"fake-acp","version":"1.2"},"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":false},"mcpCapabilities":{"http":true,"sse":true},"sessionCapabilities":{"resume":{}},"_meta":{"steering":{}}}}}"#;
    let pid_file = dir.path().join("good.pid");
    let good = script(
        dir.path(),
        "good-agent",
        &format!(
            "echo $$ > {}; read line; echo '{answer}'; exec sleep 60",
            pid_file.display()
        ),
    );
    let mute = script(dir.path(), "mute-agent", "exec sleep 60");
    let svc = Service::start(
        ROOM_CORE,
        json!({"acp_agents": {
            "good": {"command": good, "args": ["--acp"]},
            "mute": {"command": mute},
        }}),
    );
    let agents = wait_until("the good agent's offers", Duration::from_secs(10), || {
        let (status, v) = svc.get("/v1/capabilities");
        assert_eq!(status, 200, "{v}");
        v["acp_agents"]["good"]["initialize"]
            .is_object()
            .then(|| v["acp_agents"].clone())
    });
    assert_eq!(
        agents["good"],
        json!({
            "command": good, "args": ["--acp"],
            "initialize": {
                "protocol_version": 1, "agent": {"name": "fake-acp", "version": "1.2"},
                "load": true, "resume": true, "fork": false, "images": false, "steering": false,
                "mcp": {"http": true, "sse": true}, "extensions": ["steering"],
            },
        })
    );
    assert_eq!(
        agents["mute"],
        json!({"command": mute, "args": []}),
        "still asked"
    );
    // Nothing of the asked agent is left once its answer is read.
    let pid = room_kit::procs::pid_in(&pid_file);
    wait_until("the good agent ended", Duration::from_secs(10), || {
        (!Path::new(&format!("/proc/{pid}")).exists()).then_some(())
    });
}

/// What an ACP agent said at start it cannot take is refused before it is
/// accepted, naming the agent and what it said: a start's or a message's
/// images, a start's HTTP MCP servers (409). Its stdio servers are taken.
#[test]
fn images_and_http_mcp_servers_an_acp_agent_said_it_takes_none_of_are_refused() {
    let dir = TempDir::new("acp-takes");
    let answer = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"promptCapabilities":{"image":false},"mcpCapabilities":{"http":false}}}}"#;
    let plain = script(
        dir.path(),
        "plain-agent",
        &format!("read line; echo '{answer}'; exec sleep 60"),
    );
    let svc = Service::start(
        ROOM_CORE,
        json!({"acp_agents": {"plain": {"command": plain}}}),
    );
    wait_until("the agent's offers", Duration::from_secs(10), || {
        let v = svc.get("/v1/capabilities").1;
        v["acp_agents"]["plain"]["initialize"]
            .is_object()
            .then_some(())
    });
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    let image = json!({"type": "image", "media_type": "image/png", "data": PNG});
    let folder = svc.folder("plain");
    let start = |extra: Value| {
        let mut body = start_body(&folder, "acp", json!({"agent": "plain", "prompt": "hi"}));
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        svc.post("/v1/sessions", body)
    };
    let (status, v) = start(json!({"attachments": [image]}));
    assert_eq!(status, 409, "{v}");
    assert_eq!(v["code"], "images_not_taken", "{v}");
    assert_eq!(
        v["error"],
        "The ACP agent plain takes no images in a prompt (its initialize said no promptCapabilities.image)."
    );
    let (status, v) = start(json!({"mcp_servers": {
        "files": {"command": "mcp-files"},
        "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer s3cret"}},
    }}));
    assert_eq!(status, 409, "{v}");
    assert_eq!(v["code"], "mcp_http_not_taken");
    assert_eq!(
        v["error"],
        "The ACP agent plain takes no HTTP MCP servers (its initialize said no mcpCapabilities.http); mcp_servers gives it web."
    );
    assert_eq!(svc.get("/v1/sessions").1["sessions"], json!([]));

    let (status, v) = start(json!({"mcp_servers": {"files": {"command": "mcp-files"}}}));
    assert!(status == 200 || status == 201, "{status} {v}");
    let id = v["id"].as_str().unwrap().to_string();
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "look", "attachments": [image]}),
    );
    assert_eq!(status, 409, "{v}");
    assert_eq!(v["code"], "images_not_taken");
    let queued: Vec<Value> = room_kit::events::all_events(&svc, &id, 1024)
        .into_iter()
        .filter(|e| e["kind"] == "prompt_queued")
        .map(|e| e["data"]["text"].clone())
        .collect();
    assert_eq!(queued, [json!("hi")], "only the start's prompt was queued");
    let (status, v) = svc.post(&format!("/v1/sessions/{id}/close"), json!({}));
    assert_eq!(status, 200, "{v}");
}
