//! Shared helpers for the integration tests: start the real room-core binary
//! on a temp state dir with the fake harnesses, talk to its HTTP API on
//! 127.0.0.1, and await conditions with deadlines instead of sleeping.

#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

/// The token every test service uses.
pub const TOKEN: &str = "test-token-7f3c";

/// The names the fixture project puts in a folder.
pub const PROJECT_NAMES: [&str; 4] = [".agents", ".claude", "AGENTS.md", "CLAUDE.md"];

/// A running room-core with its own temp folder (state, records, work).
pub struct Service {
    child: Option<Child>,
    /// The temp root; removed on drop.
    pub root: PathBuf,
    /// The state dir.
    pub state: PathBuf,
    /// Where the fake harnesses record what they saw.
    pub records: PathBuf,
    /// `http://127.0.0.1:port`.
    pub base: String,
    config: PathBuf,
    env: Vec<(String, String)>,
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// The room-core binary named by a test crate that cargo names none to: the
/// reference crate's tests, which share this module.
static CORE_BINARY: OnceLock<PathBuf> = OnceLock::new();

/// Names the room-core binary `Service` starts, for a test crate of another
/// package than room-core's; it must come before the first start.
pub fn use_core_binary(path: PathBuf) {
    let _ = CORE_BINARY.set(path);
}

/// The room-core binary: cargo's for room-core's own tests, else the one
/// named by `use_core_binary`.
fn core_binary() -> PathBuf {
    match option_env!("CARGO_BIN_EXE_room-core") {
        Some(path) => PathBuf::from(path),
        None => CORE_BINARY
            .get()
            .cloned()
            .expect("this test crate names its room-core binary (use_core_binary) before it starts a service"),
    }
}

/// A fresh temp folder for one test.
pub fn temp_root() -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let root =
        std::env::temp_dir().join(format!("room-core-test-{}-{n}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    root
}

/// The Unix time in ms.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

impl Service {
    /// Starts a service whose config is the test defaults plus `extra`.
    pub fn start(extra: Value) -> Service {
        Service::start_with_env(extra, Vec::new())
    }

    /// Starts a service with more environment variables (which the
    /// harnesses it starts inherit).
    pub fn start_with_env(extra: Value, env: Vec<(String, String)>) -> Service {
        let root = temp_root();
        let fixtures = room_core::harness::fixtures_dir();
        let mut config = json!({
            "listen": "127.0.0.1:0",
            "token": TOKEN,
            "state_dir": root.join("state"),
            "claude_program": fixtures.join("fake-claude"),
            "codex_program": fixtures.join("fake-codex"),
            // The fake harnesses record what they saw where this says.
            "harness_env": ["FAKE_HARNESS_RECORD"],
        });
        for (k, v) in extra.as_object().unwrap() {
            config[k] = v.clone();
        }
        let config_path = root.join("config.json");
        std::fs::write(&config_path, config.to_string()).unwrap();
        // Harnesses may run as another account (`agent_uid`): any may record.
        let records = root.join("records");
        std::fs::create_dir_all(&records).unwrap();
        std::fs::set_permissions(&records, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let mut s = Service {
            child: None,
            state: root.join("state"),
            records,
            base: String::new(),
            config: config_path,
            root,
            env,
        };
        s.launch();
        s
    }

    fn launch(&mut self) {
        let _ = std::fs::remove_file(self.state.join("listen"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.root.join("service.log"))
            .unwrap();
        let child = Command::new(core_binary())
            .args(["--config", self.config.to_str().unwrap()])
            .env("FAKE_HARNESS_RECORD", &self.records)
            .env("RUST_LOG", "room_core=debug")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start room-core");
        self.child = Some(child);
        // The address is in `<state>/listen`, or in the log where the
        // state dir has no room for that file.
        let listen = self.state.join("listen");
        let logged_before = self.log().len();
        let addr = wait_until("the service listens", Duration::from_secs(20), || {
            let written = std::fs::read_to_string(&listen)
                .ok()
                .filter(|s| s.ends_with('\n'));
            written.or_else(|| {
                let log = self.log();
                let this_run = log.get(logged_before..)?;
                let rest = this_run.split("HTTP API on http://").nth(1)?;
                Some(rest.split_whitespace().next()?.to_string())
            })
        });
        self.base = format!("http://{}", addr.trim());
    }

    /// SIGKILLs the service (no chance to clean up).
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    /// SIGTERMs the service and waits for it to exit.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let pid = nix::unistd::Pid::from_raw(c.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            c.wait().unwrap();
        }
    }

    /// Starts the service again on the same state dir and config.
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }

    /// Sets one config field; it applies from the next (re)start.
    pub fn set_config(&self, key: &str, value: Value) {
        let mut config: Value =
            serde_json::from_slice(&std::fs::read(&self.config).unwrap()).unwrap();
        config[key] = value;
        std::fs::write(&self.config, config.to_string()).unwrap();
    }

    /// Starts the service again after a `kill9`.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none());
        self.launch();
    }

