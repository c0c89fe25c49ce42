//! Codex: `codex exec --json --skip-git-repo-check --sandbox <mode>
//! [-c sandbox_workspace_write.network_access=true] [resume <id>] -`, the
//! prompt on stdin (`-`). `--json` and the sandbox are `exec` options, so
//! they go before the `resume` subcommand (which has no `--sandbox` of its
//! own; they apply to it all the same). A session's folder is rarely a git
//! work tree, and codex refuses one that is not without
//! `--skip-git-repo-check`. The first JSONL event,
//! `{"type":"thread.started","thread_id":…}`, names the session.

use super::modes::{CodexSandbox, Modes};

/// The argv (without the program) of one turn.
pub fn argv(native_id: Option<&str>, modes: &Modes) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "exec".into(),
        "--json".into(),
        "--skip-git-repo-check".into(),
        "--sandbox".into(),
        modes.codex.flag().into(),
    ];
    if modes.codex == CodexSandbox::WorkspaceWrite && modes.codex_network {
        a.extend([
            "-c".into(),
            "sandbox_workspace_write.network_access=true".into(),
        ]);
    }
    if let Some(id) = native_id {
        a.extend(["resume".into(), id.into()]);
    }
    // The prompt: read from stdin.
    a.push("-".into());
    a
}

/// The thread ID from the `thread.started` event.
pub fn native_id(event: &serde_json::Value) -> Option<String> {
    (event["type"] == "thread.started")
        .then(|| event["thread_id"].as_str().map(str::to_string))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn resumes_by_thread_id_and_plans_read_only() {
        let config = Config::default();
        let base = ["exec", "--json", "--skip-git-repo-check", "--sandbox"];
        let net = ["-c", "sandbox_workspace_write.network_access=true"];
        let a = argv(None, &config.modes(false));
        assert_eq!(a[..4], base);
        assert_eq!(a[4..], ["workspace-write", net[0], net[1], "-"]);
        let a = argv(Some("t1"), &config.modes(false));
        assert_eq!(
            a[4..],
            ["workspace-write", net[0], net[1], "resume", "t1", "-"]
        );
        let a = argv(Some("t1"), &config.modes(true));
        assert_eq!(a[4..], ["read-only", "resume", "t1", "-"]);
        let e = serde_json::json!({"type":"thread.started","thread_id":"t1"});
        assert_eq!(native_id(&e), Some("t1".into()));
    }
}
