//! Replays every recorded timeline in `fixtures/timelines/` and fails with the
//! first step whose effects (or outcome, or phase) differ from the record.

use std::path::{Path, PathBuf};

use room_machines::caller::{classify, Caller, ProcView};
use room_machines::command::Command;
use room_machines::launch::{Config, Effect, Input, Launch, Outcome, Phase, Plan};
use room_machines::policy::{decide, Decision};
use room_machines::Millis;
use serde::Deserialize;

/// One recorded timeline file.
#[derive(Deserialize)]
#[serde(tag = "machine", rename_all = "snake_case", deny_unknown_fields)]
enum Timeline {
    /// Launch runs: each begins with `Launch::new` (a core restart starts a new run).
    Launch {
        test: String,
        about: String,
        #[serde(default)]
        config: Option<Config>,
        runs: Vec<Run>,
    },
    /// Caller classification and the policy's decision, case by case.
    Caller {
        test: String,
        about: String,
        cases: Vec<Case>,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Run {
    plan: Plan,
    began: Millis,
    effects: Vec<Effect>,
    steps: Vec<Step>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    at: Millis,
    input: Input,
    effects: Vec<Effect>,
    #[serde(default)]
    outcome: Option<Outcome>,
    #[serde(default)]
    phase: Option<Phase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    ancestry: Vec<ProcView>,
    argv: Vec<String>,
    caller: Caller,
    decision: Decision,
}

fn timelines_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/timelines")
}

fn replay(name: &str, timeline: Timeline) -> Result<(), String> {
    match timeline {
        Timeline::Launch { config, runs, .. } => {
            for (r, run) in runs.into_iter().enumerate() {
                let mut l = Launch::new(config.unwrap_or_default(), run.plan, run.began);
                let got: Vec<Effect> = std::iter::from_fn(|| l.poll_effect()).collect();
                if got != run.effects {
                    return Err(format!(
                        "{name} run {r} at new(): expected {:?}, got {got:?}",
                        run.effects
                    ));
                }
                for (i, step) in run.steps.into_iter().enumerate() {
                    let outcome = l.handle(step.at, step.input.clone());
                    let got: Vec<Effect> = std::iter::from_fn(|| l.poll_effect()).collect();
                    let at = format!(
                        "{name} run {r} step {i} (at {} ms, {:?})",
                        step.at, step.input
                    );
                    if got != step.effects {
                        return Err(format!(
                            "{at}: expected effects {:?}, got {got:?}",
                            step.effects
                        ));
                    }
                    if let Some(want) = step.outcome {
                        if want != outcome {
                            return Err(format!("{at}: expected {want:?}, got {outcome:?}"));
                        }
                    }
                    if let Some(want) = step.phase {
                        if want != l.state().phase {
                            return Err(format!(
                                "{at}: expected phase {want:?}, got {:?}",
                                l.state().phase
                            ));
                        }
                    }
                }
            }
        }
        Timeline::Caller { cases, .. } => {
            for (i, case) in cases.into_iter().enumerate() {
                let caller = classify(&case.ancestry);
                if caller != case.caller {
                    return Err(format!(
                        "{name} case {i}: expected {:?}, got {caller:?}",
                        case.caller
                    ));
                }
                let cmd = Command::parse(&case.argv)
                    .map_err(|e| format!("{name} case {i}: {e}"))?
                    .command()
                    .ok_or_else(|| format!("{name} case {i}: {:?} is a help request", case.argv))?;
                let decision = decide(&caller, &cmd);
                if decision != case.decision {
                    return Err(format!(
                        "{name} case {i} ({:?}): expected {:?}, got {decision:?}",
                        case.argv, case.decision
                    ));
                }
            }
        }
    }
    Ok(())
}

fn load_all() -> Vec<(String, Timeline)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(timelines_dir())
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
        .into_iter()
        .filter_map(|(name, t)| replay(&name, t).err())
        .collect();
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// Each seed test has at least one timeline, named after it.
#[test]
fn every_seed_test_has_a_timeline() {
    let names: Vec<String> = load_all()
        .into_iter()
        .map(|(_, t)| match t {
            Timeline::Launch { test, about, .. } | Timeline::Caller { test, about, .. } => {
                assert!(!about.is_empty(), "{test} says what it shows");
                test
            }
        })
        .collect();
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
            names.iter().any(|n| n == seed_test),
            "no timeline for {seed_test}"
        );
    }
}
