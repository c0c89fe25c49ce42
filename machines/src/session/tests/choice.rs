//! A message's model and effort: in force from its own turn on, said to a
//! lingering process where it can take them, and run in a new process
//! where it cannot.

use super::*;

fn chose(model: Option<&str>, effort: Option<Effort>) -> ModelChoice {
    ModelChoice {
        model: model.map(str::to_string),
        effort,
    }
}

fn message(text: &str, choice: ModelChoice) -> Input {
    Input::Message(NewPrompt {
        text: text.into(),
        choice,
        attachments: Vec::new(),
    })
}

/// The model each `turn_started` among `e` names.
fn started_models(e: &[Effect]) -> Vec<Option<String>> {
    e.iter()
        .filter_map(|e| match e {
            Effect::Emit(Event::TurnStarted { model, .. }) => Some(model.clone()),
            _ => None,
        })
        .collect()
}

/// The choice each `SpawnTurn` among `e` carries.
fn spawned_with(e: &[Effect]) -> Vec<ModelChoice> {
    e.iter()
        .filter_map(|e| match e {
            Effect::SpawnTurn { choice, .. } => Some(choice.clone()),
            _ => None,
        })
        .collect()
}

/// Idle, started with model `start` and effort medium, its harness taking
/// an effort only at a spawn when `effort_at_spawn`.
fn idle(linger: Millis, effort_at_spawn: bool) -> T {
    let mut t = T::idle();
    t.s.config.linger = linger;
    t.s.options.choice = chose(Some("start"), Some(Effort::Medium));
    t.s.options.effort_at_spawn = effort_at_spawn;
    t
}

#[test]
fn a_message_chooses_the_model_and_effort_of_its_turn_and_the_turns_after_it() {
    let mut t = idle(0, false);
    let e = t.go(message("two", chose(Some("haiku"), None)));
    assert_eq!(
        spawned_with(&e),
        [chose(Some("haiku"), Some(Effort::Medium))],
        "the start's effort stays: {e:?}"
    );
    let e = t.go(Input::TurnSpawned { seq: 2, process: P });
    assert_eq!(started_models(&e), [Some("haiku".to_string())]);
    t.named(2);
    t.end(2, Exit::Code(0));

    let e = t.go(Input::message("three".into()));
    assert_eq!(
        spawned_with(&e),
        [chose(Some("haiku"), Some(Effort::Medium))],
        "{e:?}"
    );
    let e = t.go(Input::TurnSpawned { seq: 3, process: P });
    assert_eq!(started_models(&e), [Some("haiku".to_string())]);
}

#[test]
fn a_queued_choice_waits_for_its_turn() {
    let mut t = idle(0, false);
    t.go(Input::message("two".into()));
    t.go(message("three", chose(Some("opus"), Some(Effort::High))));
    let e = t.go(Input::TurnSpawned { seq: 2, process: P });
    assert_eq!(
        started_models(&e),
        [Some("start".to_string())],
        "turn 2 runs before the choice queued behind it"
    );
    assert_eq!(
        t.s.choice_in_force(),
        chose(Some("start"), Some(Effort::Medium))
    );
    t.named(2);
    let e = t.end(2, Exit::Code(0));
    assert_eq!(spawned_with(&e), [chose(Some("opus"), Some(Effort::High))]);
}

#[test]
fn the_choice_in_force_is_on_record_and_survives_a_restart() {
    let mut t = idle(0, false);
    t.go(message("two", chose(None, Some(Effort::Low))));
    t.go(Input::TurnSpawned { seq: 2, process: P });
    t.named(2);
    t.end(2, Exit::Code(0));
    let json = serde_json::to_string(t.s.record()).unwrap();
    let record: Record = serde_json::from_str(&json).unwrap();
    assert_eq!(record.chosen, chose(None, Some(Effort::Low)), "{json}");
    let options = t.s.options.clone();
    let mut s = Session::restore(Config::default(), options, record, 0);
    drain(&mut s);
    assert_eq!(s.choice_in_force(), chose(Some("start"), Some(Effort::Low)));
}

