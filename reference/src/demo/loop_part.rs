//! The demo's second part (seed 001): the reference website (`room-website`,
//! started from its binary) runs a loop whose check script
//! lists its loops and spawns a top-level thread; then a thread of the
//! project runs `room-cli loop list` and the demo prints what it shows,
//! the script's output included.
//!
//! The script runs as the agent account `room-agent` where there is one and
//! the demo runs as root (so the website can switch to it), else as the
//! current user, and the demo says which. Like the first part it needs no
//! network and no real CLIs.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use room_kit::Service;
use serde_json::{json, Value};

use super::wait::{wait_for, Error};

/// The agent account: the scripts' and room-cli's.
#[derive(Debug, Clone)]
pub struct Agent {
    /// `room-agent`, or `None` for the current user.
    pub name: Option<String>,
    /// Its uid (Core's `agent_uid`).
    pub uid: u32,
    /// Its gid.
    pub gid: u32,
}

impl Agent {
    /// `room-agent` if it exists, the demo runs as root and `setpriv` is
    /// there (for the harness's tool command); else the current user.
    pub fn detect() -> Agent {
        let root = nix::unistd::geteuid().is_root();
        let setpriv = Path::new("/usr/bin/setpriv").exists();
        match nix::unistd::User::from_name("room-agent").ok().flatten() {
            Some(u) if root && setpriv => Agent {
                name: Some(u.name),
                uid: u.uid.as_raw(),
                gid: u.gid.as_raw(),
            },
            _ => Agent {
                name: None,
                uid: nix::unistd::geteuid().as_raw(),
                gid: nix::unistd::getegid().as_raw(),
            },
        }
    }

    /// `cmd` (already quoted for sh) run as this account from a harness,
    /// which runs as the service's account.
    fn wrap(&self, cmd: &str) -> String {
        match &self.name {
            None => cmd.to_string(),
            Some(_) => format!(
                "if [ \"$(id -u)\" = 0 ]; then exec setpriv --reuid={} --regid={} --clear-groups -- {cmd}; fi; exec {cmd}",
                self.uid, self.gid
            ),
        }
    }
}

/// What the second part needs from the first.
pub struct Context<'a> {
    /// The demo's temp folder (mode 0755, so the agent account reaches it).
    pub root: &'a Path,
    /// Core: its API, its token, its agent socket, and the records of what
    /// its fake harnesses ran.
    pub core: &'a Service,
    /// The agent account.
    pub agent: &'a Agent,
    /// The port the website listens on (Core was told it).
    pub website_port: u16,
    /// The token Core signs in to the website with.
    pub signin: &'a str,
    /// The room-cli binary (copied where the agent account reaches it).
    pub cli: &'a Path,
    /// The room-website binary.
    pub website: &'a Path,
}

/// The check script the demo's loop runs.
pub const SCRIPT: &str = "echo \"my loops:\"\nroom-cli loop list\nroom-cli thread spawn --top-level --request-id demo-1 \"Summarise what changed today.\"\necho \"checked\" >&2";

/// The admin token of the demo's website.
const ADMIN: &str = "demo-admin-token";

struct Website(Child);

