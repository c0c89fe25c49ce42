//! What a normal turn may do without asking: claude's permission mode and
//! codex's sandbox mode (config fields `claude_permission_mode`,
//! `claude_allowed_tools`, `codex_sandbox`, `codex_network`). A `plan_only`
//! turn ignores them: claude runs in `plan` mode and codex in the
//! `read-only` sandbox. docs/harnesses.md says what each value does.

use serde::{Deserialize, Serialize};

use super::codex::protocol::{ApprovalPolicy, SandboxMode};

/// claude's `--permission-mode` for a normal turn (its own names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClaudePermissionMode {
    /// Edits in the working folder are accepted; other tools need
    /// `claude_allowed_tools` (the default, with `Bash` allowed).
    #[serde(rename = "acceptEdits")]
    AcceptEdits,
    /// A safety check decides each call (needs Anthropic's classifier).
    #[serde(rename = "auto")]
    Auto,
    /// Every tool runs unasked. claude refuses it as root unless `IS_SANDBOX=1`.
    #[serde(rename = "bypassPermissions")]
    BypassPermissions,
    /// Anything that would ask is denied in `-p` mode.
    #[serde(rename = "default")]
    Default,
    /// Only pre-approved tools run.
    #[serde(rename = "dontAsk")]
    DontAsk,
    /// Read-only, as a `plan_only` turn.
    #[serde(rename = "plan")]
    Plan,
}

impl ClaudePermissionMode {
    /// The value of `--permission-mode`.
    pub fn flag(self) -> &'static str {
        match self {
            ClaudePermissionMode::AcceptEdits => "acceptEdits",
            ClaudePermissionMode::Auto => "auto",
            ClaudePermissionMode::BypassPermissions => "bypassPermissions",
            ClaudePermissionMode::Default => "default",
            ClaudePermissionMode::DontAsk => "dontAsk",
            ClaudePermissionMode::Plan => "plan",
        }
    }
}

/// codex's `--sandbox` for a normal turn (its own names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CodexSandbox {
    /// Commands may read anything and write only the working folder and
    /// the temp folders (codex's own Linux sandbox; the default).
    WorkspaceWrite,
    /// No sandbox: for a machine that is itself the isolation.
    DangerFullAccess,
    /// Nothing may be written, as a `plan_only` turn.
    ReadOnly,
}

impl CodexSandbox {
    /// The app server's name for it (a thread's `sandbox`).
    pub fn mode(self) -> SandboxMode {
        match self {
            CodexSandbox::WorkspaceWrite => SandboxMode::WorkspaceWrite,
            CodexSandbox::DangerFullAccess => SandboxMode::DangerFullAccess,
            CodexSandbox::ReadOnly => SandboxMode::ReadOnly,
        }
    }
}

/// What a turn may do: from the config, or read-only for `plan_only`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Modes {
    /// claude's permission mode.
    pub claude: ClaudePermissionMode,
    /// Tools claude runs without asking (`--allowedTools`).
    pub claude_allowed_tools: Vec<String>,
    /// codex's sandbox.
    pub codex: CodexSandbox,
    /// Whether a `workspace-write` codex turn may open sockets (its room-cli
    /// calls reach Core through a Unix socket, which the sandbox's network
    /// filter otherwise refuses).
    pub codex_network: bool,
    /// When codex asks (a thread's `approvalPolicy`).
    pub codex_approvals: ApprovalPolicy,
}

impl Modes {
    /// Whether tools run without asking: the modes allow some up front
    /// (not `approvals: app`, not `plan_only`). The session's own MCP
    /// servers' tools are then among them, for either CLI.
    pub fn tools_unasked(&self) -> bool {
        !self.claude_allowed_tools.is_empty()
    }

    /// A turn of a session whose app answers approvals (`approvals: app`):
    /// claude in its `default` mode with no tool allowed up front, so every
    /// tool use that changes something (Write, Edit, Bash) is asked about;
    /// codex `untrusted`, so every command it does not know to be
    /// read-only is.
    pub fn asking(self) -> Modes {
        Modes {
            claude: ClaudePermissionMode::Default,
            claude_allowed_tools: Vec::new(),
            codex_approvals: ApprovalPolicy::Untrusted,
            ..self
        }
    }

    /// A `plan_only` turn's modes: nothing may change.
    pub fn plan_only() -> Modes {
        Modes {
            claude: ClaudePermissionMode::Plan,
            claude_allowed_tools: Vec::new(),
            codex: CodexSandbox::ReadOnly,
            codex_network: false,
            codex_approvals: ApprovalPolicy::Never,
        }
    }
}
