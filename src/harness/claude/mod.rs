//! The claude adapter: Claude Code on its stream-json protocol, with the
//! wire types it reads and writes (protocol.rs) and its side of the
//! talker (talk.rs). Here: the argv of its process, `claude -p
//! --input-format stream-json --output-format stream-json --verbose
//! --permission-prompt-tool stdio [--resume <id> [--fork-session]
//! [--resume-session-at <uuid>]] --permission-mode <mode>
//! [--allowedTools <tool>...]`, the prompt a user message on stdin (so no
//! prompt can be taken for an option). The turn's first event,
//! `{"type":"system","subtype":"init","session_id":…}`, names the session
//! (talk.rs hears it); its `result` ends the turn and says what it used
//! (protocol.rs reads that).

pub mod protocol;
pub mod talk;

use super::modes::Modes;
use super::options::Options;
use protocol::PROTOCOL_ARGS;

/// The argv (without the program) of one turn; `cut` is a rewind's or a
/// fork's: the uuid of the message the resumed conversation ends with
/// (`--resume-session-at`, which the Agent SDK's `resumeSessionAt`
/// passes; claude drops what followed it and the turn goes on from it),
/// and whether it forks (`--fork-session`: a session of its own, the one
/// resumed left as it is).
pub fn argv(
    native_id: Option<&str>,
    cut: Option<(&str, bool)>,
    modes: &Modes,
    options: Options,
) -> Vec<String> {
    let mut a: Vec<String> = PROTOCOL_ARGS.iter().map(|s| s.to_string()).collect();
    if let Some(id) = native_id {
        a.extend(["--resume".into(), id.into()]);
        if let Some((at, fork)) = cut {
            if fork {
                a.push("--fork-session".into());
            }
            a.extend(["--resume-session-at".into(), at.into()]);
        }
    }
    a.extend(["--permission-mode".into(), modes.claude.flag().into()]);
    // Each value is one argument after its option: checked by the API to
    // be a model name that cannot be an option, or any text (an option's
    // value is never parsed as one).
    if let Some(model) = options.model {
        a.extend(["--model".into(), model.into()]);
    }
    if let Some(effort) = options.effort {
        a.extend(["--effort".into(), effort.name().into()]);
    }
    if let Some(text) = options.instructions {
        a.extend(["--append-system-prompt".into(), text.into()]);
    }
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
    use crate::harness::options::Effort;

    #[test]
    fn the_apps_options_are_each_one_value_after_their_flag() {
        let config = Config::default();
        let options = Options {
            model: Some("claude-haiku-4-5"),
            effort: Some(Effort::Max),
            instructions: Some("--print this\nand that"),
        };
        let a = argv(None, None, &config.modes(true), options);
        assert_eq!(
            a[a.len() - 6..],
            [
                "--model",
                "claude-haiku-4-5",
                "--effort",
                "max",
                "--append-system-prompt",
                "--print this\nand that"
            ]
        );
    }

    #[test]
    fn a_rewound_conversation_resumes_at_its_cut() {
        let config = Config::default();
        let modes = config.modes(false);
        let a = argv(Some("abc"), Some(("u1", false)), &modes, Options::default());
        let at = a.iter().position(|x| x == "--resume").unwrap();
        assert_eq!(
            a[at..at + 4],
            ["--resume", "abc", "--resume-session-at", "u1"]
        );
        let a = argv(Some("abc"), Some(("u1", true)), &modes, Options::default());
        assert_eq!(
            a[at..at + 5],
            [
                "--resume",
                "abc",
                "--fork-session",
                "--resume-session-at",
                "u1"
            ]
        );
        // Nothing to cut without a session to resume.
        let a = argv(None, Some(("u1", true)), &modes, Options::default());
        assert!(!a.iter().any(|x| x.starts_with("--resume")), "{a:?}");
    }

    #[test]
    fn resumes_by_native_id_and_plans_read_only() {
        let config = Config::default();
        let a = argv(Some("abc"), None, &config.modes(false), Options::default());
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
        let a = argv(None, None, &config.modes(true), Options::default());
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
