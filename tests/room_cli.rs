//! room-cli on its own: help for every command, unknown commands, and a Core
//! that is not there.

use std::process::Command;

use room_kit::Out;

/// room-cli, built beside the service.
const ROOM_CLI: &str = env!("CARGO_BIN_EXE_room-cli");

fn cli(args: &[&str], socket: &str) -> Out {
    Command::new(ROOM_CLI)
        .args(args)
        .env("ROOM_CORE_SOCKET", socket)
        .output()
        .unwrap()
        .into()
}

const NOWHERE: &str = "/nonexistent/room-core-agent.sock";

#[test]
fn help_runs_without_core_for_every_command() {
    let out = cli(&["--help"], NOWHERE);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.starts_with("Usage: room-cli <command>"));
    for name in [
        "thread",
        "fork",
        "loop",
        "files",
        "feedback",
        "gpu",
        "computer-use",
        "secret",
    ] {
        let out = cli(&[name, "--help"], NOWHERE);
        assert_eq!(out.code, 0, "{name}: {out:?}");
        assert!(
            out.stdout.starts_with(&format!("Usage: room-cli {name}")),
            "{out:?}"
        );
    }
    let out = cli(&["loop", "list", "--help"], NOWHERE);
    assert_eq!(out.code, 0);
    assert!(out.stdout.contains(
        "In a loop's check script, loop (except report) and thread spawn --top-level act for its loop, and list shows each loop's last script output."
    ));
    let out = cli(&["thread", "--help"], NOWHERE);
    assert!(out.stdout.contains("--top-level"), "{out:?}");
}

#[test]
fn unknown_commands_exit_2_with_the_list() {
    let out = cli(&["status"], NOWHERE);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "Unknown command status. Commands: room-cli thread, fork, loop, files, feedback, gpu, computer-use, secret.\n"
    );
    let out = cli(&["loop", "explode"], NOWHERE);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "Unknown command loop explode. Commands: room-cli loop list, create, update, pause, resume, run, delete, report, hook.\n"
    );
    let out = cli(&["--self"], NOWHERE);
    assert_eq!(out.code, 2, "{out:?}");
}

#[test]
fn a_missing_core_is_exit_1_with_a_sentence() {
    let out = cli(&["loop", "list"], NOWHERE);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .starts_with(&format!("room-cli: cannot reach Core at {NOWHERE}: ")),
        "{out:?}"
    );
}
