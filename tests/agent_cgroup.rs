//! In cgroup mode, a process in a turn's cgroup is that turn's harness for
//! classification, whatever its ancestry or environment: a tool that
//! double-forks (its ancestry no longer reaches the harness) and sets
//! `CLOUDROOM_LOOP` still calls room-cli as its session. End to end: the
//! real service (`supervision: "cgroup"`), fixtures/fake-codex started
//! through POST /v1/sessions, the fake website.
//!
//! In process-group mode there is no such cgroup and the double fork still
//! escapes its harness (docs/agent-socket.md says so).

use std::path::Path;
use std::time::Duration;

use room_kit::{is_root, quote, skip, wait_until, FakeWebsite, Service, TempDir, LOOP_ID};
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// room-cli, built beside the service.
const ROOM_CLI: &str = env!("CARGO_BIN_EXE_room-cli");

#[test]
fn a_double_forked_tool_with_a_loop_marker_is_still_its_sessions_harness_in_cgroup_mode() {
    const TEST: &str =
        "a_double_forked_tool_with_a_loop_marker_is_still_its_sessions_harness_in_cgroup_mode";
    if !is_root() {
        return skip(TEST, "cgroup supervision needs root here");
    }
    let web = FakeWebsite::start();
    let folder = TempDir::new("cgroup-folder");
    let cli_dir = Path::new(ROOM_CLI).parent().unwrap();
    let path = format!(
        "{}:{}",
        cli_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let core = Service::builder(ROOM_CORE)
        .config(json!({"website_url": web.url, "supervision": "cgroup"}))
        .harness_envs([("PATH".into(), path)])
        .start();

    // The tool leaves a grandchild whose parent has exited (a double fork),
    // marked as a loop's script, and waits on a FIFO for its room-cli exit
    // code: it stays in the turn's cgroup, not under the harness.
    let done = folder.path().join("done");
    let out = folder.path().join("out");
    let tool = format!(
        "mkfifo {done}; (CLOUDROOM_LOOP={LOOP_ID} sh -c 'room-cli loop list > {out} 2>&1; echo $? > {done}' </dev/null >/dev/null 2>&1 &); cat {done}",
        done = quote(&done.to_string_lossy()),
        out = quote(&out.to_string_lossy()),
    );
    let start = json!({
        "workspace": "w1",
        "folder": folder.path(),
        "harness": "codex",
        "kind": "thread",
        "prompt": format!("run: {tool}"),
    });
    let answer = core.start_session(start);
    let session = answer["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_string();
    let log = core.log();
    if !log.contains("cgroup v2 at ") {
        return skip(
            TEST,
            &format!("the service did not run in cgroup mode: {log}"),
        );
    }

    let tool = wait_until("the tool command's record", Duration::from_secs(60), || {
        core.records()
            .into_iter()
            .find_map(|v| v.get("tool").cloned())
    });
    let printed = std::fs::read_to_string(&out).unwrap_or_default();
    assert_eq!(tool["stdout"], "0\n", "{tool}\n{printed}\n{}", core.log());
    assert_eq!(
        web.calls(),
        vec![(
            "/api/core/automation".to_string(),
            json!({"action": "list", "session": session})
        )],
        "{}",
        core.log()
    );
}
