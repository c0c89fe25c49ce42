//! What a turn used, in its `turn_ended` and the session's totals; and the
//! prompt's text in `prompt_queued`.

use super::*;
use crate::session::usage::{tokens, COST_MAX_USD, TOKENS_MAX};

fn costing(u: Usage, usd: f64) -> Usage {
    Usage {
        cost_usd: Usd::reported(usd),
        ..u
    }
}

fn report(seq: TurnSeq, u: Usage) -> Input {
    Input::TurnUsage {
        seq,
        report: UsageReport::Turn(u),
    }
}

fn total(seq: TurnSeq, u: Usage) -> Input {
    Input::TurnUsage {
        seq,
        report: UsageReport::Total(u),
    }
}

/// The usage the effects' `turn_ended` carries (panics without one).
fn ended_usage(effects: &[Effect]) -> Option<Usage> {
    effects
        .iter()
        .find_map(|e| match e {
            Effect::Emit(Event::TurnEnded { usage, .. }) => Some(*usage),
            _ => None,
        })
        .expect("a turn_ended")
}

#[test]
fn a_turns_own_figures_add_up_and_its_end_carries_them_into_the_totals() {
    let mut t = T::running(&[]);
    let one = costing(tokens(10, 5, 3, 7), 0.000_175_6);
    // Recorded at once, so a restart keeps them; nothing is journalled yet.
    assert_eq!(t.go(report(2, one)), vec![Effect::Persist]);
    assert_eq!(t.s.record().usage, Usage::default(), "not before the end");
    t.go(report(2, one));
    let e = t.end(2, Exit::Code(0));
    let two = costing(tokens(20, 10, 6, 14), 0.000_351_2);
    assert_eq!(e[0], Effect::Persist);
    assert!(has(
        &e,
        &Effect::Emit(Event::TurnEnded {
            turn: 2,
            prompt: 2,
            exit: Some(Exit::Code(0)),
            by: None,
            usage: Some(two),
        })
    ));
    assert_eq!(t.s.record().usage, two);
    // A turn that reports nothing ends with null and adds nothing.
    t.next_turn("three");
    assert_eq!(ended_usage(&t.end(3, Exit::Code(0))), None);
    assert_eq!(t.s.record().usage, two);
}

#[test]
fn a_running_total_counts_what_it_grew_by_across_resumed_turns() {
    let mut t = T::spawned("first");
    t.named(1);
    t.go(total(1, tokens(10, 5, 3, 7)));
    assert_eq!(
        ended_usage(&t.end(1, Exit::Code(0))),
        Some(tokens(10, 5, 3, 7))
    );
    // The next process resumes the thread: its total holds turn 1's too.
    let seq = t.next_turn("two");
    t.go(total(seq, tokens(30, 15, 9, 21)));
    assert_eq!(
        ended_usage(&t.end(seq, Exit::Code(0))),
        Some(tokens(20, 10, 6, 14))
    );
    assert_eq!(t.s.record().usage, tokens(30, 15, 9, 21));
    // A turn that grew it twice used both growths.
    let seq = t.next_turn("three");
    t.go(total(seq, tokens(40, 20, 12, 28)));
    t.go(total(seq, tokens(50, 25, 15, 35)));
    assert_eq!(
        ended_usage(&t.end(seq, Exit::Code(0))),
        Some(tokens(20, 10, 6, 14))
    );
}

#[test]
fn a_total_whose_start_is_unknown_says_nothing_of_the_turn_but_starts_the_next() {
    // A session recorded before totals were kept: its thread has a past.
    let mut t = T::idle();
    let mut record = t.s.record().clone();
    record.native_total = None;
    t.s = Session::restore(Config::default(), options(false), record, 10);
    drain(&mut t.s);
    let seq = t.next_turn("two");
    t.go(total(seq, tokens(30, 15, 9, 21)));
    assert_eq!(ended_usage(&t.end(seq, Exit::Code(0))), None);
    let seq = t.next_turn("three");
    t.go(total(seq, tokens(40, 20, 12, 28)));
    assert_eq!(
        ended_usage(&t.end(seq, Exit::Code(0))),
        Some(tokens(10, 5, 3, 7))
    );
    // A total that went down is another count: nothing for the turn, and
    // the next growth is measured from it.
    let seq = t.next_turn("four");
    t.go(total(seq, tokens(5, 5, 5, 5)));
    assert_eq!(ended_usage(&t.end(seq, Exit::Code(0))), None);
    let seq = t.next_turn("five");
    t.go(total(seq, tokens(6, 6, 6, 6)));
    assert_eq!(
        ended_usage(&t.end(seq, Exit::Code(0))),
        Some(tokens(1, 1, 1, 1))
    );
    assert_eq!(t.s.record().usage, tokens(11, 6, 4, 8));
}

#[test]
fn a_total_before_the_turn_named_its_session_is_not_taken() {
    let mut t = T::spawned("first");
    let (o, e) = t.at(0, total(1, tokens(10, 5, 3, 7)));
    assert_eq!((o, e), (Outcome::Ignored, vec![]));
    t.named(1);
    t.go(total(1, tokens(10, 5, 3, 7)));
    assert_eq!(
        ended_usage(&t.end(1, Exit::Code(0))),
        Some(tokens(10, 5, 3, 7))
    );
}