    /// A folder under the test's work dir (not created).
    pub fn folder(&self, name: &str) -> PathBuf {
        self.root.join("work").join(name)
    }

    /// A request with the token; returns status and JSON body.
    pub fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
        self.call_with(method, path, body, Some(TOKEN))
    }

    /// A request with an optional token.
    pub fn call_with(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        token: Option<&str>,
    ) -> (u16, Value) {
        let mut req =
            ureq::request(method, &format!("{}{path}", self.base)).timeout(Duration::from_secs(10));
        if let Some(t) = token {
            req = req.set("Authorization", &format!("Bearer {t}"));
        }
        let result = match body {
            Some(b) => req.set("Content-Type", "application/json").send_string(b),
            None => req.call(),
        };
        let resp = match result {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("{method} {path}: {e}"),
        };
        let status = resp.status();
        let text = resp.into_string().unwrap();
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    /// POST with a JSON body.
    pub fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call("POST", path, Some(&body.to_string()))
    }

    /// GET.
    pub fn get(&self, path: &str) -> (u16, Value) {
        self.call("GET", path, None)
    }

    /// Starts a session and returns its view (asserting 201).
    pub fn start_session(&self, body: Value) -> Value {
        let (status, v) = self.post("/v1/sessions", body);
        assert_eq!(status, 201, "{v}");
        v
    }

    /// A session's view.
    pub fn session(&self, id: &str) -> Value {
        let (status, v) = self.get(&format!("/v1/sessions/{id}"));
        assert_eq!(status, 200, "{v}");
        v
    }

    /// Every record the fake harnesses wrote, oldest first.
    pub fn records(&self) -> Vec<Value> {
        let mut out: Vec<Value> = std::fs::read_dir(&self.records)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                    .filter_map(|e| serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok())
                    .collect()
            })
            .unwrap_or_default();
        out.sort_by_key(|r: &Value| r["started_ms"].as_u64());
        out
    }

    /// The records of harnesses that ran in `folder`.
    pub fn records_in(&self, folder: &Path) -> Vec<Value> {
        self.records()
            .into_iter()
            .filter(|r| r["cwd"].as_str().map(Path::new) == Some(folder))
            .collect()
    }

    /// Waits for the `n`th (1-based) harness record in `folder`.
    pub fn await_record(&self, folder: &Path, n: usize, limit: Duration) -> Value {
        wait_until(
            &format!("harness record #{n} in {}", folder.display()),
            limit,
            || self.records_in(folder).get(n - 1).cloned(),
        )
    }

    /// Waits until the session's view satisfies `f`.
    pub fn await_session(&self, id: &str, what: &str, f: impl Fn(&Value) -> bool) -> Value {
        wait_until(what, Duration::from_secs(10), || {
            let v = self.session(id);
            f(&v).then_some(v)
        })
    }

    /// The running service's pid (None once stopped).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The service's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.root.join("service.log")).unwrap_or_default()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.stop();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.root);
        } else {
            eprintln!("kept {} for inspection", self.root.display());
        }
    }
}

