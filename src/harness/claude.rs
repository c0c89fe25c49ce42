//! Claude Code on its stream-json protocol (claude_protocol.rs): `claude -p
//! --input-format stream-json --output-format stream-json --verbose
//! --permission-prompt-tool stdio [--resume <id>] --permission-mode <mode>
//! [--allowedTools <tool>...]`, the prompt a user message on stdin (so no
//! prompt can be taken for an option). The turn's first event,
//! `{"type":"system","subtype":"init","session_id":…}`, names the session
//! (claude_talk.rs hears it); its `result` ends the turn and says what it
//! used.

use room_machines::session::{Usage, UsageReport};
use serde_json::Value;

use super::claude_protocol::PROTOCOL_ARGS;
use super::figures::{cost, count};
use super::modes::Modes;

/// The argv (without the program) of one turn.
pub(crate) fn argv(native_id: Option<&str>, modes: &Modes) -> Vec<String> {
    let mut a: Vec<String> = PROTOCOL_ARGS.iter().map(|s| s.to_string()).collect();
    if let Some(id) = native_id {
        a.extend(["--resume".into(), id.into()]);
    }
    a.extend(["--permission-mode".into(), modes.claude.flag().into()]);
    if !modes.claude_allowed_tools.is_empty() {
        // Variadic: it takes every argument up to the next option, so it
        // comes last.
        a.push("--allowedTools".into());
        a.extend(modes.claude_allowed_tools.iter().cloned());
    }
    a
}

/// The turn's usage from its `result` event: `model_usage_since_last_result`
/// summed over its models (tokens and `costUSD`), else `usage` (tokens
/// only). Never `total_cost_usd` nor `modelUsage`: they count the whole
/// session, over every resumed process.
pub(crate) fn usage(event: &Value) -> Option<UsageReport> {
    if event["type"] != "result" {
        return None;
    }
    if let Some(models) = event["model_usage_since_last_result"].as_object() {
        let used = models
            .values()
            .filter(|m| m.is_object())
            .map(|m| Usage {
                input_tokens: count(&m["inputTokens"]),
                output_tokens: count(&m["outputTokens"]),
                cache_read_tokens: count(&m["cacheReadInputTokens"]),
                cache_write_tokens: count(&m["cacheCreationInputTokens"]),
                cost_usd: cost(&m["costUSD"]),
            })
            .fold(Usage::default(), Usage::plus);
        return Some(UsageReport::Turn(used));
    }
    let u = &event["usage"];
    u.is_object().then(|| {
        UsageReport::Turn(Usage {
            input_tokens: count(&u["input_tokens"]),
            output_tokens: count(&u["output_tokens"]),
            cache_read_tokens: count(&u["cache_read_input_tokens"]),
            cache_write_tokens: count(&u["cache_creation_input_tokens"]),
            cost_usd: None,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn resumes_by_native_id_and_plans_read_only() {
        let config = Config::default();
        let a = argv(Some("abc"), &config.modes(false));
        assert_eq!(
            a,
            [
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-prompt-tool",
                "stdio",
                "--resume",
                "abc",
                "--permission-mode",
                "acceptEdits",
                "--allowedTools",
                "Bash"
            ]
        );
        let a = argv(None, &config.modes(true));
        assert_eq!(
            a,
            [
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-prompt-tool",
                "stdio",
                "--permission-mode",
                "plan"
            ]
        );
    }

    /// The events the real CLI printed (fixtures/oneshot/record.py).
    fn recorded(name: &str) -> Vec<Value> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("fixtures/oneshot/claude/{name}.jsonl"));
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn turn(i: u64, o: u64, r: u64, w: u64, usd: f64) -> Option<UsageReport> {
        Some(UsageReport::Turn(Usage {
            input_tokens: i,
            output_tokens: o,
            cache_read_tokens: r,
            cache_write_tokens: w,
            cost_usd: room_machines::session::Usd::reported(usd),
        }))
    }

    #[test]
    fn a_turns_usage_is_its_result_since_the_last_one_not_the_sessions_sum() {
        let reports = |name| -> Vec<_> { recorded(name).iter().filter_map(usage).collect() };
        // One model request: the fake model's 10 / 5 / 3 / 7, at claude's price.
        assert_eq!(reports("first"), [turn(10, 5, 3, 7, 0.0001756).unwrap()]);
        // Resumed, two requests: twice that, not the session's 30 / 0.0005268.
        assert_eq!(
            reports("resumed"),
            [turn(20, 10, 6, 14, 0.0003512).unwrap()]
        );
    }

    #[test]
    fn a_result_without_per_turn_models_falls_back_to_its_tokens_and_odd_figures_read_as_none() {
        let e = serde_json::json!({"type": "result", "total_cost_usd": 9.0,
            "usage": {"input_tokens": 10, "output_tokens": -5, "cache_read_input_tokens": "3",
                      "cache_creation_input_tokens": 7}});
        assert_eq!(
            usage(&e),
            Some(UsageReport::Turn(Usage {
                input_tokens: 10,
                cache_write_tokens: 7,
                ..Usage::default()
            }))
        );
        let two_models = serde_json::json!({"type": "result", "model_usage_since_last_result": {
            "a": {"inputTokens": 1, "costUSD": 0.25}, "b": {"outputTokens": 2, "costUSD": -1},
            "c": "not a model"}});
        assert_eq!(usage(&two_models), turn(1, 2, 0, 0, 0.25));
        for none in [
            serde_json::json!({"type": "result"}),
            serde_json::json!({"type": "result", "usage": [10, 5]}),
            serde_json::json!({"type": "assistant", "usage": {"input_tokens": 1}}),
        ] {
            assert_eq!(usage(&none), None, "{none}");
        }
    }
}
