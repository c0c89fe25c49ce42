//! The codex adapter: Codex on its app server, with the wire types it
//! reads and writes (protocol.rs) and its side of the talker (talk.rs).
//! Here: the argv of its process, `codex app-server [-c
//! sandbox_workspace_write.network_access=true]`, JSON-RPC on stdio, and
//! how the process opens its thread. The thread's folder, sandbox,
//! approval policy, model and developer instructions go in `thread/start`
//! (or `thread/resume`, which continues a native session by its thread ID,
//! with the same), each turn's effort in its `turn/start`; the network
//! switch is config, so it goes on the command line. `thread/tokenUsage/updated`,
//! after each model request, says what the thread has used so far.

pub(crate) mod protocol;
pub(crate) mod talk;

use super::modes::{CodexSandbox, Modes};
use super::options::Options;
use protocol::PROTOCOL_ARGS;
use talk::Opening;

/// The argv (without the program) of a process.
pub(crate) fn argv(modes: &Modes) -> Vec<String> {
    let mut a: Vec<String> = PROTOCOL_ARGS.iter().map(|s| s.to_string()).collect();
    if modes.codex == CodexSandbox::WorkspaceWrite && modes.codex_network {
        a.extend([
            "-c".into(),
            "sandbox_workspace_write.network_access=true".into(),
        ]);
    }
    a
}

/// How a process opens its thread in `folder`: a new one, or `native_id`,
/// with the app's options.
pub(crate) fn opening(
    folder: &str,
    native_id: Option<&str>,
    modes: &Modes,
    options: Options,
) -> Opening {
    Opening {
        cwd: folder.to_string(),
        resume: native_id.map(str::to_string),
        revert_before: None,
        fork_through: None,
        approval_policy: modes.codex_approvals,
        sandbox: modes.codex.mode(),
        model: options.model.map(str::to_string),
        instructions: options.instructions.map(str::to_string),
        effort: options.effort.map(|e| e.name()),
        config: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::harness::codex::protocol::{ApprovalPolicy, SandboxMode};

    #[test]
    fn the_network_switch_is_config_and_the_rest_opens_the_thread() {
        let config = Config::default();
        let net = "sandbox_workspace_write.network_access=true";
        assert_eq!(argv(&config.modes(false)), ["app-server", "-c", net]);
        assert_eq!(argv(&config.modes(true)), ["app-server"]);
        let o = opening("/w", Some("t1"), &config.modes(false), Options::default());
        assert_eq!(o.resume.as_deref(), Some("t1"));
        assert_eq!(
            (o.approval_policy, o.sandbox),
            (ApprovalPolicy::Never, SandboxMode::WorkspaceWrite)
        );
        let o = opening(
            "/w",
            None,
            &config.modes(false).asking(),
            Options::default(),
        );
        assert_eq!(o.approval_policy, ApprovalPolicy::Untrusted);
        let o = opening("/w", None, &config.modes(true), Options::default());
        assert_eq!(
            (o.approval_policy, o.sandbox),
            (ApprovalPolicy::Never, SandboxMode::ReadOnly)
        );
    }
}
