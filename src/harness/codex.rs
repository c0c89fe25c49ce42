//! Codex on its app server (codex_protocol.rs, codex_talk.rs): `codex
//! app-server [-c sandbox_workspace_write.network_access=true]`, JSON-RPC
//! on stdio. The thread's folder, sandbox and approval policy go in
//! `thread/start` (or `thread/resume`, which continues a native session by
//! its thread ID); the network switch is config, so it goes on the command
//! line. `thread/tokenUsage/updated`, after each model request, says what
//! the thread has used so far.

use room_machines::session::{Usage, UsageReport};
use serde_json::Value;

use super::codex_protocol::PROTOCOL_ARGS;
use super::codex_talk::Opening;
use super::figures::count;
use super::modes::{CodexSandbox, Modes};

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

/// How a process opens its thread in `folder`: a new one, or `native_id`.
pub(crate) fn opening(folder: &str, native_id: Option<&str>, modes: &Modes) -> Opening {
    Opening {
        cwd: folder.to_string(),
        resume: native_id.map(str::to_string),
        approval_policy: modes.codex_approvals,
        sandbox: modes.codex.mode(),
    }
}

/// The usage in a `thread/tokenUsage/updated` notification: the thread's
/// running total, over every turn and resumed process (not the turn's
/// own). codex's `inputTokens` holds its `cachedInputTokens` and
/// `cacheWriteInputTokens`; room-core's input is what is left. Its output
/// holds its reasoning. codex reports no cost.
pub(crate) fn usage(event: &Value) -> Option<UsageReport> {
    let u = &event["params"]["tokenUsage"]["total"];
    if event["method"] != "thread/tokenUsage/updated" || !u.is_object() {
        return None;
    }
    let read = count(&u["cachedInputTokens"]);
    let write = count(&u["cacheWriteInputTokens"]);
    Some(UsageReport::Total(Usage {
        input_tokens: count(&u["inputTokens"])
            .saturating_sub(read)
            .saturating_sub(write),
        output_tokens: count(&u["outputTokens"]),
        cache_read_tokens: read,
        cache_write_tokens: write,
        cost_usd: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::harness::codex_protocol::{ApprovalPolicy, SandboxMode};

    #[test]
    fn the_network_switch_is_config_and_the_rest_opens_the_thread() {
        let config = Config::default();
        let net = "sandbox_workspace_write.network_access=true";
        assert_eq!(argv(&config.modes(false)), ["app-server", "-c", net]);
        assert_eq!(argv(&config.modes(true)), ["app-server"]);
        let o = opening("/w", Some("t1"), &config.modes(false));
        assert_eq!(o.resume.as_deref(), Some("t1"));
        assert_eq!(
            (o.approval_policy, o.sandbox),
            (ApprovalPolicy::Never, SandboxMode::WorkspaceWrite)
        );
        let o = opening("/w", None, &config.modes(false).asking());
        assert_eq!(o.approval_policy, ApprovalPolicy::Untrusted);
        let o = opening("/w", None, &config.modes(true));
        assert_eq!(
            (o.approval_policy, o.sandbox),
            (ApprovalPolicy::Never, SandboxMode::ReadOnly)
        );
    }

    /// The messages the real CLI printed (fixtures/protocols/codex/).
    fn recorded(name: &str) -> Vec<Value> {
        crate::harness::transcripts::printed("codex", name)
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn total(i: u64, o: u64, r: u64, w: u64) -> UsageReport {
        UsageReport::Total(Usage {
            input_tokens: i,
            output_tokens: o,
            cache_read_tokens: r,
            cache_write_tokens: w,
            cost_usd: None,
        })
    }

    #[test]
    fn token_usage_reports_the_threads_running_total_with_cached_input_split_out() {
        let reports = |name| -> Vec<_> { recorded(name).iter().filter_map(usage).collect() };
        // The fake model's 10 input hold 3 cached and 7 cache-write.
        assert_eq!(reports("turn"), [total(0, 5, 3, 7), total(0, 10, 6, 14)]);
        let odd = serde_json::json!({"method": "thread/tokenUsage/updated", "params": {
            "tokenUsage": {"total": {"inputTokens": 100, "cachedInputTokens": -3,
                                     "outputTokens": "5"}}}});
        assert_eq!(usage(&odd), Some(total(100, 0, 0, 0)));
        for none in [
            serde_json::json!({"method": "thread/tokenUsage/updated"}),
            serde_json::json!({"method": "turn/completed",
                               "params": {"tokenUsage": {"total": {"inputTokens": 1}}}}),
        ] {
            assert_eq!(usage(&none), None, "{none}");
        }
    }
}
