//! Helpers for the reference halves' end-to-end tests (tests/loop_e2e.rs,
//! tests/app_start_order.rs): the service's binaries, the agent account, a
//! folder it can reach, the reference website started from its binary,
//! room-cli run inside a real session's harness or as a loop's script, and
//! /proc reads. The service itself starts through the tests' shared
//! `common::Service` (tests/common at the workspace's root).
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use room_reference::account::AgentAccount;
use serde_json::{json, Value};

use crate::common::{temp_root, use_core_binary, wait_until, Service, TOKEN};

/// The agent account the tests run scripts as (COORDINATION.md).
pub const AGENT: &str = "room-agent";

/// Whether this run is CI's (`.ci/run` exports `ROOM_CORE_CI=1`).
pub fn in_ci() -> bool {
    std::env::var("ROOM_CORE_CI").is_ok_and(|v| v == "1")
}

/// Prints why `test` cannot run here and returns, or fails in CI.
pub fn skip(test: &str, reason: &str) {
    assert!(
        !in_ci(),
        "{test}: {reason}, and CI (ROOM_CORE_CI=1) may not skip it"
    );
    println!("SKIPPED {test}: {reason}");
}

/// The agent account, when this test can run scripts as it: it must exist
/// and the tests must run as root (to switch to it). Otherwise the reason
/// is printed and `None` returned (a failure in CI).
pub fn agent_account(test: &str) -> Option<AgentAccount> {
    let reason = match AgentAccount::lookup(AGENT) {
        None => "there is no room-agent account (.ci/run creates it)",
        Some(_) if !nix::unistd::geteuid().is_root() => {
            "the tests must run as root to run scripts as room-agent"
        }
        Some(a) => return Some(a),
    };
    skip(test, reason);
    None
}

/// The service's binaries, room-core and room-cli. They are another
/// package's, so cargo names neither to these tests: they are built beside
/// them once (`room_reference::workspace`), and room-core is the one
/// `Service` starts.
pub fn service_binaries() -> &'static [PathBuf; 2] {
    static BINARIES: OnceLock<[PathBuf; 2]> = OnceLock::new();
    BINARIES.get_or_init(|| {
        let binaries = room_reference::workspace::binaries(["room-core", "room-cli"])
            .unwrap_or_else(|e| panic!("the service's binaries: {e}"));
        use_core_binary(binaries[0].clone());
        binaries
    })
}

/// Starts a Core with the test defaults plus `extra`.
pub fn start_service(extra: Value) -> Service {
    service_binaries();
    Service::start(extra)
}

/// A free loopback port (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A folder the agent account can reach (mode 0755; removed on drop):
/// `bin/` holds a copy of room-cli and the `as-agent` wrapper, `drop/`
/// (mode 1777) is where scripts may write, and the agent sockets live at
/// the top.
pub struct Shared {
    /// The folder.
    pub dir: PathBuf,
}

