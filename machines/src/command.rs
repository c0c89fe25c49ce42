//! The room-cli command grammar, shared by room-cli (help, local commands) and
//! Core (policy, what is forwarded to the website). Pure: argv in, a
//! [`Command`] or a [`ParseError`] out.

use serde::{Deserialize, Serialize};

/// A top-level room-cli command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    /// `thread …`: the caller's thread and its children.
    Thread,
    /// `fork`: fork the caller's thread.
    Fork,
    /// `loop …`: loops (automations).
    Loop,
    /// `files wait`: wait for the project copy (runs in room-cli itself).
    Files,
    /// `feedback`: send feedback about Cloudroom.
    Feedback,
    /// `gpu`: borrow a GPU machine.
    Gpu,
    /// `computer-use`: drive a desktop.
    ComputerUse,
    /// `secret`: ask the user for a secret through a form.
    Secret,
}

/// Every group with its name, actions (empty: takes none) and one-line help.
pub const GROUPS: &[(Group, &str, &[&str], &str)] = &[
    (
        Group::Thread,
        "thread",
        &[
            "list", "spawn", "output", "tell", "stop", "archive", "update", "move",
        ],
        "list, start and steer this thread's children",
    ),
    (Group::Fork, "fork", &[], "fork this thread into a new one"),
    (
        Group::Loop,
        "loop",
        &[
            "list", "create", "update", "pause", "resume", "run", "delete", "report", "hook",
        ],
        "list and manage loops (scheduled or triggered runs)",
    ),
    (
        Group::Files,
        "files",
        &["wait"],
        "wait until the project's files have landed",
    ),
    (
        Group::Feedback,
        "feedback",
        &[],
        "send feedback to the Cloudroom team",
    ),
    (
        Group::Gpu,
        "gpu",
        &[],
        "borrow a GPU machine for this thread",
    ),
    (
        Group::ComputerUse,
        "computer-use",
        &[],
        "drive this sandbox's desktop",
    ),
    (
        Group::Secret,
        "secret",
        &[],
        "ask the user for a secret through a form",
    ),
];

/// Flags that take no value; every other `--flag` takes one.
pub const BOOL_FLAGS: &[&str] = &[
    "top-level",
    "shared-sandbox",
    "self",
    "new-thread",
    "all",
    "force",
    "paused",
];

/// `thread spawn --top-level --shared-sandbox` (exit 2).
pub const TOP_LEVEL_SHARED: &str = "thread spawn takes --top-level or --shared-sandbox, not both: a top-level thread is not a child, so it has no sandbox to share.";

/// The sentence of seed 001 that `room-cli loop --help` carries.
pub const LOOP_SCRIPT_HELP: &str = "In a loop's check script, loop (except report) and thread spawn --top-level act for its loop, and list shows each loop's last script output.";

/// A parsed room-cli command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Command {
    /// The top-level command.
    pub group: Group,
    /// Its action (`list`, `spawn`, …), for groups that have them.
    pub action: Option<String>,
    /// `--flag value` pairs in order; a flag without a value has `None`.
    pub flags: Vec<(String, Option<String>)>,
    /// The positional arguments after the action.
    pub args: Vec<String>,
}

/// What room-cli should do with an argv.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Parsed {
    /// Run this command.
    Run(Command),
    /// Print this help text and exit 0.
    Help(String),
}

/// Why an argv is not a command; every one exits 2.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParseError {
    /// No such command (or action); the message lists the commands.
    Unknown(String),
    /// A flag that takes a value was last.
    MissingValue(String),
    /// A flag whose body key Core fills itself (`--session`, `--automation`,
    /// `--action`, `--args`): a caller never chooses who it acts for.
    Reserved(String),
    /// A flag that takes no value given one (`--top-level=false`): it would
    /// otherwise count as given, whatever the value says.
    NoValue(String),
    /// `thread spawn --top-level --shared-sandbox`: a top-level thread is not
    /// a child and has no parent's sandbox to share.
    TopLevelShared,
}

