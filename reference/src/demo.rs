//! `room-demo`: starts the service (the room-core binary) on its defaults
//! in a temp state dir, starts a session that promises a project copy into a
//! temp folder, shows it pending while the copy runs, writes the files and
//! `ready`, and shows it started with the names its harness saw. The second
//! part (`loop_part`) runs a loop's check script through the reference
//! website and shows what `room-cli loop list` says afterwards.

mod loop_part;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

type Error = Box<dyn std::error::Error>;

/// Runs the demo; the temp folder is removed at the end.
pub fn run() -> Result<(), Error> {
    let bins = binaries()?;
    let root = std::env::temp_dir().join(format!("room-core-demo-{}", std::process::id()));
    std::fs::create_dir_all(&root)?;
    // The agent account reaches its socket and room-cli in here.
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755))?;
    let result = demo(&root, &bins);
    let _ = std::fs::remove_dir_all(&root);
    result
}

/// The binaries the demo starts: room-core, room-cli, room-website.
type Binaries = [PathBuf; 3];

/// The service's binaries and the website's, beside this one (built first
/// when cargo ran the demo: `cargo run` builds room-demo only).
fn binaries() -> Result<Binaries, Error> {
    let names = ["room-core", "room-cli", "room-website"];
    let dir = crate::workspace::profile_dir()?;
    if std::env::var_os("CARGO").is_some() && names.iter().any(|n| !dir.join(n).exists()) {
        println!(
            "== building room-core, room-cli and room-website (cargo run builds room-demo only)"
        );
    }
    crate::workspace::binaries(names)
}

struct Service(Child);

impl Drop for Service {
    fn drop(&mut self) {
        // SIGTERM, so the service stops the way it does in production.
        let pid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.0.wait();
    }
}

fn demo(root: &Path, [core, cli, website]: &Binaries) -> Result<(), Error> {
    let state = root.join("state");
    let records = root.join("records");
    let folder = root.join("code");
    let config = root.join("config.json");
    // The harnesses run as the agent account where there is one, and record
    // what they saw in here.
    std::fs::create_dir_all(&records)?;
    std::fs::set_permissions(&records, std::fs::Permissions::from_mode(0o1777))?;
    // Part two's website: Core is told where it will listen, and how to sign in.
    let agent = loop_part::Agent::detect();
    let website_port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let signin = uuid::Uuid::new_v4().simple().to_string();
    let socket = root.join("agent.sock");
    std::fs::write(
        &config,
        json!({
            "listen": "127.0.0.1:0",
            "state_dir": state,
            // The fake harnesses even where the real CLIs are installed: the
            // demo needs no network and records what each harness saw.
            "claude_program": room_core::harness::fixtures_dir().join("fake-claude"),
            "codex_program": room_core::harness::fixtures_dir().join("fake-codex"),
            // Where they record what they saw (the harness environment is
            // an allowlist).
            "harness_env": ["FAKE_HARNESS_RECORD"],
            "agent_socket": socket,
            "agent_uid": agent.uid,
            "website_url": format!("http://127.0.0.1:{website_port}"),
            "website_token": signin,
        })
        .to_string(),
    )?;
    println!(
        "== starting room-core with the fake harnesses, state dir {}",
        state.display()
    );
    let _service = Service(
        Command::new(core)
            .args(["--config", &config.to_string_lossy()])
            .env("FAKE_HARNESS_RECORD", &records)
            .env("RUST_LOG", "warn")
            .env_remove("CLOUDROOM_API_URL")
            .spawn()?,
    );
    let addr = wait_for(Duration::from_secs(10), || {
        std::fs::read_to_string(state.join("listen"))
            .ok()
            .map(|s| s.trim().to_string())
    })?;
    let token = std::fs::read_to_string(state.join("token"))?;
    let base = format!("http://{addr}");
    let auth = format!("Bearer {}", token.trim());
    let get = |path: &str| -> Result<Value, Error> {
        Ok(ureq::get(&format!("{base}{path}"))
            .set("Authorization", &auth)
            .call()?
            .into_json()?)
    };

    let start = json!({
        "workspace": "demo-workspace",
        "folder": folder,
        "harness": "claude",
        "project_copy": true,
        "prompt": "Which files do you see?",
    });
    println!("\n== POST /v1/sessions {start}");
    let session: Value = ureq::post(&format!("{base}/v1/sessions"))
        .set("Authorization", &auth)
        .send_json(start)?
        .into_json()?;
    let id = session["id"].as_str().unwrap_or_default().to_string();
    show(&session);

    std::thread::sleep(Duration::from_secs(1));
    let status_file = room_core::files::status_file(&folder);
    println!("\n== the app marks {} as copying", status_file.display());
    std::fs::write(&status_file, "copying\n")?;
    std::thread::sleep(Duration::from_millis(500));
    show(&get(&format!("/v1/sessions/{id}"))?);

    println!("\n== the files land, then the mark says ready");
    write_project(&folder)?;
    std::fs::write(&status_file, "ready\n")?;
    let started = wait_for(Duration::from_secs(10), || {
        let v = get(&format!("/v1/sessions/{id}")).ok()?;
        (v["state"] != "pending" && !v["native_id"].is_null()).then_some(v)
    })?;
    show(&started);

    let record: Value = wait_for(Duration::from_secs(10), || {
        let entry = std::fs::read_dir(&records).ok()?.flatten().next()?;
        serde_json::from_slice(&std::fs::read(entry.path()).ok()?).ok()
    })?;
    println!(
        "\n== the harness ({}) started in {} and saw {}",
        record["harness"], record["cwd"], record["names"]
    );
    println!("\nDone: the session waited for its project copy, then started.");
    loop_part::run(&loop_part::Context {
        root,
        base: &base,
        token: token.trim(),
        records: &records,
        agent: &agent,
        website_port,
        signin: &signin,
        socket: &socket,
        cli,
        website,
    })
}

fn show(v: &Value) {
    println!(
        "   session {}: state={} waiting_for={} native_id={} agent_start_ms={}",
        v["id"], v["state"], v["waiting_for"], v["native_id"], v["agent_start_ms"]
    );
}

fn write_project(folder: &Path) -> std::io::Result<()> {
    let skills: [PathBuf; 2] = [
        folder.join(".claude/skills/probe-claude-real"),
        folder.join(".agents/skills/probe-agents-real"),
    ];
    for s in &skills {
        std::fs::create_dir_all(s)?;
        std::fs::write(s.join("SKILL.md"), "---\nname: probe\n---\n")?;
    }
    std::fs::write(folder.join("CLAUDE.md"), "CLAUDE_MD_MARKER_7731\n")?;
    std::fs::write(folder.join("AGENTS.md"), "AGENTS_MD_MARKER_4412\n")
}

fn wait_for<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Result<T, Error> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return Ok(v);
        }
        if Instant::now() > deadline {
            return Err("timed out".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
