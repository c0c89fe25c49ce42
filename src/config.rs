//! The service's configuration: a JSON file whose every field has an embedded
//! default, so `room-core` runs with no file at all.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::harness::codex::protocol::ApprovalPolicy;
use crate::harness::modes::{ClaudePermissionMode, CodexSandbox, Modes};

/// Everything room-core can be told. Unknown fields are refused so a typo in a
/// config file is an error, not a silently ignored setting.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Loopback address of the app's HTTP API.
    pub listen: String,
    /// Bearer token the app must send; when absent, one is generated and kept
    /// in `<state_dir>/token` (mode 0600). Never logged.
    pub token: Option<String>,
    /// Where sessions, queued prompts and waiting starts are persisted.
    pub state_dir: PathBuf,
    /// The agent socket room-cli connects to; default `<state_dir>/agent.sock`.
    /// With `agent_uid` another account, set it to a path that account can
    /// reach and no other can write: the default, in the service's 0700 state
    /// folder, is refused at start (docs/agent-socket.md).
    pub agent_socket: Option<PathBuf>,
    /// The uid allowed on the agent socket; default the service's own uid.
    pub agent_uid: Option<u32>,
    /// The claude CLI to run: a path, or a name looked up on `PATH`
    /// (default `claude`). Nothing stands in for it when it is not there:
    /// claude sessions fail their launch, saying so.
    pub claude_program: PathBuf,
    /// The codex CLI to run, as `claude_program` (default `codex`).
    pub codex_program: PathBuf,
    /// Startup permits (harness starts at once); 0 means the CPU count.
    pub startup_permits: usize,
    /// `PROJECT_COPY_WAIT` in ms.
    pub copy_wait_ms: u64,
    /// `MARK_MAX_AGE` in ms.
    pub mark_max_age_ms: u64,
    /// `POLL` in ms: the fallback read interval of a waiting start.
    pub poll_ms: u64,
    /// Watch status files with inotify (off: polling only, as upstream does).
    pub watch: bool,
    /// The website's base URL; `CLOUDROOM_API_URL` in the environment wins.
    pub website_url: Option<String>,
    /// The token Core signs in to the website with. Never logged.
    pub website_token: Option<String>,
    /// HTTP worker threads.
    pub http_workers: usize,
    /// When set, every launch is recorded here as a timeline
    /// (`<dir>/<session id>.json`, the format of `fixtures/timelines/`).
    pub record_timelines: Option<PathBuf>,
    /// claude's permission mode for a normal turn (`--permission-mode`):
    /// `acceptEdits` (the default: edits in the session's folder go through
    /// unasked), `bypassPermissions` (claude refuses it as root unless
    /// `IS_SANDBOX=1`), `auto`, `dontAsk`, `default` or `plan`. A `plan_only`
    /// turn always runs in `plan`. See docs/harnesses.md.
    pub claude_permission_mode: ClaudePermissionMode,
    /// Tools a normal claude turn runs without asking (`--allowedTools`);
    /// default `["Bash"]`, so commands run too. Empty: none.
    pub claude_allowed_tools: Vec<String>,
    /// codex's sandbox for a normal turn (`--sandbox`): `workspace-write`
    /// (the default: writes in the session's folder and the temp folders),
    /// `danger-full-access` (no sandbox, for a machine that is itself the
    /// isolation) or `read-only`. A `plan_only` turn always runs `read-only`.
    pub codex_sandbox: CodexSandbox,
    /// Whether a `workspace-write` codex turn may use the network, Unix
    /// sockets included (default true: its room-cli calls reach Core
    /// through one).
    pub codex_network: bool,
    /// How long a turn's processes get between SIGTERM and SIGKILL when
    /// stop, close or the service's own stop ends it (ms).
    pub kill_grace_ms: u64,
    /// How long a harness (claude, codex: both talk their protocols) keeps
    /// its process after a turn, so a message within it goes straight to that process
    /// (ms); 0 ends the process with its turn.
    pub linger_ms: u64,
    /// How long a harness's approval request waits for the app's answer
    /// before it is denied (ms), in sessions with `approvals: app`.
    pub approval_timeout_ms: u64,
    /// How a turn's whole process tree is found and ended: `"auto"` (a
    /// cgroup v2 per turn where the service can make one, else process
    /// groups), `"cgroup"` (refuse to start without one) or
    /// `"process_group"` (sessions, process groups and the
    /// `ROOM_CORE_TURN` marker, with the service a child subreaper). The
    /// choice is logged at start.
    pub supervision: Supervision,
    /// How long a turn has to show its first sign of life (name its
    /// session) (ms): a launch's first turn from its spawn, else it is
    /// killed and the launch fails, its startup permit returned and its
    /// prompt kept for a relaunch; any other turn (a warm follow-up
    /// included) from the moment it got its prompt, else its process is
    /// ended and the prompt runs once more in a new process, or fails if
    /// it already did.
    pub startup_timeout_ms: u64,
    /// The most prompts a session holds waiting (default 1000); a message
    /// past it is refused with 429 `queue_full`.
    pub max_queued_prompts: usize,
    /// The most bytes a session's event journal holds from its harness
    /// (default 256 MiB). A harness event that would take the journal past
    /// it is not journalled: its turn is ended with an error, and the
    /// harness's further output is read and dropped. room-core's own events
    /// (a turn's end, state changes) are still journalled past it.
    pub journal_max_bytes: u64,
    /// The most events a session's journal holds from its harness (default
    /// 1,000,000), past which the same happens.
    pub journal_max_events: u64,
    /// Names of variables a harness gets from the service's environment
    /// besides the built-in allowlist (docs/harnesses.md), e.g. a proxy or
    /// a CLI setting. A value that holds one of the service's tokens is
    /// still kept out.
    pub harness_env: Vec<String>,
    /// Whether turns may gain privileges (default false). Off, every turn
    /// runs with no_new_privs (setuid programs such as sudo and file
    /// capabilities grant nothing), and a turn that runs as `agent_uid`
    /// with empty capability bounding, inheritable and ambient sets. On,
    /// neither: for a sandbox that gives the agent sudo on purpose.
    pub agent_may_escalate: bool,
    /// Whether the service may run turns as `agent_uid` (another account
    /// than its own) while supervising them by process groups (default
    /// false: it refuses to start). Process groups cannot hold that
    /// boundary: a tool that leaves its session, clears `ROOM_CORE_TURN`
    /// and double-forks outlives stop. A cgroup v2 can.
    pub allow_process_group_with_agent_uid: bool,
    /// Whether each session's folder is recorded before and after every
    /// turn (default true), as the agent account: each turn's diff is
    /// journalled (`turn_diff`) and served (`…/turns/{n}/diff`).
    pub snapshots: bool,
    /// The most bytes of regular files a snapshot records (default 1 GiB);
    /// a folder past it is "too large to snapshot" and its turn goes on.
    pub snapshot_max_bytes: u64,
    /// The most entries (files, links, folders) a snapshot records
    /// (default 200,000); past it, the same.
    pub snapshot_max_entries: u64,
    /// Paths under a session's folder (or names at any depth) a snapshot
    /// leaves out, besides `.git` (default none).
    pub snapshot_ignore: Vec<String>,
    /// How long one snapshot may take (ms, default 60000); past it, it is
    /// given up and its turn's diff says so.
    pub snapshot_deadline_ms: u64,
    /// The agents that speak the Agent Client Protocol a session may run
    /// (`"harness": "acp", "agent": "<name>"`), by name (default none).
    pub acp_agents: std::collections::BTreeMap<String, crate::harness::acp::AcpAgent>,
}

