//! `cargo bench --bench service [-- SECTION]`: the service's figures, each
//! measured against the real room-core binary on loopback with fake
//! harnesses, and printed as a table (median and p99, and the watch-on vs
//! 250 ms polling ratio where the issue asks for one). The lag and waiting
//! sections keep the service's state on tmpfs when there is one, so that
//! 10,000 waiting starts are set up quickly. Sections: `lag`, `waiting`,
//! `classify`, `throughput`, `startup`, `spawn`, `hostile`, `follow`,
//! `approvals`, `queue` (all by default). docs/performance.md explains the figures and what bounds each.
//!
//! The binary has two more modes, used by the sections themselves:
//! - with `ROOM_BENCH_STAMP_DIR` set it is a fake codex harness: it writes the
//!   realtime clock (µs) to `<dir>/<name of its cwd>` first thing, prints
//!   codex's first event and exits (the service is configured to run this
//!   binary as `codex_program`, and its harnesses inherit the variable);
//!   given the prompt `stamps: N MS` on stdin it first prints N events
//!   `{"type":"stamp","us":<realtime µs>}`, MS ms apart (the follow section);
//! - with `ROOM_BENCH_CLIENT` set (the agent socket's path) it is an
//!   agent-socket client that times requests and prints them as JSON.
//!
//! `ROOM_BENCH_KEEP=1` keeps each service's temp folder (config, log, state);
//! `ROOM_BENCH_LAG_WATCH_ONLY=1` skips the polling half of the lag section;
//! `ROOM_BENCH_SUPERVISION=process_group` (or `cgroup`) sets every
//! service's `supervision` (default: the service's own choice, `auto`).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use room_core::procfs::Procfs;
use room_kit::{merge, quote, status_file, FakeWebsite, Model, LOOP_ID};
use room_machines::{classify, Caller, EnvView, ProcView};
use serde_json::{json, Value};

const STAMP_ENV: &str = "ROOM_BENCH_STAMP_DIR";
const CLIENT_ENV: &str = "ROOM_BENCH_CLIENT";
const CLIENT_RUNS_ENV: &str = "ROOM_BENCH_RUNS";
const TOKEN: &str = "bench-token-not-a-secret";
/// The depth of the agent-socket caller's ancestry (itself up to pid 1).
const DEPTH: usize = 10;

fn main() {
    // The service asks each harness program its version at start, and this
    // binary is its harness: it answers, and runs no bench.
    if std::env::args().nth(1).as_deref() == Some("--version") {
        println!("room-core bench harness");
        return;
    }
    if let Some(dir) = std::env::var_os(STAMP_ENV) {
        harness_mode(Path::new(&dir));
    }
    if let Some(socket) = std::env::var_os(CLIENT_ENV) {
        client_mode(Path::new(&socket));
        return;
    }
    // `cargo bench` passes `--bench`; any other word picks sections.
    let picked: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let run = |name: &str| picked.is_empty() || picked.iter().any(|p| name.contains(p.as_str()));
    let began = Instant::now();
    let mut table = Table::default();
    println!(
        "room-core service bench ({} CPUs; figures from one run)",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    if run("lag") {
        lag(&mut table);
    }
    if run("waiting") {
        waiting(&mut table);
    }
    if run("classify") {
        classification(&mut table);
    }
    if run("throughput") {
        throughput(&mut table);
    }
    if run("startup") {
        startup(&mut table);
    }
    if run("spawn") {
        spawn_cost(&mut table);
    }
    if run("hostile") {
        hostile(&mut table);
    }
    if run("follow") {
        follow(&mut table);
    }
    if run("approvals") {
        approval_round_trip(&mut table);
    }
    if run("queue") {
        message_cost(&mut table);
    }
    println!();
    table.print();
    println!("\nwhole run: {:.0} s", began.elapsed().as_secs_f64());
}

// ---------------------------------------------------------------- modes ----

/// The fake codex on its app server: the stamp as it starts, then the
/// least of the protocol that names the session (the answers to
/// `initialize`, `thread/start` and `turn/start`), the prompt's stamps,
/// `turn/completed`, and exit 0 at the end of stdin.
fn harness_mode(dir: &Path) -> ! {
    use std::io::BufRead;
    let at = realtime_us();
    let cwd = std::env::current_dir().unwrap_or_default();
    let name = cwd.file_name().map_or_else(
        || std::process::id().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let tmp = dir.join(format!(".{name}.tmp"));
    let _ =
        std::fs::write(&tmp, at.to_string()).and_then(|()| std::fs::rename(&tmp, dir.join(&name)));
    let thread = uuid::Uuid::new_v4().to_string();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Ok(m) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = &m["id"];
        match m["method"].as_str() {
            Some("initialize") => println!("{}", json!({"id": id, "result": {}})),
            Some("thread/start" | "thread/resume") => {
                println!(
                    "{}",
                    json!({"id": id, "result": {"thread": {"id": thread}}})
                )
            }
            Some("turn/start") => {
                println!("{}", json!({"id": id, "result": {"turn": {"id": "u1"}}}));
                let prompt = m["params"]["input"][0]["text"].as_str().unwrap_or_default();
                stamps(prompt);
                println!(
                    "{}",
                    json!({"method": "turn/completed",
                           "params": {"turn": {"id": "u1", "status": "completed"}}})
                );
            }
            _ => {}
        }
    }
    std::process::exit(0);
}

/// A `stamps: <n> <gap ms>` prompt's events, `gap` apart, each with the
/// realtime clock as it is printed.
fn stamps(prompt: &str) {
    let Some(rest) = prompt.trim().strip_prefix("stamps: ") else {
        return;
    };
    let mut words = rest
        .split_whitespace()
        .map(|w| w.parse::<u64>().unwrap_or(0));
    let (n, gap) = (words.next().unwrap_or(0), words.next().unwrap_or(0));
    for i in 0..n {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(gap));
        }
        // stdout is line-buffered: each line goes out as printed.
        println!(r#"{{"type":"stamp","n":{i},"us":{}}}"#, realtime_us());
    }
}

/// The agent-socket client at depth 10: times the /proc walk plus classify
/// on itself, a refused and a forwarded request; prints one JSON line.
fn client_mode(socket: &Path) {
    let runs: usize = std::env::var(CLIENT_RUNS_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let me = std::process::id();
    let procfs = Procfs::default();
    let depth = procfs.ancestry(me, |_| None).len();
    let walk: Vec<u64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            let a = procfs.ancestry(me, |_| None);
            std::hint::black_box(classify(None, &a));
            t.elapsed().as_nanos() as u64
        })
        .collect();
    let ask = |argv: &[&str]| -> (u64, Value) {
        let t = Instant::now();
        let mut s = UnixStream::connect(socket).expect("connect the agent socket");
        let req = json!({"argv": argv, "cwd": "/"}).to_string();
        s.write_all(req.as_bytes()).expect("send");
        s.shutdown(std::net::Shutdown::Write).expect("shutdown");
        let mut bytes = Vec::new();
        s.read_to_end(&mut bytes).expect("answer");
        let took = t.elapsed().as_nanos() as u64;
        (took, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    };
    let mut refused = Vec::new();
    let mut forwarded = Vec::new();
    for _ in 0..runs {
        let (t, a) = ask(&["thread", "list"]);
        assert_eq!(a["exit"], 1, "thread list is refused to a loop: {a}");
        refused.push(t);
        let (t, a) = ask(&["loop", "list"]);
        assert_eq!(a["exit"], 0, "loop list is forwarded: {a}");
        forwarded.push(t);
    }
    println!(
        "{}",
        json!({"depth": depth, "walk": walk, "refused": refused, "forwarded": forwarded})
    );
}

// --------------------------------------------------------------- helpers ----

fn realtime_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Median and p99 (nearest rank) of a sample.
fn stats(v: &[f64]) -> (f64, f64) {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    (rank(0.5), rank(0.99))
}

/// The printed result table.
#[derive(Default)]
struct Table {
    rows: Vec<[String; 5]>,
}

impl Table {
    fn row(&mut self, what: &str, setup: &str, median: String, p99: String, note: String) {
        let r = [what.into(), setup.into(), median, p99, note];
        println!("  {}", r.join(" | "));
        self.rows.push(r);
    }

