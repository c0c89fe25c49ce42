//! How a [`Service`] is set up before it starts: its config (the test
//! defaults plus extra fields), its environment, its log, its account.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::json::merge;
use crate::project::fixtures_dir;
use crate::service::Service;
use crate::setup::{Output, Setup};
use crate::temp::temp_root;

/// The bearer token of every service the kit starts, unless its config
/// says otherwise.
pub const TOKEN: &str = "test-token-7f3c";

/// A service to start; see [`Service::builder`].
#[must_use]
pub struct Builder {
    binary: PathBuf,
    root: Option<PathBuf>,
    config: Value,
    env: Vec<(String, String)>,
    harness_env: Vec<String>,
    log_filter: String,
    output: Output,
    run_as: Option<u32>,
    keep: bool,
}

impl Service {
    /// A service run from `binary` (a test's
    /// `env!("CARGO_BIN_EXE_room-core")`, or one found beside the running
    /// program), to set up and start.
    pub fn builder(binary: impl AsRef<Path>) -> Builder {
        Builder::new(binary.as_ref())
    }

    /// Starts a service from `binary` whose config is the test defaults
    /// plus `extra` ([`Builder::config`]).
    pub fn start(binary: impl AsRef<Path>, extra: Value) -> Service {
        Service::builder(binary).config(extra).start()
    }
}

impl Builder {
    fn new(binary: &Path) -> Builder {
        Builder {
            binary: binary.to_path_buf(),
            root: None,
            config: json!({}),
            env: Vec::new(),
            harness_env: Vec::new(),
            log_filter: "room_core=debug".into(),
            output: Output::LogFile,
            run_as: None,
            keep: false,
        }
    }

    /// Config fields over the defaults (`listen` on port 0, [`TOKEN`],
    /// `state_dir` in the service's folder, and the fake harnesses, which
    /// record what they saw). A `null` field is the service's own default
    /// (`"token": null`: a generated token).
    pub fn config(mut self, extra: Value) -> Builder {
        merge(&mut self.config, extra);
        self
    }

    /// One more environment variable for the service.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Builder {
        self.env.push((name.into(), value.into()));
        self
    }

    /// More environment variables for the service.
    pub fn envs(mut self, vars: impl IntoIterator<Item = (String, String)>) -> Builder {
        self.env.extend(vars);
        self
    }

    /// Environment variables for the service that its harnesses get too:
    /// the harness environment is an allowlist, so their names join
    /// `harness_env`.
    pub fn harness_envs(mut self, vars: impl IntoIterator<Item = (String, String)>) -> Builder {
        for (name, value) in vars {
            self.harness_env.push(name.clone());
            self.env.push((name, value));
        }
        self
    }

    /// The service's `RUST_LOG` (default `room_core=debug`).
    pub fn log_filter(mut self, filter: &str) -> Builder {
        self.log_filter = filter.into();
        self
    }

    /// The service prints to this process's stdout and stderr instead of
    /// its log file.
    pub fn inherit_output(mut self) -> Builder {
        self.output = Output::Inherit;
        self
    }

    /// The folder that holds the service's config, state, records and log
    /// (default: a new [`temp_root`]); removed when the service is dropped.
    pub fn root(mut self, dir: &Path) -> Builder {
        self.root = Some(dir.to_path_buf());
        self
    }

    /// Runs the service as `uid` (and the group of the same number),
    /// dropping root: its folder is handed to that account, and it runs a
    /// copy of the binary from there (the build folder may sit under a home
    /// another account cannot enter).
    pub fn run_as(mut self, uid: u32) -> Builder {
        self.run_as = Some(uid);
        self
    }

    /// Keeps the service's folder when it is dropped (and says where).
    pub fn keep(mut self, keep: bool) -> Builder {
        self.keep = keep;
        self
    }

    /// Writes the config and makes the folders, and starts nothing: for a
    /// test that runs the service its own way ([`Service::command`],
    /// [`Service::shell_command`]) or starts it later
    /// ([`Service::start_again`]).
    pub fn prepare(self) -> Service {
        let root = self.root.unwrap_or_else(temp_root);
        std::fs::create_dir_all(&root).unwrap();
        let fixtures = fixtures_dir();
        let mut config = json!({
            "listen": "127.0.0.1:0",
            "token": TOKEN,
            "state_dir": root.join("state"),
            "claude_program": fixtures.join("fake-claude"),
            "codex_program": fixtures.join("fake-codex"),
            // The fake harnesses record what they saw where this says.
            "harness_env": ["FAKE_HARNESS_RECORD"],
            // A turn's process ends with it, as most tests count processes;
            // the tests of warm follow-ups set their own linger.
            "linger_ms": 0,
        });
        merge(&mut config, self.config);
        if let Some(names) = config["harness_env"].as_array_mut() {
            names.extend(self.harness_env.into_iter().map(Value::from));
        }
        let state = PathBuf::from(config["state_dir"].as_str().expect("a state_dir"));
        let config_path = root.join("config.json");
        std::fs::write(&config_path, config.to_string()).unwrap();
        // Harnesses may run as another account (`agent_uid`): any may record.
        let records = root.join("records");
        std::fs::create_dir_all(&records).unwrap();
        std::fs::set_permissions(&records, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let program = match self.run_as {
            Some(uid) => {
                std::fs::create_dir_all(&state).unwrap();
                let (id, gid) = (
                    nix::unistd::Uid::from_raw(uid),
                    nix::unistd::Gid::from_raw(uid),
                );
                for p in [&root, &state, &config_path] {
                    nix::unistd::chown(p, Some(id), Some(gid)).unwrap();
                }
                let copy = root.join("room-core");
                std::fs::copy(&self.binary, &copy).unwrap();
                copy
            }
            None => self.binary.clone(),
        };
        Service::prepared(Setup {
            binary: self.binary,
            config_value: config,
            program,
            root,
            state,
            records,
            config: config_path,
            env: self.env,
            log_filter: self.log_filter,
            output: self.output,
            run_as: self.run_as,
            keep: self.keep,
        })
    }

    /// Starts the service and waits until it listens (its agent socket
    /// listens before its HTTP API).
    pub fn start(self) -> Service {
        let mut service = self.prepare();
        service.start_again();
        service
    }
}
