//! The rewind hold: a rewind begins only when no turn runs or is about to
//! start and the last turn's folder is recorded, and no turn starts until
//! it is over.

use super::*;

fn outcome(t: &mut T, input: Input) -> Outcome {
    let now = t.now;
    t.at(now, input).0
}

fn taken(turn: TurnSeq, at: Boundary) -> Input {
    Input::Snapshotted { turn, at }
}

/// A session with snapshots on whose turn 1 ran, ended and had its folder
/// recorded after it: idle.
fn idle_after_one(linger: Millis) -> T {
    let mut s = Session::new(
        Config {
            snapshots: true,
            linger,
            ..Config::default()
        },
        options(false),
        Some(NewPrompt::from("first".to_string())),
        0,
    );
    drain(&mut s);
    let mut t = T { s, now: 0 };
    t.observe(Observation::missing());
    t.go(Input::Launch(LaunchInput::PermitGranted));
    t.go(taken(1, Boundary::Before));
    t.go(Input::TurnSpawned { seq: 1, process: P });
    t.named(1);
    if linger > 0 {
        t.finished(1);
    } else {
        t.end(1, Exit::Code(0));
    }
    t.go(taken(1, Boundary::After));
    t
}

#[test]
fn a_rewind_holds_the_queue_until_it_is_over() {
    let mut t = idle_after_one(0);
    assert_eq!(outcome(&mut t, Input::RewindBegin), Outcome::Applied);
    assert_eq!(
        outcome(&mut t, Input::RewindBegin),
        Outcome::Refused(Refusal::Rewinding)
    );
    // A message waits: its folder is not even asked for.
    let e = t.go(Input::message("two".into()));
    assert!(
        !e.iter()
            .any(|e| matches!(e, Effect::Snapshot { .. } | Effect::SpawnTurn { .. })),
        "{e:?}"
    );
    let e = t.go(Input::RewindOver);
    assert!(
        has(
            &e,
            &Effect::Snapshot {
                turn: 2,
                at: Boundary::Before
            }
        ),
        "{e:?}"
    );
    assert_eq!(outcome(&mut t, Input::RewindOver), Outcome::Ignored);
}

#[test]
fn a_lingering_process_is_no_running_turn_and_stays_for_the_next_message() {
    let mut t = idle_after_one(60_000);
    assert!(t.s.lingering());
    assert_eq!(outcome(&mut t, Input::RewindBegin), Outcome::Applied);
    t.go(Input::message("two".into()));
    let e = t.go(Input::RewindOver);
    assert!(!has(&e, &term(1)), "{e:?}");
    let e = t.go(taken(2, Boundary::Before));
    assert!(
        e.iter()
            .any(|e| matches!(e, Effect::ContinueTurn { seq: 2, .. })),
        "{e:?}"
    );
}

#[test]
fn no_rewind_while_a_turn_runs_is_about_to_or_is_being_recorded() {
    let mut t = idle_after_one(0);
    // About to start: its folder is being recorded before it.
    t.go(Input::message("two".into()));
    assert_eq!(
        outcome(&mut t, Input::RewindBegin),
        Outcome::Refused(Refusal::TurnRunning)
    );
    t.go(taken(2, Boundary::Before));
    assert_eq!(
        outcome(&mut t, Input::RewindBegin),
        Outcome::Refused(Refusal::TurnRunning)
    );
    t.go(Input::TurnSpawned { seq: 2, process: P });
    t.named(2);
    assert_eq!(
        outcome(&mut t, Input::RewindBegin),
        Outcome::Refused(Refusal::TurnRunning)
    );
    t.end(2, Exit::Code(0));
    assert_eq!(
        outcome(&mut t, Input::RewindBegin),
        Outcome::Refused(Refusal::FolderRecording)
    );
    t.go(taken(2, Boundary::After));
    assert_eq!(outcome(&mut t, Input::RewindBegin), Outcome::Applied);
    // Closed: nothing more happens to the session.
    t.go(Input::RewindOver);
    t.go(Input::Close);
    assert_eq!(
        outcome(&mut t, Input::RewindBegin),
        Outcome::Refused(Refusal::Closed)
    );
}

#[test]
fn a_relaunch_during_a_rewind_runs_its_first_turn_after_it() {
    let mut t = idle_after_one(0);
    t.go(Input::message("two".into()));
    t.go(taken(2, Boundary::Before));
    t.go(Input::TurnSpawned { seq: 2, process: P });
    t.named(2);
    t.end(2, Exit::Code(0));
    t.go(taken(2, Boundary::After));
    assert_eq!(outcome(&mut t, Input::RewindBegin), Outcome::Applied);
    t.go(Input::message("three".into()));
    t.go(Input::Relaunch(RelaunchMode::Restart));
    let e = t.go(Input::Launch(LaunchInput::PermitGranted));
    assert_eq!(spawns(&e), 0, "{e:?}");
    assert!(
        !e.iter().any(|e| matches!(e, Effect::Snapshot { .. })),
        "{e:?}"
    );
    let e = t.go(Input::RewindOver);
    assert!(
        has(
            &e,
            &Effect::Snapshot {
                turn: 3,
                at: Boundary::Before
            }
        ),
        "{e:?}"
    );
}
