//! What fixtures/mcp_probe.py, an MCP server a session's harness was given,
//! says of its life: shared by the native and the ACP MCP checks.

use std::path::Path;

use serde_json::{json, Value};

use super::Real;

/// The session's `mcp_servers`: the probe, logging to `log`, with the
/// secret variable `PROBE_TOKEN` set to `secret`.
pub fn servers(log: &Path, secret: &str) -> Value {
    let probe = room_kit::fixtures_dir().join("mcp_probe.py");
    json!({"probe": {
        "command": "python3",
        "args": [probe, log],
        "env": {"PROBE_TOKEN": secret},
    }})
}

/// Asserts that session `id`'s harness started the probe with its secret
/// and sent it `methods`, and that the secret shows nowhere but there: not
/// in the journal, the view or the service's log.
pub fn assert_served(real: &Real, id: &str, log: &Path, secret: &str, methods: &[&str]) {
    let started: Vec<Value> = std::fs::read_to_string(log)
        .expect("the probe was started")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        started[0],
        json!({"started": true, "token": secret}),
        "{started:?}"
    );
    let sent: Vec<&str> = started
        .iter()
        .filter_map(|m| m["method"].as_str())
        .collect();
    for m in methods {
        assert!(sent.contains(m), "never sent {m}: {sent:?}");
    }
    let journal =
        serde_json::to_string(&room_kit::events::all_events(&real.svc, id, 1024)).unwrap();
    for (what, text) in [
        ("journal", journal),
        ("view", real.svc.session(id).to_string()),
        ("log", real.svc.log()),
    ] {
        assert!(!text.contains(secret), "the {what} holds the secret");
    }
}