#[test]
fn a_lingering_process_is_told_what_changes_and_nothing_when_nothing_does() {
    let mut t = idle(LINGER, false);
    t.next_turn("two");
    t.finished(2);
    let e = t.go(message("three", chose(Some("opus"), Some(Effort::Medium))));
    assert!(
        has(
            &e,
            &Effect::ContinueTurn {
                seq: 3,
                prompt: "three".into(),
                switch: chose(Some("opus"), None),
                attachments: Vec::new(),
            }
        ),
        "only the model changes (the effort was already medium): {e:?}"
    );
    assert_eq!(started_models(&e), [Some("opus".to_string())]);
    t.named(3);
    t.finished(3);
    let e = t.go(message("four", chose(Some("opus"), Some(Effort::Xhigh))));
    assert!(
        has(
            &e,
            &Effect::ContinueTurn {
                seq: 4,
                prompt: "four".into(),
                switch: chose(None, Some(Effort::Xhigh)),
                attachments: Vec::new(),
            }
        ),
        "{e:?}"
    );
}

#[test]
fn an_effort_a_process_takes_only_at_its_start_ends_the_linger_and_runs_in_a_new_one() {
    let mut t = idle(LINGER, true);
    t.next_turn("two");
    t.finished(2);
    let e = t.go(message("three", chose(None, Some(Effort::High))));
    assert!(has(&e, &Effect::CloseInput { seq: 2 }), "{e:?}");
    assert!(
        !e.iter().any(|e| matches!(e, Effect::ContinueTurn { .. })),
        "{e:?}"
    );
    assert_eq!(
        t.s.record().queue.len(),
        1,
        "the prompt waits for the process"
    );
    let e = t.end(2, Exit::Code(0));
    assert_eq!(
        spawned_with(&e),
        [chose(Some("start"), Some(Effort::High))],
        "{e:?}"
    );
    assert!(
        e.iter().any(|e| matches!(
            e,
            Effect::SpawnTurn { seq: 3, resume: Some(n), .. } if n == "n1"
        )),
        "the new process resumes the session: {e:?}"
    );

    // A model alone still changes in place.
    t.go(Input::TurnSpawned { seq: 3, process: P });
    t.named(3);
    t.finished(3);
    let e = t.go(message("four", chose(Some("opus"), Some(Effort::High))));
    assert!(
        has(
            &e,
            &Effect::ContinueTurn {
                seq: 4,
                prompt: "four".into(),
                switch: chose(Some("opus"), None),
                attachments: Vec::new(),
            }
        ),
        "{e:?}"
    );
}

#[test]
fn a_warm_turn_restored_from_the_journal_keeps_its_prompts_choice() {
    let mut t = idle(LINGER, false);
    t.next_turn("two");
    t.finished(2);
    let before = t.s.record().clone();
    let prompt = Prompt {
        id: 3,
        text: "three".into(),
        choice: chose(Some("opus"), None),
        attachments: Vec::new(),
    };
    let record = before
        .with_logged([prompt])
        .with_journal_tail(Some(TurnTail {
            turn: 3,
            prompt: 3,
            printed: true,
        }));
    assert_eq!(record.chosen, chose(Some("opus"), None));
}

const LINGER: Millis = 30_000;

#[test]
fn a_message_that_chooses_nothing_is_recorded_as_its_text_as_before() {
    let plain = Input::message("hi".into());
    let json = serde_json::to_value(&plain).unwrap();
    assert_eq!(json, serde_json::json!({"message": "hi"}));
    assert_eq!(serde_json::from_value::<Input>(json).unwrap(), plain);
    let choosing = message("hi", chose(Some("opus"), Some(Effort::Low)));
    let json = serde_json::to_value(&choosing).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"message": {"text": "hi", "model": "opus", "effort": "low"}})
    );
    assert_eq!(serde_json::from_value::<Input>(json).unwrap(), choosing);
}