impl Shared {
    /// Makes the folder for `agent`.
    pub fn new(agent: &AgentAccount) -> Shared {
        let dir = temp_root();
        let bin = dir.join("bin");
        let drop = dir.join("drop");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&drop).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&drop, std::fs::Permissions::from_mode(0o1777)).unwrap();
        // A copy: the build folder may sit under a home the agent cannot enter.
        std::fs::copy(&service_binaries()[1], bin.join("room-cli")).unwrap();
        // Harnesses run as the service's account until supervision runs them
        // as agent_uid; their tool commands reach the agent socket as the
        // agent account through this wrapper (which only execs once they
        // already are it).
        let wrapper = format!(
            "#!/bin/sh\nif [ \"$(id -u)\" = 0 ] && [ {uid} != 0 ]; then\n  exec setpriv --reuid={uid} --regid={gid} --clear-groups -- \"$@\"\nfi\nexec \"$@\"\n",
            uid = agent.uid,
            gid = agent.gid
        );
        std::fs::write(bin.join("as-agent"), wrapper).unwrap();
        std::fs::set_permissions(bin.join("as-agent"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        Shared { dir }
    }

    /// `bin/`.
    pub fn bin(&self) -> PathBuf {
        self.dir.join("bin")
    }

    /// The room-cli copy.
    pub fn room_cli(&self) -> PathBuf {
        self.bin().join("room-cli")
    }

    /// `drop/`, writable by scripts.
    pub fn drop(&self) -> PathBuf {
        self.dir.join("drop")
    }

    /// The agent socket of sandbox `name`.
    pub fn socket(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.sock"))
    }

    /// A shell command that runs room-cli with `args` (already quoted for
    /// sh) on sandbox `name`'s socket, as the agent account.
    pub fn cli(&self, name: &str, args: &str) -> String {
        format!(
            "ROOM_CORE_SOCKET={} {} {} {args}",
            self.socket(name).display(),
            self.bin().join("as-agent").display(),
            self.room_cli().display()
        )
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Starts a Core whose agent is `agent`, with its agent socket in `shared`
/// and the website at `website` signing in with `signin`.
pub fn start_core(
    shared: &Shared,
    agent: &AgentAccount,
    name: &str,
    website: &str,
    signin: &str,
) -> Service {
    start_service(json!({
        "agent_uid": agent.uid,
        "agent_socket": shared.socket(name),
        "website_url": website,
        "website_token": signin,
    }))
}

/// One sandbox of the website's config, for `core`.
pub fn sandbox(core: &Service, shared: &Shared, name: &str, signin: &str) -> Value {
    json!({
        "name": name,
        "core_url": core.base,
        "core_token": TOKEN,
        "signin_token": signin,
        "agent_socket": shared.socket(name),
        "agent_account": AGENT,
        "script_path": format!("{}:/usr/local/bin:/usr/bin:/bin", shared.bin().display()),
        "script_cwd": shared.drop(),
        "work_root": core.root.join("work"),
    })
}

/// The admin token of every test website.
pub const ADMIN: &str = "admin-token-for-tests";

/// The reference website, run from its binary; killed on drop.
pub struct Website {
    child: Child,
    /// `http://127.0.0.1:port`.
    pub url: String,
    /// Its state and log.
    pub dir: PathBuf,
}

impl Website {
    /// Starts `room-website` on `port` with the test defaults plus `extra`.
    pub fn start(port: u16, extra: Value) -> Website {
        let dir = temp_root();
        let mut config = json!({
            "listen": format!("127.0.0.1:{port}"),
            "state_dir": dir.join("state"),
            "admin_token": ADMIN,
            "tick_ms": 100,
        });
        for (k, v) in extra.as_object().unwrap() {
            config[k] = v.clone();
        }
        let path = dir.join("website.json");
        std::fs::write(&path, config.to_string()).unwrap();
        let log = std::fs::File::create(dir.join("website.log")).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_room-website"))
            .arg("--config")
            .arg(&path)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start room-website");
        let listen = dir.join("state/listen");
        let addr = wait_until("the website listens", Duration::from_secs(20), || {
            std::fs::read_to_string(&listen)
                .ok()
                .filter(|s| s.ends_with('\n'))
        });
        Website {
            child,
            url: format!("http://{}", addr.trim()),
            dir,
        }
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("website.log")).unwrap_or_default()
    }

    /// A request with a bearer token; status and JSON.
    pub fn call(&self, method: &str, path: &str, token: &str, body: Option<Value>) -> (u16, Value) {
        let req = ureq::request(method, &format!("{}{path}", self.url))
            .timeout(Duration::from_secs(30))
            .set("Authorization", &format!("Bearer {token}"));
        let result = match body {
            Some(b) => req.send_json(b),
            None => req.call(),
        };
        let resp = match result {
            Ok(r) | Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("{method} {path}: {e}"),
        };
        (resp.status(), resp.into_json().unwrap_or(Value::Null))
    }

    /// An app route (`/api/app/…`) as the signed-in user.
    pub fn app(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        self.call(method, &format!("/api/app{path}"), ADMIN, body)
    }

    /// What a Core signed in with `signin` gets for `POST /api/core/<endpoint>`.
    pub fn as_core(&self, signin: &str, endpoint: &str, body: Value) -> (u16, Value) {
        self.call("POST", &format!("/api/core/{endpoint}"), signin, Some(body))
    }

    /// Starts a thread for `owner` in `project` on `sandbox`; its ID.
    pub fn thread(&self, owner: &str, project: &str, sandbox: &str) -> String {
        let (status, v) = self.app(
            "POST",
            "/threads",
            Some(
                json!({"owner": owner, "project": project, "sandbox": sandbox, "agent": "claude"}),
            ),
        );
        assert_eq!(status, 201, "{v}\n{}", self.log());
        v["thread"]["id"].as_str().unwrap().to_string()
    }

    /// The owner's view of a loop.
    pub fn loop_view(&self, owner: &str, id: &str) -> Value {
        let (status, v) = self.app("GET", &format!("/loops?owner={owner}"), None);
        assert_eq!(status, 200, "{v}");
        v["loops"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no loop {id} for {owner}: {v}"))
    }

    /// Waits until the loop has ended `n` runs; its owner's view.
    pub fn await_runs(&self, owner: &str, id: &str, n: u64, limit: Duration) -> Value {
        wait_until(&format!("run {n} of loop {id}"), limit, || {
            let v = self.loop_view(owner, id);
            (v["runs"].as_u64() >= Some(n)).then_some(v)
        })
    }

    /// The owner's threads.
    pub fn threads(&self, owner: &str) -> Vec<Value> {
        let (_, v) = self.app("GET", &format!("/threads?owner={owner}"), None);
        v["threads"].as_array().cloned().unwrap_or_default()
    }
}

impl Drop for Website {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else {
            eprintln!("website log:\n{}", self.log());
        }
    }
}

static STEP: AtomicUsize = AtomicUsize::new(0);

/// Runs `cmd` as a tool command of session `id`'s harness (the fake
/// harness runs a `run: <cmd>` prompt with sh) and returns what it
/// recorded: `{"stdout", "stderr", "exit"}`.
pub fn in_thread(core: &Service, id: &str, cmd: &str) -> Value {
    // A unique prompt, so this turn's record is told apart from the others.
    let prompt = format!("run: : step-{}; {cmd}", STEP.fetch_add(1, Ordering::SeqCst));
    let (status, v) = core.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({ "prompt": prompt }),
    );
    assert_eq!(status, 200, "{v}");
    wait_until(
        &format!("the tool command {cmd:?}"),
        Duration::from_secs(60),
        || {
            core.records()
                .into_iter()
                .find(|r| r["prompt"] == prompt.as_str() && r.get("tool").is_some())
                .map(|r| r["tool"].clone())
        },
    )
}

