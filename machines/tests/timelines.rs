//! Replays every recorded timeline in `fixtures/timelines/` and fails with the
//! first step whose effects (or outcome, or phase) differ from the record.

use std::path::{Path, PathBuf};

use room_machines::launch::{Effect, LaunchEffect};
use room_machines::policy::Decision;
use room_machines::session;
use room_machines::timeline::{Begin, Timeline};

fn load_all() -> Vec<(String, Timeline)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/timelines");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("fixtures/timelines exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).unwrap();
            let t: Timeline = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, t)
        })
        .collect()
}

#[test]
fn every_recorded_timeline_replays() {
    let all = load_all();
    assert!(!all.is_empty());
    let failures: Vec<String> = all
        .iter()
        .filter_map(|(name, t)| t.replay().err().map(|e| format!("{name} {e}")))
        .collect();
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// Each seed test has at least one timeline, named after it, and so has each
/// caller rule the seeds give.
#[test]
fn every_seed_test_has_a_timeline() {
    let all = load_all();
    for (_, t) in &all {
        let (Timeline::Launch { about, .. }
        | Timeline::Session { about, .. }
        | Timeline::Caller { about, .. }) = t;
        assert!(!about.is_empty(), "{} says what it shows", t.test());
    }
    for seed_test in [
        "test_harness_starts_once_a_running_project_copy_lands",
        "test_a_mark_left_by_a_dead_copy_holds_no_start",
        "test_a_promised_copy_holds_the_harness_until_its_status_file_says_it_landed",
        "test_no_copy_or_a_failed_one_starts_the_harness_at_once",
        "test_stop_and_close_during_the_wait",
        "test_restart_during_the_wait_and_resume_after_the_copy",
        "a_launch_waits_for_a_copy_only_while_it_runs_and_never_past_its_limit",
        "test_a_loop_script_runs_loop_commands_and_top_level_spawns_as_its_loop",
        "test_a_process_without_a_loop_marker_is_still_refused",
        "test_a_malformed_loop_marker_is_refused",
        "test_session_only_commands_refuse_a_loop_script_clearly",
        "test_a_harness_session_wins_over_a_loop_marker",
        "an_unreadable_caller_environment_gets_its_own_refusal",
        "pid_1s_environment_never_marks_a_caller",
        "unknown_callers_are_told_what_a_loop_script_may_run",
        "secret_keeps_its_own_session_check_and_message",
    ] {
        assert!(
            all.iter().any(|(_, t)| t.test() == seed_test),
            "no timeline for {seed_test}"
        );
    }
}

/// A record that no longer matches the code (a refusal text, an effect)
/// fails at the first case or step that differs, and names it.
#[test]
fn the_replay_fails_at_the_first_differing_step() {
    let all = load_all();
    let find = |name: &str| {
        all.iter()
            .find(|(_, t)| t.test() == name)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| panic!("no timeline {name}"))
    };

    // Every refusal from case 1 on changes: the error is case 1's.
    let mut t = find("unknown_callers_are_told_what_a_loop_script_may_run");
    let Timeline::Caller { cases, .. } = &mut t else {
        panic!("a caller timeline")
    };
    for case in &mut cases[1..] {
        if let Decision::Refuse { message, .. } = &mut case.decision {
            message.push_str(" (old text)");
        }
    }
    let e = t.replay().unwrap_err();
    assert!(e.starts_with("case 1: "), "{e}");
    assert!(e.contains("(old text)"), "{e}");

    // Every step's effects from step 1 on change: the error is step 1's.
    let mut t = find("a_launch_waits_for_a_copy_only_while_it_runs_and_never_past_its_limit");
    let Timeline::Launch { runs, .. } = &mut t else {
        panic!("a launch timeline")
    };
    assert!(runs[0].steps.len() > 2);
    for step in &mut runs[0].steps[1..] {
        step.effects.push(Effect::Runtime(LaunchEffect::AskPermit));
    }
    let e = t.replay().unwrap_err();
    assert!(e.starts_with("run 0 step 1 "), "{e}");

    // A session run: a recorded outcome that differs is the error, and so is
    // a restore from another record than the one the service read.
    let mut t = find("a_session_across_a_kill_9_mid_turn");
    let Timeline::Session { runs, .. } = &mut t else {
        panic!("a session timeline")
    };
    assert_eq!(runs.len(), 2);
    let step = &mut runs[1].steps[0];
    step.outcome = match step.outcome {
        session::Outcome::Ignored => session::Outcome::Applied,
        _ => session::Outcome::Ignored,
    };
    let e = t.replay().unwrap_err();
    assert!(e.starts_with("run 1 step 0 "), "{e}");
    let mut t = find("a_session_across_a_kill_9_mid_turn");
    let Timeline::Session { runs, .. } = &mut t else {
        unreachable!()
    };
    let Begin::Restore { record, .. } = &mut runs[1].begin else {
        panic!("the second run is a restore")
    };
    record.turn = None;
    let e = t.replay().unwrap_err();
    assert!(e.starts_with("run 1 at the beginning"), "{e}");
}
