//! A harness that talks on its stdin: its turn's end closes stdin, an
//! interrupt asks before it signals, a steer reaches the running turn.

use super::*;

/// `talks` on, idle with native ID `n1`, then prompt "two" running as turn
/// 2 and named.
fn talking() -> T {
    let mut t = T::idle();
    t.s.config.talks = true;
    t.go(Input::Message("two".into()));
    t.go(Input::TurnSpawned { seq: 2, process: P });
    t.go(Input::NativeId {
        seq: 2,
        native_id: "n1".into(),
    });
    t
}

#[test]
fn a_talking_turn_is_done_when_its_harness_says_so_and_its_stdin_then_closes() {
    let mut t = talking();
    assert_eq!(
        t.go(Input::TurnFinished { seq: 2 }),
        vec![Effect::CloseInput { seq: 2 }]
    );
    assert_eq!(t.s.shown(), Shown::Running, "until the process is gone");
    let e = t.end(2, Exit::Code(0));
    assert!(e
        .iter()
        .any(|e| matches!(e, Effect::Emit(Event::TurnEnded { by: None, .. }))));
    // Another turn's, or a one-shot harness's, end of turn closes nothing.
    let (o, e) = t.at(t.now, Input::TurnFinished { seq: 2 });
    assert_eq!((o, e), (Outcome::Ignored, vec![]));
    let mut quiet = T::running(&[]);
    let (o, _) = quiet.at(0, Input::TurnFinished { seq: 2 });
    assert_eq!(o, Outcome::Ignored);
}

#[test]
fn an_interrupt_asks_the_harness_first_and_signals_only_after_the_grace() {
    let mut t = talking();
    let e = t.go(Input::Interrupt);
    assert!(has(&e, &Effect::InterruptTurn { seq: 2 }), "{e:?}");
    assert!(!has(&e, &term(2)), "no signal yet: {e:?}");
    assert_eq!(t.s.poll_timeout(), Some((GRACE, Timer::InterruptGrace)));
    // The harness ends its turn; its process goes once stdin closes.
    assert_eq!(
        t.go(Input::TurnFinished { seq: 2 }),
        vec![Effect::CloseInput { seq: 2 }]
    );
    let e = t.end(2, Exit::Code(1));
    assert!(has(
        &e,
        &Effect::Emit(Event::TurnEnded {
            turn: 2,
            prompt: 2,
            exit: Some(Exit::Code(1)),
            by: Some(EndWhy::Interrupt),
            usage: None,
        })
    ));
    assert_eq!(
        t.s.record().error,
        None,
        "an interrupted turn failed on purpose"
    );
    assert_eq!(t.s.poll_timeout(), None, "no grace left behind");
}

#[test]
fn a_harness_that_ignores_the_interrupt_gets_term_after_the_grace_then_kill() {
    let mut t = talking();
    t.go(Input::Interrupt);
    let (_, e) = t.at(GRACE, Input::Timeout);
    // Its stdin closes with the signal, so one that ignores SIGTERM can
    // still end by itself.
    assert_eq!(e, vec![Effect::CloseInput { seq: 2 }, term(2)]);
    assert_eq!(t.s.poll_timeout(), Some((2 * GRACE, Timer::KillGrace)));
    let (_, e) = t.at(2 * GRACE, Input::Timeout);
    assert_eq!(e, vec![kill(2)]);
}

#[test]
fn a_stop_during_an_asked_interrupt_signals_at_once() {
    let mut t = talking();
    t.go(Input::Interrupt);
    t.now = 10;
    let e = t.go(Input::Stop);
    assert!(has(&e, &term(2)), "{e:?}");
    assert_eq!(t.s.poll_timeout(), Some((10 + GRACE, Timer::KillGrace)));
}

#[test]
fn an_interrupt_before_the_prompt_is_handed_over_signals_as_for_any_harness() {
    let mut t = T::idle();
    t.s.config.talks = true;
    t.go(Input::Message("two".into()));
    // Asked for, not spawned: nothing to ask or signal until it is.
    let e = t.go(Input::Interrupt);
    assert!(!has(&e, &Effect::InterruptTurn { seq: 2 }));
    let e = t.go(Input::TurnSpawned { seq: 2, process: P });
    assert!(has(&e, &term(2)), "{e:?}");
}

