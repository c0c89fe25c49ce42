//! Claude Code: `claude -p <prompt> --output-format stream-json --verbose
//! [--resume <id>]`; the first stream-json event,
//! `{"type":"system","subtype":"init","session_id":…}`, names the session.

/// The argv (without the program) of one turn.
pub fn argv(prompt: &str, native_id: Option<&str>, plan_only: bool) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "-p".into(),
        prompt.into(),
        "--output-format".into(),
        "stream-json".into(),
        // stream-json in print mode requires --verbose.
        "--verbose".into(),
    ];
    if let Some(id) = native_id {
        a.extend(["--resume".into(), id.into()]);
    }
    if plan_only {
        a.extend(["--permission-mode".into(), "plan".into()]);
    }
    a
}

/// The session ID from the `system`/`init` event.
pub fn native_id(event: &serde_json::Value) -> Option<String> {
    (event["type"] == "system" && event["subtype"] == "init")
        .then(|| event["session_id"].as_str().map(str::to_string))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resumes_by_native_id() {
        let a = argv("hi", Some("abc"), false);
        assert_eq!(
            a,
            [
                "-p",
                "hi",
                "--output-format",
                "stream-json",
                "--verbose",
                "--resume",
                "abc"
            ]
        );
        let e = serde_json::json!({"type":"system","subtype":"init","session_id":"s1"});
        assert_eq!(native_id(&e), Some("s1".into()));
        assert_eq!(native_id(&serde_json::json!({"type":"assistant"})), None);
    }
}
