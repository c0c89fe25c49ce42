//! Fork with the real `claude` and `codex` against the loopback fake
//! model (issue 32, point 5): after three turns, a fork at turn 1 is a
//! new session whose folder is what turn 1 left and whose model requests
//! hold turn 1 and its own messages only, while the parent keeps its
//! folder and all three turns. Ignored with why where the CLI is missing;
//! fails instead in CI.

// The shared support's other readers are other checks'.
#[allow(dead_code)]
mod real_support;

use libtest_mimic::Arguments;
use real_support::three_turns::{send, three_turns, LATER_PROMPTS};
use real_support::{seen, trial, Real};
use room_kit::events::all_events;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// The whole text of the latest turn request that holds `marker`.
fn request_with(real: &Real, harness: &str, marker: &str) -> String {
    let all = real.model.turn_requests(harness);
    all.iter()
        .rev()
        .map(seen)
        .find(|t| t.contains(marker))
        .unwrap_or_else(|| panic!("no request holds {marker}"))
}

fn a_fork_at_turn_one_has_its_folder_and_conversation_and_the_parent_keeps_its_own(
    test: &str,
    harness: &str,
) {
    let Some(real) = Real::start(test, harness, json!({}), vec![]) else {
        return;
    };
    let folder = real.svc.folder("parent");
    let a = folder.join("a.txt");
    let (id, after_one) = three_turns(&real, harness, &folder);

    let fork_folder = real.svc.folder("fork");
    let (status, fork) = real.svc.post(
        &format!("/v1/sessions/{id}/fork"),
        json!({"at_turn": 1, "folder": fork_folder, "workspace": "forked", "prompt": "delta-four"}),
    );
    assert_eq!(status, 201, "{fork}");
    let fid = fork["id"].as_str().unwrap().to_string();
    assert_ne!(fid, id);
    real.await_idle(&fid);
    // Its folder is what turn 1 left; the parent's is as turn 3 left it.
    assert_eq!(
        std::fs::read_to_string(fork_folder.join("a.txt")).unwrap(),
        after_one
    );
    assert!(!fork_folder.join("b.txt").exists());
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "charlie-three\n");
    assert!(folder.join("b.txt").exists());
    // Its conversation is turn 1's and its own (claude tells the model
    // that turn 1's file, in the parent's folder, changed since: the
    // later turns' prompts are what must not be there).
    let [two, three] = LATER_PROMPTS;
    let fourth = request_with(&real, harness, "delta-four");
    assert!(
        fourth.contains("alpha-one"),
        "the fork holds turn 1: {fourth}"
    );
    assert!(
        !fourth.contains(two) && !fourth.contains(three),
        "the fork holds nothing after turn 1"
    );
    let events = all_events(&real.svc, &fid, 1024);
    let forked: Vec<&Value> = events.iter().filter(|e| e["kind"] == "forked").collect();
    assert_eq!(forked.len(), 1, "{events:?}");
    assert_eq!(forked[0]["data"], json!({"parent": id, "after_turn": 1}));
    let (_, parent_view) = real.svc.get(&format!("/v1/sessions/{id}"));
    let (_, fork_view) = real.svc.get(&format!("/v1/sessions/{fid}"));
    assert_ne!(
        parent_view["native_id"], fork_view["native_id"],
        "a native session of its own"
    );
    // The fork goes on from its own turn; the parent keeps all three.
    send(&real, &fid, 2, "echo-five");
    let fifth = request_with(&real, harness, "echo-five");
    assert!(
        fifth.contains("alpha-one") && fifth.contains("delta-four"),
        "{fifth}"
    );
    assert!(!fifth.contains(two), "{fifth}");
    send(&real, &id, 4, "foxtrot-six");
    let parent = request_with(&real, harness, "foxtrot-six");
    assert!(
        parent.contains("alpha-one") && parent.contains(two) && parent.contains(three),
        "the parent keeps its turns"
    );
    assert!(
        !parent.contains("delta-four") && !parent.contains("echo-five"),
        "nothing of the fork's reaches the parent"
    );
}

fn claude_fork() {
    a_fork_at_turn_one_has_its_folder_and_conversation_and_the_parent_keeps_its_own(
        "claude_a_fork_at_turn_one_has_its_folder_and_conversation_and_the_parent_keeps_its_own",
        "claude",
    );
}

fn codex_fork() {
    a_fork_at_turn_one_has_its_folder_and_conversation_and_the_parent_keeps_its_own(
        "codex_a_fork_at_turn_one_has_its_folder_and_conversation_and_the_parent_keeps_its_own",
        "codex",
    );
}

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let trials = vec![
        trial(
            "claude_a_fork_at_turn_one_has_its_folder_and_conversation_and_the_parent_keeps_its_own",
            Some("claude"),
            false,
            claude_fork,
        ),
        trial(
            "codex_a_fork_at_turn_one_has_its_folder_and_conversation_and_the_parent_keeps_its_own",
            Some("codex"),
            false,
            codex_fork,
        ),
    ];
    libtest_mimic::run(&args, trials).exit_code()
}
