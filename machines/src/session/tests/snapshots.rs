//! The folder recorded at turn boundaries: no turn starts before the
//! snapshot before it (or its wait ran out), and a turn that ran has its
//! folder recorded after it.

use super::*;

fn before(turn: TurnSeq) -> Effect {
    Effect::Snapshot {
        turn,
        at: Boundary::Before,
    }
}

fn after(turn: TurnSeq) -> Effect {
    Effect::Snapshot {
        turn,
        at: Boundary::After,
    }
}

fn taken(turn: TurnSeq) -> Input {
    Input::Snapshotted {
        turn,
        at: Boundary::Before,
    }
}

/// A start with snapshots on, its copy wait over and its permit held.
fn granted(linger: Millis) -> (T, Vec<Effect>) {
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
    let e = t.go(Input::Launch(LaunchInput::PermitGranted));
    (t, e)
}

#[test]
fn the_first_turn_is_spawned_only_once_its_folder_is_recorded() {
    let (mut t, e) = granted(0);
    assert_eq!(e, vec![before(1)]);
    assert_eq!(
        t.s.poll_timeout(),
        Some((SNAPSHOT_WAIT, Timer::SnapshotWait))
    );
    // Another turn's answer, or the one after it, starts nothing.
    assert_eq!(t.at(5, taken(2)), (Outcome::Ignored, vec![]));
    let e = t.go(taken(1));
    assert_eq!(spawns(&e), 1, "{e:?}");
    // The launch's own deadline runs from the spawn.
    assert_eq!(
        t.s.poll_timeout(),
        Some((5 + STARTUP_TIMEOUT, Timer::StartupTimeout))
    );
    // The same answer again does nothing.
    assert_eq!(t.at(6, taken(1)), (Outcome::Ignored, vec![]));
}

#[test]
fn a_snapshot_that_takes_too_long_lets_the_turn_start_without_it() {
    let (mut t, _) = granted(0);
    let (o, e) = t.at(SNAPSHOT_WAIT, Input::Timeout);
    assert_eq!(o, Outcome::Applied);
    assert_eq!(spawns(&e), 1, "{e:?}");
    // Its answer, late, is ignored.
    assert_eq!(
        t.at(SNAPSHOT_WAIT + 1, taken(1)),
        (Outcome::Ignored, vec![])
    );
}

#[test]
fn a_turn_that_ran_is_recorded_after_its_end_and_the_next_waits_again() {
    let (mut t, _) = granted(0);
    t.go(taken(1));
    t.go(Input::TurnSpawned { seq: 1, process: P });
    t.named(1);
    t.go(Input::message("two".into()));
    let e = t.end(1, Exit::Code(0));
    let ended = e
        .iter()
        .position(|e| matches!(e, Effect::Emit(Event::TurnEnded { turn: 1, .. })))
        .expect("turn_ended");
    assert_eq!(e.get(ended + 1), Some(&after(1)), "{e:?}");
    assert!(has(&e, &before(2)), "{e:?}");
    assert_eq!(spawns(&e), 0, "turn 2 waits for its folder: {e:?}");
    let e = t.go(taken(2));
    assert_eq!(spawns(&e), 1, "{e:?}");
}

#[test]
fn a_warm_follow_up_goes_to_its_lingering_process_once_its_folder_is_recorded() {
    let (mut t, _) = granted(60_000);
    t.go(taken(1));
    t.go(Input::TurnSpawned { seq: 1, process: P });
    t.named(1);
    let e = t.finished(1);
    assert!(has(&e, &after(1)), "{e:?}");
    let e = t.go(Input::message("two".into()));
    assert!(has(&e, &before(2)), "{e:?}");
    assert!(
        !e.iter().any(|e| matches!(e, Effect::ContinueTurn { .. })),
        "{e:?}"
    );
    let e = t.go(taken(2));
    assert!(
        e.iter()
            .any(|e| matches!(e, Effect::ContinueTurn { seq: 2, .. })),
        "{e:?}"
    );
}

#[test]
fn a_turn_that_never_got_its_prompt_is_not_recorded_after() {
    let (mut t, _) = granted(0);
    t.go(taken(1));
    t.go(Input::Stop);
    let e = t.go(Input::TurnSpawned { seq: 1, process: P });
    assert!(has(&e, &term(1)), "{e:?}");
    let e = t.end(1, Exit::Signal(15));
    assert!(
        !e.iter().any(|e| matches!(e, Effect::Snapshot { .. })),
        "{e:?}"
    );
}

#[test]
fn a_snapshot_answered_while_the_queue_is_paused_is_asked_again_when_it_runs() {
    let (mut t, _) = granted(0);
    t.go(taken(1));
    t.go(Input::TurnSpawned { seq: 1, process: P });
    t.named(1);
    t.end(1, Exit::Code(0));
    let e = t.go(Input::message("two".into()));
    assert!(has(&e, &before(2)), "{e:?}");
    t.go(Input::Stop);
    let e = t.go(taken(2));
    assert_eq!(spawns(&e), 0, "paused: {e:?}");
    // The folder may change while paused: the turn asks again.
    let e = t.go(Input::Resume);
    assert!(has(&e, &before(2)), "{e:?}");
    assert_eq!(spawns(&e), 0, "{e:?}");
}

#[test]
fn with_snapshots_off_nothing_is_asked_and_nothing_waits() {
    let (mut t, e) = T::new(false, Some("first"));
    assert!(!e.iter().any(|e| matches!(e, Effect::Snapshot { .. })));
    t.observe(Observation::missing());
    let e = t.go(Input::Launch(LaunchInput::PermitGranted));
    assert_eq!(spawns(&e), 1, "{e:?}");
}

#[test]
fn a_turns_folder_is_recorded_after_it_while_the_session_shows_idle() {
    let (mut t, _) = granted(0);
    t.go(taken(1));
    t.go(Input::TurnSpawned { seq: 1, process: P });
    t.named(1);
    let e = t.end(1, Exit::Code(0));
    assert!(has(&e, &after(1)), "{e:?}");
    // A stop's or an interrupt's answer says idle once the turn is gone,
    // whatever the snapshot after it costs.
    assert_eq!(t.s.shown(), Shown::Idle);
    assert_eq!(t.s.state().snapshot.after, Some(1));
    let e = t.go(Input::Snapshotted {
        turn: 1,
        at: Boundary::After,
    });
    assert_eq!(e, vec![]);
    assert_eq!(t.s.state().snapshot.after, None);
    // Or its wait runs out.
    t.go(Input::message("two".into()));
    t.go(taken(2));
    t.go(Input::TurnSpawned { seq: 2, process: P });
    t.named(2);
    let at = t.now;
    t.end(2, Exit::Code(0));
    assert_eq!(t.s.state().snapshot.after, Some(2));
    let (o, _) = t.at(at + SNAPSHOT_WAIT, Input::Timeout);
    assert_eq!(o, Outcome::Applied);
    assert_eq!(t.s.state().snapshot.after, None);
}
