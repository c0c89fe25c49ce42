//! A prompt's images travel with it: named in its `prompt_queued`, handed
//! to the process that runs it (a new one or a lingering one), and kept
//! on the prompt when it goes back to the queue or through the prompt log.

use super::*;

fn png(sha: &str) -> Attachment {
    Attachment {
        media_type: ImageType::Png,
        bytes: 70,
        sha256: sha.into(),
    }
}

fn with_images(text: &str, images: Vec<Attachment>) -> Input {
    Input::Message(NewPrompt {
        text: text.into(),
        choice: ModelChoice::default(),
        attachments: images,
    })
}

#[test]
fn a_prompts_images_are_journalled_by_name_and_go_with_its_new_process() {
    let mut t = T::idle();
    let e = t.go(with_images("look", vec![png("a"), png("b")]));
    let queued = e.iter().find_map(|e| match e {
        Effect::Emit(Event::PromptQueued { attachments, .. }) => Some(attachments.clone()),
        _ => None,
    });
    assert_eq!(queued, Some(vec![png("a"), png("b")]));
    let spawned = e.iter().find_map(|e| match e {
        Effect::SpawnTurn { attachments, .. } => Some(attachments.clone()),
        _ => None,
    });
    assert_eq!(spawned, Some(vec![png("a"), png("b")]), "{e:?}");
}

#[test]
fn a_lingering_process_gets_the_images_of_the_prompt_it_runs() {
    let mut t = T::idle();
    t.s.config.linger = 30_000;
    t.next_turn("two");
    t.finished(2);
    let e = t.go(with_images("three", vec![png("c")]));
    assert!(
        has(
            &e,
            &Effect::ContinueTurn {
                seq: 3,
                prompt: "three".into(),
                switch: ModelChoice::default(),
                attachments: vec![png("c")],
            }
        ),
        "{e:?}"
    );
}

#[test]
fn a_prompt_keeps_its_images_through_the_prompt_log_and_a_requeue() {
    let mut t = T::idle();
    let before = t.s.record().clone();
    let e = t.go(with_images("two", vec![png("d")]));
    let Some(Effect::PersistPrompt(logged)) = e.first().cloned() else {
        panic!("the prompt is logged first: {e:?}");
    };
    assert_eq!(logged.attachments, vec![png("d")]);
    let json = serde_json::to_string(&logged).unwrap();
    let back: Prompt = serde_json::from_str(&json).unwrap();
    let restored = before.with_logged([back]);
    assert_eq!(restored.queue[0].attachments, vec![png("d")]);
    // Cut before its prompt reached the harness: queued again, images and all.
    t.go(Input::TurnSpawned { seq: 2, process: P });
    t.go(Input::PromptUndelivered {
        seq: 2,
        error: "ENOSPC".into(),
    });
    t.end(2, Exit::Signal(15));
    assert_eq!(t.s.record().queue[0].attachments, vec![png("d")]);
}
