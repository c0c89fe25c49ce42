//! A harness's environment is an allowlist: of the service's own
//! environment it gets only the basics, the CLIs' own model and login
//! variables and the names the operator adds (`harness_env`), never a value
//! that holds one of the service's tokens; under the agent account, that
//! account's HOME, USER and LOGNAME.

use std::time::Duration;

use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// What the service's environment holds that no harness may see.
const FORBIDDEN: [(&str, &str); 5] = [
    (
        "AWS_SECRET_ACCESS_KEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("CLOUDROOM_API_URL", "http://user:pass@127.0.0.1:9/api"),
    ("SUDO_USER", "alice"),
    ("SSH_AUTH_SOCK", "/tmp/ssh-XXXX/agent.1"),
    ("XDG_RUNTIME_DIR", "/run/user/0"),
];

/// What it holds that a harness does see.
const PASSED: [(&str, &str); 4] = [
    ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
    ("CODEX_HOME", "/nonexistent/codex-home"),
    ("OPERATOR_ADDED", "kept"),
];

/// The names a harness may get from the service, by the documented rule,
/// and what room-core sets itself.
fn allowed(name: &str) -> bool {
    let exact = [
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TERM",
        "TZ",
        "TMPDIR",
        "IS_SANDBOX",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "NODE_EXTRA_CA_CERTS",
        // Set by room-core for the turn.
        "ROOM_CORE_SOCKET",
        "ROOM_CORE_TURN",
        // The config's harness_env in these tests.
        "FAKE_HARNESS_RECORD",
        "OPERATOR_ADDED",
        "COPY_OF_THE_TOKEN",
        // Added by the fixture's own `sh` on the way to python.
        "PWD",
        "SHLVL",
        "_",
    ];
    // The last two: added by pyenv's python3 shim, where there is one.
    let prefixes = [
        "LC_",
        "ANTHROPIC_",
        "CLAUDE_",
        "OPENAI_",
        "CODEX_",
        "PYENV_",
        "_PYENV_",
    ];
    exact.contains(&name) || prefixes.iter().any(|p| name.starts_with(p))
}

fn service_env() -> Vec<(String, String)> {
    FORBIDDEN
        .iter()
        .chain(&PASSED)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .chain([("COPY_OF_THE_TOKEN".into(), format!("Bearer {TOKEN}"))])
        .collect()
}

/// Starts a session whose harness records its environment; returns it.
fn harness_env(svc: &Service, name: &str) -> serde_json::Map<String, Value> {
    let folder = svc.folder(name);
    svc.start_session(start_body(&folder, "claude", json!({"prompt": "hi"})));
    let record = svc.await_record(&folder, 1, Duration::from_secs(10));
    record["env"]
        .as_object()
        .expect("the record has env")
        .clone()
}

fn check(env: &serde_json::Map<String, Value>) {
    for (name, _) in FORBIDDEN {
        assert!(
            !env.contains_key(name),
            "{name} reached the harness: {env:?}"
        );
    }
    for (name, value) in PASSED {
        assert_eq!(env.get(name), Some(&json!(value)), "{env:?}");
    }
    // Named by the operator, but it holds the API token.
    assert!(!env.contains_key("COPY_OF_THE_TOKEN"), "{env:?}");
    for name in env.keys() {
        assert!(allowed(name), "{name} is not on the allowlist: {env:?}");
    }
    assert!(env.contains_key("PATH") && env.contains_key("ROOM_CORE_SOCKET"));
}

fn config(extra: Value) -> Value {
    let mut c = json!({
        "harness_env": ["FAKE_HARNESS_RECORD", "OPERATOR_ADDED", "COPY_OF_THE_TOKEN"],
    });
    for (k, v) in extra.as_object().unwrap() {
        c[k] = v.clone();
    }
    c
}

#[test]
fn a_harness_gets_only_the_allowlist_and_the_operators_names() {
    let svc = Service::builder(ROOM_CORE)
        .config(config(json!({})))
        .envs(service_env())
        .start();
    let env = harness_env(&svc, "own");
    check(&env);
    assert_eq!(
        env.get("ROOM_CORE_SOCKET"),
        Some(&json!(svc.state.join("agent.sock")))
    );
}

#[test]
fn under_the_agent_account_the_harness_gets_its_home_and_names() {
    let Some(agent) = agent_account("under_the_agent_account_the_harness_gets_its_home_and_names")
    else {
        return;
    };
    let root = temp_root();
    let svc = Service::builder(ROOM_CORE)
        .config(config(json!({
            "agent_uid": agent.uid.as_raw(),
            "agent_socket": root.join("agent.sock"),
        })))
        .envs(service_env())
        .start();
    let env = harness_env(&svc, "agent");
    check(&env);
    assert_eq!(env.get("HOME"), Some(&json!(agent.dir)));
    assert_eq!(env.get("USER"), Some(&json!("room-agent")));
    assert_eq!(env.get("LOGNAME"), Some(&json!("room-agent")));
    let _ = std::fs::remove_dir_all(root);
}
