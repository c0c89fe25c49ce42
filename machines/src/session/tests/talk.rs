//! A harness that talks on its stdin: its turn's end closes stdin, an
//! interrupt asks before it signals, a steer reaches the running turn.

use super::*;

/// `talks` on (no linger), idle with native ID `n1`, then prompt "two"
/// running as turn 2 and named.
fn talking() -> T {
    talking_lingering(0)
}

/// The same, its process lingering `linger` ms after each turn.
fn talking_lingering(linger: Millis) -> T {
    let mut t = T::idle();
    t.s.config.linger = linger;
    t.next_turn("two");
    t
}

#[test]
fn a_talking_turn_is_done_when_its_harness_says_so_and_its_stdin_then_closes() {
    let mut t = talking();
    assert_eq!(
        t.go(Input::TurnFinished {
            seq: 2,
            failed: None,
            usage: None,
        }),
        vec![Effect::CloseInput { seq: 2 }]
    );
    assert_eq!(t.s.shown(), Shown::Running, "until the process is gone");
    let e = t.end(2, Exit::Code(0));
    assert!(e
        .iter()
        .any(|e| matches!(e, Effect::Emit(Event::TurnEnded { by: None, .. }))));
    // A turn's end said again, or another turn's, closes nothing.
    let (o, e) = t.at(
        t.now,
        Input::TurnFinished {
            seq: 2,
            failed: None,
            usage: None,
        },
    );
    assert_eq!((o, e), (Outcome::Ignored, vec![]));
}

