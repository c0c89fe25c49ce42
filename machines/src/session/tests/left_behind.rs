//! What a harness that exited left in its tree (a daemon, a background
//! job): SIGTERM, SIGKILL after the grace, the tree given up after the
//! kill wait; the turn ends once the tree is gone; a turn already being
//! ended is not signalled twice.

use super::*;

fn left(seq: TurnSeq) -> Input {
    Input::LeftBehind { seq }
}

fn abandon(seq: TurnSeq) -> Effect {
    Effect::AbandonTree { seq }
}

#[test]
fn what_an_exited_harness_left_gets_term_then_kill_after_the_grace_then_is_given_up() {
    let mut t = T::running(&[]);
    t.named(2);
    t.now = 1_000;
    // Nothing of the record changes: no write.
    assert_eq!(t.go(left(2)), vec![Effect::CloseInput { seq: 2 }, term(2)]);
    assert_eq!(t.s.poll_timeout(), Some((1_000 + GRACE, Timer::KillGrace)));
    assert_eq!(t.s.shown(), Shown::Running, "until the tree is gone");
    let (_, e) = t.at(1_000 + GRACE, Input::Timeout);
    assert_eq!(e, vec![kill(2)]);
    let gone_by = 1_000 + GRACE + KILL_WAIT;
    assert_eq!(t.s.poll_timeout(), Some((gone_by, Timer::KillWait)));
    let (o, _) = t.at(gone_by - 1, Input::Timeout);
    assert_eq!(o, Outcome::Ignored, "an early timeout changes nothing");
    let (_, e) = t.at(gone_by, Input::Timeout);
    assert_eq!(e, vec![abandon(2)]);
    assert_eq!(t.s.poll_timeout(), None);
    // The runtime reports the end once the harness's pipes are read: a
    // turn that ended by itself, as far as its prompt is concerned.
    let e = t.end(2, Exit::Code(0));
    assert!(has(
        &e,
        &Effect::Emit(Event::TurnEnded {
            turn: 2,
            prompt: 2,
            exit: Some(Exit::Code(0)),
            by: None,
            usage: None,
        })
    ));
    assert_eq!(t.s.shown(), Shown::Idle);
    assert_eq!(t.s.record().error, None);
}

#[test]
fn the_turns_end_stops_the_grace_and_the_kill_wait() {
    // Gone during the grace (what was left obeyed SIGTERM).
    let mut t = T::running(&["three"]);
    t.go(left(2));
    let e = t.end(2, Exit::Code(0));
    assert!(has(
        &e,
        &Effect::SpawnTurn {
            seq: 3,
            prompt: "three".into(),
            resume: Some("n1".into()),
            cut: None,
            plan_only: false,
            choice: Default::default(),
            attachments: Vec::new(),
        }
    ));
    assert_eq!(t.s.poll_timeout(), None, "nothing of turn 2 is due");
    let (o, e) = t.at(GRACE, Input::Timeout);
    assert_eq!((o, e), (Outcome::Ignored, vec![]));
    // Gone during the kill wait.
    let mut t = T::running(&[]);
    t.go(left(2));
    t.at(GRACE, Input::Timeout);
    t.end(2, Exit::Code(0));
    assert_eq!(t.s.poll_timeout(), None);
    let (o, e) = t.at(GRACE + KILL_WAIT, Input::Timeout);
    assert_eq!((o, e), (Outcome::Ignored, vec![]), "nothing to give up");
}

#[test]
fn left_behind_while_the_turn_is_being_ended_changes_nothing() {
    for (why, command) in [
        ("stop", Input::Stop),
        ("close", Input::Close),
        ("service stop", Input::ServiceStop),
        ("relaunch restart", Input::Relaunch(RelaunchMode::Restart)),
    ] {
        let mut t = T::running(&[]);
        t.now = 1_000;
        let e = t.go(command);
        assert!(has(&e, &term(2)), "{why}: {e:?}");
        let timers = t.s.state().timers;
        // The harness took SIGTERM and exited; what it left did not.
        let (o, e) = t.at(1_010, left(2));
        assert_eq!(
            (o, e),
            (Outcome::Ignored, vec![]),
            "{why}: no second SIGTERM"
        );
        assert_eq!(t.s.state().timers, timers, "{why}: the grace runs on");
        let (_, e) = t.at(1_000 + GRACE, Input::Timeout);
        assert!(has(&e, &kill(2)), "{why}: {e:?}");
        let (o, _) = t.at(1_000 + GRACE + 1, left(2));
        assert_eq!(o, Outcome::Ignored, "{why}: after SIGKILL");
        let (_, e) = t.at(1_000 + GRACE + KILL_WAIT, Input::Timeout);
        assert!(has(&e, &abandon(2)), "{why}: {e:?}");
    }
}