    fn print(&self) {
        let head = ["figure", "setup", "median", "p99", "notes"];
        let mut w = head.map(str::len);
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let parts: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{c:<width$}", width = w[i]))
                .collect();
            println!("| {} |", parts.join(" | "));
        };
        line(&head.map(String::from));
        line(&w.map(|n| "-".repeat(n)));
        for r in &self.rows {
            line(r);
        }
    }
}

fn ms(x: f64) -> String {
    format!("{x:.2} ms")
}

fn us(x: f64) -> String {
    if x < 1.0 {
        format!("{:.0} ns", x * 1000.0)
    } else {
        format!("{x:.1} µs")
    }
}

static ROOTS: AtomicUsize = AtomicUsize::new(0);

/// The real service (room-kit's, on a folder of its own), with this bench
/// as its harnesses, and what the bench adds: the folder the harnesses
/// stamp into and one HTTP agent whose connections are reused.
struct Core {
    svc: room_kit::Service,
    stamps: PathBuf,
    agent: ureq::Agent,
}

impl std::ops::Deref for Core {
    type Target = room_kit::Service;

    fn deref(&self) -> &room_kit::Service {
        &self.svc
    }
}

impl Core {
    fn start(extra: Value) -> Core {
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

    fn pid(&self) -> u32 {
        self.svc.pid().expect("the service runs")
    }

    fn call(
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

    fn start_session(&self, body: &Value) -> Value {
        let (status, v) = Core::call(&self.agent, &self.base, "POST", "/v1/sessions", Some(body));
        assert_eq!(status, 201, "{v}");
        v
    }

    /// Waits (at most 10 s) until session `id` is in `state`.
    fn await_state(&self, id: &str, state: &str) {
        self.await_view(id, state, |v| v["state"] == state);
    }

    /// Waits (at most 10 s) until session `id`'s view satisfies `done`.
    fn await_view(&self, id: &str, what: &str, done: impl Fn(&Value) -> bool) {
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
    fn await_waiting(&self, id: &str) {
        self.await_view(id, "its wait", |v| !v["waiting_for"].is_null());
    }

    /// Starts `from..to` that wait for promised copies that never land, each
    /// in its own sandbox folder (made, so each has its own parent folder to
    /// watch), posted from four clients.
    fn add_waiting(&self, from: usize, to: usize) {
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
    fn inotify_watches(&self) -> usize {
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
    fn states(&self) -> std::collections::HashMap<String, u64> {
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
    fn cpu_threads(&self) -> std::collections::HashMap<String, u64> {
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
    fn cpu_since(&self, before: &std::collections::HashMap<String, u64>) -> f64 {
        self.cpu_threads()
            .iter()
            .map(|(tid, ns)| ns.saturating_sub(before.get(tid).copied().unwrap_or(0)))
            .sum::<u64>() as f64
            / 1e9
    }

    /// (utime + stime in seconds, VmRSS in KiB) of the service.
    fn cpu_and_rss(&self) -> (f64, u64) {
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
fn await_file(path: &Path, limit: Duration) -> String {
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

// ------------------------------------------------------------- 1. lag ----

/// Runs per (watch, waiting count): watch on, polling.
const LAG_RUNS_WATCH: usize = 200;
const LAG_RUNS_POLL: usize = 100;
/// Other starts waiting while the lag is measured. Polling stops at 1,000:
/// 10,000 starts polled every 250 ms keep the service busy (see the
/// waiting section), which is no lag measurement.
const LAG_WAITING: [usize; 3] = [1, 1_000, 10_000];
const LAG_WAITING_POLL: usize = 1_000;

/// A state dir on tmpfs, when there is one: thousands of waiting starts are
/// set up without an fsync each (the wake path writes nothing before the
/// spawn).
fn tmpfs_state(tag: &str) -> Value {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        return json!({});
    }
    let n = ROOTS.fetch_add(1, Ordering::SeqCst);
    json!({"state_dir": shm.join(format!("room-core-bench-{}-{tag}-{n}", std::process::id()))})
}

/// Merges JSON objects.
fn with(mut a: Value, b: Value) -> Value {
    merge(&mut a, b);
    a
}

impl Core {
    /// Starts a promised copy into `folder` (its harness stamps as `name`,
    /// the folder's own name) and returns its ID once it waits.
    fn start_promised(&self, name: &str, folder: &Path) -> String {
        let v = self.start_session(&json!({
            "workspace": format!("ws-{name}"),
            "folder": folder,
            "harness": "codex",
            "project_copy": true,
            "prompt": "go",
        }));
        let id = v["id"].as_str().unwrap().to_string();
        self.await_waiting(&id);
        id
    }

    /// When (realtime µs) the harness stamped as `name` ran; returns once
    /// session `id` has finished (its turn ended, its record written), so
    /// the next wake is measured on its own.
    fn harness_ran(&self, name: &str, id: &str) -> u64 {
        let stamp = await_file(&self.stamps.join(name), Duration::from_secs(5));
        self.await_state(id, "idle");
        stamp.trim().parse().unwrap()
    }
}

/// How long run `n` waits before its change lands: at a varying phase of
/// the 250 ms poll when polling; a short varying pause with the watch.
fn pause(watch: bool, n: usize) -> u64 {
    if watch {
        (n as u64 * 7) % 20
    } else {
        (n as u64 * 37) % 250
    }
}

/// One wake: the app's order (the mark says copying, the files land in the
/// folder, then the mark is rewritten in place to ready), `pause` ms after
/// the files land. Returns the lag from the writer's close of `ready` to
/// the harness's stamp, and how long the write itself took (ms).
fn wake_once(svc: &Core, name: &str, pause: u64) -> (f64, f64) {
    let folder = svc.folder(name);
    let id = svc.start_promised(name, &folder);
    let status = status_file(&folder);
    std::fs::write(&status, "copying\n").unwrap();
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("AGENTS.md"), "landed\n").unwrap();
    std::thread::sleep(Duration::from_millis(pause));
    let before = realtime_us();
    std::fs::write(&status, "ready\n").unwrap();
    let closed = realtime_us();
    let started = svc.harness_ran(name, &id);
    (
        started.saturating_sub(closed) as f64 / 1000.0,
        closed.saturating_sub(before) as f64 / 1000.0,
    )
}

/// One wake by a grandparent renamed into place over one renamed away:
/// `<g>/sandbox/<name>` says copying; a copy of it that says ready is
/// renamed over `<g>` after `<g>` is renamed away. Returns the lag from
/// the second rename to the harness's stamp (ms).
fn grandparent_once(svc: &Core, name: &str, pause: u64) -> f64 {
    let g = svc.folder(&format!("{name}-g"));
    let folder = g.join("sandbox").join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(status_file(&folder), "copying\n").unwrap();
    let id = svc.start_promised(name, &folder);
    let staged = svc.folder(&format!("{name}-g.new"));
    let staged_folder = staged.join("sandbox").join(name);
    std::fs::create_dir_all(&staged_folder).unwrap();
    std::fs::write(staged_folder.join("AGENTS.md"), "landed\n").unwrap();
    std::fs::write(status_file(&staged_folder), "ready\n").unwrap();
    std::thread::sleep(Duration::from_millis(pause));
    std::fs::rename(&g, svc.folder(&format!("{name}-g.old"))).unwrap();
    std::fs::rename(&staged, &g).unwrap();
    let renamed = realtime_us();
    let started = svc.harness_ran(name, &id);
    started.saturating_sub(renamed) as f64 / 1000.0
}

/// Where the floor's harness runs and stamps (removed after the section).
fn spawn_root() -> PathBuf {
    std::env::temp_dir().join(format!("room-core-bench-spawn-{}", std::process::id()))
}

/// One spawn of the stamp harness straight from the bench: spawn to stamp (ms).
fn spawn_floor_once() -> f64 {
    let root = spawn_root();
    let (stamps, cwd) = (root.join("stamps"), root.join("spawn"));
    std::fs::create_dir_all(&stamps).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let _ = std::fs::remove_file(stamps.join("spawn"));
    let before = realtime_us();
    let out = Command::new(std::env::current_exe().unwrap())
        .current_dir(&cwd)
        .env(STAMP_ENV, &stamps)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("spawn the harness");
    assert!(out.status.success());
    let at: u64 = std::fs::read_to_string(stamps.join("spawn"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    at.saturating_sub(before) as f64 / 1000.0
}

fn lag(table: &mut Table) {
    println!("\n1. wake lag: \"ready\" written -> harness process running");
    // The floor: the same harness spawned straight from this process (std's
    // posix_spawn, as the service does), from spawn to its stamp; measured
    // alone here, and again between the wakes below (this VM's speed drifts
    // with the load other work puts on it).
    let floor: Vec<f64> = (0..LAG_RUNS_WATCH).map(|_| spawn_floor_once()).collect();
    let (p50, p99) = stats(&floor);
    table.row(
        "harness spawn alone",
        "posix_spawn of the stamp harness from the bench, no service",
        ms(p50),
        ms(p99),
        format!("{LAG_RUNS_WATCH} runs; the floor under the wake lag (exec, dynamic loading)"),
    );
    let mut medians = std::collections::HashMap::new();
    let modes: &[bool] = if std::env::var_os("ROOM_BENCH_LAG_WATCH_ONLY").is_some() {
        &[true]
    } else {
        &[true, false]
    };
    let mode = |watch: bool| {
        if watch {
            "inotify watch"
        } else {
            "250 ms polling"
        }
    };
    for &watch in modes {
        let svc = Core::start(with(
            json!({"watch": watch, "copy_wait_ms": 3_600_000}),
            tmpfs_state("lag"),
        ));
        let mut waiting = 0;
        for others in LAG_WAITING {
            if !watch && others > LAG_WAITING_POLL {
                break;
            }
            svc.add_waiting(waiting, others);
            waiting = others;
            // Let the new waits settle (with polling: into their rhythm).
            std::thread::sleep(Duration::from_millis(500));
            let runs = if watch { LAG_RUNS_WATCH } else { LAG_RUNS_POLL };
            let mut beside = Vec::new();
            let (lags, writes): (Vec<f64>, Vec<f64>) = (0..runs)
                .map(|n| {
                    if watch {
                        beside.push(spawn_floor_once());
                    }
                    wake_once(&svc, &format!("lag-{others}-{n}"), pause(watch, n))
                })
                .unzip();
            let (p50, p99) = stats(&lags);
            let (write_p50, _) = stats(&writes);
            medians.insert((watch, others), p50);
            let note = if watch {
                let (beside_p50, _) = stats(&beside);
                // Each wake less the floor spawn just before it: drift in
                // this VM's speed cancels out.
                let paired: Vec<f64> = lags.iter().zip(&beside).map(|(l, f)| l - f).collect();
                let (over, _) = stats(&paired);
                format!(
                    "{runs} runs; {over:+.2} ms over the spawn floor (median of each wake less the floor spawn just before it; target within 0.5 ms); floor between these wakes {}; the writer's own write+close, before this, {}",
                    ms(beside_p50),
                    ms(write_p50)
                )
            } else {
                let on = medians.get(&(true, others)).copied().unwrap_or(f64::NAN);
                format!("{runs} runs; polling / watch median = {:.0}x", p50 / on)
            };
            table.row(
                "wake lag",
                &format!("{}, {others} other starts waiting", mode(watch)),
                ms(p50),
                ms(p99),
                note,
            );
        }
        let runs = if watch { LAG_RUNS_WATCH } else { LAG_RUNS_POLL };
        let lags: Vec<f64> = (0..runs)
            .map(|n| grandparent_once(&svc, &format!("gp-{n}"), pause(watch, n)))
            .collect();
        let (p50, p99) = stats(&lags);
        medians.insert((watch, 0), p50);
        let note = if watch {
            format!("{runs} runs; target p50 < 10 ms")
        } else {
            let on = medians.get(&(true, 0)).copied().unwrap_or(f64::NAN);
            format!("{runs} runs; polling / watch median = {:.0}x", p50 / on)
        };
        table.row(
            "grandparent-rename wake",
            &format!(
                "{}, a grandparent renamed over one renamed away, {waiting} other starts waiting",
                mode(watch)
            ),
            ms(p50),
            ms(p99),
            note,
        );
    }
    let _ = std::fs::remove_dir_all(spawn_root());
}

// --------------------------------------------------------- 2. waiting ----

const WAITING: [usize; 2] = [1_000, 10_000];
const WINDOW: Duration = Duration::from_secs(30);
/// 10,000 starts polled keep a core busy; a shorter window says as much.
const WINDOW_POLL_10K: Duration = Duration::from_secs(10);

fn waiting(table: &mut Table) {
    let max_watches = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
        .map_or_else(|_| "?".into(), |s| s.trim().to_string());
    println!(
        "\n2. waiting cost: {:?} promised copies that never land, each in its own sandbox folder (max_user_watches {max_watches})",
        WAITING
    );
    for watch in [true, false] {
        let svc = Core::start(with(
            json!({"watch": watch, "copy_wait_ms": 3_600_000}),
            tmpfs_state("waiting"),
        ));
        let (_, idle_rss) = svc.cpu_and_rss();
        let mut waiting = 0;
        for count in WAITING {
            svc.add_waiting(waiting, count);
            waiting = count;
            std::thread::sleep(Duration::from_secs(2));
            let window = if !watch && count > 1_000 {
                WINDOW_POLL_10K
            } else {
                WINDOW
            };
            let (cpu0, _) = svc.cpu_and_rss();
            let threads0 = svc.cpu_threads();
            let t0 = Instant::now();
            std::thread::sleep(window);
            let (cpu1, rss) = svc.cpu_and_rss();
            let exact_secs = svc.cpu_since(&threads0);
            let secs = t0.elapsed().as_secs_f64();
            let ticks = (cpu1 - cpu0) / secs * 100.0;
            let exact = exact_secs / secs * 100.0;
            let states = svc.states();
            assert_eq!(
                states.get("pending").copied(),
                Some(count as u64),
                "{states:?}"
            );
            let target = match (watch, count) {
                (true, 1_000) => "; target < 0.1%",
                (true, _) => "; target < 0.5%",
                _ => "",
            };
            table.row(
                "waiting cost",
                &format!(
                    "{}, {count} starts waiting",
                    if watch { "inotify watch" } else { "250 ms polling" }
                ),
                format!("{exact:.4}% of a core"),
                "-".into(),
                format!(
                    "scheduler's run time over a {secs:.0} s window: {:.2} ms of CPU (utime+stime: {ticks:.2}%){target}; RSS {:.1} MiB ({:.1} MiB before the starts; target < 50 MiB); {} inotify watches",
                    exact_secs * 1000.0,
                    rss as f64 / 1024.0,
                    idle_rss as f64 / 1024.0,
                    svc.inotify_watches()
                ),
            );
        }
    }
}

// ------------------------------------------------------ 3. classify ----

const CLASSIFY_RUNS: usize = 300;

fn classification(table: &mut Table) {
    println!(
        "\n3. classification: classify() alone, and an agent-socket request from depth {DEPTH}"
    );
    // classify() alone on a depth-10 ancestry, the marker on the farthest
    // process (the whole ancestry is scanned twice: harness, then marker).
    let mut ancestry: Vec<ProcView> = (0..DEPTH as u32)
        .map(|i| ProcView {
            pid: 1000 - i,
            harness: None,
            env: EnvView::Readable { loop_marker: None },
        })
        .collect();
    ancestry[DEPTH - 1].env = EnvView::Readable {
        loop_marker: Some(LOOP_ID.into()),
    };
    assert_eq!(classify(None, &ancestry), Caller::Loop(LOOP_ID.into()));
    let samples: Vec<f64> = (0..301)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..1000 {
                std::hint::black_box(classify(None, std::hint::black_box(&ancestry)));
            }
            t.elapsed().as_nanos() as f64 / 1000.0 / 1000.0
        })
        .collect();
    let (p50, p99) = stats(&samples);
    table.row(
        "classify() alone",
        "depth-10 ancestry in memory",
        us(p50),
        us(p99),
        "301 samples, each the mean of 1000 calls; target < 5 µs".into(),
    );

    let web = FakeWebsite::start();
    let svc = Core::start(json!({"website_url": web.url}));
    // A chain of shells under this process, the client at its bottom, so
    // that the client's ancestry (itself to pid 1) is DEPTH long.
    let own = Procfs::default()
        .ancestry(std::process::id(), |_| None)
        .len();
    let shells = DEPTH.saturating_sub(own + 1);
    let me = std::env::current_exe().unwrap();
    let mut script = format!("exec {}", quote(&me.to_string_lossy()));
    for _ in 0..shells {
        script = format!("sh -c {}; :", quote(&script));
    }
    let out = Command::new("sh")
        .arg("-c")
        .arg(if shells == 0 {
            script
        } else {
            format!("{script}; :")
        })
        .env(CLIENT_ENV, svc.socket())
        .env(CLIENT_RUNS_ENV, CLASSIFY_RUNS.to_string())
        .env("CLOUDROOM_LOOP", LOOP_ID)
        .env_remove(STAMP_ENV)
        .stderr(Stdio::inherit())
        .output()
        .expect("run the client chain");
    let line = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("{e}: {line}"));
    let depth = v["depth"].as_u64().unwrap();
    let get = |k: &str| -> Vec<f64> {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() / 1000.0)
            .collect()
    };
    let (p50, p99) = stats(&get("walk"));
    table.row(
        "/proc walk + classify()",
        &format!("the caller itself, real depth {depth}"),
        us(p50),
        us(p99),
        format!("{CLASSIFY_RUNS} runs, in the client process"),
    );
    let (p50, p99) = stats(&get("refused"));
    table.row(
        "agent-socket round trip",
        &format!("depth {depth}, refused (thread list from a loop)"),
        us(p50),
        us(p99),
        format!("{CLASSIFY_RUNS} runs; target p50 < 1 ms"),
    );
    let (p50, p99) = stats(&get("forwarded"));
    table.row(
        "agent-socket round trip",
        &format!("depth {depth}, forwarded (loop list) to the fake website"),
        us(p50),
        us(p99),
        format!("{CLASSIFY_RUNS} runs; target p50 < 1 ms"),
    );
    assert_eq!(
        web.calls().len(),
        CLASSIFY_RUNS,
        "every loop list reached the website"
    );
}

// ---------------------------------------------------- 4. throughput ----

const CLIENTS: usize = 8;
const POSTING: Duration = Duration::from_secs(8);

fn throughput(table: &mut Table) {
    println!(
        "\n4. start throughput: POST /v1/sessions from {CLIENTS} clients for {} s",
        POSTING.as_secs()
    );
    // The third run keeps the state on tmpfs (no fsync cost), when there is
    // one, to show what the store's fsyncs cost.
    let shm = Path::new("/dev/shm");
    let mut runs = vec![(false, None), (true, None)];
    if shm.is_dir() {
        runs.push((
            true,
            Some(shm.join(format!("room-core-bench-{}", std::process::id()))),
        ));
    }
    for (plan_only, state) in runs {
        let extra = match &state {
            Some(dir) => json!({"state_dir": dir}),
            None => json!({}),
        };
        let svc = Arc::new(Core::start(extra));
        let t0 = Instant::now();
        let workers: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let svc = svc.clone();
                std::thread::spawn(move || {
                    let agent = ureq::AgentBuilder::new()
                        .timeout(Duration::from_secs(30))
                        .build();
                    let mut lat = Vec::new();
                    let mut i = 0;
                    while t0.elapsed() < POSTING {
                        let name = format!("tp-{c}-{i}");
                        let mut body = json!({
                            "workspace": format!("ws-{name}"),
                            "folder": svc.folder(&name),
                            "harness": "codex",
                        });
                        if plan_only {
                            body["plan_only"] = json!(true);
                        } else {
                            body["prompt"] = json!("go");
                        }
                        let t = Instant::now();
                        let (status, v) =
                            Core::call(&agent, &svc.base, "POST", "/v1/sessions", Some(&body));
                        lat.push(t.elapsed().as_secs_f64() * 1000.0);
                        assert_eq!(status, 201, "{v}");
                        i += 1;
                    }
                    lat
                })
            })
            .collect();
        let lat: Vec<f64> = workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        let posted = t0.elapsed().as_secs_f64();
        let total = lat.len() as u64;
        // Nothing lost: every session reaches idle (its harness ran and
        // reported its thread; plan_only starts have no prompt to run).
        let deadline = Instant::now() + Duration::from_secs(120);
        let settled = loop {
            let states = svc.states();
            if states.get("idle").copied() == Some(total) {
                break t0.elapsed().as_secs_f64();
            }
            assert!(
                Instant::now() < deadline,
                "not every start settled: {states:?} of {total}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        if !plan_only {
            let stamps = std::fs::read_dir(&svc.stamps).unwrap().count() as u64;
            assert_eq!(stamps, total, "every blank start ran its harness once");
        }
        let (p50, p99) = stats(&lat);
        table.row(
            "start throughput",
            match (plan_only, &state) {
                (false, _) => "blank starts with a prompt (harness spawn), 8 clients",
                (true, None) => "plan_only starts (no prompt, no harness), 8 clients",
                (true, Some(_)) => "plan_only starts, state on tmpfs (no fsync cost), 8 clients",
            },
            ms(p50),
            ms(p99),
            format!(
                "{:.0} starts/s accepted ({total} in {posted:.1} s); all {} in {settled:.1} s = {:.0} starts/s",
                total as f64 / posted,
                if plan_only { "idle" } else { "spawned, reported and idle" },
                total as f64 / settled
            ),
        );
    }
}

// ------------------------------------------------------ 5. startup ----

/// Turns per harness in the startup section (real CLIs take ~1 s each).
const STARTUP_RUNS: usize = 15;

/// Starts a turn's spec through the service's own spawner
/// (`supervise::spawn`, as every turn starts), its stderr drained on a
/// thread of its own so a talkative CLI never blocks on a full pipe.
fn spawn_turn(
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

/// The real CLIs' own startup next to the fakes': a turn's command built as
/// the service builds it (`harness::command::build`: argv, environment,
/// prompt on stdin), spawned straight from the bench, timed from spawn to
/// the first event (the one that names the native session, which is what
/// ends a launch) and to exit. The real CLIs talk to the loopback fake model
/// (fixtures/fake_model_server.py), so the figures are the CLIs' own cost
/// with a model that answers at once: the real-world denominator of the
/// wake lag. A CLI not on PATH is left out with a note.
fn startup(table: &mut Table) {
    use room_core::harness::command::{self, Turn};
    use room_core::harness::speech::{Heard, Out, Said};
    use room_core::harness::{Harness, Programs};
    use room_kit::fixtures_dir;

    println!("\n5. harness startup: spawn -> first event (native ID) -> exit");
    let root = std::env::temp_dir().join(format!("room-core-bench-startup-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let model = Model::start(&root);
    let cli_env = model.cli_env(&root);
    let on_path = |name: &str| {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    };
    let version = |program: &Path| {
        Command::new(program)
            .arg("--version")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    let candidates = [
        (Harness::Claude, "real claude", on_path("claude")),
        (Harness::Codex, "real codex", on_path("codex")),
        (
            Harness::Claude,
            "fake-claude (python)",
            Some(fixtures_dir().join("fake-claude")),
        ),
        (
            Harness::Codex,
            "fake-codex (python)",
            Some(fixtures_dir().join("fake-codex")),
        ),
    ];
    let config = room_core::config::Config {
        state_dir: root.join("state"),
        ..room_core::config::Config::default()
    };
    let secrets = command::secrets(&config);
    for (harness, label, program) in candidates {
        let Some(program) = program else {
            println!("  {label}: not on PATH, left out (.ci/run installs it)");
            continue;
        };
        let programs = Programs {
            claude: program.clone(),
            codex: program.clone(),
        };
        let mut first = Vec::new();
        let mut exit = Vec::new();
        for n in 0..STARTUP_RUNS {
            let folder = root
                .join("work")
                .join(format!("{label}-{n}").replace(' ', "-"));
            std::fs::create_dir_all(&folder).unwrap();
            let turn = Turn {
                harness,
                native_id: None,
                plan_only: false,
                approvals: room_machines::session::ApprovalMode::Auto,
                folder: &folder,
            };
            let mut spec =
                command::build(&config, &programs, &secrets, &turn).expect("a turn's spec");
            spec.env
                .retain(|(k, _)| !cli_env.iter().any(|(c, _)| k == c.as_str()));
            spec.env
                .extend(cli_env.iter().map(|(k, v)| (k.into(), v.into())));
            let began = Instant::now();
            let (mut child, mut talker) = spawn_turn(spec);
            // The bench talks the turn's protocol itself: the prompt, what
            // the harness must be answered, and the end of its input once
            // its turn is done.
            let mut stdin = child.stdin.take();
            let say = |stdin: &mut Option<std::process::ChildStdin>, lines: Vec<Out>| {
                for out in lines {
                    if let Some(pipe) = stdin.as_mut() {
                        let _ = pipe.write_all(out.line.as_bytes());
                    }
                }
            };
            say(&mut stdin, talker.say(Said::Prompt("hi".into())));
            let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
            let mut named = None;
            for line in std::io::BufRead::lines(stdout) {
                let Ok(line) = line else { break };
                let hearing = talker.hear(&line);
                if named.is_none() && hearing.named.is_some() {
                    named = Some(began.elapsed());
                }
                say(&mut stdin, hearing.writes);
                if matches!(hearing.heard, Some(Heard::Finished { .. })) {
                    stdin = None;
                }
            }
            let status = child.wait().expect("the harness exits");
            let done = began.elapsed();
            assert!(status.success(), "{label} failed: {status}");
            first.push(
                named
                    .expect("a first event with the native ID")
                    .as_secs_f64()
                    * 1000.0,
            );
            exit.push(done.as_secs_f64() * 1000.0);
        }
        // The fakes take any argv as a turn: only the real CLIs are asked.
        let v = if label.starts_with("real") {
            version(&program)
        } else {
            String::new()
        };
        let (p50, p99) = stats(&first);
        table.row(
            "harness startup to first event",
            format!("{label} {v}").trim_end(),
            ms(p50),
            ms(p99),
            format!(
                "{STARTUP_RUNS} runs; spawn -> the event that names the session (ends a launch)"
            ),
        );
        let (p50, p99) = stats(&exit);
        table.row(
            "harness turn, spawn to exit",
            format!("{label} {v}").trim_end(),
            ms(p50),
            ms(p99),
            format!("{STARTUP_RUNS} runs; a one-answer turn against the loopback fake model"),
        );
    }
    match on_path("claude") {
        Some(claude) => {
            follow_up_latency(table, "claude", &claude, &cli_env);
            warm_floor(table, &claude, &cli_env, &root);
        }
        None => println!("  real claude: not on PATH, follow-ups left out"),
    }
    match on_path("codex") {
        Some(codex) => follow_up_latency(table, "codex", &codex, &cli_env),
        None => println!("  real codex: not on PATH, follow-ups left out"),
    }
    drop(model);
    if std::env::var_os("ROOM_BENCH_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&root);
    }
}

/// Follow-up messages timed per mode.
const FOLLOW_UPS: usize = 10;

/// A follow-up message to the real claude through the service: POST of the
/// message -> the turn's first event (`system`/`init`) read on the session's
/// stream. Cold: `linger_ms: 0`, every message spawns claude with
/// `--resume`; warm: within the linger, the message goes to the process
/// that ran the turn before.
fn follow_up_latency(
    table: &mut Table,
    harness: &str,
    program: &Path,
    cli_env: &[(String, String)],
) {
    // The turn's first event: claude's `system/init`, codex's `turn/started`
    // (a cold codex answers `initialize` first, which no turn starts).
    let first = match harness {
        "claude" => r#""subtype":"init""#,
        _ => r#""turn/started""#,
    };
    let mut medians = Vec::new();
    for (mode, linger) in [
        ("cold (spawn + resume)", 0u64),
        ("warm (within the linger)", 60_000),
    ] {
        let svc = room_kit::Service::builder(env!("CARGO_BIN_EXE_room-core"))
            .config(json!({format!("{harness}_program"): program, "linger_ms": linger}))
            .envs(cli_env.iter().cloned())
            .log_filter("warn")
            .start();
        let folder = svc.folder("follow-ups");
        let (status, v) = svc.post(
            "/v1/sessions",
            json!({"workspace": "ws-warm", "folder": folder, "harness": harness, "prompt": "first"}),
        );
        assert_eq!(status, 201, "{v}");
        let id = v["id"].as_str().unwrap().to_string();
        let idle = |svc: &room_kit::Service| {
            room_kit::wait_until("idle", Duration::from_secs(60), || {
                let v = svc.session(&id);
                (v["state"] == "idle" && v["queue"]["length"] == 0).then_some(v)
            })
        };
        idle(&svc);
        let mut took = Vec::new();
        for n in 0..FOLLOW_UPS {
            let (_, page) = svc.get(&format!("/v1/sessions/{id}/events?limit=1"));
            let after = page["last_seq"].as_u64().unwrap();
            let reader = first_event_reader(&svc.base, &svc.token(), &id, after, first);
            std::thread::sleep(Duration::from_millis(50));
            let began = realtime_us();
            let (status, v) = svc.post(
                &format!("/v1/sessions/{id}/messages"),
                json!({"prompt": format!("follow-up {n}")}),
            );
            assert_eq!(status, 200, "{v}");
            let read = reader.join().unwrap();
            took.push(read.saturating_sub(began) as f64 / 1000.0);
            idle(&svc);
        }
        let (p50, p99) = stats(&took);
        medians.push(p50);
        table.row(
            "follow-up message to its turn's first event",
            &format!("real {harness}, {mode}"),
            ms(p50),
            ms(p99),
            if medians.len() == 2 {
                format!(
                    "{FOLLOW_UPS} messages; POST -> {first} on the stream; warm is {:.0}x below cold; target warm p50 < 20 ms, >= 20x below cold",
                    medians[0] / medians[1]
                )
            } else {
                format!("{FOLLOW_UPS} messages; POST -> {first} on the stream")
            },
        );
    }
}

/// The floor under a warm follow-up: claude on stream-json driven straight
/// from the bench (its turn's command as the service builds it), one user
/// message after another, timed from the write to `system`/`init` on its
/// stdout. What the service's warm figure adds to this is its own.
fn warm_floor(table: &mut Table, claude: &Path, cli_env: &[(String, String)], root: &Path) {
    use room_core::harness::command::{self, Turn};
    use room_core::harness::speech::Said;
    use room_core::harness::{Harness, Programs};
    use std::io::BufRead;
    let folder = root.join("work").join("warm-floor");
    std::fs::create_dir_all(&folder).unwrap();
    let config = room_core::config::Config {
        state_dir: root.join("state"),
        ..room_core::config::Config::default()
    };
    let programs = Programs {
        claude: claude.to_path_buf(),
        codex: claude.to_path_buf(),
    };
    let turn = Turn {
        harness: Harness::Claude,
        native_id: None,
        plan_only: false,
        approvals: room_machines::session::ApprovalMode::Auto,
        folder: &folder,
    };
    let mut spec = command::build(&config, &programs, &command::secrets(&config), &turn)
        .expect("a turn's spec");
    spec.env
        .extend(cli_env.iter().map(|(k, v)| (k.into(), v.into())));
    let (mut child, mut talker) = spawn_turn(spec);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut until = |what: &str| {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                stdout.read_line(&mut line).unwrap() > 0,
                "claude ended before {what}"
            );
            if line.contains(what) {
                return;
            }
        }
    };
    for out in talker.say(Said::Prompt("first".into())) {
        stdin.write_all(out.line.as_bytes()).unwrap();
    }
    until(r#""type":"result""#);
    let mut took = Vec::new();
    for n in 0..FOLLOW_UPS {
        let line = room_core::harness::claude_protocol::user_message(&format!("follow-up {n}"));
        let began = Instant::now();
        stdin.write_all(line.as_bytes()).unwrap();
        until(r#""subtype":"init""#);
        took.push(began.elapsed().as_secs_f64() * 1000.0);
        until(r#""type":"result""#);
    }
    drop(stdin);
    let _ = child.wait();
    let (p50, p99) = stats(&took);
    table.row(
        "follow-up message to its turn's first event",
        "real claude, warm, straight from the bench (the floor)",
        ms(p50),
        ms(p99),
        format!("{FOLLOW_UPS} messages; write to its stdin -> system/init on its stdout: claude's own time"),
    );
}

/// Reads session `id`'s stream after `after` until the first harness event
/// of a turn (the one holding `first`); when it read it, in realtime µs.
fn first_event_reader(
    base: &str,
    token: &str,
    id: &str,
    after: u64,
    first: &'static str,
) -> std::thread::JoinHandle<u64> {
    use std::io::BufRead;
    let agent = ureq::AgentBuilder::new()
        .timeout_read(Duration::from_secs(60))
        .build();
    let resp = agent
        .get(&format!("{base}/v1/sessions/{id}/stream?after={after}"))
        .set("Authorization", &format!("Bearer {token}"))
        .call()
        .expect("open a stream");
    let mut reader = std::io::BufReader::new(resp.into_reader());
    std::thread::spawn(move || {
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                panic!("the stream ended before the turn's first event");
            }
            if line.starts_with("data: ") && line.contains(first) {
                return realtime_us();
            }
        }
    })
}
// --------------------------------------------------------- 6. spawn ----

const SPAWN_RUNS: usize = 200;
/// The pause before each spawn: turns start seconds apart, and the
/// kernel's cgroup work for the last turn (its exit, its cgroup's removal)
/// is done by then; back to back, each spawn would wait for the last one's.
const SPAWN_GAP: Duration = Duration::from_millis(10);

/// How one turn's process is started.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    /// std's `Command::spawn` with no `pre_exec`: glibc's posix_spawn.
    PosixSpawn,
    /// std's `Command::spawn` with a no-op `pre_exec`: fork + exec.
    Fork,
    /// `supervise::spawn`: clone(CLONE_VM | CLONE_VFORK), a process group.
    Supervise,
    /// The same leading a session (`setsid`): a scheduler autogroup here.
    SuperviseSession,
    /// `supervise::spawn` into a fresh cgroup (made before the timing).
    SuperviseCgroup,
}

impl Way {
    fn label(self) -> &'static str {
        match self {
            Way::PosixSpawn => "std Command::spawn (posix_spawn)",
            Way::Fork => "std Command::spawn + pre_exec (fork+exec)",
            Way::Supervise => "supervise::spawn (process group)",
            Way::SuperviseSession => "supervise::spawn (session: setsid)",
            Way::SuperviseCgroup => "supervise::spawn (process group, into a cgroup)",
        }
    }
}

/// The cost of starting one turn's process: the time the spawning thread
/// is held (the call) and the time until the harness's `main` runs (its
/// stamp), the stamp harness being this binary, with three pipes.
fn spawn_cost(table: &mut Table) {
    use room_core::supervise::{self, cgroup::CgroupRoot, SpawnSpec};
    use std::os::unix::process::CommandExt;

    println!("\n6. spawn cost: one turn's process, from the call to the harness's main");
    let root = std::env::temp_dir().join(format!("room-core-bench-clone-{}", std::process::id()));
    let (stamps, cwd) = (root.join("stamps"), root.join("spawn"));
    std::fs::create_dir_all(&stamps).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let me = std::env::current_exe().unwrap();
    let mut spec = SpawnSpec::new(&me, &cwd);
    spec.env = std::env::vars_os().collect();
    spec.set_env(STAMP_ENV, &stamps);
    let cgroups = CgroupRoot::find();
    if let Err(why) = &cgroups {
        println!("  (no cgroup row: {why})");
    }
    let mut ways = vec![
        Way::PosixSpawn,
        Way::Fork,
        Way::Supervise,
        Way::SuperviseSession,
    ];
    if cgroups.is_ok() {
        ways.push(Way::SuperviseCgroup);
    }
    let once = |way: Way, n: usize, spec: &mut SpawnSpec| -> (f64, f64) {
        let _ = std::fs::remove_file(stamps.join("spawn"));
        spec.cgroup = match (&cgroups, way) {
            (Ok(root), Way::SuperviseCgroup) => {
                let key = format!("bench-{}-{n}", std::process::id());
                Some(root.create(&key).expect("make a cgroup"))
            }
            _ => None,
        };
        spec.leader = match way {
            Way::SuperviseSession => supervise::Leader::Session,
            _ => supervise::Leader::ProcessGroup,
        };
        std::thread::sleep(SPAWN_GAP);
        let before = realtime_us();
        let t = Instant::now();
        let (call, status) = match way {
            Way::PosixSpawn | Way::Fork => {
                let mut cmd = Command::new(&me);
                cmd.current_dir(&cwd)
                    .env(STAMP_ENV, &stamps)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .process_group(0);
                if way == Way::Fork {
                    // SAFETY: a closure that does nothing; it only forces
                    // std to fork instead of posix_spawn.
                    unsafe { cmd.pre_exec(|| Ok(())) };
                }
                let mut child = cmd.spawn().expect("spawn");
                let call = t.elapsed();
                (call, child.wait().unwrap())
            }
            Way::Supervise | Way::SuperviseSession | Way::SuperviseCgroup => {
                let mut child = supervise::spawn(spec).expect("spawn");
                let call = t.elapsed();
                (call, child.wait().unwrap())
            }
        };
        assert!(status.success());
        if let Some(dir) = spec.cgroup.take() {
            std::fs::remove_dir(dir).unwrap();
        }
        let at: u64 = std::fs::read_to_string(stamps.join("spawn"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        (
            call.as_secs_f64() * 1000.0,
            at.saturating_sub(before) as f64 / 1000.0,
        )
    };
    // Twice: as the bench is, then with 256 MiB more of resident memory (a
    // fork copies page tables and faults on every page written after it;
    // a vfork-style spawn touches none of it).
    for (resident, extra) in [("bench as it is", 0), ("256 MiB more resident", 256 << 20)] {
        // Written (not zero pages), so it is resident.
        let ballast = vec![1u8; extra];
        let rss = std::fs::read_to_string("/proc/self/status")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:").map(|v| v.trim().to_string()))
            .unwrap_or_default();
        for &way in &ways {
            let mut calls = Vec::with_capacity(SPAWN_RUNS);
            let mut mains = Vec::with_capacity(SPAWN_RUNS);
            for n in 0..SPAWN_RUNS {
                let (c, m) = once(way, n, &mut spec);
                calls.push(c);
                mains.push(m);
            }
            std::hint::black_box(&ballast);
            let (c50, c99) = stats(&calls);
            let (m50, m99) = stats(&mains);
            table.row(
                "spawn call",
                &format!("{}, {resident} (RSS {rss})", way.label()),
                ms(c50),
                ms(c99),
                format!(
                    "{SPAWN_RUNS} runs, {} ms apart; the spawning thread is held this long",
                    SPAWN_GAP.as_millis()
                ),
            );
            table.row(
                "spawn to harness main",
                &format!("{}, {resident}", way.label()),
                ms(m50),
                ms(m99),
                format!("{SPAWN_RUNS} runs; includes exec and dynamic loading"),
            );
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}

// ------------------------------------------- 7. latency under hostiles ----

/// How long `GET /v1/sessions/{id}` is timed in each setting: long enough
/// for the hostile crowd to be cut off at its 5 s head deadline and to come
/// back twice.
const LATENCY_WINDOW: Duration = Duration::from_secs(12);
/// The pause between two timed requests (so the window samples its whole
/// length, not a burst).
const LATENCY_GAP: Duration = Duration::from_millis(2);
/// Hostile connections held open during the loaded half: half silent (they
/// connect and send nothing), half trickling a request head a byte at a time.
const HOSTILE: usize = 200;
/// How often each trickling connection sends its next byte.
const TRICKLE: Duration = Duration::from_millis(50);

/// Holds `HOSTILE` connections open to `addr` until `stop`: the service
/// closes each once its head is overdue (5 s), and a closed one is opened
/// again at once, as an attacker would. Returns how many were opened.
fn hostile_crowd(addr: std::net::SocketAddr, stop: Arc<std::sync::atomic::AtomicBool>) -> usize {
    use std::net::TcpStream;
    let open = |trickle: bool| {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_nonblocking(true).unwrap();
        let mut s = s;
        if trickle {
            let _ = s.write_all(b"GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ");
        }
        s
    };
    let mut crowd: Vec<(bool, TcpStream)> = (0..HOSTILE)
        .map(|i| (i % 2 == 1, open(i % 2 == 1)))
        .collect();
    let mut opened = HOSTILE;
    let mut byte = [0u8; 512];
    while !stop.load(Ordering::SeqCst) {
        for (trickle, s) in &mut crowd {
            let closed = match s.read(&mut byte) {
                Ok(_) => true,
                Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
            };
            let closed = closed || (*trickle && s.write_all(b"a").is_err());
            if closed {
                *s = open(*trickle);
                opened += 1;
            }
        }
        std::thread::sleep(TRICKLE);
    }
    opened
}

fn hostile(table: &mut Table) {
    println!(
        "\n7. GET /v1/sessions/{{id}} latency, alone and beside {HOSTILE} hostile connections"
    );
    let svc = Core::start(json!({}));
    let v = svc.start_session(&json!({
        "workspace": "ws-latency",
        "folder": svc.folder("latency"),
        "harness": "codex",
        "plan_only": true,
    }));
    let id = v["id"].as_str().unwrap().to_string();
    svc.await_state(&id, "idle");
    let addr: std::net::SocketAddr = svc.base.trim_start_matches("http://").parse().unwrap();
    let path = format!("/v1/sessions/{id}");
    // Each run: the latencies, and the service's CPU time over it (% of a core).
    let measure = || -> (Vec<f64>, f64) {
        let cpu = svc.cpu_threads();
        // A fresh keep-alive connection for each run, one request at a time.
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(10))
            .build();
        let began = Instant::now();
        let mut lat = Vec::new();
        while began.elapsed() < LATENCY_WINDOW {
            let t = Instant::now();
            let (status, _) = Core::call(&agent, &svc.base, "GET", &path, None);
            lat.push(t.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(status, 200);
            std::thread::sleep(LATENCY_GAP);
        }
        let busy = svc.cpu_since(&cpu) / began.elapsed().as_secs_f64() * 100.0;
        (lat, busy)
    };
    let (alone, cpu_alone) = measure();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let crowd = {
        let stop = stop.clone();
        std::thread::spawn(move || hostile_crowd(addr, stop))
    };
    // Let the crowd connect and start trickling before timing.
    std::thread::sleep(Duration::from_millis(500));
    let (loaded, cpu_loaded) = measure();
    stop.store(true, Ordering::SeqCst);
    let opened = crowd.join().unwrap();
    let (a50, a99) = stats(&alone);
    let (l50, l99) = stats(&loaded);
    table.row(
        "GET /v1/sessions/{id}",
        "alone, one keep-alive client",
        ms(a50),
        ms(a99),
        format!(
            "{} requests over {} s; service CPU {cpu_alone:.1}% of a core",
            alone.len(),
            LATENCY_WINDOW.as_secs()
        ),
    );
    table.row(
        "GET /v1/sessions/{id}",
        &format!("beside {HOSTILE} hostile connections (half silent, half trickling a head)"),
        ms(l50),
        ms(l99),
        format!(
            "{} requests over {} s; service CPU {cpu_loaded:.1}% of a core; {opened} hostile connections opened (each closed at its 5 s head deadline, then opened again); median {:.2}x alone, p99 {:.2}x; target p99 < 5 ms",
            loaded.len(),
            LATENCY_WINDOW.as_secs(),
            l50 / a50,
            l99 / a99
        ),
    );
}

// ------------------------------------------------------- 8. follow ----

/// Stamps per lag run, and the gap between them (each measured alone).
const FOLLOW_STAMPS: u64 = 200;
const FOLLOW_GAP_MS: u64 = 10;

/// An SSE reader of `id`'s stream after seq `after`: for each stamp event,
/// the realtime µs it was printed and read. Returns once it has `want`.
fn stamp_reader(
    base: &str,
    id: &str,
    after: u64,
    want: usize,
) -> std::thread::JoinHandle<Vec<(u64, u64)>> {
    use std::io::BufRead;
    let agent = ureq::AgentBuilder::new()
        .timeout_read(Duration::from_secs(30))
        .build();
    let resp = agent
        .get(&format!("{base}/v1/sessions/{id}/stream?after={after}"))
        .set("Authorization", &format!("Bearer {TOKEN}"))
        .call()
        .expect("open a stream");
    let mut reader = std::io::BufReader::new(resp.into_reader());
    std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut line = String::new();
        while got.len() < want {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            if !data.contains(r#""type":"stamp""#) {
                continue;
            }
            let read = realtime_us();
            let v: Value = serde_json::from_str(data.trim_end()).expect("an event");
            got.push((v["data"]["us"].as_u64().unwrap(), read));
        }
        got
    })
}

fn follow(table: &mut Table) {
    println!("\n8. following a session: harness prints -> SSE client reads; journal appends");
    let svc = Core::start(json!({}));
    let v = svc.start_session(&json!({
        "workspace": "ws-follow",
        "folder": svc.folder("follow"),
        "harness": "codex",
        "prompt": "first",
    }));
    let id = v["id"].as_str().unwrap().to_string();
    svc.await_state(&id, "idle");
    let mut medians = Vec::new();
    for readers in [1usize, 50] {
        // Each reader starts at the journal's end: the stamps come after.
        let (_, page) = Core::call(
            &svc.agent,
            &svc.base,
            "GET",
            &format!("/v1/sessions/{id}/events?limit=1"),
            None,
        );
        let after = page["last_seq"].as_u64().unwrap();
        let handles: Vec<_> = (0..readers)
            .map(|_| stamp_reader(&svc.base, &id, after, FOLLOW_STAMPS as usize))
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        let (status, _) = Core::call(
            &svc.agent,
            &svc.base,
            "POST",
            &format!("/v1/sessions/{id}/messages"),
            Some(&json!({"prompt": format!("stamps: {FOLLOW_STAMPS} {FOLLOW_GAP_MS}")})),
        );
        assert_eq!(status, 200);
        let mut lags = Vec::new();
        for h in handles {
            let got = h.join().unwrap();
            assert_eq!(
                got.len(),
                FOLLOW_STAMPS as usize,
                "every reader got every stamp"
            );
            lags.extend(
                got.iter()
                    .map(|(printed, read)| read.saturating_sub(*printed) as f64 / 1000.0),
            );
        }
        svc.await_state(&id, "idle");
        let (p50, p99) = stats(&lags);
        medians.push(p50);
        table.row(
            "event delivery lag",
            &format!("harness prints -> SSE client reads, {readers} reader(s)"),
            ms(p50),
            ms(p99),
            format!(
                "{} samples ({FOLLOW_STAMPS} stamps {FOLLOW_GAP_MS} ms apart{}); includes the fdatasync before serving; target p50 < 2 ms, p99 < 10 ms",
                lags.len(),
                if readers > 1 {
                    format!(", each read by all {readers}; median {:.2}x one reader", p50 / medians[0])
                } else {
                    String::new()
                }
            ),
        );
    }
    drop(svc);
    journal_throughput(table);
}

/// Requests timed in the approvals section.
const APPROVALS: usize = 40;

/// An app that answers each approval request as soon as the stream shows
/// it, against each fake harness (fixtures/fake_harness.py `asks:`) running
/// as the agent account, as `approvals: app` needs.
fn approval_round_trip(table: &mut Table) {
    println!(
        "\n9. approvals: harness asks -> approval_requested on the stream -> app answers -> harness reads it"
    );
    let agent = nix::unistd::User::from_name(room_kit::AGENT)
        .ok()
        .flatten()
        .filter(|_| nix::unistd::geteuid().is_root());
    let Some(agent) = agent else {
        println!("  skipped: needs root and the {} account", room_kit::AGENT);
        return;
    };
    let sockets = std::env::temp_dir().join(format!("room-core-bench-sock-{}", std::process::id()));
    std::fs::create_dir_all(&sockets).unwrap();
    std::fs::set_permissions(
        &sockets,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let svc = Core::start(json!({
        "agent_uid": agent.uid.as_raw(),
        "agent_socket": sockets.join("agent.sock"),
        "claude_program": fixtures.join("fake-claude"),
        "codex_program": fixtures.join("fake-codex"),
        "harness_env": ["FAKE_HARNESS_RECORD"],
    }));
    for harness in ["claude", "codex"] {
        round_trips(table, &svc, harness, &agent.name);
    }
    drop(svc);
    let _ = std::fs::remove_dir_all(&sockets);
}

/// One session of `harness` asking [`APPROVALS`] times, one after another.
fn round_trips(table: &mut Table, svc: &Core, harness: &str, account: &str) {
    let folder = svc.folder(&format!("asks-{harness}"));
    let v = svc.start_session(&json!({
        "workspace": "ws-asks",
        "folder": folder,
        "harness": harness,
        "approvals": "app",
        "prompt": format!("asks: {APPROVALS}"),
    }));
    let id = v["id"].as_str().unwrap().to_string();
    let answered = approver(&svc.base, &id, APPROVALS);
    let record = room_kit::wait_until("the round trips", Duration::from_secs(60), || {
        svc.records_in(&folder).into_iter().find(|r| {
            r["round_trips_us"]
                .as_array()
                .is_some_and(|a| a.len() == APPROVALS)
        })
    });
    assert_eq!(answered.join().unwrap(), APPROVALS);
    let took: Vec<f64> = record["round_trips_us"]
        .as_array()
        .unwrap()
        .iter()
        .map(|us| us.as_f64().unwrap() / 1000.0)
        .collect();
    let (p50, p99) = stats(&took);
    table.row(
        "approval round trip",
        &format!("fake {harness} as {account}, app answers at once"),
        ms(p50),
        ms(p99),
        format!(
            "{APPROVALS} requests one after another: the request journalled (fdatasync) and streamed, the answer's POST recorded (fdatasync) and written to the harness's stdin; the app's own time is its HTTP round trips; target p50 < 5 ms"
        ),
    );
}

/// Follows session `id`'s stream and allows each approval request as it
/// shows; how many it answered.
fn approver(base: &str, id: &str, want: usize) -> std::thread::JoinHandle<usize> {
    use std::io::BufRead;
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build();
    let (base, id) = (base.to_string(), id.to_string());
    std::thread::spawn(move || {
        let resp = agent
            .get(&format!("{base}/v1/sessions/{id}/stream"))
            .set("Authorization", &format!("Bearer {TOKEN}"))
            .call()
            .expect("open a stream");
        let mut reader = std::io::BufReader::new(resp.into_reader());
        let mut answered = 0;
        let mut line = String::new();
        while answered < want {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            if !data.contains(r#""kind":"approval_requested""#) {
                continue;
            }
            let v: Value = serde_json::from_str(data.trim_end()).expect("an event");
            let n = &v["data"]["id"];
            agent
                .post(&format!("{base}/v1/sessions/{id}/approvals/{n}"))
                .set("Authorization", &format!("Bearer {TOKEN}"))
                .send_json(json!({"decision": "allow"}))
                .expect("the answer is taken");
            answered += 1;
        }
        answered
    })
}

/// Appends to one journal in the bench's temp dir (the same disk as the
/// services' state dirs): one event per append, then batches.
fn journal_throughput(table: &mut Table) {
    use room_core::journal::{Journal, NewEvent};
    let dir = std::env::temp_dir().join(format!("room-core-bench-journal-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let event = || {
        NewEvent::harness(
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"I read the file and will now run the tests."}]},"session_id":"5b7e3a1c-8c1d-4f0e-9a57-2d6c1f0e9b21"}"#,
        )
        .unwrap()
    };
    let mut single = 0.0;
    for (batch, total) in [(1usize, 2000usize), (16, 16_000), (256, 64_000)] {
        let journal = Journal::new(&dir, &format!("cr_batch_{batch}"));
        let mut per_append = Vec::new();
        let began = Instant::now();
        for _ in 0..total / batch {
            let events: Vec<NewEvent> = (0..batch).map(|_| event()).collect();
            let t = Instant::now();
            journal.append(events, 1).expect("append");
            per_append.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let rate = total as f64 / began.elapsed().as_secs_f64();
        if batch == 1 {
            single = rate;
        }
        let (p50, p99) = stats(&per_append);
        table.row(
            "journal append",
            &format!(
                "{batch} event(s) per append (one write + fdatasync), ~210-byte harness events"
            ),
            ms(p50),
            ms(p99),
            format!(
                "{rate:.0} events/s ({total} events){}; times are per append",
                if batch > 1 {
                    format!(", {:.0}x one per append", rate / single)
                } else {
                    String::new()
                }
            ),
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Messages timed per queue length in the queue section.
const MESSAGES: usize = 200;
/// The queue the second half of the queue section posts behind.
const QUEUED: usize = 5_000;

/// `POST …/messages` to a paused session (so the prompt stays queued), from
/// the request to its 200, with one prompt waiting (each session's first
/// message, untimed, made its prompt log) and with [`QUEUED`] waiting: a
/// queued message is one append to the prompt log whatever the queue
/// holds, so the two should cost the same.
fn message_cost(table: &mut Table) {
    println!("\n10. queue: POST …/messages to a paused session, 1 and {QUEUED} prompts waiting");
    let svc = Core::start(json!({"max_queued_prompts": QUEUED + MESSAGES}));
    let paused = |name: &str| {
        let v = svc.start_session(&json!({
            "workspace": format!("ws-{name}"),
            "folder": svc.folder(name),
            "harness": "claude",
        }));
        let id = v["id"].as_str().unwrap().to_string();
        svc.await_state(&id, "idle");
        let (status, _) = Core::call(
            &svc.agent,
            &svc.base,
            "POST",
            &format!("/v1/sessions/{id}/stop"),
            Some(&json!({})),
        );
        assert_eq!(status, 200);
        id
    };
    let post = |id: &str, n: usize| {
        let began = Instant::now();
        let (status, v) = Core::call(
            &svc.agent,
            &svc.base,
            "POST",
            &format!("/v1/sessions/{id}/messages"),
            Some(&json!({"prompt": format!("prompt {n}: add a test for the parser's error path")})),
        );
        assert_eq!(status, 200, "{v}");
        began.elapsed().as_secs_f64() * 1000.0
    };
    // One waiting: each timed message goes to a paused session of its own.
    let empty: Vec<f64> = (0..MESSAGES)
        .map(|n| {
            let id = paused(&format!("q1-{n}"));
            post(&id, 0);
            post(&id, 1)
        })
        .collect();
    let id = paused("q5000");
    for n in 0..QUEUED {
        post(&id, n);
    }
    let full: Vec<f64> = (0..MESSAGES).map(|n| post(&id, QUEUED + n)).collect();
    let record = std::fs::metadata(svc.state.join("sessions").join(format!("{id}.json")))
        .map_or(0, |m| m.len());
    let (p50_empty, p99_empty) = stats(&empty);
    let (p50_full, p99_full) = stats(&full);
    table.row(
        "message, 1 waiting",
        "paused session, fake claude",
        ms(p50_empty),
        ms(p99_empty),
        format!("{MESSAGES} messages, each to its own paused session holding one: the prompt appended to its prompt log (fdatasync) and journalled (fdatasync)"),
    );
    table.row(
        &format!("message, {QUEUED} waiting"),
        "paused session, fake claude",
        ms(p50_full),
        ms(p99_full),
        format!(
            "{MESSAGES} more to one session holding {QUEUED}: p50 ratio {:.2} to 1 waiting (target at most 1.5); its record stays {record} bytes (waiting prompts by number)",
            p50_full / p50_empty
        ),
    );
}