/// Some harnesses (an ACP agent whose own child keeps it alive) do not
/// exit once their stdin closes: SIGTERM follows after the grace, and the
/// turn, which its harness finished, ends well.
#[test]
fn a_finished_turn_whose_process_stays_after_its_stdin_closes_is_signalled_after_the_grace() {
    let mut t = talking();
    let e = t.go(Input::TurnFinished {
        seq: 2,
        failed: None,
        usage: None,
    });
    assert_eq!(e, vec![Effect::CloseInput { seq: 2 }]);
    let at = t.now + GRACE;
    assert_eq!(t.s.poll_timeout(), Some((at, Timer::InterruptGrace)));
    let (_, e) = t.at(at, Input::Timeout);
    assert!(has(&e, &term(2)), "{e:?}");
    let e = t.end(2, Exit::Signal(15));
    assert!(
        e.iter()
            .any(|e| matches!(e, Effect::Emit(Event::TurnEnded { by: None, .. }))),
        "{e:?}"
    );
    assert_eq!(t.s.record().error, None);
    assert_eq!(t.s.shown(), Shown::Idle);
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
        t.go(Input::TurnFinished {
            seq: 2,
            failed: None,
            usage: None,
        }),
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
    t.go(Input::message("two".into()));
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
    // A turn that has not begun its prompt (named its session).
    let mut t = T::running(&[]);
    assert!(!t.s.steerable());
    let e = t.go(Input::Steer("later".into()));
    assert!(e
        .iter()
        .any(|e| matches!(e, Effect::Emit(Event::PromptQueued { prompt: 3, .. }))));
    // Idle: it runs as the next turn.
    let mut t = T::idle();
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
fn a_harness_process_that_takes_no_steers_gets_a_steer_as_the_next_turn() {
    let mut t = talking();
    assert!(t.s.steerable());
    // Said of another turn: nothing changes.
    assert_eq!(t.at(0, Input::NoSteers { seq: 1 }).0, Outcome::Ignored);
    assert!(t.s.steerable());
    t.go(Input::NoSteers { seq: 2 });
    assert!(!t.s.steerable());
    let e = t.go(Input::Steer("later".into()));
    assert!(e
        .iter()
        .any(|e| matches!(e, Effect::Emit(Event::PromptQueued { prompt: 3, .. }))));
    assert!(!e.iter().any(|e| matches!(e, Effect::Steer { .. })));
    assert_eq!(t.s.record().queue.len(), 1);
}

#[test]
fn a_steer_the_harness_never_read_goes_back_to_the_queue_in_its_place() {
    let mut t = talking();
    t.go(Input::Steer("steered".into()));
    t.go(Input::message("queued".into()));
    let e = t.go(Input::SteerUndelivered {
        seq: 2,
        prompt: 3,
        text: "steered".into(),
    });
    assert!(has(
        &e,
        &Effect::Emit(Event::PromptRequeued { prompt: 3, turn: 2 })
    ));
    let queue: Vec<_> = t.s.record().queue.iter().map(|p| p.id).collect();
    assert_eq!(queue, [3, 4], "ahead of the prompt accepted after it");
    // Said twice, or of a prompt never given: once is all.
    for prompt in [3, 9] {
        let (o, _) = t.at(
            t.now,
            Input::SteerUndelivered {
                seq: 2,
                prompt,
                text: "again".into(),
            },
        );
        assert_eq!(o, Outcome::Ignored, "{prompt}");
    }
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
    t.go(Input::TurnFinished {
        seq: 2,
        failed: None,
        usage: None,
    });
    assert!(!t.s.steerable(), "its harness reads no more");
    t.go(Input::Steer("late".into()));
    assert_eq!(t.s.record().queue.len(), 1, "queued instead");
    let (o, _) = t.at(
        t.now,
        Input::TurnFinished {
            seq: 2,
            failed: None,
            usage: None,
        },
    );
    assert_eq!(o, Outcome::Ignored, "closed once");
    let e = t.go(Input::Interrupt);
    assert!(has(&e, &term(2)), "{e:?}");
    assert!(!has(&e, &Effect::InterruptTurn { seq: 2 }));
    assert!(!has(&e, &Effect::CloseInput { seq: 2 }), "closed already");
}

const LINGER: Millis = 30_000;

#[test]
fn a_finished_turn_ends_at_once_and_its_process_lingers_for_the_next_prompt() {
    let mut t = talking_lingering(LINGER);
    t.now = 100;
    let e = t.go(Input::TurnFinished {
        seq: 2,
        failed: None,
        usage: None,
    });
    assert_eq!(e[0], Effect::Persist, "the finished turn is on record");
    assert!(has(
        &e,
        &Effect::Emit(Event::TurnEnded {
            turn: 2,
            prompt: 2,
            exit: None,
            by: None,
            usage: None,
        })
    ));
    assert!(
        !has(&e, &Effect::CloseInput { seq: 2 }),
        "it lingers: {e:?}"
    );
    assert_eq!(t.s.shown(), Shown::Idle);
    assert_eq!(t.s.poll_timeout(), Some((100 + LINGER, Timer::Linger)));
    assert!(!t.s.steerable());
    // A message within the linger goes to the same process as turn 3
    // (its durable writes: tests/write_ahead.rs).
    let e = t.go(Input::message("three".into()));
    assert!(has(
        &e,
        &Effect::ContinueTurn {
            seq: 3,
            prompt: "three".into(),
            switch: Default::default(),
            attachments: Vec::new(),
        }
    ));
    assert_eq!(spawns(&e), 0, "no new process");
    assert_eq!(t.s.shown(), Shown::Running);
    let turn = t.s.record().turn.clone().unwrap();
    assert_eq!(
        (turn.seq, turn.process(), turn.delivered()),
        (3, Some(P), true)
    );
    // It names itself (claude's init per turn), ends, and lingers again.
    t.named(3);
    t.go(Input::TurnFinished {
        seq: 3,
        failed: None,
        usage: None,
    });
    // After the linger its stdin closes, SIGTERM after the grace if it
    // does not exit, and its exit journals nothing more.
    let at = t.now + LINGER;
    let (_, e) = t.at(at, Input::Timeout);
    assert_eq!(e, vec![Effect::CloseInput { seq: 3 }]);
    assert_eq!(
        t.s.poll_timeout(),
        Some((at + GRACE, Timer::InterruptGrace))
    );
    let e = t.end(3, Exit::Code(0));
    assert!(
        !e.iter()
            .any(|e| matches!(e, Effect::Emit(Event::TurnEnded { .. }))),
        "{e:?}"
    );
    assert_eq!(t.s.record().turn, None);
    assert_eq!(t.s.poll_timeout(), None);
    // The next prompt spawns and resumes.
    let e = t.go(Input::message("four".into()));
    assert_eq!(spawns(&e), 1);
}

#[test]
fn a_queued_prompt_goes_straight_to_the_finished_turns_process() {
    let mut t = talking_lingering(LINGER);
    t.go(Input::message("queued".into()));
    let e = t.go(Input::TurnFinished {
        seq: 2,
        failed: None,
        usage: None,
    });
    assert!(has(
        &e,
        &Effect::ContinueTurn {
            seq: 3,
            prompt: "queued".into(),
            switch: Default::default(),
            attachments: Vec::new(),
        }
    ));
    assert_eq!(
        t.s.poll_timeout().map(|(_, timer)| timer),
        Some(Timer::StartupTimeout),
        "no linger while it works; it must begin in time"
    );
}

#[test]
fn stop_ends_a_lingering_process_and_interrupt_finds_nothing_to_interrupt() {
    let mut t = talking_lingering(LINGER);
    assert_eq!(t.s.turn_to_await(), Some(2), "running");
    t.go(Input::TurnFinished {
        seq: 2,
        failed: None,
        usage: None,
    });
    assert_eq!(t.s.turn_to_await(), None, "nothing of a turn runs");
    let (o, e) = t.at(t.now, Input::Interrupt);
    assert_eq!((o, e), (Outcome::Ignored, vec![]));
    let e = t.go(Input::Stop);
    assert_eq!(t.s.turn_to_await(), Some(2), "stop waits for the process");
    assert!(has(&e, &Effect::CloseInput { seq: 2 }), "{e:?}");
    assert!(has(&e, &term(2)), "{e:?}");
    let e = t.end(2, Exit::Signal(15));
    assert!(!e
        .iter()
        .any(|e| matches!(e, Effect::Emit(Event::TurnEnded { .. }))));
    // Killed by a restore while it lingered: nothing more either.
    let mut t = talking_lingering(LINGER);
    t.go(Input::TurnFinished {
        seq: 2,
        failed: None,
        usage: None,
    });
    let record = t.s.record().clone();
    let mut s = Session::restore(t.s.config, t.s.options.clone(), record, 50);
    let e = drain(&mut s);
    assert!(matches!(
        e.as_slice(),
        [Effect::KillSurvivor { seq: 2, .. }]
    ));
    s.handle(60, Input::SurvivorGone { seq: 2 });
    let e = drain(&mut s);
    assert!(
        !e.iter().any(|e| matches!(
            e,
            Effect::Emit(Event::TurnEnded { .. } | Event::Error { .. })
        )),
        "{e:?}"
    );
}

#[test]
fn a_turn_with_a_steer_does_not_linger_since_its_harness_may_run_it_after_its_result() {
    let mut t = talking_lingering(LINGER);
    t.go(Input::Steer("and then this".into()));
    let e = t.go(Input::TurnFinished {
        seq: 2,
        failed: None,
        usage: None,
    });
    assert_eq!(e, vec![Effect::CloseInput { seq: 2 }]);
    assert_eq!(
        t.s.shown(),
        Shown::Running,
        "until its process has run it all"
    );
    t.end(2, Exit::Code(0));
    // The next turn lingers again.
    t.next_turn("three");
    let e = t.go(Input::TurnFinished {
        seq: 3,
        failed: None,
        usage: None,
    });
    assert!(!has(&e, &Effect::CloseInput { seq: 3 }), "{e:?}");
}

#[test]
fn an_interrupted_turn_does_not_linger() {
    let mut t = talking_lingering(LINGER);
    t.go(Input::Interrupt);
    let e = t.go(Input::TurnFinished {
        seq: 2,
        failed: None,
        usage: None,
    });
    assert_eq!(e, vec![Effect::CloseInput { seq: 2 }]);
}

#[test]
fn a_turn_its_harness_says_failed_does_not_linger_and_its_end_says_why() {
    let mut t = talking_lingering(LINGER);
    let why = "stream disconnected before completion";
    // Kept on record (so a restart knows why), and stdin closes at once.
    let e = t.go(Input::TurnFinished {
        seq: 2,
        failed: Some(why.into()),
        usage: None,
    });
    assert_eq!(e, vec![Effect::Persist, Effect::CloseInput { seq: 2 }]);
    // codex exits 0 when its stdin closes, whatever its turn did.
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
    assert_eq!(
        t.s.record().error,
        Some(Failure::HarnessSaidFailed { why: why.into() })
    );
    // Its words are kept within their cap.
    let mut t = talking();
    let long = "x".repeat(FAILURE_TEXT_MAX * 2);
    t.go(Input::TurnFinished {
        seq: 2,
        failed: Some(long),
        usage: None,
    });
    t.end(2, Exit::Code(1));
    let Some(Failure::HarnessSaidFailed { why }) = t.s.record().error.clone() else {
        panic!("{:?}", t.s.record().error);
    };
    assert_eq!(why.len(), FAILURE_TEXT_MAX);
}

#[test]
fn the_line_that_finishes_a_turn_carries_what_it_used_in_the_same_input() {
    let mut t = talking();
    let used = crate::session::usage::tokens(10, 5, 3, 7);
    let e = t.go(Input::TurnFinished {
        seq: 2,
        failed: None,
        usage: Some(UsageReport::Turn(used)),
    });
    assert_eq!(
        e,
        vec![Effect::Persist, Effect::CloseInput { seq: 2 }],
        "the figures are on record with the finish"
    );
    let e = t.end(2, Exit::Code(0));
    assert!(
        e.iter().any(|e| matches!(
            e,
            Effect::Emit(Event::TurnEnded { usage: Some(u), .. }) if *u == used
        )),
        "{e:?}"
    );
    assert_eq!(t.s.record().usage, used);
}

#[test]
fn a_lingering_turn_told_its_prompt_was_lost_ends_its_process_once() {
    let mut t = talking_lingering(LINGER);
    t.go(Input::TurnFinished {
        seq: 2,
        failed: None,
        usage: None,
    });
    assert_eq!(t.s.shown(), Shown::Idle, "it lingers");
    // Its harness finished the prompt: the report means its stdin broke,
    // which ends the process and holds the queue, as for a running turn.
    let e = t.go(Input::PromptUndelivered {
        seq: 2,
        error: "EPIPE".into(),
    });
    assert!(has(&e, &term(2)), "{e:?}");
    assert!(t.s.record().paused);
    assert_eq!(t.s.turn_to_await(), Some(2));
    // Said again while the process is being ended, it changes nothing.
    let (o, e) = t.at(
        t.now,
        Input::PromptUndelivered {
            seq: 2,
            error: "EPIPE".into(),
        },
    );
    assert_eq!((o, e), (Outcome::Ignored, vec![]));
}

#[test]
fn a_lingering_turn_being_ended_ignores_that_its_prompt_was_lost() {
    let mut t = talking_lingering(LINGER);
    t.go(Input::TurnFinished {
        seq: 2,
        failed: None,
        usage: None,
    });
    t.go(Input::Stop);
    let before = t.s.state().clone();
    let (o, e) = t.at(
        t.now,
        Input::PromptUndelivered {
            seq: 2,
            error: "EPIPE".into(),
        },
    );
    assert_eq!((o, e), (Outcome::Ignored, vec![]));
    assert_eq!(&before, t.s.state());
}

/// A turn that resumed one native session and named another (an agent
/// that could neither load nor resume it began a new one): the turn goes
/// on in the new session, and the session's error says the conversation
/// was not carried over. A fork's first turn, which names a session of its
/// own on purpose, says nothing.
#[test]
fn a_turn_that_resumed_one_session_and_named_another_says_the_conversation_was_lost() {
    let mut t = T::idle();
    t.go(Input::message("two".into()));
    let seq = t.seq();
    t.go(Input::TurnSpawned { seq, process: P });
    let e = t.go(Input::NativeId {
        seq,
        native_id: "n2".into(),
    });
    let failure = Failure::NotCarriedOver {
        turn: seq,
        resumed: "n1".into(),
        began: "n2".into(),
    };
    assert!(
        has(
            &e,
            &Effect::Emit(Event::Error {
                failure: failure.clone()
            })
        ),
        "{e:?}"
    );
    assert_eq!(t.s.record().error, Some(failure));
    assert_eq!(t.s.record().native_id.as_deref(), Some("n2"));
    assert_eq!(t.s.shown(), Shown::Running, "the turn goes on");
    // The same session named again says nothing.
    let mut t = T::idle();
    let e = t.go(Input::message("two".into()));
    let seq = t.seq();
    assert!(spawns(&e) == 1);
    t.go(Input::TurnSpawned { seq, process: P });
    let e = t.go(Input::NativeId {
        seq,
        native_id: "n1".into(),
    });
    assert!(
        !e.iter()
            .any(|e| matches!(e, Effect::Emit(Event::Error { .. }))),
        "{e:?}"
    );
}
