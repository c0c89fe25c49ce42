//! What each kind of caller may run, and the exact refusal texts (seed 001).

use serde::{Deserialize, Serialize};

use crate::caller::Caller;
use crate::command::{Command, Group};

/// Who the website should act for: sent as `"session": id` or
/// `"automation": id`, exactly one of the two.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// A harness session (a thread).
    Session(String),
    /// A loop, for its check script.
    Automation(String),
}

impl Scope {
    /// The JSON field name and value: `("session", id)` or `("automation", id)`.
    pub fn field(&self) -> (&'static str, &str) {
        match self {
            Scope::Session(id) => ("session", id),
            Scope::Automation(id) => ("automation", id),
        }
    }
}

/// The policy's answer for one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Send it to the website with this scope.
    Forward(Scope),
    /// Print `message` on stderr and exit with `exit_code`; nothing is sent.
    Refuse {
        /// The sentence the caller sees.
        message: String,
        /// room-cli's exit status.
        exit_code: i32,
    },
    /// room-cli runs it itself (`files wait`); Core sends nothing.
    Local,
}

/// Seed 001: `loop report` from a check script.
pub const LOOP_REPORT: &str = "A loop's check script can't report: room-cli loop report is for the run's own thread. Print what the run needs instead; Cloudroom adds it to the run's prompt.";
/// Seed 001: a child spawn (no `--top-level`) from a check script.
pub const SCRIPT_CHILD: &str = "A loop's check script has no thread to start a child under. Add --top-level to start a top-level thread in the loop's project.";
/// Seed 001: any other session-only command from a check script; `{X}` is the command.
pub const SCRIPT_OTHER: &str = "A loop's check script has no thread, so it can't run cloudroom {X}. It can run room-cli loop (except report) and room-cli thread spawn --top-level.";
/// Seed 001: loop or top-level spawn where the caller's environment is unreadable.
pub const HIDDEN_LOOP: &str = "This machine's Core runs as its own account and can't read this command's environment, so it can't see a loop script's CLOUDROOM_LOOP. Run cloudroom {X} from a Cloudroom cloud thread here.";
/// The old refusal for a caller with neither harness nor marker.
pub const NO_THREAD: &str = "Run cloudroom {X} from a Cloudroom cloud thread";
/// The same, for loop (except report) and top-level spawn, which loop scripts may also run.
pub const NO_THREAD_OR_LOOP: &str = "Run cloudroom {X} from a Cloudroom cloud thread or from a loop's check script (marked by CLOUDROOM_LOOP)";
/// The same, for a child spawn (also `--shared-sandbox`): a loop script may
/// spawn only with `--top-level`.
pub const NO_THREAD_CHILD: &str = "Run cloudroom thread spawn from a Cloudroom cloud thread. A loop's check script (marked by CLOUDROOM_LOOP) can only start a top-level thread, with --top-level.";
/// The same, for `loop report`, which no loop script may run.
pub const NO_THREAD_REPORT: &str = "Run cloudroom loop report from a Cloudroom cloud thread: it reports for the run's own thread, so a loop's check script can't run it.";
/// A `CLOUDROOM_LOOP` value that is not a loop ID; `{V}` is the value.
pub const MALFORMED: &str = "CLOUDROOM_LOOP is set to {V}, which is not a loop ID (a 36-character UUID such as 0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b). Cloudroom sets it on a loop's check script; leave it alone.";
/// `secret` keeps its own session check and its message, unchanged (seed
/// 001): the generic one, for every caller but a harness, whatever its marker.
pub const SECRET: &str = "Run cloudroom secret from a Cloudroom cloud thread";

fn refuse(message: String) -> Decision {
    Decision::Refuse {
        message,
        exit_code: 1,
    }
}

/// Whether a loop script may run the command (`loop` except `report`,
/// `thread spawn --top-level`).
fn loop_may_run(cmd: &Command) -> bool {
    (cmd.group == Group::Loop && cmd.action.as_deref() != Some("report"))
        || cmd.is_top_level_spawn()
}

/// The name a "run it from a thread or a loop script" refusal uses: `loop`
/// for a loop command, `thread spawn --top-level` for a top-level spawn.
fn short_name(cmd: &Command) -> String {
    match cmd.group {
        Group::Loop => "loop".into(),
        _ => cmd.name() + " --top-level",
    }
}

