//! The rewind hold: a rewind begins only when no turn runs or is about to
//! start and the last turn's folder is recorded, and no turn starts until
//! it is over.

use super::*;
use crate::session::Cut;

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
    assert_eq!(
        outcome(&mut t, Input::RewindBegin { to_turn: 1 }),
        Outcome::Applied
    );
    assert_eq!(
        outcome(&mut t, Input::RewindBegin { to_turn: 1 }),
        Outcome::Refused(Refusal::Rewinding)
    );
    // A message waits: its folder is not even asked for.
    let e = t.go(Input::message("two".into()));
    assert!(
        !e.iter()
            .any(|e| matches!(e, Effect::Snapshot { .. } | Effect::SpawnTurn { .. })),
        "{e:?}"
    );
    let e = t.go(Input::RewindOver { cut: None });
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
    assert_eq!(
        outcome(&mut t, Input::RewindOver { cut: None }),
        Outcome::Ignored
    );
}

#[test]
fn a_lingering_process_is_no_running_turn_and_stays_for_the_next_message() {
    let mut t = idle_after_one(60_000);
    assert!(t.s.lingering());
    assert_eq!(
        outcome(&mut t, Input::RewindBegin { to_turn: 1 }),
        Outcome::Applied
    );
    t.go(Input::message("two".into()));
    let e = t.go(Input::RewindOver { cut: None });
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
    // Only to a turn that has ended.
    for to_turn in [0, 2] {
        assert_eq!(
            outcome(&mut t, Input::RewindBegin { to_turn }),
            Outcome::Refused(Refusal::NoSuchTurn)
        );
        assert_eq!(t.s.ended_turn(to_turn), Some(Refusal::NoSuchTurn));
    }
    assert_eq!(t.s.ended_turn(1), None);
    // About to start: its folder is being recorded before it.
    t.go(Input::message("two".into()));
    assert_eq!(
        outcome(&mut t, Input::RewindBegin { to_turn: 1 }),
        Outcome::Refused(Refusal::TurnRunning)
    );
    t.go(taken(2, Boundary::Before));
    assert_eq!(
        outcome(&mut t, Input::RewindBegin { to_turn: 1 }),
        Outcome::Refused(Refusal::TurnRunning)
    );
    t.go(Input::TurnSpawned { seq: 2, process: P });
    t.named(2);
    assert_eq!(
        outcome(&mut t, Input::RewindBegin { to_turn: 1 }),
        Outcome::Refused(Refusal::TurnRunning)
    );
    t.end(2, Exit::Code(0));
    assert_eq!(
        outcome(&mut t, Input::RewindBegin { to_turn: 1 }),
        Outcome::Refused(Refusal::FolderRecording)
    );
    t.go(taken(2, Boundary::After));
    assert_eq!(
        outcome(&mut t, Input::RewindBegin { to_turn: 1 }),
        Outcome::Applied
    );
    // Closed: nothing more happens to the session.
    t.go(Input::RewindOver { cut: None });
    t.go(Input::Close);
    assert_eq!(
        outcome(&mut t, Input::RewindBegin { to_turn: 1 }),
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
    assert_eq!(
        outcome(&mut t, Input::RewindBegin { to_turn: 1 }),
        Outcome::Applied
    );
    t.go(Input::message("three".into()));
    t.go(Input::Relaunch(RelaunchMode::Restart));
    let e = t.go(Input::Launch(LaunchInput::PermitGranted));
    assert_eq!(spawns(&e), 0, "{e:?}");
    assert!(
        !e.iter().any(|e| matches!(e, Effect::Snapshot { .. })),
        "{e:?}"
    );
    let e = t.go(Input::RewindOver { cut: None });
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

fn cut() -> Cut {
    Cut {
        after_turn: 1,
        at: "m1".into(),
        carried_by: None,
        fork: false,
    }
}

/// The cut the next `SpawnTurn` in `e` carries, and whether there is one.
fn spawn_cut(e: &[Effect]) -> Option<Option<String>> {
    e.iter().find_map(|e| match e {
        Effect::SpawnTurn { cut, .. } => Some(cut.as_ref().map(|c| c.at.clone())),
        _ => None,
    })
}

#[test]
fn a_cut_conversation_ends_the_lingering_process_and_the_next_resumes_at_the_cut_once() {
    let mut t = idle_after_one(60_000);
    t.go(Input::RewindBegin { to_turn: 1 });
    let e = t.go(Input::RewindOver { cut: Some(cut()) });
    assert!(has(&e, &Effect::CloseInput { seq: 1 }), "{e:?}");
    assert!(has(&e, &Effect::Persist), "the cut is durable: {e:?}");
    // A message waits for the process to go, then spawns at the cut.
    let e = t.go(Input::message("two".into()));
    assert_eq!(spawns(&e), 0, "{e:?}");
    t.end(1, Exit::Code(0));
    let e = t.go(taken(2, Boundary::Before));
    assert_eq!(spawn_cut(&e), Some(Some("m1".into())), "{e:?}");
    t.go(Input::TurnSpawned { seq: 2, process: P });
    assert_eq!(t.s.record().cut.as_ref().unwrap().carried_by, Some(2));
    t.named(2);
    t.finished(2);
    assert_eq!(t.s.record().cut, None, "a turn ran from the cut");
    // The next process resumes as usual.
    t.go(taken(2, Boundary::After));
    t.go(Input::message("three".into()));
    t.end(2, Exit::Code(0));
    let e = t.go(taken(3, Boundary::Before));
    assert_eq!(spawn_cut(&e), Some(None), "{e:?}");
}

#[test]
fn a_turn_that_never_had_its_prompt_leaves_the_cut_for_the_next() {
    let mut t = idle_after_one(0);
    t.go(Input::RewindBegin { to_turn: 1 });
    t.go(Input::RewindOver { cut: Some(cut()) });
    t.go(Input::message("two".into()));
    let e = t.go(taken(2, Boundary::Before));
    assert_eq!(spawn_cut(&e), Some(Some("m1".into())));
    t.go(Input::SpawnFailed {
        seq: 2,
        reason: "no such program".into(),
    });
    assert!(t.s.record().cut.is_some(), "not carried: it stays");
}

#[test]
fn a_fork_resumes_its_parents_native_session_at_the_cut_as_one_of_its_own() {
    let mut s = Session::new(
        Config {
            snapshots: true,
            ..Config::default()
        },
        options(false),
        Some(NewPrompt::from("go on".to_string())),
        0,
    );
    drain(&mut s);
    let mut t = T { s, now: 0 };
    let e = t.go(Input::Fork {
        parent: "cr_parent".into(),
        native_id: "n0".into(),
        cut: cut(),
    });
    assert!(
        has(
            &e,
            &Effect::Emit(Event::Forked {
                parent: "cr_parent".into(),
                after_turn: 1
            })
        ),
        "{e:?}"
    );
    assert!(has(&e, &Effect::Persist), "the fork is on record: {e:?}");
    // Only once, before anything ran.
    let again = Input::Fork {
        parent: "cr_other".into(),
        native_id: "n9".into(),
        cut: cut(),
    };
    assert_eq!(outcome(&mut t, again), Outcome::Ignored);
    t.observe(Observation::missing());
    t.go(Input::Launch(LaunchInput::PermitGranted));
    let e = t.go(taken(1, Boundary::Before));
    let spawned = e.iter().find_map(|e| match e {
        Effect::SpawnTurn { resume, cut, .. } => Some((resume.clone(), cut.clone())),
        _ => None,
    });
    let (resume, carried) = spawned.expect("the first turn spawns");
    assert_eq!(resume.as_deref(), Some("n0"));
    let carried = carried.expect("at the cut");
    assert_eq!((carried.at.as_str(), carried.fork), ("m1", true));
    // It names a native session of its own; once its turn ran, the cut is
    // done with.
    t.go(Input::TurnSpawned { seq: 1, process: P });
    t.go(Input::NativeId {
        seq: 1,
        native_id: "n1".into(),
    });
    t.end(1, Exit::Code(0));
    assert_eq!(t.s.record().native_id.as_deref(), Some("n1"));
    assert_eq!(t.s.record().cut, None);
}
