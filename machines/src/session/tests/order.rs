//! Prompts run in the order they were accepted; the queue has a bound; a
//! queued message is one append to the prompt log; a turn that shows no
//! sign of life is run again once in a new process, then fails.

use super::*;

/// Talking, lingering 30 s, idle with native ID `n1`, then prompt "two"
/// running as turn 2 and named.
fn lingering() -> T {
    let mut t = T::idle();
    t.s.config.linger = 30_000;
    t.next_turn("two");
    t
}

fn queued(t: &T) -> Vec<PromptId> {
    t.s.record().queue.iter().map(|p| p.id).collect()
}

#[test]
fn steers_handed_back_go_to_the_queue_in_the_order_they_were_accepted() {
    let mut t = lingering();
    for text in ["a", "b", "c"] {
        t.go(Input::Steer(text.into()));
    }
    let first = t.s.record().next_prompt - 3;
    assert!(t.s.steered(first + 2), "the last steer reached the turn");
    // None was written (the turn's stdin writer was full): each is handed
    // back, oldest first, and the queue keeps them in that order, not
    // newest first.
    for (n, text) in ["a", "b", "c"].into_iter().enumerate() {
        t.go(Input::SteerUndelivered {
            seq: 2,
            prompt: first + n as u64,
            text: text.into(),
        });
    }
    assert!(!t.s.steered(first + 2));
    assert_eq!(queued(&t), vec![first, first + 1, first + 2]);
    // Once one waits, a steer queues behind it.
    t.go(Input::Steer("d".into()));
    assert!(!t.s.steered(first + 3));
    assert_eq!(queued(&t), vec![first, first + 1, first + 2, first + 3]);
}

#[test]
fn a_steer_waits_behind_a_queued_prompt() {
    let mut t = lingering();
    t.go(Input::message("queued".into()));
    assert!(!t.s.steerable());
    let e = t.go(Input::Steer("later".into()));
    assert!(
        !e.iter().any(|e| matches!(e, Effect::Steer { .. })),
        "{e:?}"
    );
    let id = t.s.record().next_prompt - 1;
    assert!(!t.s.steered(id));
    assert_eq!(queued(&t), vec![id - 1, id]);
}

#[test]
fn a_full_queue_refuses_a_message_but_takes_back_a_handed_back_steer() {
    let mut t = lingering();
    t.s.config.max_queued_prompts = 2;
    t.go(Input::Steer("steered".into()));
    let steered = t.s.record().next_prompt - 1;
    t.go(Input::message("one".into()));
    t.go(Input::message("two".into()));
    let before = t.s.state().clone();
    for input in [Input::message("three".into()), Input::Steer("four".into())] {
        let (o, e) = t.at(t.now, input);
        assert_eq!((o, e), (Outcome::Refused(Refusal::QueueFull), vec![]));
    }
    assert_eq!(t.s.state(), &before, "a refusal changes nothing");
    t.go(Input::SteerUndelivered {
        seq: 2,
        prompt: steered,
        text: "steered".into(),
    });
    assert_eq!(queued(&t), vec![steered, steered + 1, steered + 2]);
}

#[test]
fn a_queued_message_is_one_append_to_the_prompt_log_and_reads_back_with_it() {
    let mut t = lingering();
    let written = t.s.record().clone();
    let e = t.go(Input::message("queued".into()));
    let id = written.next_prompt;
    let prompt = Prompt {
        id,
        text: "queued".into(),
        choice: Default::default(),
        attachments: Vec::new(),
    };
    assert_eq!(e[0], Effect::PersistPrompt(prompt.clone()), "{e:?}");
    assert!(!e.contains(&Effect::Persist), "{e:?}");
    // The record last written, with its log, is the record now.
    assert_eq!(&written.with_logged([prompt.clone()]), t.s.record());
    // A prompt the written record already holds, or had, is not queued again.
    let later = t.s.record().clone();
    assert_eq!(later.clone().with_logged([prompt]), later);
}

