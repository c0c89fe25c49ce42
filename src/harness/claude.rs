//! Claude Code: `claude -p --output-format stream-json --verbose
//! [--resume <id>] --permission-mode <mode> [--allowedTools <tool>...]`,
//! the prompt on stdin (`-p` with no prompt argument reads it there, so no
//! prompt can be taken for an option). The first stream-json event,
//! `{"type":"system","subtype":"init","session_id":…}`, names the session.

use super::modes::Modes;

/// The argv (without the program) of one turn.
pub fn argv(native_id: Option<&str>, modes: &Modes) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "-p".into(),
        "--output-format".into(),
        "stream-json".into(),
        // stream-json in print mode requires --verbose.
        "--verbose".into(),
    ];
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

/// The session ID from the `system`/`init` event.
pub fn native_id(event: &serde_json::Value) -> Option<String> {
    (event["type"] == "system" && event["subtype"] == "init")
        .then(|| event["session_id"].as_str().map(str::to_string))
        .flatten()
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
                "--output-format",
                "stream-json",
                "--verbose",
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
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-mode",
                "plan"
            ]
        );
        let e = serde_json::json!({"type":"system","subtype":"init","session_id":"s1"});
        assert_eq!(native_id(&e), Some("s1".into()));
        assert_eq!(native_id(&serde_json::json!({"type":"assistant"})), None);
    }
}
