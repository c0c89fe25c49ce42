//! Helpers for the real-CLI conformance suite: the real `claude` and
//! `codex` found on PATH, a service that runs them against the fake model
//! (room-kit's), and reads of what the model was asked.
//!
//! A check that needs something absent (a CLI, root, the `room-agent`
//! account) prints its reason and returns outside CI; with `ROOM_CORE_CI=1`
//! it fails instead, so CI cannot skip it.

// The rewind and fork checks' own; the other checks leave it unused.
#[allow(dead_code)]
pub mod three_turns;

// The MCP checks' own; the other checks leave it unused.
#[allow(dead_code)]
pub mod mcp_probe;

use std::path::PathBuf;

use libtest_mimic::Trial;
use room_kit::fake_model::TURN;
use room_kit::{find_cli, in_ci, real_cli, temp_root, wait_until, Model, Service, AGENT};
use serde_json::{json, Value};

use crate::ROOM_CORE;

/// Why a check that needs the real CLI `cli` (and, with `as_agent`, root
/// and the agent account) cannot run here, or `None` when it can: the test
/// list marks such a check ignored with this reason outside CI.
pub fn missing(cli: &str, as_agent: bool) -> Option<String> {
    if find_cli(cli).is_none() {
        return Some(format!("no `{cli}` on PATH (.ci/run installs it from npm)"));
    }
    if as_agent && !nix::unistd::geteuid().is_root() {
        return Some("it starts harnesses as another account and needs root".into());
    }
    if as_agent && !matches!(nix::unistd::User::from_name(AGENT), Ok(Some(_))) {
        return Some(format!(
            "no `{AGENT}` account (.ci/run creates it with useradd)"
        ));
    }
    None
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
        let program = real_cli(test, harness)?;
        let dir = temp_root();
        let model = Model::start(&dir);
        let mut all = model.cli_env(&dir);
        all.extend(env);
        let mut config = json!({ format!("{harness}_program"): program });
        room_kit::merge(&mut config, extra);
        let svc = Service::builder(ROOM_CORE).config(config).envs(all).start();
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

    /// The data of session `id`'s events of `kind`, once there are `n`.
    // The talk and ACP checks' own; the other checks leave it unused.
    #[allow(dead_code)]
    pub fn await_kind(&self, id: &str, kind: &str, n: usize) -> Vec<Value> {
        wait_until(&format!("{n} {kind} of {id}"), TURN, || {
            let found: Vec<Value> = room_kit::events::all_events(&self.svc, id, 1024)
                .into_iter()
                .filter(|e| e["kind"] == kind)
                .map(|e| e["data"].clone())
                .collect();
            (found.len() >= n).then_some(found)
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

/// How many times the CLIs asked the fake model for an answer (each such
/// request reports the fixed usage, fixtures/fake_model_server.py).
pub fn model_calls(model: &Model) -> usize {
    model
        .requests()
        .iter()
        .filter(|r| {
            let path = r["path"].as_str().unwrap_or_default();
            r["method"] == "POST"
                && ((path.starts_with("/v1/messages") && !path.contains("count_tokens"))
                    || path.starts_with("/v1/responses"))
        })
        .count()
}

/// One check of a libtest-mimic list: ignored, with why, where what it
/// needs (the CLI `cli`, and with `as_agent` root and the agent account)
/// is absent, outside CI.
pub fn trial(
    name: &str,
    cli: Option<&str>,
    as_agent: bool,
    check: impl FnOnce() + Send + 'static,
) -> Trial {
    let missing = cli.and_then(|c| missing(c, as_agent));
    let trial = Trial::test(name, move || {
        check();
        Ok(())
    });
    match missing {
        Some(why) if !in_ci() => trial.with_kind(why).with_ignored_flag(true),
        _ => trial,
    }
}
