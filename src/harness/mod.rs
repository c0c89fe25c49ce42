//! claude and codex adapters: the argv of a harness process, the usage in
//! its JSON output, and (`talk`) what is said on its stdin and heard on its
//! stdout on each CLI's protocol. A process runs in the session's folder
//! and serves one turn, or several while it lingers; a process of a later
//! turn resumes the native session. `command` builds a process's whole
//! spec (program, argv, environment, folder, talker, account);
//! docs/harnesses.md describes it. `program` finds a CLI's program (no
//! fake stands in for a missing one), `installed` and `version` say which
//! CLIs are installed and their versions.

pub(crate) mod account;
pub(crate) mod approvals;
pub(crate) mod bounds;
pub(crate) mod claude;
pub mod claude_protocol;
pub(crate) mod claude_talk;
pub(crate) mod codex;
pub(crate) mod codex_protocol;
pub(crate) mod codex_talk;
pub mod command;
pub(crate) mod figures;
pub(crate) mod head;
pub(crate) mod installed;
mod lenient;
pub(crate) mod modes;
pub(crate) mod program;
pub(crate) mod refusal;
pub mod speech;
pub mod talk;
#[cfg(test)]
mod transcripts;
pub(crate) mod version;

use std::path::{Path, PathBuf};

use room_machines::session::UsageReport;
use serde::{Deserialize, Serialize};

/// Which harness a session runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Harness {
    /// Claude Code.
    Claude,
    /// Codex.
    Codex,
}

impl Harness {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Harness::Claude => "claude",
            Harness::Codex => "codex",
        }
    }

    /// The arguments of a process (claude's name the native session it
    /// resumes, codex's thread is resumed on its protocol); the prompt is
    /// not among them, it goes on stdin.
    pub fn argv(self, native_id: Option<&str>, modes: &modes::Modes) -> Vec<String> {
        match self {
            Harness::Claude => claude::argv(native_id, modes),
            Harness::Codex => codex::argv(modes),
        }
    }

    /// What `event` says the turn used, if it says (claude: the turn's
    /// own figures; codex: the thread's running total).
    pub fn usage(self, event: &serde_json::Value) -> Option<UsageReport> {
        match self {
            Harness::Claude => claude::usage(event),
            Harness::Codex => codex::usage(event),
        }
    }

    /// Whether a stdout line can be an event that reports usage: a cheap
    /// look at its text before it is parsed (the event's type is in it).
    pub fn may_report_usage(self, line: &str) -> bool {
        match self {
            Harness::Claude => line.contains("\"result\""),
            Harness::Codex => line.contains("\"thread/tokenUsage/updated\""),
        }
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

    /// The program for `harness`.
    pub fn of(&self, harness: Harness) -> &Path {
        match harness {
            Harness::Claude => &self.claude,
            Harness::Codex => &self.codex,
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

    /// The repository's `fixtures/` folder (recorded CLI output), for tests
    /// only: nothing of the source tree is in a shipped binary.
    fn fixtures_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
    }

    #[test]
    fn a_bare_name_is_looked_up_on_path_and_a_missing_one_kept_as_configured() {
        let p = Programs::resolve(Path::new("sh"), Path::new("no-such-cli-here"));
        assert!(p.claude.is_absolute() && p.claude.ends_with("sh"), "{p:?}");
        assert_eq!(p.codex, Path::new("no-such-cli-here"));
        let p = Programs::resolve(Path::new("/opt/claude"), Path::new("./codex"));
        assert_eq!(
            (p.of(Harness::Claude), p.of(Harness::Codex)),
            (Path::new("/opt/claude"), Path::new("./codex"))
        );
    }

    /// Every line the real CLIs printed that reports usage passes the cheap
    /// look the stdout reader takes before parsing a line.
    #[test]
    fn the_lines_that_report_usage_are_the_ones_worth_parsing() {
        for (harness, file, reports) in [
            (Harness::Claude, "oneshot/claude/resumed.jsonl", 1),
            (Harness::Codex, "protocols/codex/turn.jsonl", 2),
        ] {
            let mut seen = 0;
            let text = std::fs::read_to_string(fixtures_dir().join(file)).unwrap();
            for line in text.lines() {
                let mut event: serde_json::Value = serde_json::from_str(line).unwrap();
                if harness == Harness::Codex {
                    event = event["msg"].take();
                }
                if harness.usage(&event).is_some() {
                    seen += 1;
                    assert!(harness.may_report_usage(&event.to_string()), "{line}");
                }
            }
            assert_eq!(seen, reports, "{file}");
        }
    }
}