impl Drop for Website {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs the second part.
pub fn run(cx: &Context) -> Result<(), Error> {
    println!("\n== part two: a loop's check script (seed 001)");
    // A copy the agent account can reach (the build folder may be in a 0700 home).
    let bin = cx.root.join("bin");
    std::fs::create_dir_all(&bin)?;
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755))?;
    let cli = bin.join("room-cli");
    std::fs::copy(cx.cli, &cli)?;
    let scratch = cx.root.join("scripts");
    std::fs::create_dir_all(&scratch)?;
    std::fs::set_permissions(&scratch, std::fs::Permissions::from_mode(0o1777))?;
    match &cx.agent.name {
        Some(name) => println!("   scripts run as the agent account {name} (uid {})", cx.agent.uid),
        None => println!(
            "   no separate agent account to use (that takes room-agent and the demo running as root): scripts run as the current user (uid {})",
            cx.agent.uid
        ),
    }

    let state = cx.root.join("website");
    let socket = cx.core.socket();
    let config = json!({
        "listen": format!("127.0.0.1:{}", cx.website_port),
        "state_dir": state,
        "admin_token": ADMIN,
        "sandboxes": [{
            "name": "demo",
            "core_url": cx.core.base,
            "core_token": cx.core.token(),
            "signin_token": cx.signin,
            "agent_socket": socket,
            "agent_account": cx.agent.name,
            "script_path": format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display()),
            "script_cwd": scratch,
            "work_root": cx.root.join("work"),
        }],
    });
    let config_path = cx.root.join("website.json");
    std::fs::write(&config_path, config.to_string())?;
    let _website = Website(
        Command::new(cx.website)
            .arg("--config")
            .arg(&config_path)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .spawn()?,
    );
    let listen = wait_for(Duration::from_secs(10), || {
        std::fs::read_to_string(state.join("listen"))
            .ok()
            .filter(|s| s.ends_with('\n'))
    })?;
    let web = format!("http://{}", listen.trim());
    println!("   the reference website (room-website) listens on {web}");
    let app = |method: &str, path: &str, body: Option<Value>| -> Result<Value, Error> {
        let req = ureq::request(method, &format!("{web}/api/app{path}"))
            .set("Authorization", &format!("Bearer {ADMIN}"));
        Ok(match body {
            Some(b) => req.send_json(b)?,
            None => req.call()?,
        }
        .into_json()?)
    };

    println!("\n== the owner makes a loop: every minute (* * * * *), a new codex thread per run, with this check script:");
    for line in SCRIPT.lines() {
        println!("   | {line}");
    }
    let made = app(
        "POST",
        "/loops",
        Some(
            json!({"owner": "you", "project": "demo", "sandbox": "demo", "agent": "codex",
                    "name": "daily check", "schedule": "* * * * *", "script": SCRIPT}),
        ),
    )?;
    let id = made["loop"]["id"].as_str().unwrap_or_default().to_string();
    println!("   loop {id}");

    println!("\n== running it now (loop run) rather than waiting for the minute");
    app("POST", &format!("/loops/{id}/run"), None)?;
    let ran = wait_for(Duration::from_secs(60), || {
        let v = app("GET", "/loops?owner=you", None).ok()?;
        v["loops"]
            .as_array()?
            .iter()
            .find(|l| l["id"] == id.as_str() && l["runs"].as_u64() >= Some(1))
            .cloned()
    })?;
    println!("   last_error: {}", ran["last_error"]);

    println!("\n== what `room-cli loop list` shows in a thread of the project (its owner's):");
    let list = cx.agent.wrap(&format!(
        "env ROOM_CORE_SOCKET={} {} loop list",
        socket.display(),
        cli.display()
    ));
    let prompt = format!("run: {list}");
    app(
        "POST",
        "/threads",
        Some(
            json!({"owner": "you", "project": "demo", "sandbox": "demo", "agent": "claude",
                    "prompt": prompt}),
        ),
    )?;
    let tool = wait_for(Duration::from_secs(30), || {
        cx.core.records().into_iter().find_map(|r| {
            (r["prompt"] == prompt.as_str() && r.get("tool").is_some()).then(|| r["tool"].clone())
        })
    })?;
    let shown = serde_json::from_str::<Value>(tool["stdout"].as_str().unwrap_or_default())
        .map_or_else(
            |_| format!("{tool}"),
            |v| serde_json::to_string_pretty(&v).unwrap_or_default(),
        );
    for line in shown.lines() {
        println!("   {line}");
    }
    let listed: Value =
        serde_json::from_str(tool["stdout"].as_str().unwrap_or_default()).unwrap_or_default();
    if let Some(out) = listed["loops"]
        .as_array()
        .and_then(|ls| ls.iter().find(|l| l["id"] == id.as_str()))
        .and_then(|l| l["last_output"].as_str())
    {
        println!("\n== its last_output (stdout and stderr of the last run, in order), as text:");
        for line in out.lines() {
            println!("   | {line}");
        }
    }

    let threads = app("GET", "/threads?owner=you", None)?;
    if let Some(t) = threads["threads"]
        .as_array()
        .and_then(|ts| ts.iter().find(|t| t["request_id"] == "demo-1"))
    {
        let session = cx.core.session(t["id"].as_str().unwrap_or_default());
        println!(
            "\n== the thread the script spawned: session {} harness={} state={}",
            session["id"], session["harness"], session["state"]
        );
    }
    println!("\nDone: the loop's script ran as its loop, and its output waits in loop list for its owner.");
    Ok(())
}
