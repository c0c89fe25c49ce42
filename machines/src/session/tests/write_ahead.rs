//! A warm follow-up's durable writes: its prompt's log append is its one
//! write, and a restore completes the record on disk, a turn behind, from
//! the prompt log and the journal's tail ([`TurnTail`]).

use super::*;

const LINGER: Millis = 30_000;

/// Turn 2 done and its process lingering, the record written.
fn lingering() -> T {
    let mut t = T::idle();
    t.s.config.linger = LINGER;
    t.next_turn("two");
    t.finished(2);
    t
}

/// Where `want` is among `e`.
fn at(e: &[Effect], want: impl Fn(&Effect) -> bool) -> usize {
    e.iter().position(want).expect("the effect")
}

#[test]
fn a_warm_follow_up_logs_its_prompt_and_writes_no_record() {
    let mut t = lingering();
    let e = t.go(Input::message("three".into()));
    assert_eq!(
        e[0],
        Effect::PersistPrompt(Prompt {
            id: 3,
            text: "three".into(),
            choice: Default::default(),
            attachments: Vec::new(),
        }),
        "the prompt is durable before it is said: {e:?}"
    );
    assert!(
        has(
            &e,
            &Effect::ContinueTurn {
                seq: 3,
                prompt: "three".into(),
                switch: Default::default(),
                attachments: Vec::new(),
            }
        ),
        "{e:?}"
    );
    assert!(!has(&e, &Effect::Persist), "{e:?}");
    let turn = t.s.record().clone().turn.unwrap();
    assert!(turn.warm, "{turn:?}");
}

#[test]
fn a_warm_turn_that_names_the_same_session_writes_no_record_and_a_new_one_does() {
    let mut t = lingering();
    t.go(Input::message("three".into()));
    let e = t.go(Input::NativeId {
        seq: 3,
        native_id: "n1".into(),
    });
    assert!(!has(&e, &Effect::Persist), "{e:?}");
    assert!(t.s.record().turn.as_ref().unwrap().reported());
    // The next write carries it.
    let e = t.finished(3);
    assert_eq!(e[0], Effect::Persist);

    let mut t = lingering();
    t.go(Input::message("three".into()));
    let e = t.go(Input::NativeId {
        seq: 3,
        native_id: "n2".into(),
    });
    assert_eq!(e[0], Effect::Persist, "a new native session is on record");
}

#[test]
fn a_cold_turn_that_names_its_session_is_on_record_at_once() {
    let mut t = T::idle();
    t.go(Input::message("two".into()));
    t.go(Input::TurnSpawned { seq: 2, process: P });
    let e = t.go(Input::NativeId {
        seq: 2,
        native_id: "n1".into(),
    });
    assert_eq!(e[0], Effect::Persist, "{e:?}");
}

#[test]
fn with_an_unwritten_record_the_follow_up_writes_it_before_its_prompt() {
    let mut t = lingering();
    t.go(Input::PersistFailed {
        error: "No space left on device".into(),
    });
    let e = t.go(Input::message("three".into()));
    let said = at(&e, |e| matches!(e, Effect::ContinueTurn { seq: 3, .. }));
    let written = at(&e, |e| *e == Effect::Persist);
    assert!(
        written < said,
        "the record on disk is older than the journal's turn: {e:?}"
    );
}

/// The record a kill -9 leaves once turn 3 went to the lingering process
/// of turn 2: `on_record` says whether a later change wrote it.
fn crashed(on_record: bool) -> Record {
    let mut t = lingering();
    let before = t.s.record().clone();
    t.go(Input::message("three".into()));
    if on_record {
        return t.s.record().clone();
    }
    // The prompt log holds prompt 3; the record is the one before.
    before.with_logged([Prompt {
        id: 3,
        text: "three".into(),
        choice: Default::default(),
        attachments: Vec::new(),
    }])
}

/// Restores `record` completed by `tail`: the effects, then the survivor
/// of turn `seq` gone.
fn restored(record: Record, tail: TurnTail, seq: TurnSeq) -> (Session, Vec<Effect>) {
    assert!(record.reads_journal_tail(), "{record:?}");
    let record = record.with_journal_tail(Some(tail));
    let mut s = Session::restore(Config::default(), options(false), record, 50);
    let first = drain(&mut s);
    assert_eq!(first, vec![Effect::KillSurvivor { seq, process: P }]);
    s.handle(60, Input::SurvivorGone { seq });
    let e = drain(&mut s);
    (s, e)
}

fn tail(printed: bool) -> TurnTail {
    TurnTail {
        turn: 3,
        prompt: 3,
        printed,
    }
}

#[test]
fn a_warm_turn_its_harness_printed_for_is_cut_not_run_again() {
    for on_record in [true, false] {
        let (s, e) = restored(crashed(on_record), tail(true), 3);
        assert_eq!(spawns(&e), 0, "on record: {on_record}: {e:?}");
        assert!(
            has(
                &e,
                &Effect::Emit(Event::TurnEnded {
                    turn: 3,
                    prompt: 3,
                    exit: None,
                    by: Some(EndWhy::Restore),
                    usage: None,
                })
            ),
            "{e:?}"
        );
        assert!(matches!(
            s.record().error,
            Some(Failure::Cut { turn: 3, .. })
        ));
        assert!(s.record().queue.is_empty());
        assert_eq!(s.record().next_turn, 4);
    }
}

#[test]
fn a_warm_turn_its_harness_never_printed_for_runs_again_as_the_next_turn() {
    for on_record in [true, false] {
        let (_, e) = restored(crashed(on_record), tail(false), 3);
        let spawned = spawned(&e);
        assert_eq!(
            spawned,
            [&Effect::SpawnTurn {
                seq: 4,
                prompt: "three".into(),
                resume: Some("n1".into()),
                cut: None,
                plan_only: false,
                choice: Default::default(),
                attachments: Vec::new(),
            }],
            "on record: {on_record}"
        );
    }
}

#[test]
fn a_tail_that_does_not_follow_the_record_changes_nothing() {
    let record = crashed(false);
    for tail in [
        // An older turn, the record's own.
        TurnTail {
            turn: 2,
            prompt: 2,
            printed: true,
        },
        // A turn the record cannot have missed.
        TurnTail {
            turn: 4,
            prompt: 3,
            printed: true,
        },
        // A prompt that is not the next one waiting.
        TurnTail {
            turn: 3,
            prompt: 4,
            printed: true,
        },
    ] {
        assert_eq!(record.clone().with_journal_tail(Some(tail)), record);
    }
    // A cold turn's journal is not read: its record says what it did.
    let mut t = T::idle();
    t.go(Input::message("two".into()));
    t.go(Input::TurnSpawned { seq: 2, process: P });
    let cold = t.s.record().clone();
    let tail = TurnTail {
        turn: 2,
        prompt: 2,
        printed: true,
    };
    assert_eq!(cold.clone().with_journal_tail(Some(tail)), cold);
}