#[test]
fn a_new_native_session_counts_its_total_from_zero() {
    let mut t = T::spawned("first");
    t.named(1);
    t.go(total(1, tokens(30, 15, 9, 21)));
    t.end(1, Exit::Code(0));
    // The harness started a new thread instead of resuming the old one.
    t.go(Input::message("two".into()));
    t.go(Input::TurnSpawned { seq: 2, process: P });
    t.go(Input::NativeId {
        seq: 2,
        native_id: "n2".into(),
    });
    t.go(total(2, tokens(10, 5, 3, 7)));
    assert_eq!(
        ended_usage(&t.end(2, Exit::Code(0))),
        Some(tokens(10, 5, 3, 7))
    );
}

#[test]
fn figures_past_belief_are_left_out() {
    let mut t = T::running(&[]);
    let mut wild = tokens(TOKENS_MAX + 1, 5, 3, 7);
    wild.cost_usd = Some(serde_json::from_str(&format!("{}", COST_MAX_USD * 10.0)).unwrap());
    t.go(report(2, wild));
    assert_eq!(
        ended_usage(&t.end(2, Exit::Code(0))),
        Some(tokens(0, 5, 3, 7))
    );
}

#[test]
fn a_report_for_no_live_turn_changes_nothing() {
    let mut t = T::running(&[]);
    for input in [report(1, tokens(1, 1, 1, 1)), report(3, tokens(1, 1, 1, 1))] {
        assert_eq!(t.at(0, input), (Outcome::Ignored, vec![]));
    }
    t.end(2, Exit::Code(0));
    assert_eq!(
        t.at(0, report(2, tokens(1, 1, 1, 1))),
        (Outcome::Ignored, vec![]),
        "late"
    );
    assert_eq!(t.s.record().usage, Usage::default());
    // Asked for but not spawned: no harness to report.
    let mut t = T::idle();
    t.s.handle(0, Input::Stop);
    t.go(Input::message("two".into()));
    t.go(Input::Resume);
    assert_eq!(
        t.at(0, report(2, tokens(1, 1, 1, 1))),
        (Outcome::Ignored, vec![])
    );
}

#[test]
fn a_stopped_turn_keeps_what_it_reported_and_a_restored_one_reports_it_at_its_end() {
    let mut t = T::running(&[]);
    t.go(Input::Stop);
    t.go(report(2, tokens(10, 5, 3, 7)));
    let e = t.end(2, Exit::Signal(15));
    assert_eq!(ended_usage(&e), Some(tokens(10, 5, 3, 7)));

    // kill -9 after a report: the record has it; the restore's end says it.
    let mut t = T::running(&[]);
    t.go(report(2, tokens(10, 5, 3, 7)));
    let record = t.s.record().clone();
    let mut s = Session::restore(Config::default(), options(false), record, 50);
    drain(&mut s);
    s.handle(60, Input::SurvivorGone { seq: 2 });
    assert_eq!(ended_usage(&drain(&mut s)), Some(tokens(10, 5, 3, 7)));
    assert_eq!(s.record().usage, tokens(10, 5, 3, 7));
}

#[test]
fn a_queued_prompts_event_carries_its_text_cut_to_fit_a_journal_line() {
    let (mut t, _) = T::new(false, Some("hello"));
    let e = t.go(Input::message("a\nb".into()));
    assert_eq!(
        e,
        vec![
            Effect::PersistPrompt(Prompt {
                id: 2,
                text: "a\nb".into(),
                choice: Default::default(),
                attachments: Vec::new(),
            }),
            Effect::Emit(Event::PromptQueued {
                prompt: 2,
                text: "a\nb".into(),
                text_truncated: false,
                attachments: Vec::new(),
            })
        ]
    );
    let long = "é".repeat(PROMPT_TEXT_MAX);
    let e = t.go(Input::message(long.clone()));
    let Effect::Emit(Event::PromptQueued {
        text,
        text_truncated,
        ..
    }) = &e[1]
    else {
        panic!("{e:?}")
    };
    assert!(*text_truncated);
    assert_eq!(text.len(), PROMPT_TEXT_MAX);
    assert!(long.starts_with(text.as_str()));
    // The queue keeps the whole prompt: the harness gets all of it.
    assert_eq!(t.s.record().queue[2].text, long);
}

#[test]
fn records_and_events_written_before_usage_still_read() {
    let record: Record = serde_json::from_str(
        r#"{"stage":"started","native_id":"n1","queue":[],"paused":false,
            "turn":{"seq":2,"prompt":{"id":2,"text":"p"},"launch":false,"process":null,
                    "delivered":false,"reported":false,"ending":null},
            "error":null,"next_prompt":3,"next_turn":3}"#,
    )
    .unwrap();
    assert_eq!(record.usage, Usage::default());
    assert_eq!(record.native_total, None);
    assert_eq!(record.turn.unwrap().usage(), None);
    let e: Event = serde_json::from_str(
        r#"{"kind":"turn_ended","data":{"turn":2,"prompt":3,"exit":{"code":0},"by":null}}"#,
    )
    .unwrap();
    assert!(matches!(e, Event::TurnEnded { usage: None, .. }));
    let e: Event = serde_json::from_str(r#"{"kind":"prompt_queued","data":{"prompt":1}}"#).unwrap();
    assert_eq!(
        e,
        Event::PromptQueued {
            prompt: 1,
            text: String::new(),
            text_truncated: false,
            attachments: Vec::new(),
        }
    );
    // A record with totals keeps them across a write and a read.
    let mut t = T::running(&[]);
    t.go(report(2, costing(tokens(1, 2, 3, 4), 0.5)));
    t.end(2, Exit::Code(0));
    let json = serde_json::to_string(t.s.record()).unwrap();
    let back: Record = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, t.s.record());
}