impl Parsed {
    /// The command to run, or `None` for a help request.
    pub fn command(self) -> Option<Command> {
        match self {
            Parsed::Run(c) => Some(c),
            Parsed::Help(_) => None,
        }
    }
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::Unknown(m) => f.write_str(m),
            ParseError::MissingValue(flag) => write!(f, "--{flag} needs a value."),
            ParseError::Reserved(flag) => write!(
                f,
                "--{flag} is not a room-cli flag: Core tells the website who is asking."
            ),
            ParseError::NoValue(flag) => write!(
                f,
                "--{flag} takes no value: give --{flag} alone to turn it on, or leave it out."
            ),
            ParseError::TopLevelShared => f.write_str(TOP_LEVEL_SHARED),
        }
    }
}

fn group_entry(
    name: &str,
) -> Option<&'static (Group, &'static str, &'static [&'static str], &'static str)> {
    GROUPS.iter().find(|(_, n, _, _)| *n == name)
}

fn entry(group: Group) -> &'static (Group, &'static str, &'static [&'static str], &'static str) {
    GROUPS
        .iter()
        .find(|(g, _, _, _)| *g == group)
        .expect("every group is listed in GROUPS")
}

/// "Commands: room-cli thread, fork, …": the list an unknown command prints.
pub fn command_list() -> String {
    let names: Vec<&str> = GROUPS.iter().map(|(_, n, _, _)| *n).collect();
    format!("Commands: room-cli {}.", names.join(", "))
}

/// The general help text (`room-cli --help`).
pub fn general_help() -> String {
    let mut s = String::from("Usage: room-cli <command> [args] [--help]\n\nCommands:\n");
    for (_, name, _, line) in GROUPS {
        s.push_str(&format!("  {name:<13} {line}\n"));
    }
    s.push_str("\nRun room-cli <command> --help for one command.\n");
    s
}

/// The help text of one group (`room-cli loop --help`).
pub fn group_help(group: Group) -> String {
    let (_, name, actions, line) = entry(group);
    let mut s = format!("Usage: room-cli {name}");
    if !actions.is_empty() {
        s.push_str(&format!(" <{}>", actions.join("|")));
    }
    s.push_str(" [args] [--flag value]\n\n");
    s.push_str(&format!("{}{}.\n", line[..1].to_uppercase(), &line[1..]));
    match group {
        Group::Thread => s.push_str(
            "spawn starts a child in its own sandbox; --shared-sandbox shares this one; \
             --top-level starts a new top-level thread; --request-id makes a retry start it once; \
             --model and --effort choose what its agent runs with.\n",
        ),
        Group::Loop => {
            s.push_str(LOOP_SCRIPT_HELP);
            s.push('\n');
        }
        Group::Files => s.push_str(
            "wait returns once <folder>.cloudroom-files says ready, reports a failed copy, \
             waits up to 10 s for a missing status file while the folder is empty, \
             and 10 min at most.\n",
        ),
        _ => {}
    }
    s
}

impl Command {
    /// Parses argv (without the program name).
    pub fn parse<S: AsRef<str>>(argv: &[S]) -> Result<Parsed, ParseError> {
        let argv: Vec<&str> = argv.iter().map(|s| s.as_ref()).collect();
        let wants_help = argv.iter().any(|a| *a == "--help" || *a == "-h");
        let Some(first) = argv.first() else {
            return Ok(Parsed::Help(general_help()));
        };
        if first.starts_with('-') {
            if wants_help {
                return Ok(Parsed::Help(general_help()));
            }
            return Err(ParseError::Unknown(format!(
                "Unknown command {first}. {}",
                command_list()
            )));
        }
        let Some(&(group, name, actions, _)) = group_entry(first) else {
            return Err(ParseError::Unknown(format!(
                "Unknown command {first}. {}",
                command_list()
            )));
        };
        if wants_help {
            return Ok(Parsed::Help(group_help(group)));
        }
        let mut rest = &argv[1..];
        let action = if actions.is_empty() {
            None
        } else {
            match rest.first() {
                Some(a) if actions.contains(a) => {
                    rest = &rest[1..];
                    Some(a.to_string())
                }
                other => {
                    let given = other.map_or(String::new(), |a| format!(" {a}"));
                    return Err(ParseError::Unknown(format!(
                        "Unknown command {name}{given}. Commands: room-cli {name} {}.",
                        actions.join(", ")
                    )));
                }
            }
        };
        let (flags, args) = parse_flags(rest)?;
        let cmd = Command {
            group,
            action,
            flags,
            args,
        };
        if cmd.is_top_level_spawn() && cmd.has_flag("shared-sandbox") {
            return Err(ParseError::TopLevelShared);
        }
        Ok(Parsed::Run(cmd))
    }

