//! The reference website's configuration (`room-website --config FILE`,
//! JSON; unknown fields are refused): where it listens and keeps its state,
//! the script limit, and each sandbox it knows.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The website.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebsiteConfig {
    /// Loopback address to listen on (port 0: any; the bound address is
    /// written to `<state_dir>/listen`).
    pub listen: String,
    /// Loops, threads and launches, one JSON file each.
    pub state_dir: PathBuf,
    /// The base of the hook URLs it hands out; default `http://<listen>`.
    pub public_url: Option<String>,
    /// The bearer token of the app routes (`/api/app/…`), which stand in for
    /// the signed-in user's own pages (at least 16 characters).
    pub admin_token: String,
    /// A check script's time limit.
    pub script_limit_ms: u64,
    /// From SIGTERM to SIGKILL when a script passes its limit.
    pub kill_grace_ms: u64,
    /// Runs at once (each loop runs one at a time).
    pub runners: usize,
    /// How often the schedule is looked at.
    pub tick_ms: u64,
    /// The sandboxes whose Cores sign in to this website.
    pub sandboxes: Vec<SandboxConfig>,
}

impl Default for WebsiteConfig {
    fn default() -> Self {
        WebsiteConfig {
            listen: "127.0.0.1:7720".into(),
            state_dir: std::env::temp_dir().join("room-website"),
            public_url: None,
            admin_token: String::new(),
            script_limit_ms: 60_000,
            kill_grace_ms: 2_000,
            runners: 2,
            tick_ms: 1_000,
            sandboxes: Vec::new(),
        }
    }
}

/// One sandbox: its Core, its agent socket, and how its scripts run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Its name (what loops and threads record).
    pub name: String,
    /// Its Core's HTTP API, `http://127.0.0.1:7710`.
    pub core_url: String,
    /// Its Core's API token (for `POST /v1/sessions`).
    pub core_token: String,
    /// The token its Core signs in to this website with (its `website_token`).
    pub signin_token: String,
    /// Its Core's agent socket: a script's `ROOM_CORE_SOCKET`.
    pub agent_socket: PathBuf,
    /// The account scripts run as; absent: the website's own account.
    #[serde(default)]
    pub agent_account: Option<String>,
    /// A script's `PATH` (where it finds room-cli).
    #[serde(default = "default_path")]
    pub script_path: String,
    /// Where scripts run; default the agent account's home.
    #[serde(default)]
    pub script_cwd: Option<PathBuf>,
    /// Threads started here work in `<work_root>/<project>`.
    pub work_root: PathBuf,
    /// A wait before each launch reaches this Core, standing in for waking a
    /// sleeping sandbox (tests use it to show a killed script's spawn still
    /// completes).
    #[serde(default)]
    pub launch_delay_ms: u64,
}

fn default_path() -> String {
    "/usr/local/bin:/usr/bin:/bin".into()
}

impl WebsiteConfig {
    /// Loads and checks a config file.
    pub fn load(path: &Path) -> Result<WebsiteConfig, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read config {}: {e}", path.display()))?;
        let config: WebsiteConfig = serde_json::from_str(&text)
            .map_err(|e| format!("config {} is invalid: {e}", path.display()))?;
        config.validate()?;
        Ok(config)
    }

    /// Loopback only; unique sandbox names and sign-in tokens; non-zero
    /// limits.
    pub fn validate(&self) -> Result<(), String> {
        let addr: std::net::SocketAddr = self
            .listen
            .parse()
            .map_err(|_| format!("listen {:?} is not an address", self.listen))?;
        if !addr.ip().is_loopback() {
            return Err(format!("listen {} is not a loopback address", self.listen));
        }
        if self.admin_token.len() < 16 {
            return Err("admin_token must be at least 16 characters".into());
        }
        if self.script_limit_ms == 0 || self.tick_ms == 0 || self.runners == 0 {
            return Err("script_limit_ms, tick_ms and runners must be at least 1".into());
        }
        for (i, s) in self.sandboxes.iter().enumerate() {
            if !super::records::valid_key(&s.name) {
                return Err(format!(
                    "sandbox name {:?} must be 1-128 of [A-Za-z0-9_-]",
                    s.name
                ));
            }
            if s.signin_token.len() < 16 {
                return Err(format!(
                    "sandbox {}: signin_token must be at least 16 characters",
                    s.name
                ));
            }
            if !s.work_root.is_absolute() {
                return Err(format!("sandbox {}: work_root must be absolute", s.name));
            }
            for other in &self.sandboxes[..i] {
                if other.name == s.name {
                    return Err(format!("sandbox {} is listed twice", s.name));
                }
                if other.signin_token == s.signin_token {
                    return Err(format!(
                        "sandboxes {} and {} share a signin_token, so the website could not tell their Cores apart",
                        other.name, s.name
                    ));
                }
            }
        }
        Ok(())
    }
}