/// Decides what happens to `cmd` from `caller`. Nothing refused is forwarded.
pub fn decide(caller: &Caller, cmd: &Command) -> Decision {
    let spawn = cmd.group == Group::Thread && cmd.action.as_deref() == Some("spawn");
    let report = cmd.group == Group::Loop && cmd.action.as_deref() == Some("report");
    match caller {
        _ if cmd.group == Group::Files => Decision::Local,
        Caller::Harness(session) => Decision::Forward(Scope::Session(session.clone())),
        // Its own check, before any marker is looked at (a malformed one too).
        _ if cmd.group == Group::Secret => refuse(SECRET.into()),
        Caller::Loop(id) if loop_may_run(cmd) => Decision::Forward(Scope::Automation(id.clone())),
        Caller::Loop(_) if report => refuse(LOOP_REPORT.into()),
        Caller::Loop(_) if spawn => refuse(SCRIPT_CHILD.into()),
        Caller::Loop(_) => refuse(SCRIPT_OTHER.replace("{X}", &cmd.name())),
        Caller::Malformed(value) => refuse(MALFORMED.replace("{V}", &format!("{value:?}"))),
        Caller::Hidden if loop_may_run(cmd) => refuse(HIDDEN_LOOP.replace("{X}", &short_name(cmd))),
        Caller::Hidden | Caller::Unknown if loop_may_run(cmd) => {
            refuse(NO_THREAD_OR_LOOP.replace("{X}", &short_name(cmd)))
        }
        Caller::Hidden | Caller::Unknown if report => refuse(NO_THREAD_REPORT.into()),
        Caller::Hidden | Caller::Unknown if spawn => refuse(NO_THREAD_CHILD.into()),
        Caller::Hidden | Caller::Unknown => refuse(NO_THREAD.replace("{X}", &cmd.name())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::test_command as cmd;

    const ID: &str = "0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b";

    fn refusal(caller: &Caller, argv: &[&str]) -> String {
        match decide(caller, &cmd(argv)) {
            Decision::Refuse {
                message,
                exit_code: 1,
            } => message,
            other => panic!("{argv:?} from {caller:?}: {other:?}"),
        }
    }

    #[test]
    fn a_caller_whose_environment_is_hidden_gets_its_own_refusal() {
        assert_eq!(
            refusal(&Caller::Hidden, &["loop", "list"]),
            HIDDEN_LOOP.replace("{X}", "loop")
        );
    }

    #[test]
    fn a_loop_script_runs_loop_commands_and_top_level_spawns_as_its_loop() {
        let lp = Caller::Loop(ID.into());
        for argv in [
            &["loop", "list"][..],
            &["loop", "create", "--cron", "* * * * *"],
            &["thread", "spawn", "--top-level", "go"],
        ] {
            assert_eq!(
                decide(&lp, &cmd(argv)),
                Decision::Forward(Scope::Automation(ID.into()))
            );
        }
    }

    #[test]
    fn session_only_commands_refuse_a_loop_script_clearly() {
        let lp = Caller::Loop(ID.into());
        assert_eq!(refusal(&lp, &["loop", "report", "done"]), LOOP_REPORT);
        assert_eq!(refusal(&lp, &["thread", "spawn", "go"]), SCRIPT_CHILD);
        assert_eq!(
            refusal(&lp, &["thread", "spawn", "--shared-sandbox", "go"]),
            SCRIPT_CHILD
        );
        assert_eq!(
            refusal(&lp, &["thread", "list"]),
            "A loop's check script has no thread, so it can't run cloudroom thread list. It can run room-cli loop (except report) and room-cli thread spawn --top-level."
        );
        assert_eq!(
            refusal(&lp, &["fork"]),
            "A loop's check script has no thread, so it can't run cloudroom fork. It can run room-cli loop (except report) and room-cli thread spawn --top-level."
        );
    }

    #[test]
    fn a_harness_session_wins_over_a_loop_marker() {
        let h = Caller::Harness("cr_seed".into());
        assert_eq!(
            decide(&h, &cmd(&["loop", "report", "x"])),
            Decision::Forward(Scope::Session("cr_seed".into()))
        );
    }

    #[test]
    fn no_marker_and_malformed_markers_are_refused() {
        assert_eq!(
            refusal(&Caller::Unknown, &["thread", "list"]),
            "Run cloudroom thread list from a Cloudroom cloud thread"
        );
        assert_eq!(
            refusal(&Caller::Unknown, &["loop", "list"]),
            "Run cloudroom loop from a Cloudroom cloud thread or from a loop's check script (marked by CLOUDROOM_LOOP)"
        );
        assert!(refusal(&Caller::Malformed("x".into()), &["loop", "list"])
            .starts_with("CLOUDROOM_LOOP is set to \"x\""));
        assert_eq!(
            decide(&Caller::Unknown, &cmd(&["files", "wait"])),
            Decision::Local
        );
    }

    #[test]
    fn unknown_callers_are_told_what_a_loop_script_may_run() {
        for caller in [Caller::Unknown, Caller::Hidden] {
            // A child spawn (also into a shared sandbox) mentions loop
            // scripts, which may spawn only with --top-level.
            for argv in [
                &["thread", "spawn", "go"][..],
                &["thread", "spawn", "--shared-sandbox", "go"],
            ] {
                assert_eq!(
                    refusal(&caller, argv),
                    "Run cloudroom thread spawn from a Cloudroom cloud thread. A loop's check script (marked by CLOUDROOM_LOOP) can only start a top-level thread, with --top-level."
                );
            }
            // loop report is not offered to a loop script.
            assert_eq!(
                refusal(&caller, &["loop", "report", "done"]),
                "Run cloudroom loop report from a Cloudroom cloud thread: it reports for the run's own thread, so a loop's check script can't run it."
            );
        }
        assert_eq!(
            refusal(&Caller::Unknown, &["thread", "spawn", "--top-level", "go"]),
            "Run cloudroom thread spawn --top-level from a Cloudroom cloud thread or from a loop's check script (marked by CLOUDROOM_LOOP)"
        );
    }

    #[test]
    fn secret_keeps_its_own_session_check_and_message() {
        for caller in [
            Caller::Unknown,
            Caller::Hidden,
            Caller::Loop(ID.into()),
            Caller::Malformed("nope".into()),
        ] {
            assert_eq!(
                refusal(&caller, &["secret", "API_KEY"]),
                "Run cloudroom secret from a Cloudroom cloud thread",
                "{caller:?}"
            );
        }
        assert_eq!(SECRET, NO_THREAD.replace("{X}", "secret"));
        assert_eq!(
            decide(&Caller::Harness("s".into()), &cmd(&["secret", "K"])),
            Decision::Forward(Scope::Session("s".into()))
        );
    }
}
