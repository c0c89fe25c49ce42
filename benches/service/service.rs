//! The real service a section starts (room-kit's, on a temp folder of its
//! own, with this binary as its harnesses) and what the sections ask it:
//! sessions, their states, its CPU, memory and inotify watches.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use room_kit::merge;
use serde_json::{json, Value};

use crate::{STAMP_ENV, TOKEN};
/// Numbers each service's folder, so two in one run never share one.
static ROOTS: AtomicUsize = AtomicUsize::new(0);

/// The real service (room-kit's, on a folder of its own), with this bench
/// as its harnesses, and what the bench adds: the folder the harnesses
/// stamp into and one HTTP agent whose connections are reused.
pub(crate) struct Core {
    /// The service itself.
    pub(crate) svc: room_kit::Service,
    /// Where its harnesses stamp, one file per harness cwd's name.
    pub(crate) stamps: PathBuf,
    /// The bench's HTTP agent, its connections kept alive.
    pub(crate) agent: ureq::Agent,
}

/// A section reads the service's own fields (base, state, folders) as
/// its own.
impl std::ops::Deref for Core {
    type Target = room_kit::Service;

    fn deref(&self) -> &room_kit::Service {
        &self.svc
    }
}

impl Core {
    /// Starts a service with the bench's config merged with `extra`.
    pub(crate) fn start(extra: Value) -> Core {
        let root = std::env::temp_dir().join(format!(
            "room-core-bench-{}-{}",
            std::process::id(),
            ROOTS.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&root);
        let stamps = root.join("stamps");
        std::fs::create_dir_all(&stamps).unwrap();
        // The agent socket's folder, even where the state dir is elsewhere.
        std::fs::create_dir_all(root.join("state")).unwrap();
        std::fs::create_dir_all(root.join("work")).unwrap();
        let me = std::env::current_exe().expect("the bench's own path");
        let mut config = json!({
            "token": TOKEN,
            "agent_socket": root.join("state").join("agent.sock"),
            "claude_program": me,
            "codex_program": me,
            // The bench's harness mode is chosen by this variable.
            "harness_env": [STAMP_ENV],
        });
        if let Ok(mode) = std::env::var("ROOM_BENCH_SUPERVISION") {
            config["supervision"] = json!(mode);
        }
        merge(&mut config, extra);
        // A state dir elsewhere (tmpfs) goes with the service.
        let svc = room_kit::Service::builder(env!("CARGO_BIN_EXE_room-core"))
            .root(&root)
            .config(config)
            .env(STAMP_ENV, stamps.to_string_lossy())
            .log_filter("info")
            .keep(std::env::var_os("ROOM_BENCH_KEEP").is_some())
            .start();
        Core {
            svc,
            stamps,
            agent: ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(30))
                .build(),
        }
    }

    /// The service's process ID.
    pub(crate) fn pid(&self) -> u32 {
        self.svc.pid().expect("the service runs")
    }

    /// One authorised request on `agent`: the status and the JSON answer
    /// (or the text, where it is not JSON).
    pub(crate) fn call(
        agent: &ureq::Agent,
        base: &str,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let req = agent
            .request(method, &format!("{base}{path}"))
            .set("Authorization", &format!("Bearer {TOKEN}"));
        let result = match body {
            Some(b) => req.send_json(b),
            None => req.call(),
        };
        let resp = match result {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("{method} {path}: {e}"),
        };
        let status = resp.status();
        let text = resp.into_string().unwrap_or_default();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// `POST /v1/sessions`, which must answer 201.
    pub(crate) fn start_session(&self, body: &Value) -> Value {
        let (status, v) = Core::call(&self.agent, &self.base, "POST", "/v1/sessions", Some(body));
        assert_eq!(status, 201, "{v}");
        v
    }

    /// Waits (at most 10 s) until session `id` is in `state`.
    pub(crate) fn await_state(&self, id: &str, state: &str) {
        self.await_view(id, state, |v| v["state"] == state);
    }

    /// Waits (at most 10 s) until session `id`'s view satisfies `done`.
    pub(crate) fn await_view(&self, id: &str, what: &str, done: impl Fn(&Value) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (_, v) = Core::call(
                &self.agent,
                &self.base,
                "GET",
                &format!("/v1/sessions/{id}"),
                None,
            );
            if done(&v) {
                return;
            }
            assert!(Instant::now() < deadline, "{id} never got {what}: {v}");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Waits until session `id` waits for its copy (the 201 answers before
    /// the launch's first read, which runs on the service's event pool).
    pub(crate) fn await_waiting(&self, id: &str) {
        self.await_view(id, "its wait", |v| !v["waiting_for"].is_null());
    }

    /// Starts `from..to` that wait for promised copies that never land, each
    /// in its own sandbox folder (made, so each has its own parent folder to
    /// watch), posted from four clients.
    pub(crate) fn add_waiting(&self, from: usize, to: usize) {
        /// Clients posting the starts at once.
        const CLIENTS: usize = 4;
        std::thread::scope(|scope| {
            for c in 0..CLIENTS {
                scope.spawn(move || {
                    for i in (from + c..to).step_by(CLIENTS) {
                        let sandbox = self.folder(&format!("sb-{i}"));
                        std::fs::create_dir_all(&sandbox).unwrap();
                        let v = self.start_session(&json!({
                            "workspace": format!("ws-wait-{i}"),
                            "folder": sandbox.join("code"),
                            "harness": "codex",
                            "project_copy": true,
                            "prompt": "never runs",
                        }));
                        self.await_waiting(v["id"].as_str().unwrap());
                    }
                });
            }
        });
    }

    /// The number of inotify watches the service holds (from its fdinfo).
    pub(crate) fn inotify_watches(&self) -> usize {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{}/fd", self.pid())) else {
            return 0;
        };
        fds.flatten()
            .filter(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy().contains("inotify"))
            })
            .filter_map(|fd| {
                let info = format!(
                    "/proc/{}/fdinfo/{}",
                    self.pid(),
                    fd.file_name().to_string_lossy()
                );
                std::fs::read_to_string(info).ok()
            })
            .map(|info| {
                info.lines()
                    .filter(|l| l.starts_with("inotify wd:"))
                    .count()
            })
            .sum()
    }