impl Default for Config {
    fn default() -> Self {
        let launch = room_machines::launch::Config::default();
        Config {
            listen: "127.0.0.1:7710".into(),
            token: None,
            state_dir: default_state_dir(),
            agent_socket: None,
            agent_uid: None,
            claude_program: "claude".into(),
            codex_program: "codex".into(),
            startup_permits: 0,
            copy_wait_ms: launch.copy_wait,
            mark_max_age_ms: launch.mark_max_age,
            poll_ms: launch.poll,
            watch: true,
            website_url: None,
            website_token: None,
            http_workers: 4,
            record_timelines: None,
            claude_permission_mode: ClaudePermissionMode::AcceptEdits,
            claude_allowed_tools: vec!["Bash".into()],
            codex_sandbox: CodexSandbox::WorkspaceWrite,
            codex_network: true,
            kill_grace_ms: 4000,
            approval_timeout_ms: room_machines::session::APPROVAL_TIMEOUT,
            linger_ms: room_machines::session::LINGER,
            supervision: Supervision::Auto,
            startup_timeout_ms: room_machines::session::STARTUP_TIMEOUT,
            max_queued_prompts: room_machines::session::MAX_QUEUED_PROMPTS,
            journal_max_bytes: 256 << 20,
            journal_max_events: 1_000_000,
            harness_env: Vec::new(),
            agent_may_escalate: false,
            allow_process_group_with_agent_uid: false,
            snapshots: true,
            snapshot_max_bytes: 1 << 30,
            snapshot_max_entries: 200_000,
            snapshot_ignore: Vec::new(),
            snapshot_deadline_ms: 60_000,
            acp_agents: Default::default(),
        }
    }
}