    /// The command's name as the refusals say it: `thread list`, `fork`.
    pub fn name(&self) -> String {
        let (_, name, _, _) = entry(self.group);
        match &self.action {
            Some(a) => format!("{name} {a}"),
            None => name.to_string(),
        }
    }

    /// Whether `--flag` was given (with or without a value).
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|(f, _)| f == flag)
    }

    /// The value of `--flag value`, if given.
    pub fn flag(&self, flag: &str) -> Option<&str> {
        self.flags
            .iter()
            .find(|(f, _)| f == flag)
            .and_then(|(_, v)| v.as_deref())
    }

    /// `thread spawn --top-level`: a new top-level thread.
    pub fn is_top_level_spawn(&self) -> bool {
        self.group == Group::Thread
            && self.action.as_deref() == Some("spawn")
            && self.has_flag("top-level")
    }

    /// The website route this command posts to (`/api/core/<endpoint>`).
    pub fn endpoint(&self) -> &'static str {
        match self.group {
            Group::Thread if self.is_top_level_spawn() => "launch",
            Group::Thread => "thread",
            Group::Fork => "fork",
            Group::Loop => "automation",
            Group::Files => "files",
            Group::Feedback => "feedback",
            Group::Gpu => "gpu",
            Group::ComputerUse => "computer_use",
            Group::Secret => "secret",
        }
    }
}

type Flags = Vec<(String, Option<String>)>;

fn parse_flags(rest: &[&str]) -> Result<(Flags, Vec<String>), ParseError> {
    let mut flags = Vec::new();
    let mut args = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        let a = rest[i];
        if a == "--" {
            args.extend(rest[i + 1..].iter().map(|s| s.to_string()));
            break;
        }
        if let Some(flag) = a.strip_prefix("--").filter(|f| !f.is_empty()) {
            let name = flag.split_once('=').map_or(flag, |(f, _)| f);
            if crate::body_keys::RESERVED_KEYS
                .contains(&crate::body_keys::snake_case(name).as_str())
            {
                return Err(ParseError::Reserved(name.to_string()));
            }
            if let Some((f, v)) = flag.split_once('=') {
                if BOOL_FLAGS.contains(&f) {
                    return Err(ParseError::NoValue(f.to_string()));
                }
                flags.push((f.to_string(), Some(v.to_string())));
            } else if BOOL_FLAGS.contains(&flag) {
                flags.push((flag.to_string(), None));
            } else {
                let value = rest
                    .get(i + 1)
                    .ok_or_else(|| ParseError::MissingValue(flag.to_string()))?;
                flags.push((flag.to_string(), Some(value.to_string())));
                i += 1;
            }
        } else {
            args.push(a.to_string());
        }
        i += 1;
    }
    Ok((flags, args))
}

