//! Codex: `codex exec --json <prompt>` for a new session and
//! `codex exec --json resume <id> <prompt>` for a later turn (`--json` is an
//! `exec` option, so it goes before the subcommand); the first JSONL event,
//! `{"type":"thread.started","thread_id":…}`, names the session.

/// The argv (without the program) of one turn.
pub fn argv(prompt: &str, native_id: Option<&str>, plan_only: bool) -> Vec<String> {
    let mut a: Vec<String> = vec!["exec".into(), "--json".into()];
    if plan_only {
        a.extend(["--sandbox".into(), "read-only".into()]);
    }
    if let Some(id) = native_id {
        a.extend(["resume".into(), id.into()]);
    }
    a.push(prompt.into());
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

    #[test]
    fn resumes_by_thread_id() {
        assert_eq!(argv("hi", None, false), ["exec", "--json", "hi"]);
        assert_eq!(
            argv("hi", Some("t1"), false),
            ["exec", "--json", "resume", "t1", "hi"]
        );
        let e = serde_json::json!({"type":"thread.started","thread_id":"t1"});
        assert_eq!(native_id(&e), Some("t1".into()));
    }
}
