//! claude and codex adapters: the argv of one turn, the native session ID
//! and the usage in a turn's JSON event stream, and (`talk`) what is said
//! on the stdin of a harness that talks a protocol there. A turn is one
//! process run in the session's folder, its prompt on stdin; a later turn
//! resumes the native session. `command` builds a turn's whole spec (program, argv,
//! environment, folder, stdin, account); docs/harnesses.md describes it.

pub mod account;
pub mod approvals;
pub mod claude;
pub mod claude_protocol;
pub mod codex;
pub mod codex_protocol;
pub mod command;
pub mod figures;
mod lenient;
pub mod modes;
pub mod talk;
#[cfg(test)]
mod transcripts;

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

    /// The arguments of one turn (a new session, or a resume of
    /// `native_id`); the prompt is not among them, it goes on stdin.
    pub fn argv(self, native_id: Option<&str>, modes: &modes::Modes) -> Vec<String> {
        match self {
            Harness::Claude => claude::argv(native_id, modes),
            Harness::Codex => codex::argv(native_id, modes),
        }
    }

    /// The native session ID if `event` is the one that announces it.
    pub fn native_id(self, event: &serde_json::Value) -> Option<String> {
        match self {
            Harness::Claude => claude::native_id(event),
            Harness::Codex => codex::native_id(event),
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
            Harness::Codex => line.contains("\"turn.completed\""),
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
    /// Resolves the configured programs. A bare default name (`claude`,
    /// `codex`) that is not on PATH falls back to the fake harness in
    /// `fixtures/`, with a printed note, so the service runs on a machine
    /// without the real CLIs.
    pub fn resolve(claude: &Path, codex: &Path) -> Programs {
        Programs {
            claude: resolve_one(claude, "claude"),
            codex: resolve_one(codex, "codex"),
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

fn resolve_one(configured: &Path, default: &str) -> PathBuf {
    if configured != Path::new(default) || on_path(default).is_some() {
        return configured.to_path_buf();
    }
    let fake = fixtures_dir().join(format!("fake-{default}"));
    eprintln!(
        "room-core: note: no `{default}` on PATH; using the fake harness {}",
        fake.display()
    );
    fake
}

/// The repository's `fixtures/` folder (where the fake harnesses live).
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line the real CLIs printed that reports usage passes the cheap
    /// look the stdout reader takes before parsing a line
    /// (fixtures/oneshot/record.py).
    #[test]
    fn the_lines_that_report_usage_are_the_ones_worth_parsing() {
        for harness in [Harness::Claude, Harness::Codex] {
            let mut reports = 0;
            for name in ["first", "resumed"] {
                let path = fixtures_dir().join(format!("oneshot/{}/{name}.jsonl", harness.name()));
                for line in std::fs::read_to_string(path).unwrap().lines() {
                    let event: serde_json::Value = serde_json::from_str(line).unwrap();
                    if harness.usage(&event).is_some() {
                        reports += 1;
                        assert!(harness.may_report_usage(line), "{line}");
                    }
                }
            }
            assert_eq!(reports, 2, "one report per turn");
        }
    }
}
