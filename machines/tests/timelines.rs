//! Replays every recorded timeline in `fixtures/timelines/` and fails with the
//! first step whose effects (or outcome, or phase) differ from the record.

use std::path::{Path, PathBuf};

use room_machines::timeline::Timeline;

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

/// Each seed test has at least one timeline, named after it.
#[test]
fn every_seed_test_has_a_timeline() {
    let all = load_all();
    for (_, t) in &all {
        let (Timeline::Launch { about, .. } | Timeline::Caller { about, .. }) = t;
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
    ] {
        assert!(
            all.iter().any(|(_, t)| t.test() == seed_test),
            "no timeline for {seed_test}"
        );
    }
}
