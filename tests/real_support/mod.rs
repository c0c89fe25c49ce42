//! Helpers for the real-CLI conformance suite: the loopback fake model
//! server (fixtures/fake_model_server.py), the real `claude` and `codex`
//! found on PATH, the environment that points them at the fake model, the
//! agent account, and reads of what the model was asked.
//!
//! A check that needs something absent (a CLI, root, the `room-agent`
//! account) prints its reason and returns outside CI; with `ROOM_CORE_CI=1`
//! it fails instead, so CI cannot skip it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{wait_until, Service};

/// How long a real turn may take on a loaded 2-core machine (one takes
/// about a second here).
pub const TURN: Duration = Duration::from_secs(90);

/// The agent account's agreed name (COORDINATION.md).
pub const AGENT: &str = "room-agent";

/// Whether this run is CI's (`.ci/run` exports `ROOM_CORE_CI=1`).
pub fn in_ci() -> bool {
    std::env::var_os("ROOM_CORE_CI").is_some_and(|v| v == "1")
}

/// Outside CI: prints why `test` does not run and gives `None`. In CI: fails.
pub fn absent<T>(test: &str, reason: &str) -> Option<T> {
    assert!(
        !in_ci(),
        "{test}: {reason} (ROOM_CORE_CI=1: CI must run it)"
    );
    println!("SKIPPED {test}: {reason}");
    None
}

/// The real CLI `name` (`claude` or `codex`) on PATH.
pub fn cli(test: &str, name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| {
                p.metadata()
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    });
    match found {
        Some(p) => Some(p),
        None => absent(
            test,
            &format!("no `{name}` on PATH (.ci/run installs it from npm)"),
        ),
    }
}

/// The agent account, when the tests run as root (needed to start
/// harnesses as another account) and it exists.
pub fn agent_account(test: &str) -> Option<nix::unistd::User> {
    if !nix::unistd::geteuid().is_root() {
        return absent(
            test,
            "it starts harnesses as another account and needs root",
        );
    }
    match nix::unistd::User::from_name(AGENT) {
        Ok(Some(u)) => Some(u),
        _ => absent(
            test,
            &format!("no `{AGENT}` account (.ci/run creates it with useradd)"),
        ),
    }
}

/// The fake model server, stopped on drop.
pub struct Model {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Its request log (JSON lines).
    pub log: PathBuf,
}

impl Model {
    /// Starts the server with its port file and log in `dir`.
    pub fn start(dir: &Path) -> Model {
        std::fs::create_dir_all(dir).unwrap();
        let port_file = dir.join("model.port");
        let log = dir.join("model.jsonl");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/fake_model_server.py");
        let child = Command::new("python3")
            .arg(script)
            .arg("--port-file")
            .arg(&port_file)
            .arg("--log")
            .arg(&log)
            .stdin(Stdio::null())
            .spawn()
            .expect("start the fake model server");
        let port = wait_until(
            "the fake model server's port",
            Duration::from_secs(20),
            || {
                std::fs::read_to_string(&port_file)
                    .ok()?
                    .trim()
                    .parse()
                    .ok()
            },
        );
        Model { child, port, log }
    }