#[test]
fn a_stop_after_what_was_left_got_term_sends_no_second_one() {
    let mut t = T::running(&[]);
    t.now = 1_000;
    t.go(left(2));
    t.now = 1_500;
    let e = t.go(Input::Stop);
    assert!(!has(&e, &term(2)), "{e:?}");
    assert_eq!(
        t.s.record().turn.as_ref().unwrap().ending,
        Some(EndWhy::Stop)
    );
    assert_eq!(
        t.s.poll_timeout(),
        Some((1_000 + GRACE, Timer::KillGrace)),
        "SIGKILL no later"
    );
    let (_, e) = t.at(1_000 + GRACE, Input::Timeout);
    assert_eq!(e, vec![kill(2)]);
    // Said again after SIGKILL, nothing more is sent either.
    let (o, e) = t.at(1_000 + GRACE + 1, left(2));
    assert_eq!((o, e), (Outcome::Ignored, vec![]));
}

#[test]
fn an_interrupted_harness_that_exits_leaving_processes_has_them_signalled_at_once() {
    let mut t = T::running(&[]);
    t.named(2);
    let e = t.go(Input::Interrupt);
    assert!(has(&e, &Effect::InterruptTurn { seq: 2 }), "{e:?}");
    assert_eq!(t.s.poll_timeout(), Some((GRACE, Timer::InterruptGrace)));
    // It stopped its turn and exited: there is no one left to ask.
    let (o, e) = t.at(100, left(2));
    assert_eq!(o, Outcome::Applied);
    assert_eq!(e, vec![Effect::CloseInput { seq: 2 }, term(2)]);
    assert_eq!(t.s.poll_timeout(), Some((100 + GRACE, Timer::KillGrace)));
}

#[test]
fn a_lingering_process_that_exits_leaving_processes_takes_no_follow_up() {
    let mut t = T::running(&[]);
    t.named(2);
    t.go(Input::TurnFinished {
        seq: 2,
        failed: None,
        usage: None,
    });
    assert_eq!(t.s.shown(), Shown::Idle, "it lingers");
    let e = t.go(left(2));
    assert_eq!(e, vec![Effect::CloseInput { seq: 2 }, term(2)]);
    assert_eq!(t.s.poll_timeout(), Some((GRACE, Timer::KillGrace)));
    assert!(
        !t.s.state().timers.is_set(Deadline::Linger),
        "nothing lingers"
    );
    // Its process is gone: a message waits for a new one.
    let e = t.go(Input::message("three".into()));
    assert!(
        !e.iter()
            .any(|e| matches!(e, Effect::ContinueTurn { .. } | Effect::SpawnTurn { .. })),
        "{e:?}"
    );
    let e = t.end(2, Exit::Code(0));
    assert_eq!(spawns(&e), 1, "{e:?}");
}

#[test]
fn left_behind_for_another_turn_no_turn_or_a_restored_one_is_ignored() {
    let mut t = T::running(&[]);
    let (o, e) = t.at(0, left(9));
    assert_eq!((o, e), (Outcome::Ignored, vec![]), "another turn");
    t.end(2, Exit::Code(0));
    let (o, e) = t.at(0, left(2));
    assert_eq!((o, e), (Outcome::Ignored, vec![]), "no turn");
    // A restored turn is the restore's to kill (`KillSurvivor`).
    let t = T::running(&[]);
    let record = t.s.record().clone();
    let mut s = Session::restore(Config::default(), options(false), record, 50);
    drain(&mut s);
    assert_eq!(s.handle(51, left(2)), Outcome::Ignored);
    assert!(drain(&mut s).is_empty());
}

#[test]
fn a_stop_whose_kill_does_not_end_the_tree_gives_it_up_after_the_kill_wait() {
    let mut t = T::running(&[]);
    t.go(Input::Stop);
    let (_, e) = t.at(GRACE, Input::Timeout);
    assert_eq!(e, vec![kill(2)]);
    assert_eq!(
        t.s.poll_timeout(),
        Some((GRACE + KILL_WAIT, Timer::KillWait))
    );
    let (_, e) = t.at(GRACE + KILL_WAIT, Input::Timeout);
    assert_eq!(e, vec![abandon(2)]);
    let e = t.end(2, Exit::Signal(9));
    assert!(e.iter().any(|e| matches!(
        e,
        Effect::Emit(Event::TurnEnded {
            by: Some(EndWhy::Stop),
            ..
        })
    )));
}