#[test]
fn a_message_that_starts_a_turn_logs_its_prompt_and_notes_the_spawn() {
    let mut t = T::idle();
    let e = t.go(Input::message("now".into()));
    let seq = t.seq();
    assert!(matches!(e[0], Effect::PersistPrompt(_)), "{e:?}");
    assert!(!e.contains(&Effect::Persist), "{e:?}");
    let note = e.iter().position(|e| *e == Effect::NoteSpawn { seq });
    let spawn = e.iter().position(|e| matches!(e, Effect::SpawnTurn { .. }));
    assert_eq!(note.map(|n| n + 1), spawn, "{e:?}");
}

/// Turn 3 runs "three" in turn 2's lingering process, and has its prompt.
fn warm_follow_up() -> T {
    let mut t = lingering();
    t.go(Input::TurnFinished {
        seq: 2,
        failed: None,
        usage: None,
    });
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
    t
}

fn unresponsive(e: &[Effect]) -> Option<bool> {
    e.iter().find_map(|e| match e {
        Effect::Emit(Event::Unresponsive { retried, .. }) => Some(*retried),
        _ => None,
    })
}

#[test]
fn a_warm_follow_up_with_no_sign_of_life_runs_once_more_in_a_new_process() {
    let mut t = warm_follow_up();
    let timeout = t.s.config.startup_timeout;
    let (at, timer) = t.s.poll_timeout().unwrap();
    assert_eq!((at, timer), (t.now + timeout, Timer::StartupTimeout));
    let e = t.at(at, Input::Timeout).1;
    assert_eq!(unresponsive(&e), Some(true), "{e:?}");
    assert!(has(&e, &term(3)) && has(&e, &Effect::CloseInput { seq: 3 }));
    // A name said too late does not save it: its prompt runs again.
    let (o, _) = t.at(
        at,
        Input::NativeId {
            seq: 3,
            native_id: "n1".into(),
        },
    );
    assert_eq!(o, Outcome::Ignored);
    let e = t.end(3, Exit::Signal(15));
    let ended = e.iter().any(|e| {
        matches!(
            e,
            Effect::Emit(Event::TurnEnded {
                turn: 3,
                by: Some(EndWhy::NoSignOfLife),
                ..
            })
        )
    });
    assert!(ended, "{e:?}");
    assert!(has(
        &e,
        &Effect::Emit(Event::PromptRequeued { prompt: 3, turn: 3 })
    ));
    // A new process that resumes the session.
    assert!(has(
        &e,
        &Effect::SpawnTurn {
            seq: 4,
            prompt: "three".into(),
            resume: Some("n1".into()),
            cut: None,
            plan_only: false,
            choice: Default::default(),
            attachments: Vec::new(),
        }
    ));
    assert_eq!(t.s.record().retrying, Some(3));
    t.go(Input::TurnSpawned { seq: 4, process: P });
    t.named(4);
    assert_eq!(t.s.record().retrying, None, "it began: the retry is over");
    assert_eq!(t.s.poll_timeout(), None);
}

#[test]
fn a_second_turn_with_no_sign_of_life_fails_the_prompt() {
    let mut t = warm_follow_up();
    let timeout = t.s.config.startup_timeout;
    t.at(t.now + timeout, Input::Timeout);
    t.end(3, Exit::Signal(15));
    t.go(Input::TurnSpawned { seq: 4, process: P });
    let e = t.at(t.now + timeout, Input::Timeout).1;
    assert_eq!(unresponsive(&e), Some(false), "{e:?}");
    let e = t.end(4, Exit::Signal(15));
    let failure = Failure::Unresponsive {
        turn: 4,
        prompt: 3,
        within_ms: timeout,
    };
    assert!(has(
        &e,
        &Effect::Emit(Event::PromptFailed {
            prompt: 3,
            failure: failure.clone()
        })
    ));
    assert_eq!(t.s.record().error, Some(failure));
    assert_eq!(t.s.record().retrying, None);
    assert_eq!(t.s.shown(), Shown::Idle);
}

#[test]
fn a_turn_that_names_its_session_in_time_has_no_deadline_left() {
    let mut t = warm_follow_up();
    t.named(3);
    assert_eq!(t.s.poll_timeout().map(|(_, timer)| timer), None);
    let (o, _) = t.at(t.now + t.s.config.startup_timeout, Input::Timeout);
    assert_eq!(o, Outcome::Ignored);
}