    /// Sessions by state, from /metrics.
    pub(crate) fn states(&self) -> std::collections::HashMap<String, u64> {
        let resp = self
            .agent
            .get(&format!("{}/metrics", self.base))
            .set("Authorization", &format!("Bearer {TOKEN}"))
            .call()
            .expect("metrics");
        let text = resp.into_string().unwrap_or_default();
        text.lines()
            .filter_map(|l| {
                let rest = l.strip_prefix("room_core_sessions{state=\"")?;
                let (state, n) = rest.split_once("\"} ")?;
                Some((state.to_string(), n.trim().parse().ok()?))
            })
            .collect()
    }

    /// Time on CPU of each of the service's threads, in ns, from the
    /// scheduler (`/proc/PID/task/*/schedstat`): exact, where utime and
    /// stime are sampled at the tick.
    pub(crate) fn cpu_threads(&self) -> std::collections::HashMap<String, u64> {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", self.pid())) else {
            return Default::default();
        };
        tasks
            .flatten()
            .filter_map(|t| {
                let s = std::fs::read_to_string(t.path().join("schedstat")).ok()?;
                let ns = s.split_whitespace().next()?.parse::<u64>().ok()?;
                Some((t.file_name().to_string_lossy().into_owned(), ns))
            })
            .collect()
    }

    /// Seconds on CPU since `before` (a [`Core::cpu_threads`]), thread by
    /// thread: a thread that ended meanwhile would otherwise take its whole
    /// past with it (one that began and ended inside the window is missed).
    pub(crate) fn cpu_since(&self, before: &std::collections::HashMap<String, u64>) -> f64 {
        self.cpu_threads()
            .iter()
            .map(|(tid, ns)| ns.saturating_sub(before.get(tid).copied().unwrap_or(0)))
            .sum::<u64>() as f64
            / 1e9
    }

    /// (utime + stime in seconds, VmRSS in KiB) of the service.
    pub(crate) fn cpu_and_rss(&self) -> (f64, u64) {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap();
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        // After the comm: state is field 3, utime 14, stime 15 (1-based).
        let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
        let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .unwrap_or(100) as f64;
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let rss = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        (ticks as f64 / hz, rss)
    }
}

/// Waits for `path` to exist and returns its content. The stamp in it says
/// when the harness ran, so it is looked for only every 2 ms: a tighter loop
/// would take CPU from the service and the harness on this 2-core VM.
pub(crate) fn await_file(path: &Path, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(s) = std::fs::read_to_string(path) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}
/// A state dir on tmpfs, when there is one: thousands of waiting starts are
/// set up without an fsync each (the wake path writes nothing before the
/// spawn).
pub(crate) fn tmpfs_state(tag: &str) -> Value {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        return json!({});
    }
    let n = ROOTS.fetch_add(1, Ordering::SeqCst);
    json!({"state_dir": shm.join(format!("room-core-bench-{}-{tag}-{n}", std::process::id()))})
}

/// Starts a session on room-kit's service `svc` with `body`: its ID, or
/// why the service did not answer 201 with one.
pub(crate) fn start_session(svc: &room_kit::Service, body: Value) -> Result<String, String> {
    let (status, v) = svc.post("/v1/sessions", body);
    if status != 201 {
        return Err(format!("start a session: {status} {v}"));
    }
    v["id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| "a session without an ID".into())
}

/// Merges JSON objects.
pub(crate) fn with(mut a: Value, b: Value) -> Value {
    merge(&mut a, b);
    a
}

/// Starts a turn's spec through the service's own spawner
/// (`supervise::spawn`, as every turn starts), its stderr drained on a
/// thread of its own so a talkative CLI never blocks on a full pipe.
pub(crate) fn spawn_turn(
    spec: room_core::harness::command::TurnSpec,
) -> (
    room_core::supervise::Child,
    room_core::harness::talk::Talker,
) {
    let (spec, talker) = spec.into_spawn();
    let mut child = room_core::supervise::spawn(&spec).expect("spawn the harness");
    if let Some(mut stderr) = child.stderr.take() {
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    }
    (child, talker)
}

/// The spec the service builds for a claude turn in `folder` (an `auto`
/// approvals turn, no session to resume) with `claude` as its program and
/// the state under `root`: what the bench runs or reads beside the
/// service, so both run claude alike.
pub(crate) fn claude_turn_spec(
    root: &Path,
    claude: &Path,
    folder: &Path,
) -> Result<room_core::harness::command::TurnSpec, String> {
    use room_core::harness::command::{self, Turn};
    use room_core::harness::{Harness, Programs};
    let config = room_core::config::Config {
        state_dir: root.join("state"),
        ..room_core::config::Config::default()
    };
    let programs = Programs {
        claude: claude.to_path_buf(),
        codex: claude.to_path_buf(),
    };
    let turn = Turn {
        agent: None,
        harness: Harness::Claude,
        native_id: None,
        cut: None,
        fork: false,
        plan_only: false,
        approvals: room_machines::session::ApprovalMode::Auto,
        folder,
        options: Default::default(),
        mcp: None,
    };
    command::build(&config, &programs, &command::secrets(&config), &turn).map_err(|e| e.to_string())
}
