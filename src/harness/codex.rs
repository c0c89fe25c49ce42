//! Codex: `codex exec --json --skip-git-repo-check --sandbox <mode>
//! [-c sandbox_workspace_write.network_access=true] [resume <id>] -`, the
//! prompt on stdin (`-`). `--json` and the sandbox are `exec` options, so
//! they go before the `resume` subcommand (which has no `--sandbox` of its
//! own; they apply to it all the same). A session's folder is rarely a git
//! work tree, and codex refuses one that is not without
//! `--skip-git-repo-check`. The first JSONL event,
//! `{"type":"thread.started","thread_id":…}`, names the session; the last,
//! `turn.completed`, says what the thread has used so far.

use room_machines::session::{Usage, UsageReport};
use serde_json::Value;

use super::figures::count;
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
pub fn native_id(event: &Value) -> Option<String> {
    (event["type"] == "thread.started")
        .then(|| event["thread_id"].as_str().map(str::to_string))
        .flatten()
}

/// The usage in a `turn.completed` event: the thread's running total, over
/// every turn and resumed process (not the turn's own). codex's
/// `input_tokens` holds its `cached_input_tokens` and
/// `cache_write_input_tokens`; room-core's input is what is left. Its
/// output holds its reasoning. codex reports no cost.
pub fn usage(event: &Value) -> Option<UsageReport> {
    let u = &event["usage"];
    if event["type"] != "turn.completed" || !u.is_object() {
        return None;
    }
    let read = count(&u["cached_input_tokens"]);
    let write = count(&u["cache_write_input_tokens"]);
    Some(UsageReport::Total(Usage {
        input_tokens: count(&u["input_tokens"])
            .saturating_sub(read)
            .saturating_sub(write),
        output_tokens: count(&u["output_tokens"]),
        cache_read_tokens: read,
        cache_write_tokens: write,
        cost_usd: None,
    }))
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

    /// The events the real CLI printed (fixtures/oneshot/record.py).
    fn recorded(name: &str) -> Vec<Value> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("fixtures/oneshot/codex/{name}.jsonl"));
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
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
    fn turn_completed_reports_the_threads_running_total_with_cached_input_split_out() {
        let reports = |name| -> Vec<_> { recorded(name).iter().filter_map(usage).collect() };
        // The fake model's 10 input hold 3 cached and 7 cache-write.
        assert_eq!(reports("first"), [total(0, 5, 3, 7)]);
        // Resumed, two requests: the thread's three, not the turn's two.
        assert_eq!(reports("resumed"), [total(0, 15, 9, 21)]);
        let odd = serde_json::json!({"type": "turn.completed",
            "usage": {"input_tokens": 100, "cached_input_tokens": -3, "output_tokens": "5"}});
        assert_eq!(usage(&odd), Some(total(100, 0, 0, 0)));
        let short = serde_json::json!({"type": "turn.completed",
            "usage": {"input_tokens": 2, "cached_input_tokens": 3}});
        assert_eq!(usage(&short), Some(total(0, 0, 3, 0)));
        for none in [
            serde_json::json!({"type": "turn.completed"}),
            serde_json::json!({"type": "turn.failed", "usage": {"input_tokens": 1}}),
        ] {
            assert_eq!(usage(&none), None, "{none}");
        }
    }
}
