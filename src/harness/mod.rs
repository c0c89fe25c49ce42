//! The harnesses: one adapter per CLI, `claude` and `codex`, each holding
//! the argv of its process, the wire types it reads and writes and its
//! side of the talker; `talk` is the talker over both, which says what the
//! session wants on a process's stdin and hears what its stdout means
//! (the turn's usage included), parsing each line once. A process runs in
//! the session's folder and serves one turn, or several while it lingers;
//! a process of a later turn resumes the native session. `command` builds
//! a process's whole spec (program, argv, environment, folder, talker,
//! account); docs/harnesses.md describes it. `program` finds a CLI's
//! program (no fake stands in for a missing one), `installed` and
//! `version` say which CLIs are installed and their versions.

pub(crate) mod account;
pub mod acp;
pub(crate) mod approvals;
pub(crate) mod bounds;
pub mod claude;
pub(crate) mod codex;
pub mod command;
pub(crate) mod figures;
pub(crate) mod head;
pub(crate) mod installed;
pub(crate) mod jsonrpc;
pub mod mcp;
pub(crate) mod modes;
pub mod options;
pub(crate) mod program;
pub(crate) mod refusal;
pub mod speech;
pub mod talk;
#[cfg(test)]
mod transcripts;
pub(crate) mod version;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use options::Effort;

/// Which harness a session runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Harness {
    /// Claude Code.
    Claude,
    /// Codex.
    Codex,
    /// An agent that speaks the Agent Client Protocol, named by the
    /// session's `agent` among the config's `acp_agents`.
    Acp,
}

impl Harness {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Harness::Claude => "claude",
            Harness::Codex => "codex",
            Harness::Acp => "acp",
        }
    }

    /// The arguments of a process (claude's name the native session it
    /// resumes and the app's options, codex's thread and options go on its
    /// protocol); the prompt is not among them, it goes on stdin.
    pub fn argv(
        self,
        native_id: Option<&str>,
        cut: Option<(&str, bool)>,
        modes: &modes::Modes,
        options: options::Options,
    ) -> Vec<String> {
        match self {
            Harness::Claude => claude::argv(native_id, cut, modes, options),
            Harness::Codex => codex::argv(modes),
            // The config's `acp_agents` entry holds them.
            Harness::Acp => Vec::new(),
        }
    }
}

impl Harness {
    /// The efforts its CLI takes: claude's `--effort` (low to max), codex's
    /// reasoning efforts (minimal to xhigh).
    pub fn efforts(self) -> &'static [Effort] {
        use Effort::*;
        match self {
            Harness::Claude => &[Low, Medium, High, Xhigh, Max],
            Harness::Codex => &[Minimal, Low, Medium, High, Xhigh],
            // An ACP agent chooses its own.
            Harness::Acp => &[],
        }
    }

    /// `effort` when its CLI takes it; else what it takes, as the API says
    /// (`claude takes effort low, …, not minimal.`).
    pub fn check_effort(self, effort: Effort) -> Result<(), String> {
        self.takes_effort(effort)
            .map_err(|takes| format!("{} {takes}", self.name()))
    }

    /// `effort` when its CLI takes it; else the efforts it takes, as the
    /// end of a sentence that names the CLI (`takes effort low, …, not
    /// minimal.`).
    pub fn takes_effort(self, effort: Effort) -> Result<(), String> {
        let takes = self.efforts();
        if takes.contains(&effort) {
            return Ok(());
        }
        let names: Vec<&str> = takes.iter().map(|e| e.name()).collect();
        let Some((last, rest)) = names.split_last() else {
            return Err(format!(
                "takes no effort from room-core, not {}.",
                effort.name()
            ));
        };
        Err(format!(
            "takes effort {} or {last}, not {}.",
            rest.join(", "),
            effort.name()
        ))
    }

    /// What `GET /v1/capabilities` says a start of this CLI may choose: a
    /// model, instructions, and which efforts.
    pub fn options_offered(self) -> serde_json::Value {
        if self == Harness::Acp {
            // An ACP agent's own config chooses them.
            return serde_json::json!({"model": false, "instructions": false, "effort": []});
        }
        let efforts: Vec<&str> = self.efforts().iter().map(|e| e.name()).collect();
        serde_json::json!({"model": true, "instructions": true, "effort": efforts})
    }
}

/// The programs to run for each harness, resolved once at start.
#[derive(Debug, Clone)]
pub struct Programs {
    /// The claude CLI.
    pub claude: PathBuf,
    /// The codex CLI.
    pub codex: PathBuf,
}

impl Programs {
    /// Resolves the configured programs: a bare name (`claude`, `codex`)
    /// found on the service's `PATH` becomes that file's path; one not
    /// found stays as configured, and a launch looks for it again then
    /// and, not finding it, fails saying so ([`program::not_installed`]).
    /// No fake stands in for a missing CLI.
    pub fn resolve(claude: &Path, codex: &Path) -> Programs {
        Programs {
            claude: resolve_one(claude),
            codex: resolve_one(codex),
        }
    }

    /// The program for `harness`; none for `acp`, whose agent's entry in
    /// the config names its own.
    pub fn of(&self, harness: Harness) -> Option<&Path> {
        match harness {
            Harness::Claude => Some(&self.claude),
            Harness::Codex => Some(&self.codex),
            Harness::Acp => None,
        }
    }
}

fn resolve_one(configured: &Path) -> PathBuf {
    let found = program::is_bare(configured)
        .then(|| std::env::var_os("PATH"))
        .flatten()
        .and_then(|path| program::on_path(configured, &path));
    found.unwrap_or_else(|| configured.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cli_takes_its_own_efforts_and_a_refusal_names_them() {
        assert_eq!(Harness::Claude.check_effort(Effort::Max), Ok(()));
        assert_eq!(Harness::Codex.check_effort(Effort::Minimal), Ok(()));
        assert_eq!(
            Harness::Claude.check_effort(Effort::Minimal),
            Err("claude takes effort low, medium, high, xhigh or max, not minimal.".into())
        );
        assert_eq!(
            Harness::Codex.check_effort(Effort::Max),
            Err("codex takes effort minimal, low, medium, high or xhigh, not max.".into())
        );
    }

    #[test]
    fn a_bare_name_is_looked_up_on_path_and_a_missing_one_kept_as_configured() {
        let p = Programs::resolve(Path::new("sh"), Path::new("no-such-cli-here"));
        assert!(p.claude.is_absolute() && p.claude.ends_with("sh"), "{p:?}");
        assert_eq!(p.codex, Path::new("no-such-cli-here"));
        let p = Programs::resolve(Path::new("/opt/claude"), Path::new("./codex"));
        assert_eq!(
            (p.of(Harness::Claude), p.of(Harness::Codex)),
            (Some(Path::new("/opt/claude")), Some(Path::new("./codex")))
        );
    }
}