    /// Every request so far, oldest first.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The requests of `harness`'s turns: claude's Messages requests that
    /// offer tools (its side requests, if any, offer none), codex's
    /// Responses requests.
    pub fn turn_requests(&self, harness: &str) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| match harness {
                "claude" => {
                    r["api"] == "anthropic"
                        && r["reply"] != "count_tokens"
                        && r["body"]["tools"].as_array().is_some_and(|t| !t.is_empty())
                }
                _ => r["api"] == "openai",
            })
            .collect()
    }

    /// Waits until `harness`'s turns have had `n` final (text) answers:
    /// `n` turns are done as far as the model is concerned.
    pub fn await_answers(&self, harness: &str, n: usize) -> Vec<Value> {
        wait_until(&format!("{n} final answers to {harness}"), TURN, || {
            let all = self.turn_requests(harness);
            let answers = all.iter().filter(|r| r["reply"] == "text").count();
            (answers >= n).then_some(all)
        })
    }

    /// The environment that points both CLIs at this server, with private
    /// homes under `dir` (claude: its base URL, a fake key, no
    /// non-essential traffic, its own config folder; codex: a model
    /// provider in its own CODEX_HOME).
    pub fn cli_env(&self, dir: &Path) -> Vec<(String, String)> {
        let home = dir.join("home");
        let claude_config = dir.join("claude-config");
        let codex_home = dir.join("codex-home");
        for d in [&home, &claude_config, &codex_home] {
            std::fs::create_dir_all(d).unwrap();
        }
        // gpt-5.5 is in codex's model catalog and gets the plain function
        // tools (exec_command); its newer default models get a JavaScript
        // tool wrapper the fake model does not speak.
        let toml = format!(
            "model = \"gpt-5.5\"\nmodel_provider = \"fake\"\n\n[model_providers.fake]\n\
             name = \"Fake model\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nwire_api = \"responses\"\n",
            self.port
        );
        std::fs::write(codex_home.join("config.toml"), toml).unwrap();
        let s = |p: &Path| p.to_string_lossy().into_owned();
        vec![
            (
                "ANTHROPIC_BASE_URL".into(),
                format!("http://127.0.0.1:{}", self.port),
            ),
            ("ANTHROPIC_API_KEY".into(), "sk-fake-loopback-only".into()),
            (
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
                "1".into(),
            ),
            ("CLAUDE_CONFIG_DIR".into(), s(&claude_config)),
            ("CODEX_HOME".into(), s(&codex_home)),
            ("HOME".into(), s(&home)),
        ]
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A room-core whose harnesses are the real CLIs, pointed at a fake model.
pub struct Real {
    /// The service (its temp root holds everything else).
    pub svc: Service,
    /// The fake model server.
    pub model: Model,
    /// The model's log and the CLIs' homes; removed on drop.
    pub dir: PathBuf,
}

impl Drop for Real {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept {} for inspection", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Real {
    /// Starts the model and a service running the real `harness` CLI, with
    /// `extra` config fields and `env` on top of the CLIs' environment.
    /// `None` (or a failure in CI) when that CLI is not installed.
    pub fn start(
        test: &str,
        harness: &str,
        extra: Value,
        env: Vec<(String, String)>,
    ) -> Option<Real> {
        let program = cli(test, harness)?;
        let dir = crate::common::temp_root();
        let model = Model::start(&dir);
        let mut all = model.cli_env(&dir);
        all.extend(env);
        let mut config = json!({ format!("{harness}_program"): program });
        for (k, v) in extra.as_object().unwrap() {
            config[k] = v.clone();
        }
        let svc = Service::start_with_env(config, all);
        Some(Real { svc, model, dir })
    }

    /// Waits until the session is idle (its turns done) with nothing queued.
    pub fn await_idle(&self, id: &str) -> Value {
        wait_until(&format!("session {id} idle"), TURN, || {
            let v = self.svc.session(id);
            assert_ne!(v["state"], "failed", "{v}\n{}", self.svc.log());
            (v["state"] == "idle" && v["queue"]["length"] == 0).then_some(v)
        })
    }
}

/// All of a request body as text, for "does the model see X" checks.
pub fn seen(request: &Value) -> String {
    request["body"].to_string()
}

/// The text of the latest user message in a turn request: what the model
/// is asked to answer (claude: the last text block; codex: the last
/// input_text).
pub fn asked(harness: &str, request: &Value) -> String {
    let body = &request["body"];
    let (list, role_key) = match harness {
        "claude" => (&body["messages"], "role"),
        _ => (&body["input"], "role"),
    };
    let last_user = list
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m[role_key] == "user" && m["type"] != "function_call_output")
        .expect("a user message");
    match &last_user["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .rev()
            .find(|b| matches!(b["type"].as_str(), Some("text" | "input_text")))
            .and_then(|b| b["text"].as_str())
            .unwrap_or_default()
            .to_string(),
        other => panic!("unexpected content {other}"),
    }
}

/// The tool result the model got back in a request, as text.
pub fn tool_result(request: &Value) -> Option<String> {
    let body = &request["body"];
    if let Some(messages) = body["messages"].as_array() {
        let block = messages
            .iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| m["content"].as_array())
            .flatten()
            .rfind(|b| b["type"] == "tool_result")?;
        return Some(match &block["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
    }
    let item = body["input"]
        .as_array()?
        .iter()
        .rfind(|i| i["type"] == "function_call_output")?;
    Some(match &item["output"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}