#[test]
fn a_steer_reaches_the_running_turn_under_the_next_prompt_number() {
    let mut t = talking();
    assert!(t.s.steerable());
    let e = t.go(Input::Steer("use the other file".into()));
    assert_eq!(e[0], Effect::Persist, "its number is on record");
    assert!(has(
        &e,
        &Effect::Emit(Event::PromptSteered {
            prompt: 3,
            turn: 2,
            text: "use the other file".into(),
            text_truncated: false,
        })
    ));
    assert!(has(
        &e,
        &Effect::Steer {
            seq: 2,
            prompt: 3,
            text: "use the other file".into()
        }
    ));
    assert!(t.s.record().queue.is_empty(), "not queued");
    assert_eq!(t.s.record().next_prompt, 4);
}

#[test]
fn a_steer_with_nothing_to_take_it_queues() {
    // No talking harness.
    let mut t = T::running(&[]);
    t.go(Input::NativeId {
        seq: 2,
        native_id: "n1".into(),
    });
    assert!(!t.s.steerable());
    let e = t.go(Input::Steer("later".into()));
    assert!(e
        .iter()
        .any(|e| matches!(e, Effect::Emit(Event::PromptQueued { prompt: 3, .. }))));
    // Idle: it runs as the next turn.
    let mut t = T::idle();
    t.s.config.talks = true;
    let e = t.go(Input::Steer("next".into()));
    assert_eq!(spawns(&e), 1);
    // A turn being ended takes none.
    let mut t = talking();
    t.go(Input::Interrupt);
    assert!(!t.s.steerable());
    t.go(Input::Steer("after".into()));
    assert_eq!(t.s.record().queue.len(), 1);
}

#[test]
fn a_steer_the_harness_never_read_goes_to_the_head_of_the_queue() {
    let mut t = talking();
    t.go(Input::Message("queued".into()));
    t.go(Input::Steer("steered".into()));
    let e = t.go(Input::SteerUndelivered {
        seq: 2,
        prompt: 4,
        text: "steered".into(),
    });
    assert!(has(
        &e,
        &Effect::Emit(Event::PromptRequeued { prompt: 4, turn: 2 })
    ));
    let queue: Vec<_> = t.s.record().queue.iter().map(|p| p.id).collect();
    assert_eq!(queue, [4, 3]);
}

#[test]
fn a_plan_only_turn_asks_nobody_whoever_answers_approvals() {
    let mut t = talking();
    t.s.options.approvals = ApprovalMode::App;
    t.s.options.plan_only = true;
    let e = t.go(Input::ApprovalRequested {
        seq: 2,
        request: Request {
            harness_ref: "q1".into(),
            tool: "Write".into(),
            input: "{}".into(),
            reason: None,
        },
    });
    assert_eq!(
        e,
        vec![Effect::AnswerApproval {
            seq: 2,
            harness_ref: "q1".into(),
            tool: "Write".into(),
            decision: Decision::Deny,
            by: DecidedBy::Modes,
            message: None,
        }]
    );
}

#[test]
fn once_its_stdin_is_closed_a_turn_takes_no_steer_and_an_interrupt_signals() {
    let mut t = talking();
    t.go(Input::TurnFinished { seq: 2 });
    assert!(!t.s.steerable(), "its harness reads no more");
    t.go(Input::Steer("late".into()));
    assert_eq!(t.s.record().queue.len(), 1, "queued instead");
    let (o, _) = t.at(t.now, Input::TurnFinished { seq: 2 });
    assert_eq!(o, Outcome::Ignored, "closed once");
    let e = t.go(Input::Interrupt);
    assert!(has(&e, &term(2)), "{e:?}");
    assert!(!has(&e, &Effect::InterruptTurn { seq: 2 }));
    assert!(!has(&e, &Effect::CloseInput { seq: 2 }), "closed already");
}
