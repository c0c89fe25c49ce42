//! Rewind with the real `claude` and `codex` against the loopback fake
//! model (issue 32, point 4): three turns change the folder (the CLI's own
//! write, then its shell), a rewind to turn 1 puts the folder back as turn
//! 1 left it and cuts the conversation there, and the model's next request
//! holds turn 1 and the new message only, as does the one after it (the cut
//! is made once). Ignored with why where the CLI is missing; fails instead
//! in CI.

// The shared support's other readers are other checks'.
#[allow(dead_code)]
mod real_support;

use libtest_mimic::Arguments;
use real_support::three_turns::{send, three_turns, LATER_PROMPTS};
use real_support::{seen, trial, Real};
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// The latest turn request's whole text.
fn last_request(real: &Real, harness: &str) -> String {
    let all = real.model.turn_requests(harness);
    seen(all.last().expect("a turn request"))
}

fn a_rewind_cuts_the_folder_and_the_conversation_after_turn_one(test: &str, harness: &str) {
    let Some(real) = Real::start(test, harness, json!({}), vec![]) else {
        return;
    };
    let folder = real.svc.folder("rewind");
    let a = folder.join("a.txt");
    let (id, after_one) = three_turns(&real, harness, &folder);
    let third = last_request(&real, harness);
    assert!(
        third.contains("bravo-two") && third.contains("alpha-one"),
        "turn 3 sees the turns before it: {third}"
    );

    let rewind = |body| real.svc.post(&format!("/v1/sessions/{id}/rewind"), body);
    let (status, dry) = rewind(json!({"to_turn": 1, "dry_run": true}));
    assert_eq!(status, 200, "{dry}");
    assert_eq!(dry["conversation"], "cut", "{dry}");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "charlie-three\n");
    let (status, done) = rewind(json!({"to_turn": 1}));
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["conversation"], "cut", "{done}");
    assert_eq!(done["failed"], json!([]), "{done}");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), after_one);
    assert!(!folder.join("b.txt").exists(), "{done}");

    let [two, three] = LATER_PROMPTS;
    send(&real, &id, 4, "delta-four");
    let fourth = last_request(&real, harness);
    assert!(
        fourth.contains("alpha-one") && fourth.contains("delta-four"),
        "turn 4 sees turn 1 and its own message: {fourth}"
    );
    assert!(
        !fourth.contains(two) && !fourth.contains(three),
        "turns 2 and 3 are cut: {fourth}"
    );
    // The cut is made once: the turn after goes on from turn 4.
    send(&real, &id, 5, "echo-five");
    let fifth = last_request(&real, harness);
    assert!(
        fifth.contains("alpha-one") && fifth.contains("delta-four") && fifth.contains("echo-five"),
        "turn 5 sees turns 1 and 4: {fifth}"
    );
    assert!(!fifth.contains(two) && !fifth.contains(three), "{fifth}");
    // Turn 2 is no longer in the conversation: nothing can be cut to it.
    let (status, v) = rewind(json!({"to_turn": 2, "dry_run": true}));
    assert_eq!(
        (status, v["conversation"].as_str()),
        (200, Some("uncut")),
        "{v}"
    );
    assert!(
        v["conversation_why"]
            .as_str()
            .unwrap()
            .contains("an earlier rewind, to turn 1, cut turn 2 out of the conversation"),
        "{v}"
    );
}

fn claude_a_rewind_cuts_the_folder_and_the_conversation_after_turn_one() {
    a_rewind_cuts_the_folder_and_the_conversation_after_turn_one(
        "claude_a_rewind_cuts_the_folder_and_the_conversation_after_turn_one",
        "claude",
    );
}

fn codex_a_rewind_cuts_the_folder_and_the_conversation_after_turn_one() {
    a_rewind_cuts_the_folder_and_the_conversation_after_turn_one(
        "codex_a_rewind_cuts_the_folder_and_the_conversation_after_turn_one",
        "codex",
    );
}

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let trials = vec![
        trial(
            "claude_a_rewind_cuts_the_folder_and_the_conversation_after_turn_one",
            Some("claude"),
            false,
            claude_a_rewind_cuts_the_folder_and_the_conversation_after_turn_one,
        ),
        trial(
            "codex_a_rewind_cuts_the_folder_and_the_conversation_after_turn_one",
            Some("codex"),
            false,
            codex_a_rewind_cuts_the_folder_and_the_conversation_after_turn_one,
        ),
    ];
    libtest_mimic::run(&args, trials).exit_code()
}
