//! Seed 001's test_a_harness_session_wins_over_a_loop_marker end to end: a
//! session whose harness Core started (fixtures/fake-codex, through
//! POST /v1/sessions, its turn registered in HarnessPids by pid and start
//! time) runs a tool command that carries a marker, and the website still
//! gets "session". tests/agent_harness.rs checks the same rule in-process,
//! with a plain shell registered as the harness.

mod agent_support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use agent_support::{room_cli, FakeWebsite, Options, Service, TempDir, ID};
use serde_json::json;

#[test]
fn a_harness_session_wins_over_a_loop_marker() {
    let web = FakeWebsite::start();
    let records = TempDir::new("harness-records");
    let folder = TempDir::new("harness-folder");
    let fake_codex = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/fake-codex");
    let cli_dir = PathBuf::from(room_cli()).parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        cli_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut extra = serde_json::Map::new();
    extra.insert("codex_program".into(), json!(fake_codex));
    extra.insert("harness_env".into(), json!(["FAKE_HARNESS_RECORD"]));
    let core = Service::start_with(Options {
        website_url: Some(web.url.clone()),
        extra,
        env: vec![
            ("PATH".into(), path),
            (
                "FAKE_HARNESS_RECORD".into(),
                records.path().display().to_string(),
            ),
        ],
        ..Options::default()
    });

    let start = json!({
        "workspace": "w1",
        "folder": folder.path(),
        "harness": "codex",
        "kind": "thread",
        "prompt": format!("run: CLOUDROOM_LOOP={ID} room-cli loop list"),
    });
    // The HTTP API starts after the agent socket: retry a refused connect.
    let deadline = Instant::now() + Duration::from_secs(10);
    let answer: serde_json::Value = loop {
        match ureq::post(&format!("http://{}/v1/sessions", core.listen))
            .set("Authorization", &format!("Bearer {}", core.token))
            .send_json(start.clone())
        {
            Ok(resp) => break resp.into_json().unwrap(),
            Err(ureq::Error::Transport(t)) if Instant::now() < deadline => {
                let _ = t;
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("start a session: {e}\n{}", core.log_text()),
        }
    };
    let session = ["id", "session", "session_id"]
        .iter()
        .find_map(|k| answer.get(*k).and_then(|v| v.as_str()))
        .unwrap_or_else(|| panic!("no session id in {answer}"))
        .to_string();

    // Wait for the fake harness's record of the tool command.
    let deadline = Instant::now() + Duration::from_secs(60);
    let tool = loop {
        let found = std::fs::read_dir(records.path())
            .unwrap()
            .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
            .filter_map(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .find_map(|v| v.get("tool").cloned());
        if let Some(t) = found {
            break t;
        }
        assert!(
            Instant::now() < deadline,
            "no tool record: {}",
            core.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(tool["exit"], 0, "{tool}");
    assert_eq!(
        web.calls(),
        vec![(
            "/api/core/automation".to_string(),
            json!({"action": "list", "session": session})
        )]
    );
}
