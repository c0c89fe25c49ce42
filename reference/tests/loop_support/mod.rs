//! Helpers for the loop's end-to-end tests (tests/loop_e2e.rs): the agent
//! account, a folder it can reach, Cores beside it, the reference website
//! started from its binary, and room-cli run inside a real session's
//! harness or as a loop's script.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use room_kit::{temp_root, wait_until, Out, Service, AGENT};
use room_reference::account::AgentAccount;
use serde_json::{json, Value};

use crate::reference_support::{service_binaries, start_service};

/// The agent account, when this test can run scripts as it (room-kit's
/// [`room_kit::agent_account`]: it exists and the tests run as root);
/// otherwise `None`, after a skip.
pub fn agent_account(test: &str) -> Option<AgentAccount> {
    room_kit::agent_account(test)?;
    AgentAccount::lookup(AGENT)
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
        "core_token": core.token(),
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
    /// Starts `room-website` on `held`'s port with the test defaults plus
    /// `extra`. The port stays held until the website is about to bind it,
    /// so a service started meanwhile cannot be given it.
    pub fn start(held: std::net::TcpListener, extra: Value) -> Website {
        let port = held.local_addr().unwrap().port();
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
        drop(held);
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
    out.into()
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