/// Polls `f` every 20 ms until it gives a value; panics naming `what` at the deadline.
pub fn wait_until<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The status file of `folder`.
pub fn status_file(folder: &Path) -> PathBuf {
    PathBuf::from(format!("{}.cloudroom-files", folder.display()))
}

/// Writes `text` into `folder`'s status file, creating its parent.
pub fn mark(folder: &Path, text: &str) {
    let file = status_file(folder);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, text).unwrap();
}

/// Lands the fixture project (seed 000's) in `folder`: a real skill folder,
/// a symlinked one, CLAUDE.md and AGENTS.md with their markers. Each
/// SKILL.md has the name and description front matter the real CLIs need
/// to list a skill.
pub fn land_project(folder: &Path) {
    let skill = |name: &str, from: &str| {
        format!("---\nname: {name}\ndescription: The seed-000 probe skill from {from}.\n---\nSay {name}.\n")
    };
    let real = folder.join(".agents/skills/probe-agents-real");
    std::fs::create_dir_all(&real).unwrap();
    std::fs::write(
        real.join("SKILL.md"),
        skill("probe-agents-real", ".agents/skills"),
    )
    .unwrap();
    let claude_real = folder.join(".claude/skills/probe-claude-real");
    std::fs::create_dir_all(&claude_real).unwrap();
    std::fs::write(
        claude_real.join("SKILL.md"),
        skill("probe-claude-real", ".claude/skills"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        "../../.agents/skills/probe-agents-real",
        folder.join(".claude/skills/probe-agents-linked"),
    )
    .unwrap();
    std::fs::write(folder.join("CLAUDE.md"), "CLAUDE_MD_MARKER_7731\n").unwrap();
    std::fs::write(folder.join("AGENTS.md"), "AGENTS_MD_MARKER_4412\n").unwrap();
}

/// The names a record says its harness saw.
pub fn names(record: &Value) -> Vec<String> {
    record["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

/// A start body.
pub fn start_body(folder: &Path, harness: &str, extra: Value) -> Value {
    let mut body = json!({
        "workspace": format!("ws-{}", folder.file_name().unwrap().to_string_lossy()),
        "folder": folder,
        "harness": harness,
        "prompt": "Which skills and instructions do you see?",
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

/// Whether `pid` runs (exists and is not a zombie).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let state = s.rsplit_once(')')?.1.split_whitespace().next()?.to_string();
            Some(state != "Z" && state != "X")
        })
        .unwrap_or(false)
}

/// Every running process marked as one of session `id`'s turns (the
/// supervisor puts `ROOM_CORE_TURN=<id>-<turn>` in each turn's
/// environment, which everything the turn starts inherits).
pub fn turn_processes(id: &str) -> Vec<u32> {
    let marker = format!("ROOM_CORE_TURN={id}-");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split(|b| *b == 0)
                    .any(|e| e.starts_with(marker.as_bytes()))
            })
        })
        .filter(|pid| alive(*pid))
        .collect()
}

/// The pid a tool wrote into `file` (waited for).
pub fn pid_in(file: &Path) -> u32 {
    wait_until(
        &format!("a pid in {}", file.display()),
        Duration::from_secs(10),
        || std::fs::read_to_string(file).ok()?.trim().parse().ok(),
    )
}

/// Session `id`'s journal (`<state>/events/<id>.jsonl`), one event a line.
pub fn journal(state: &Path, id: &str) -> Vec<Value> {
    std::fs::read_to_string(state.join("events").join(format!("{id}.jsonl")))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Something a test needs is missing: skip with the reason outside CI,
/// fail in CI (`ROOM_CORE_CI=1`), which must not skip.
pub fn skip(test: &str, why: &str) {
    if std::env::var("ROOM_CORE_CI").as_deref() == Ok("1") {
        panic!("{test}: cannot run in CI: {why}");
    }
    eprintln!("SKIPPED {test}: {why}");
}
