//! ACP agents: any agent that speaks the Agent Client Protocol on its stdio
//! (Zed's claude-agent-acp and codex-acp, gemini-cli's ACP mode, opencode's
//! `acp`, …), run as a harness. The config names each (`acp_agents`: its
//! program, arguments and the variables it gets); `protocol` is the wire,
//! `talk` the talker's side of it, `probe` asks each what it offers and
//! `takes` refuses what it said it cannot take.

pub(crate) mod probe;
pub mod protocol;
pub mod takes;
pub mod talk;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The most ACP agents a config names.
pub const AGENTS_MAX: usize = 64;

/// One ACP agent, as the config's `acp_agents` names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcpAgent {
    /// Its program: a path, or a bare name looked up on the harness's
    /// `PATH` when a turn starts.
    pub command: PathBuf,
    /// Its arguments (`["--experimental-acp"]`, `["acp"]`, …).
    #[serde(default)]
    pub args: Vec<String>,
    /// Names of variables it gets from the service's environment besides
    /// the harness allowlist, as `harness_env` (a value that holds one of
    /// the service's tokens is still kept out).
    #[serde(default)]
    pub env: Vec<String>,
}

/// Why the config's `acp_agents` cannot be used, if it cannot: a name that
/// is not a short word, a program or argument that is empty or holds a
/// NUL byte, a variable name that is not one.
pub fn check_agents(agents: &BTreeMap<String, AcpAgent>) -> Result<(), String> {
    if agents.len() > AGENTS_MAX {
        return Err(format!("acp_agents: more than {AGENTS_MAX} agents"));
    }
    for (name, agent) in agents {
        let word = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
        if name.is_empty() || name.len() > 64 || !name.chars().all(word) {
            return Err(format!(
                "acp_agents: {name:?} is not an agent name (1 to 64 letters, digits, - or _)"
            ));
        }
        let command = agent.command.as_os_str();
        if command.is_empty() || command.as_encoded_bytes().contains(&0) {
            return Err(format!("acp_agents.{name}.command is not a program"));
        }
        if agent.args.iter().any(|a| a.contains('\0')) {
            return Err(format!(
                "acp_agents.{name}.args: an argument holds a NUL byte"
            ));
        }
        if let Some(n) = agent
            .env
            .iter()
            .find(|n| n.is_empty() || n.contains(['=', '\0']))
        {
            return Err(format!(
                "acp_agents.{name}.env: {n:?} is not a variable name"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_list_with_a_bad_name_program_argument_or_variable_is_refused() {
        let agent = |command: &str, args: &[&str], env: &[&str]| AcpAgent {
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: env.iter().map(|e| e.to_string()).collect(),
        };
        let one = |name: &str, a: AcpAgent| BTreeMap::from([(name.to_string(), a)]);
        let good = one(
            "gemini-cli",
            agent("gemini", &["--experimental-acp"], &["GEMINI_API_KEY"]),
        );
        assert_eq!(check_agents(&good), Ok(()));
        for (agents, says) in [
            (
                one("a b", agent("x", &[], &[])),
                "\"a b\" is not an agent name",
            ),
            (one("", agent("x", &[], &[])), "\"\" is not an agent name"),
            (
                one("a", agent("", &[], &[])),
                "acp_agents.a.command is not a program",
            ),
            (
                one("a", agent("x", &["a\0b"], &[])),
                "acp_agents.a.args: an argument holds a NUL byte",
            ),
            (
                one("a", agent("x", &[], &["A=B"])),
                "acp_agents.a.env: \"A=B\" is not a variable name",
            ),
        ] {
            let e = check_agents(&agents).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }
}
