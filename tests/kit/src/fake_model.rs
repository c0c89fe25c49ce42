//! The loopback fake model server (fixtures/fake_model_server.py) as the
//! real CLIs' model: start it, point the CLIs at it, read what it was asked.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::project::fixtures_dir;
use crate::time::wait_until;

/// How long a real turn may take on a loaded 2-core machine (one takes
/// about a second here).
pub const TURN: Duration = Duration::from_secs(90);

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
        let script = fixtures_dir().join("fake_model_server.py");
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