/// What a process printed and its exit status.
#[derive(Debug)]
pub struct Out {
    /// Exit status (-1: a signal).
    pub code: i32,
    /// stdout.
    pub stdout: String,
    /// stderr.
    pub stderr: String,
}

/// Runs room-cli as a loop's check script would: as the agent account,
/// `CLOUDROOM_LOOP=<loop_id>`, on sandbox `name`'s socket.
pub fn as_script(
    shared: &Shared,
    agent: &AgentAccount,
    name: &str,
    loop_id: &str,
    args: &[&str],
) -> Out {
    let out = Command::new(shared.room_cli())
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("CLOUDROOM_LOOP", loop_id)
        .env("ROOM_CORE_SOCKET", shared.socket(name))
        .current_dir(shared.drop())
        .uid(agent.uid)
        .gid(agent.gid)
        .stdin(Stdio::null())
        .output()
        .expect("run room-cli");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The pids in process group `pgid`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // Fields after the command (which may hold spaces): state, ppid, pgrp.
            let after = &stat[stat.rfind(')')? + 2..];
            (after.split(' ').nth(2)?.parse::<i32>().ok()? == pgid).then_some(pid)
        })
        .collect()
}

/// The sum of Core's `room_core_sessions` gauges: how many sessions it has.
pub fn session_count(core: &Service) -> u64 {
    let (_, text) = core.get("/metrics");
    text.as_str()
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("room_core_sessions{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// A file's text, or "".
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}