/// The config's `supervision`: how a turn's tree is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Supervision {
    /// A cgroup per turn where the service can make one, else process groups.
    #[default]
    Auto,
    /// A cgroup per turn; the service does not start without one.
    Cgroup,
    /// Process groups, sessions and markers, with the service a subreaper.
    ProcessGroup,
}

/// Why a config could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config {path}: {source}")]
    Read {
        /// The config file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a valid config.
    #[error("config {path} is invalid: {source}")]
    Parse {
        /// The config file.
        path: PathBuf,
        /// What serde said (names the bad field).
        source: serde_json::Error,
    },
    /// A value is out of range.
    #[error("config is invalid: {0}")]
    Invalid(String),
}

/// `$HOME/.room-core`, or a folder under the temp dir when there is no home.
fn default_state_dir() -> PathBuf {
    match std::env::var_os("HOME") {
        Some(home) if !home.is_empty() => PathBuf::from(home).join(".room-core"),
        _ => std::env::temp_dir().join("room-core"),
    }
}

impl Config {
    /// Loads a config file (JSON); missing fields take their defaults.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.into(),
            source,
        })?;
        let config: Config = serde_json::from_str(&text).map_err(|source| ConfigError::Parse {
            path: path.into(),
            source,
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks values serde cannot: loopback only, non-zero intervals.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let addr: std::net::SocketAddr = self.listen.parse().map_err(|_| {
            ConfigError::Invalid(format!("listen {:?} is not an address", self.listen))
        })?;
        if !addr.ip().is_loopback() {
            return Err(ConfigError::Invalid(format!(
                "listen {} is not a loopback address; room-core serves the app on loopback only",
                self.listen
            )));
        }
        if self.poll_ms == 0 {
            return Err(ConfigError::Invalid("poll_ms must be at least 1".into()));
        }
        if self.http_workers == 0 {
            return Err(ConfigError::Invalid(
                "http_workers must be at least 1".into(),
            ));
        }
        if self.supervision == Supervision::ProcessGroup {
            let explicit = "supervision is \"process_group\" in the config";
            if let Some(why) = self.process_group_refusal(explicit) {
                return Err(ConfigError::Invalid(why));
            }
        }
        if let Some(t) = self
            .claude_allowed_tools
            .iter()
            .find(|t| t.trim().is_empty() || t.starts_with('-'))
        {
            return Err(ConfigError::Invalid(format!(
                "claude_allowed_tools: {t:?} is not a tool name"
            )));
        }
        if self.max_queued_prompts == 0 {
            return Err(ConfigError::Invalid(
                "max_queued_prompts must be at least 1".into(),
            ));
        }
        if self.journal_max_bytes == 0 || self.journal_max_events == 0 {
            return Err(ConfigError::Invalid(
                "journal_max_bytes and journal_max_events must be at least 1".into(),
            ));
        }
        if self.snapshot_deadline_ms == 0 || self.snapshot_max_entries == 0 {
            return Err(ConfigError::Invalid(
                "snapshot_deadline_ms and snapshot_max_entries must be at least 1".into(),
            ));
        }
        if let Some(p) = self
            .snapshot_ignore
            .iter()
            .find(|p| p.is_empty() || p.contains('\0') || p.split('/').any(|c| c == ".."))
        {
            return Err(ConfigError::Invalid(format!(
                "snapshot_ignore: {p:?} is not a path inside a session's folder"
            )));
        }
        if let Some(n) = self
            .harness_env
            .iter()
            .find(|n| n.is_empty() || n.contains(['=', '\0']))
        {
            return Err(ConfigError::Invalid(format!(
                "harness_env: {n:?} is not a variable name"
            )));
        }
        crate::harness::acp::check_agents(&self.acp_agents).map_err(ConfigError::Invalid)
    }

    /// Why turns must not be supervised by process groups (`why`: the
    /// reason there is no cgroup) here: with `agent_uid` another account
    /// than the service's, process groups cannot hold the boundary (a tool
    /// that leaves its session, clears `ROOM_CORE_TURN` and double-forks
    /// outlives stop), unless `allow_process_group_with_agent_uid` accepts
    /// that. `None`: they may.
    pub fn process_group_refusal(&self, why: &str) -> Option<String> {
        let uid = self.agent_uid?;
        if uid == nix::unistd::geteuid().as_raw() || self.allow_process_group_with_agent_uid {
            return None;
        }
        Some(format!(
            "agent_uid {uid} is another account than the service's, but turns would be \
             supervised by process groups ({why}), which cannot end a tool that leaves its \
             session and clears ROOM_CORE_TURN: give the service a cgroup v2 it can write \
             (supervision \"cgroup\" or \"auto\", as root on a cgroup2 mount), or set \
             allow_process_group_with_agent_uid to true to accept that"
        ))
    }

    /// The caps on a session's journal.
    pub fn journal_caps(&self) -> crate::journal::Caps {
        crate::journal::Caps {
            bytes: self.journal_max_bytes,
            events: self.journal_max_events,
        }
    }

    /// What a turn may do: the configured modes, or read-only for `plan_only`.
    pub fn modes(&self, plan_only: bool) -> Modes {
        if plan_only {
            return Modes::plan_only();
        }
        Modes {
            claude: self.claude_permission_mode,
            claude_allowed_tools: self.claude_allowed_tools.clone(),
            codex: self.codex_sandbox,
            codex_network: self.codex_network,
            // Nothing asks: what the sandbox refuses fails, as the
            // configured modes say.
            codex_approvals: ApprovalPolicy::Never,
        }
    }

    /// The launch machine's limits.
    pub fn launch(&self) -> room_machines::launch::Config {
        room_machines::launch::Config {
            copy_wait: self.copy_wait_ms,
            mark_max_age: self.mark_max_age_ms,
            poll: self.poll_ms,
        }
    }

    /// The startup permit count (the CPU count when 0).
    pub fn permits(&self) -> usize {
        match self.startup_permits {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }

    /// The agent socket's path.
    pub fn agent_socket_path(&self) -> PathBuf {
        self.agent_socket
            .clone()
            .unwrap_or_else(|| self.state_dir.join("agent.sock"))
    }

    /// The website's base URL: `CLOUDROOM_API_URL` first, then the config.
    pub fn website_base(&self) -> Option<String> {
        std::env::var("CLOUDROOM_API_URL")
            .ok()
            .filter(|s| !s.is_empty())
            .or_else(|| self.website_url.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_seed_constants_and_loopback() {
        let c = Config::default();
        c.validate().unwrap();
        assert_eq!(c.copy_wait_ms, 300_000);
        assert_eq!(c.mark_max_age_ms, 300_000);
        assert_eq!(c.poll_ms, 250);
        assert_eq!(c.kill_grace_ms, 4000);
        assert_eq!(c.startup_timeout_ms, 120_000);
        assert_eq!(
            (c.journal_max_bytes, c.journal_max_events),
            (256 << 20, 1_000_000)
        );
        assert!(c.harness_env.is_empty());
        let c = Config {
            harness_env: vec!["A=B".into()],
            ..Config::default()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("harness_env"));
        let c = Config {
            journal_max_events: 0,
            ..Config::default()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("journal_max"));
        assert_eq!(c.supervision, Supervision::Auto);
        let c: Config = serde_json::from_str(r#"{"supervision": "process_group"}"#).unwrap();
        assert_eq!(c.supervision, Supervision::ProcessGroup);
    }

    #[test]
    fn process_groups_with_another_agent_account_need_the_operators_consent() {
        let me = nix::unistd::geteuid().as_raw();
        let other = if me == 65534 { 65533 } else { 65534 };
        let text = format!(r#"{{"agent_uid": {other}, "supervision": "process_group"}}"#);
        let mut c: Config = serde_json::from_str(&text).unwrap();
        assert!(!c.agent_may_escalate && !c.allow_process_group_with_agent_uid);
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("allow_process_group_with_agent_uid"), "{e}");
        c.allow_process_group_with_agent_uid = true;
        c.validate().unwrap();
        c.allow_process_group_with_agent_uid = false;
        c.supervision = Supervision::Auto;
        c.validate()
            .expect("auto is judged at start, where it is known");
    }

    #[test]
    fn refuses_unknown_fields_and_non_loopback() {
        let e = serde_json::from_str::<Config>(r#"{"pol_ms": 5}"#).unwrap_err();
        assert!(e.to_string().contains("pol_ms"), "{e}");
        let c = Config {
            listen: "0.0.0.0:1".into(),
            ..Config::default()
        };
        assert!(c.validate().unwrap_err().to_string().contains("loopback"));
    }

    #[test]
    fn harness_modes_default_to_editing_and_plan_only_is_read_only() {
        let c: Config = serde_json::from_str("{}").unwrap();
        let m = c.modes(false);
        assert_eq!(m.claude, ClaudePermissionMode::AcceptEdits);
        assert_eq!(m.claude_allowed_tools, ["Bash"]);
        assert_eq!(
            (m.codex, m.codex_network),
            (CodexSandbox::WorkspaceWrite, true)
        );
        assert_eq!(c.modes(true), Modes::plan_only());
        let c: Config = serde_json::from_str(
            r#"{"claude_permission_mode": "bypassPermissions", "codex_sandbox": "danger-full-access"}"#,
        )
        .unwrap();
        assert_eq!(
            c.modes(false).claude,
            ClaudePermissionMode::BypassPermissions
        );
        assert_eq!(c.modes(false).codex, CodexSandbox::DangerFullAccess);
        assert_eq!(c.modes(true), Modes::plan_only());
        let e = serde_json::from_str::<Config>(r#"{"codex_sandbox": "none"}"#).unwrap_err();
        assert!(e.to_string().contains("workspace-write"), "{e}");
        let c = Config {
            claude_allowed_tools: vec!["--dangerously-skip-permissions".into()],
            ..Config::default()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("claude_allowed_tools"));
    }
}
