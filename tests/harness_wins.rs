//! Seed 001's test_a_harness_session_wins_over_a_loop_marker end to end: a
//! session whose harness Core started (fixtures/fake-codex, through
//! POST /v1/sessions, its turn registered in HarnessPids by pid and start
//! time) runs a tool command that carries a marker, and the website still
//! gets "session". tests/agent_harness.rs checks the same rule in-process,
//! with a plain shell registered as the harness.

use std::path::Path;
use std::time::Duration;

use room_kit::{wait_until, FakeWebsite, Service, TempDir, LOOP_ID};
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// room-cli, built beside the service.
const ROOM_CLI: &str = env!("CARGO_BIN_EXE_room-cli");

#[test]
fn a_harness_session_wins_over_a_loop_marker() {
    let web = FakeWebsite::start();
    let folder = TempDir::new("harness-folder");
    let cli_dir = Path::new(ROOM_CLI).parent().unwrap();
    let path = format!(
        "{}:{}",
        cli_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let core = Service::builder(ROOM_CORE)
        .config(json!({"website_url": web.url}))
        .env("PATH", path)
        .start();

    let start = json!({
        "workspace": "w1",
        "folder": folder.path(),
        "harness": "codex",
        "kind": "thread",
        "prompt": format!("run: CLOUDROOM_LOOP={LOOP_ID} room-cli loop list"),
    });
    let answer = core.start_session(start);
    let session = ["id", "session", "session_id"]
        .iter()
        .find_map(|k| answer.get(*k).and_then(|v| v.as_str()))
        .unwrap_or_else(|| panic!("no session id in {answer}"))
        .to_string();

    // Wait for the fake harness's record of the tool command.
    let tool = wait_until("the tool command's record", Duration::from_secs(60), || {
        core.records()
            .into_iter()
            .find_map(|v| v.get("tool").cloned())
    });
    assert_eq!(tool["exit"], 0, "{tool}");
    assert_eq!(
        web.calls(),
        vec![(
            "/api/core/automation".to_string(),
            json!({"action": "list", "session": session})
        )]
    );
}
