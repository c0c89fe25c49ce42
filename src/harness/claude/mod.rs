//! The claude adapter: Claude Code on its stream-json protocol, with the
//! wire types it reads and writes (protocol.rs) and its side of the
//! talker (talk.rs). Here: the argv of its process, `claude -p
//! --input-format stream-json --output-format stream-json --verbose
//! --permission-prompt-tool stdio [--resume <id>] --permission-mode <mode>
//! [--allowedTools <tool>...]`, the prompt a user message on stdin (so no
//! prompt can be taken for an option). The turn's first event,
//! `{"type":"system","subtype":"init","session_id":…}`, names the session
//! (talk.rs hears it); its `result` ends the turn and says what it used
//! (protocol.rs reads that).

pub mod protocol;
pub mod talk;

use super::modes::Modes;
use protocol::PROTOCOL_ARGS;

/// The argv (without the program) of one turn.
pub fn argv(native_id: Option<&str>, modes: &Modes) -> Vec<String> {
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
}