/// Parses an argv that must be a command to run (for the crate's tests).
#[cfg(test)]
pub(crate) fn test_command(argv: &[&str]) -> Command {
    match Command::parse(argv) {
        Ok(Parsed::Run(c)) => c,
        other => panic!("{argv:?} parsed as {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::test_command as run;

    #[test]
    fn parses_actions_flags_and_args() {
        let c = run(&[
            "thread",
            "spawn",
            "--top-level",
            "--request-id",
            "r1",
            "fix",
            "it",
        ]);
        assert_eq!(c.name(), "thread spawn");
        assert!(c.is_top_level_spawn());
        assert_eq!(c.flag("request-id"), Some("r1"));
        assert_eq!(c.args, vec!["fix", "it"]);
        assert_eq!(c.endpoint(), "launch");
        assert_eq!(run(&["fork"]).name(), "fork");
        assert_eq!(run(&["loop", "list"]).endpoint(), "automation");
        assert_eq!(
            run(&["thread", "update", "--title=x"]).flag("title"),
            Some("x")
        );
    }

    #[test]
    fn unknown_commands_list_the_commands() {
        let e = Command::parse(&["status"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Unknown command status. Commands: room-cli thread, fork, loop, files, feedback, gpu, computer-use, secret."
        );
        let e = Command::parse(&["loop", "explode"]).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("Unknown command loop explode. Commands: room-cli loop list"));
        assert_eq!(
            Command::parse(&["thread", "update", "--title"]),
            Err(ParseError::MissingValue("title".into()))
        );
    }

    #[test]
    fn a_caller_cannot_name_its_own_scope() {
        for flag in ["--session", "--automation=x", "--action", "--args"] {
            let e = Command::parse(&["loop", "list", flag, "v"]).unwrap_err();
            assert!(matches!(e, ParseError::Reserved(_)), "{flag}: {e:?}");
            assert!(e
                .to_string()
                .ends_with("Core tells the website who is asking."));
        }
    }

    #[test]
    fn a_flag_that_takes_no_value_refuses_one() {
        for argv in [
            &["thread", "spawn", "--top-level=false", "go"][..],
            &["thread", "spawn", "--top-level=true", "go"],
            &["thread", "spawn", "--top-level=", "go"],
            &["thread", "spawn", "--shared-sandbox=no", "go"],
            &["loop", "create", "--new-thread=false"],
        ] {
            let flag = argv[2]
                .trim_start_matches('-')
                .split_once('=')
                .unwrap()
                .0
                .to_string();
            assert_eq!(
                Command::parse(argv),
                Err(ParseError::NoValue(flag.clone())),
                "{argv:?}"
            );
            assert_eq!(
                ParseError::NoValue(flag.clone()).to_string(),
                format!(
                    "--{flag} takes no value: give --{flag} alone to turn it on, or leave it out."
                )
            );
        }
        // A value after the flag is a positional argument.
        let c = run(&["thread", "spawn", "--top-level", "false"]);
        assert!(c.is_top_level_spawn());
        assert_eq!(c.args, vec!["false"]);
    }

    #[test]
    fn a_top_level_spawn_cannot_share_a_sandbox() {
        for argv in [
            &["thread", "spawn", "--top-level", "--shared-sandbox", "go"][..],
            &["thread", "spawn", "--shared-sandbox", "go", "--top-level"],
        ] {
            let e = Command::parse(argv).unwrap_err();
            assert_eq!(e, ParseError::TopLevelShared);
            assert_eq!(e.to_string(), TOP_LEVEL_SHARED);
        }
        // Each alone is fine.
        assert!(run(&["thread", "spawn", "--shared-sandbox", "go"]).has_flag("shared-sandbox"));
        assert!(run(&["thread", "spawn", "--top-level", "go"]).is_top_level_spawn());
    }

    #[test]
    fn loop_help_carries_the_script_sentence() {
        match Command::parse(&["loop", "--help"]) {
            Ok(Parsed::Help(h)) => assert!(h.contains(LOOP_SCRIPT_HELP)),
            other => panic!("{other:?}"),
        }
        for (_, name, _, _) in GROUPS {
            assert!(matches!(
                Command::parse(&[*name, "--help"]),
                Ok(Parsed::Help(_))
            ));
        }
    }
}
