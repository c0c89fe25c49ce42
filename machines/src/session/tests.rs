//! Behaviours of the session machine, one test each.

mod attachments;
mod budget;
mod choice;
mod left_behind;
mod order;
mod rewind;
mod snapshots;
mod talk;
mod usage;
mod write_ahead;

use super::*;
use crate::copy::{CopyMark, Observation};
use crate::launch::{WaitEnd, WaitOn};
use approval::Request;

const GRACE: Millis = KILL_GRACE;
const P: Process = Process {
    pid: 4242,
    pgid: 4242,
    start_time: 99,
};

fn options(promised: bool) -> Options {
    Options {
        promised,
        plan_only: false,
        approvals: ApprovalMode::Auto,
        budget: Default::default(),
        choice: Default::default(),
        effort_at_spawn: false,
        auto_allows: false,
    }
}

/// A session and a clock, with every effect kept.
struct T {
    s: Session,
    now: Millis,
}

impl T {
    fn new(promised: bool, prompt: Option<&str>) -> (T, Vec<Effect>) {
        let mut s = Session::new(
            Config::default(),
            options(promised),
            prompt.map(NewPrompt::from),
            0,
        );
        let e = drain(&mut s);
        (T { s, now: 0 }, e)
    }

    fn at(&mut self, now: Millis, input: Input) -> (Outcome, Vec<Effect>) {
        self.now = now;
        let o = self.s.handle(now, input);
        (o, drain(&mut self.s))
    }

    fn go(&mut self, input: Input) -> Vec<Effect> {
        let now = self.now;
        let (o, e) = self.at(now, input);
        assert_eq!(o, Outcome::Applied, "{e:?}");
        e
    }

    fn seq(&self) -> TurnSeq {
        self.s.record().turn.as_ref().expect("a turn").seq
    }

    fn observe(&mut self, obs: Observation) -> Vec<Effect> {
        self.go(Input::Launch(LaunchInput::Observed(obs)))
    }

    /// An unpromised start with `prompt` up to its first turn being spawned.
    fn spawned(prompt: &str) -> T {
        let (mut t, _) = T::new(false, Some(prompt));
        t.observe(Observation::missing());
        t.go(Input::Launch(LaunchInput::PermitGranted));
        let seq = t.seq();
        t.go(Input::TurnSpawned { seq, process: P });
        t
    }

    /// Idle, then prompt "two" running as turn 2, with `more` queued behind it.
    fn running(more: &[&str]) -> T {
        let mut t = T::idle();
        t.go(Input::message("two".into()));
        for m in more {
            t.go(Input::message(m.to_string()));
        }
        t.go(Input::TurnSpawned { seq: 2, process: P });
        t
    }

    /// Turn `seq`'s harness says it is done, having reported no usage.
    fn finished(&mut self, seq: TurnSeq) -> Vec<Effect> {
        self.go(Input::TurnFinished {
            seq,
            failed: None,
            usage: None,
        })
    }

    /// Turn `seq`'s process exits.
    fn end(&mut self, seq: TurnSeq, exit: Exit) -> Vec<Effect> {
        self.go(Input::TurnEnded {
            seq,
            exit,
            detail: String::new(),
        })
    }

    /// Started and idle with native ID `n1`, nothing queued.
    /// Turn `seq` names native session `n1`.
    fn named(&mut self, seq: TurnSeq) {
        self.go(Input::NativeId {
            seq,
            native_id: "n1".into(),
        });
    }

    /// Prompt `text` runs as the next turn, spawned and named `n1`: its seq.
    fn next_turn(&mut self, text: &str) -> TurnSeq {
        self.go(Input::message(text.into()));
        let seq = self.seq();
        self.go(Input::TurnSpawned { seq, process: P });
        self.named(seq);
        seq
    }

    fn idle() -> T {
        let mut t = T::spawned("first");
        let seq = t.seq();
        t.named(seq);
        t.go(Input::TurnEnded {
            seq,
            exit: Exit::Code(0),
            detail: String::new(),
        });
        assert_eq!(t.s.shown(), Shown::Idle);
        t
    }
}

fn drain(s: &mut Session) -> Vec<Effect> {
    std::iter::from_fn(|| s.poll_effect()).collect()
}

fn has(effects: &[Effect], want: &Effect) -> bool {
    effects.contains(want)
}

/// The `SpawnTurn`s among `effects`.
fn spawned(effects: &[Effect]) -> Vec<&Effect> {
    effects
        .iter()
        .filter(|e| matches!(e, Effect::SpawnTurn { .. }))
        .collect()
}

fn spawns(effects: &[Effect]) -> usize {
    spawned(effects).len()
}

fn term(seq: TurnSeq) -> Effect {
    Effect::Signal {
        seq,
        signal: Signal::Term,
    }
}

fn kill(seq: TurnSeq) -> Effect {
    Effect::Signal {
        seq,
        signal: Signal::Kill,
    }
}

fn launch_effect(e: LaunchEffect) -> Effect {
    Effect::Launch(e)
}

#[test]
fn a_new_start_is_persisted_before_its_launch_begins() {
    let (t, e) = T::new(true, Some("hello"));
    assert_eq!(
        e,
        vec![
            Effect::PersistPrompt(Prompt {
                id: 1,
                text: "hello".into(),
                choice: Default::default(),
                attachments: Vec::new(),
            }),
            Effect::Persist,
            // The session's first event is its state.
            Effect::Emit(Event::State {
                state: Shown::Pending
            }),
            Effect::Emit(Event::PromptQueued {
                prompt: 1,
                text: "hello".into(),
                text_truncated: false,
                attachments: Vec::new(),
            }),
            launch_effect(LaunchEffect::Watch),
            launch_effect(LaunchEffect::Observe),
        ]
    );
    assert_eq!(t.s.record().stage, Stage::Starting);
    assert_eq!(t.s.record().queue.len(), 1);
}

#[test]
fn the_copy_wait_is_journalled_with_what_it_waits_on_its_limit_and_why_it_ended() {
    let (mut t, _) = T::new(true, Some("hello"));
    let e = t.observe(Observation::marked(CopyMark::Copying, 0));
    assert!(has(
        &e,
        &Effect::Emit(Event::CopyWaitBegan {
            on: WaitOn::Copying,
            limit_ms: 300_000
        })
    ));
    t.now = 2_000;
    let e = t.observe(Observation::marked(CopyMark::Failed("disk full".into()), 0));
    assert!(has(
        &e,
        &Effect::Emit(Event::CopyWaitEnded {
            why: WaitEnd::CopyFailed("disk full".into()),
            waited_ms: 2_000
        })
    ));
    assert!(has(&e, &launch_effect(LaunchEffect::AskPermit)));
}

#[test]
fn no_turn_is_spawned_before_the_permit_and_the_first_prompt_goes_with_the_permit() {
    let (mut t, _) = T::new(false, Some("hello"));
    let e = t.observe(Observation::missing());
    assert_eq!(spawns(&e), 0);
    let e = t.go(Input::Launch(LaunchInput::PermitGranted));
    assert_eq!(
        e,
        vec![
            Effect::NoteSpawn { seq: 1 },
            Effect::SpawnTurn {
                seq: 1,
                prompt: "hello".into(),
                resume: None,
                cut: None,
                plan_only: false,
                choice: Default::default(),
                attachments: Vec::new(),
            }
        ]
    );
    assert_eq!(t.s.poll_timeout(), Some((120_000, Timer::StartupTimeout)));
}

#[test]
fn a_prompt_is_delivered_only_after_its_turn_is_persisted() {
    let (mut t, _) = T::new(false, Some("hello"));
    t.observe(Observation::missing());
    t.go(Input::Launch(LaunchInput::PermitGranted));
    let e = t.go(Input::TurnSpawned { seq: 1, process: P });
    assert_eq!(e[0], Effect::Persist);
    assert_eq!(e.last(), Some(&Effect::DeliverPrompt { seq: 1 }));
    assert_eq!(
        t.s.record().turn.as_ref().and_then(|t| t.process()),
        Some(P),
        "the persisted record holds the process"
    );
}

#[test]
fn the_harness_naming_its_session_completes_the_launch_and_returns_the_permit() {
    let mut t = T::spawned("hello");
    assert_eq!(t.s.shown(), Shown::Pending);
    let e = t.go(Input::NativeId {
        seq: 1,
        native_id: "n1".into(),
    });
    assert_eq!(e[0], Effect::Persist);
    assert!(has(&e, &launch_effect(LaunchEffect::ReleasePermit)));
    assert!(has(
        &e,
        &Effect::Emit(Event::State {
            state: Shown::Running
        })
    ));
    assert_eq!(t.s.record().stage, Stage::Started);
    assert_eq!(t.s.poll_timeout(), None, "no startup timeout any more");
}

#[test]
fn a_native_id_that_cannot_be_one_is_ignored_and_a_later_one_still_names_the_session() {
    let mut t = T::spawned("hello");
    let deadline = t.s.poll_timeout();
    for bad in ["", "-x", "a b", "../x", &"a".repeat(129)] {
        let native_id = bad.to_string();
        let (o, e) = t.at(0, Input::NativeId { seq: 1, native_id });
        assert_eq!((o, e), (Outcome::Ignored, vec![]), "{bad:?}");
    }
    assert_eq!(t.s.record().native_id, None);
    assert_eq!(t.s.shown(), Shown::Pending);
    assert_eq!(
        t.s.poll_timeout(),
        deadline,
        "the startup timeout still runs"
    );
    let e = t.go(Input::NativeId {
        seq: 1,
        native_id: "5b7e3a1c-8c1d-4f0e-9a57-2d6c1f0e9b21".into(),
    });
    assert!(has(&e, &launch_effect(LaunchEffect::ReleasePermit)));
    assert_eq!(
        t.s.record().native_id.as_deref(),
        Some("5b7e3a1c-8c1d-4f0e-9a57-2d6c1f0e9b21")
    );
}

#[test]
fn later_turns_resume_the_native_session_one_at_a_time() {
    let mut t = T::idle();
    let e = t.go(Input::message("two".into()));
    assert!(matches!(e[0], Effect::PersistPrompt(_)), "{e:?}");
    assert!(has(
        &e,
        &Effect::SpawnTurn {
            seq: 2,
            prompt: "two".into(),
            resume: Some("n1".into()),
            cut: None,
            plan_only: false,
            choice: Default::default(),
            attachments: Vec::new(),
        }
    ));
    let e = t.go(Input::message("three".into()));
    assert_eq!(spawns(&e), 0, "one turn at a time");
    t.go(Input::TurnSpawned { seq: 2, process: P });
    let e = t.end(2, Exit::Code(0));
    assert_eq!(spawns(&e), 1, "the next prompt runs once the turn ended");
}

#[test]
fn stop_during_the_copy_wait_completes_at_once_and_the_harness_starts_paused() {
    let (mut t, _) = T::new(true, Some("hello"));
    t.observe(Observation::marked(CopyMark::Copying, 0));
    let e = t.go(Input::Stop);
    assert_eq!(e[0], Effect::Persist);
    assert!(t.s.record().paused);
    assert_eq!(t.s.shown(), Shown::Pending);
    t.observe(Observation::marked(CopyMark::Ready, 0));
    let e = t.go(Input::Launch(LaunchInput::PermitGranted));
    assert_eq!(spawns(&e), 0, "a paused queue starts nothing");
    assert!(has(&e, &launch_effect(LaunchEffect::ReleasePermit)));
    assert_eq!(t.s.shown(), Shown::Idle);
    let e = t.go(Input::Resume);
    assert_eq!(spawns(&e), 1);
}

#[test]
fn stop_with_a_turn_running_sends_term_then_kill_after_the_grace_and_pauses() {
    let mut t = T::running(&[]);
    t.now = 1_000;
    let e = t.go(Input::Stop);
    assert_eq!(e[0], Effect::Persist);
    assert!(has(&e, &term(2)));
    assert_eq!(t.s.poll_timeout(), Some((1_000 + GRACE, Timer::KillGrace)));
    let (o, _) = t.at(1_000 + GRACE - 1, Input::Timeout);
    assert_eq!(o, Outcome::Ignored, "an early timeout changes nothing");
    let (_, e) = t.at(1_000 + GRACE, Input::Timeout);
    assert_eq!(e, vec![kill(2)]);
    let (o, e) = t.at(1_000 + GRACE, Input::Timeout);
    assert_eq!(
        (o, e),
        (Outcome::Ignored, vec![]),
        "a duplicate changes nothing"
    );
    t.go(Input::message("three".into()));
    let e = t.end(2, Exit::Signal(9));
    assert_eq!(spawns(&e), 0, "paused");
    assert!(has(
        &e,
        &Effect::Emit(Event::TurnEnded {
            turn: 2,
            prompt: 2,
            exit: Some(Exit::Signal(9)),
            by: Some(EndWhy::Stop),
            usage: None,
        })
    ));
    assert_eq!(
        t.s.record().queue.len(),
        1,
        "the stopped prompt is not run again"
    );
}

#[test]
fn interrupt_ends_the_turn_and_the_queue_goes_on() {
    let mut t = T::running(&["three"]);
    let e = t.go(Input::Interrupt);
    assert!(has(&e, &Effect::InterruptTurn { seq: 2 }), "{e:?}");
    assert!(!t.s.record().paused);
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
    t.go(Input::TurnSpawned { seq: 3, process: P });
    t.end(3, Exit::Code(0));
    assert_eq!(
        t.at(t.now, Input::Interrupt).0,
        Outcome::Ignored,
        "nothing to interrupt"
    );
}

#[test]
fn close_during_the_wait_means_the_harness_never_starts() {
    let (mut t, _) = T::new(true, Some("hello"));
    t.observe(Observation::missing());
    let e = t.go(Input::Close);
    assert_eq!(e[0], Effect::Persist);
    assert!(has(&e, &launch_effect(LaunchEffect::Unwatch)));
    assert_eq!(t.s.record().stage, Stage::Closed);
    // A grant that comes anyway is given back at once.
    let (o, e) = t.at(1, Input::Launch(LaunchInput::PermitGranted));
    assert_eq!(
        (o, e),
        (
            Outcome::Applied,
            vec![launch_effect(LaunchEffect::ReleasePermit)]
        )
    );
    assert_eq!(
        t.at(1, Input::message("x".into())).0,
        Outcome::Refused(Refusal::Closed)
    );
    assert_eq!(t.at(1, Input::Close).0, Outcome::Ignored);
}

#[test]
fn close_while_queued_for_a_permit_gives_the_late_permit_back() {
    let (mut t, _) = T::new(false, Some("hello"));
    t.observe(Observation::missing());
    t.go(Input::Close);
    let e = t.go(Input::Launch(LaunchInput::PermitGranted));
    assert_eq!(e, vec![launch_effect(LaunchEffect::ReleasePermit)]);
}

#[test]
fn close_with_a_turn_running_ends_it_and_nothing_runs_after() {
    let mut t = T::running(&["three"]);
    let e = t.go(Input::Close);
    assert!(has(&e, &term(2)));
    assert_eq!(t.s.shown(), Shown::Closed);
    let e = t.end(2, Exit::Signal(15));
    assert_eq!(spawns(&e), 0);
}

#[test]
fn a_silent_harness_times_out_fails_the_launch_returns_the_permit_and_keeps_its_prompt() {
    let mut t = T::spawned("hello");
    t.s.handle(0, Input::message("two".into()));
    drain(&mut t.s);
    let (o, e) = t.at(120_000, Input::Timeout);
    assert_eq!(o, Outcome::Applied);
    assert_eq!(e[0], Effect::Persist);
    assert!(has(&e, &term(1)));
    assert!(has(&e, &launch_effect(LaunchEffect::ReleasePermit)));
    assert_eq!(t.s.shown(), Shown::Failed);
    assert_eq!(
        t.s.record().error,
        Some(Failure::NotStarted { within_ms: 120_000 })
    );
    let (_, e) = t.at(120_000 + GRACE, Input::Timeout);
    assert!(has(&e, &kill(1)));
    // A late report changes nothing; the end puts the prompt back first.
    assert_eq!(
        t.at(
            124_500,
            Input::NativeId {
                seq: 1,
                native_id: "late".into()
            }
        )
        .0,
        Outcome::Ignored
    );
    t.end(1, Exit::Signal(9));
    let queued: Vec<&str> = t.s.record().queue.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(queued, ["hello", "two"]);
    // A relaunch runs it without waiting.
    let e = t.go(Input::Relaunch(RelaunchMode::Resume));
    assert_eq!(
        e.iter()
            .filter(|e| matches!(e, Effect::Launch(LaunchEffect::AskPermit)))
            .count(),
        1
    );
}

#[test]
fn a_later_prompt_that_cannot_be_spawned_fails_visibly_and_the_queue_moves_on() {
    let mut t = T::idle();
    t.go(Input::message("huge".into()));
    t.go(Input::message("next".into()));
    let e = t.go(Input::SpawnFailed {
        seq: 2,
        reason: "Argument list too long".into(),
    });
    assert_eq!(e[0], Effect::Persist);
    assert!(has(
        &e,
        &Effect::Emit(Event::PromptFailed {
            prompt: 2,
            failure: Failure::PromptNotRun {
                prompt: 2,
                reason: "Argument list too long".into()
            }
        })
    ));
    assert!(has(
        &e,
        &Effect::SpawnTurn {
            seq: 3,
            prompt: "next".into(),
            resume: Some("n1".into()),
            cut: None,
            plan_only: false,
            choice: Default::default(),
            attachments: Vec::new(),
        }
    ));
}

#[test]
fn a_first_prompt_that_cannot_be_spawned_fails_the_launch_and_stays_queued() {
    let (mut t, _) = T::new(false, Some("hello"));
    t.observe(Observation::missing());
    t.go(Input::Launch(LaunchInput::PermitGranted));
    let e = t.go(Input::SpawnFailed {
        seq: 1,
        reason: "cannot run claude: not found".into(),
    });
    assert!(has(&e, &launch_effect(LaunchEffect::ReleasePermit)));
    assert_eq!(t.s.shown(), Shown::Failed);
    assert_eq!(t.s.record().queue[0].text, "hello");
    assert_eq!(
        t.at(0, Input::message("x".into())).0,
        Outcome::Refused(Refusal::Failed)
    );
}

#[test]
fn a_first_turn_that_exits_before_naming_its_session_fails_the_launch() {
    let mut t = T::spawned("hello");
    t.go(Input::TurnEnded {
        seq: 1,
        exit: Exit::Code(1),
        detail: "bad flag".into(),
    });
    assert_eq!(t.s.shown(), Shown::Failed);
    assert_eq!(
        t.s.record().error,
        Some(Failure::ExitedBeforeNamed {
            exit: Exit::Code(1),
            detail: "bad flag".into()
        })
    );
    assert_eq!(t.s.record().queue[0].text, "hello");
}

#[test]
fn a_turn_cut_by_a_service_stop_before_it_reported_in_is_queued_again_and_said() {
    let mut t = T::spawned("hello");
    let e = t.go(Input::ServiceStop);
    assert_eq!(
        e[0],
        Effect::Persist,
        "the cut is recorded before the signal"
    );
    assert!(has(&e, &launch_effect(LaunchEffect::ReleasePermit)));
    t.end(1, Exit::Signal(15));
    assert_eq!(t.s.record().queue[0].text, "hello");
    assert_eq!(
        t.s.record().error,
        Some(Failure::Cut {
            turn: 1,
            prompt: 1,
            by: CutBy::ServiceStop,
            reported: false
        })
    );
    assert_eq!(
        t.s.record().stage,
        Stage::Starting,
        "it waits again next run"
    );
}

#[test]
fn a_service_stop_leaves_a_quiet_session_untouched_and_says_so_where_it_changes_something() {
    let mut idle = T::idle();
    assert_eq!(
        idle.go(Input::ServiceStop),
        vec![],
        "nothing to end, pause or record"
    );
    let mut paused = T::idle();
    paused.go(Input::Stop);
    paused.go(Input::message("later".into()));
    assert!(has(
        &paused.go(Input::ServiceStop),
        &Effect::Emit(Event::ServiceStopped)
    ));
    let mut waiting = T::new(true, Some("hello")).0;
    waiting.observe(Observation::missing());
    assert!(has(
        &waiting.go(Input::ServiceStop),
        &Effect::Emit(Event::ServiceStopped)
    ));
    let mut running = T::running(&[]);
    assert!(has(
        &running.go(Input::ServiceStop),
        &Effect::Emit(Event::ServiceStopped)
    ));
}

#[test]
fn a_turn_cut_after_it_reported_in_is_said_and_not_run_again() {
    let mut t = T::running(&[]);
    t.named(2);
    t.go(Input::ServiceStop);
    let e = t.end(2, Exit::Signal(15));
    assert_eq!(spawns(&e), 0, "nothing starts once the service stops");
    assert!(t.s.record().queue.is_empty());
    assert_eq!(
        t.s.record().error,
        Some(Failure::Cut {
            turn: 2,
            prompt: 2,
            by: CutBy::ServiceStop,
            reported: true
        })
    );
}

#[test]
fn restore_kills_a_survivor_before_anything_else_runs() {
    let mut t = T::running(&[]);
    t.go(Input::message("three".into()));
    // kill -9: only the record is left.
    let record = t.s.record().clone();
    let mut s = Session::restore(Config::default(), options(false), record, 50);
    let e = drain(&mut s);
    assert_eq!(e, vec![Effect::KillSurvivor { seq: 2, process: P }]);
    assert_eq!(s.handle(51, Input::Resume), Outcome::Ignored);
    assert_eq!(s.handle(51, Input::Interrupt), Outcome::Ignored);
    assert_eq!(
        s.handle(
            51,
            Input::TurnEnded {
                seq: 2,
                exit: Exit::Code(0),
                detail: String::new()
            }
        ),
        Outcome::Ignored,
        "a restored turn ends only by SurvivorGone"
    );
    s.handle(60, Input::SurvivorGone { seq: 2 });
    let e = drain(&mut s);
    assert_eq!(e[0], Effect::Persist);
    let spawned = spawned(&e);
    assert_eq!(
        spawned,
        [&Effect::SpawnTurn {
            seq: 3,
            prompt: "two".into(),
            resume: Some("n1".into()),
            cut: None,
            plan_only: false,
            choice: Default::default(),
            attachments: Vec::new(),
        }],
        "never reported in: queued again, ahead of the rest"
    );
    assert!(matches!(
        s.record().error,
        Some(Failure::Cut {
            by: CutBy::ServiceEnd,
            reported: false,
            ..
        })
    ));
}

#[test]
fn a_restored_waiting_start_waits_again_with_a_new_limit() {
    let (mut t, _) = T::new(true, Some("hello"));
    t.observe(Observation::missing());
    let record = t.s.record().clone();
    let mut s = Session::restore(Config::default(), options(true), record, 1_000_000);
    let e = drain(&mut s);
    assert_eq!(
        e,
        vec![
            launch_effect(LaunchEffect::Watch),
            launch_effect(LaunchEffect::Observe)
        ]
    );
    s.handle(
        1_000_000,
        Input::Launch(LaunchInput::Observed(Observation::missing())),
    );
    assert!(
        drain(&mut s).contains(&launch_effect(LaunchEffect::WaitFor {
            on: WaitOn::MissingMark,
            until: 1_000_000 + 300_000
        }))
    );
}

#[test]
fn a_restored_first_turn_is_killed_then_its_start_waits_again() {
    let (mut t, _) = T::new(true, Some("hello"));
    t.observe(Observation::marked(CopyMark::Ready, 0));
    t.go(Input::Launch(LaunchInput::PermitGranted));
    t.go(Input::TurnSpawned { seq: 1, process: P });
    let record = t.s.record().clone();
    let mut s = Session::restore(Config::default(), options(true), record, 7);
    assert_eq!(
        drain(&mut s),
        vec![Effect::KillSurvivor { seq: 1, process: P }]
    );
    s.handle(8, Input::SurvivorGone { seq: 1 });
    let e = drain(&mut s);
    assert!(e.contains(&launch_effect(LaunchEffect::Observe)));
    assert_eq!(s.record().queue[0].text, "hello");
}

#[test]
fn a_restored_started_session_runs_its_queue_without_waiting() {
    let mut t = T::idle();
    t.go(Input::Stop);
    t.go(Input::message("two".into()));
    // Paused on record: restored, it runs nothing until resumed, and then
    // without any launch (no wait, no permit), even with a promised copy.
    let record = t.s.record().clone();
    let mut s = Session::restore(Config::default(), options(true), record, 5);
    assert_eq!(drain(&mut s), vec![]);
    assert_eq!(s.shown(), Shown::Idle);
    s.handle(6, Input::Resume);
    let e = drain(&mut s);
    assert_eq!(spawns(&e), 1);
    assert!(!e.iter().any(|e| matches!(e, Effect::Launch(_))));
}

#[test]
fn a_turn_asked_for_but_never_spawned_is_queued_again_on_restore() {
    let mut t = T::idle();
    t.go(Input::message("two".into()));
    let record = t.s.record().clone();
    assert!(record.turn.as_ref().unwrap().process().is_none());
    let mut s = Session::restore(Config::default(), options(false), record, 5);
    let e = drain(&mut s);
    assert_eq!(e[0], Effect::Persist);
    assert!(e.contains(&Effect::SpawnTurn {
        seq: 3,
        prompt: "two".into(),
        resume: Some("n1".into()),
        cut: None,
        plan_only: false,
        choice: Default::default(),
        attachments: Vec::new(),
    }));
}

#[test]
fn relaunch_is_refused_while_starting_and_never_waits_once_started() {
    let (mut t, _) = T::new(true, Some("hello"));
    assert_eq!(
        t.at(0, Input::Relaunch(RelaunchMode::Resume)).0,
        Outcome::Refused(Refusal::Starting)
    );
    let mut t = T::idle();
    t.go(Input::Stop);
    t.go(Input::message("two".into()));
    let e = t.go(Input::Relaunch(RelaunchMode::Wake));
    assert!(has(&e, &launch_effect(LaunchEffect::AskPermit)));
    assert_eq!(t.s.shown(), Shown::Pending);
    assert_eq!(
        t.at(0, Input::Relaunch(RelaunchMode::Resume)).0,
        Outcome::Refused(Refusal::Starting),
        "a relaunch under way refuses another"
    );
    let e = t.go(Input::Launch(LaunchInput::PermitGranted));
    assert_eq!(spawns(&e), 0, "wake keeps the pause");
    assert!(t.s.record().paused);
    let e = t.go(Input::Relaunch(RelaunchMode::Resume));
    assert!(!t.s.record().paused);
    assert!(has(&e, &launch_effect(LaunchEffect::AskPermit)));
    let e = t.go(Input::Launch(LaunchInput::PermitGranted));
    assert_eq!(spawns(&e), 1, "resume runs what is queued");
}

#[test]
fn relaunch_restart_ends_the_running_turn_first() {
    let mut t = T::running(&[]);
    let e = t.go(Input::Relaunch(RelaunchMode::Restart));
    assert!(has(&e, &term(2)));
    t.go(Input::message("three".into()));
    let e = t.go(Input::Launch(LaunchInput::PermitGranted));
    assert_eq!(
        spawns(&e),
        0,
        "never two turns: the old one is still ending"
    );
    let e = t.end(2, Exit::Signal(15));
    assert_eq!(spawns(&e), 1);
}

#[test]
fn a_first_turn_that_exits_before_reading_its_prompt_fails_the_launch_with_its_exit_and_stderr() {
    let mut t = T::spawned("hello");
    let e = t.go(Input::PromptUndelivered {
        seq: 1,
        error: "its stdin was closed before it read the prompt".into(),
    });
    assert!(has(&e, &term(1)));
    assert_eq!(
        t.s.shown(),
        Shown::Pending,
        "the launch waits for the turn's end"
    );
    t.go(Input::TurnEnded {
        seq: 1,
        exit: Exit::Code(1),
        detail: "error: unknown option '--bad'".into(),
    });
    assert_eq!(t.s.shown(), Shown::Failed);
    assert_eq!(
        t.s.record().error,
        Some(Failure::ExitedBeforePrompt {
            exit: Exit::Code(1),
            detail: "error: unknown option '--bad'".into()
        })
    );
    assert_eq!(t.s.record().queue[0].text, "hello");
    // Killed for it (no exit of its own): the delivery's error says why.
    let mut t = T::spawned("hello");
    t.go(Input::PromptUndelivered {
        seq: 1,
        error: "No space left on device".into(),
    });
    t.end(1, Exit::Signal(15));
    assert_eq!(
        t.s.record().error,
        Some(Failure::LaunchPromptUndelivered {
            prompt: 1,
            error: Some("No space left on device".into())
        })
    );
}

#[test]
fn an_undelivered_prompt_pauses_the_queue_with_it_first() {
    let mut t = T::running(&[]);
    let e = t.go(Input::PromptUndelivered {
        seq: 2,
        error: "No space left on device".into(),
    });
    assert!(has(&e, &term(2)));
    assert!(t.s.record().paused);
    t.end(2, Exit::Signal(15));
    assert_eq!(t.s.record().queue[0].text, "two");
}

#[test]
fn stop_before_the_turn_is_spawned_never_hands_it_the_prompt() {
    let mut t = T::idle();
    t.go(Input::message("two".into()));
    t.go(Input::Stop);
    let e = t.go(Input::TurnSpawned { seq: 2, process: P });
    assert!(!e.iter().any(|e| matches!(e, Effect::DeliverPrompt { .. })));
    assert!(has(&e, &term(2)));
    t.end(2, Exit::Signal(15));
    assert_eq!(
        t.s.record().queue[0].text,
        "two",
        "it never ran: still queued"
    );
}

#[test]
fn service_stop_ends_the_wait_and_starts_nothing_after() {
    let (mut t, _) = T::new(true, Some("hello"));
    t.observe(Observation::missing());
    let e = t.go(Input::ServiceStop);
    assert!(has(&e, &launch_effect(LaunchEffect::Unwatch)));
    assert_eq!(t.s.poll_timeout(), None);
    assert_eq!(
        t.at(0, Input::message("x".into())).0,
        Outcome::Refused(Refusal::ServiceStopping)
    );
    assert_eq!(t.s.record().stage, Stage::Starting);
}

#[test]
fn inputs_for_another_turn_are_ignored() {
    let mut t = T::spawned("hello");
    for input in [
        Input::TurnSpawned { seq: 9, process: P },
        Input::NativeId {
            seq: 9,
            native_id: "x".into(),
        },
        Input::TurnEnded {
            seq: 9,
            exit: Exit::Code(0),
            detail: String::new(),
        },
        Input::SpawnFailed {
            seq: 1,
            reason: "already spawned".into(),
        },
        Input::SurvivorGone { seq: 1 },
        Input::TurnSpawned { seq: 1, process: P },
    ] {
        let (o, e) = t.at(0, input.clone());
        assert_eq!((o, e), (Outcome::Ignored, vec![]), "{input:?}");
    }
}

#[test]
fn retry_differing_only_in_project_copy_or_plan_only_is_the_same_start() {
    let path = std::path::Path::new("/code");
    let was = StartFields {
        workspace: "ws",
        folder: path,
        harness: &"claude",
        kind: &"thread",
        parent: None,
        shared_sandbox: false,
        prompt: Some("hi"),
        model: Some("haiku"),
        effort: None,
        instructions: None,
        mcp_servers: None::<&()>,
        project_copy: true,
        plan_only: false,
        attachments: &[],
    };
    let retry = StartFields {
        project_copy: false,
        plan_only: true,
        ..was
    };
    assert_eq!(retry_difference(&was, &retry), None);
    let other = StartFields {
        harness: &"codex",
        prompt: None,
        ..was
    };
    assert_eq!(retry_difference(&was, &other), Some("harness"));
    let other_model = StartFields {
        model: Some("opus"),
        ..was
    };
    assert_eq!(retry_difference(&was, &other_model), Some("model"));
}

#[test]
fn events_and_records_serialise_in_snake_case() {
    let e = Event::TurnEnded {
        turn: 2,
        prompt: 3,
        exit: Some(Exit::Code(0)),
        by: Some(EndWhy::ServiceStop),
        usage: None,
    };
    assert_eq!(
        serde_json::to_string(&e).unwrap(),
        r#"{"kind":"turn_ended","data":{"turn":2,"prompt":3,"exit":{"code":0},"by":"service_stop","usage":null}}"#
    );
    assert_eq!(
        serde_json::to_string(&Event::Stopped).unwrap(),
        r#"{"kind":"stopped"}"#
    );
    let t = T::spawned("hello");
    let json = serde_json::to_string(t.s.record()).unwrap();
    assert!(json.starts_with(r#"{"stage":"starting""#), "{json}");
    let back: Record = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, t.s.record());
}

#[test]
fn an_undelivered_prompt_of_a_turn_already_ending_only_decides_its_fate() {
    let mut t = T::spawned("hello");
    t.at(120_000, Input::Timeout);
    let error = t.s.record().error.clone();
    let e = t.go(Input::PromptUndelivered {
        seq: 1,
        error: "EPIPE".into(),
    });
    assert_eq!(e, vec![Effect::Persist]);
    assert_eq!(t.s.record().error, error, "the timeout's message stays");
    assert!(!t.s.record().paused);
    t.end(1, Exit::Signal(15));
    assert_eq!(t.s.record().queue[0].text, "hello");
}

#[test]
fn a_turn_its_startup_timeout_ended_cannot_fail_the_relaunch_that_follows() {
    // The first turn was asked for but not spawned yet when its startup
    // timeout failed the launch; the app relaunches; only then does the old
    // spawn fail. The relaunch's own launch must go on, and the prompt run.
    let (mut t, _) = T::new(false, Some("a"));
    t.observe(Observation::missing());
    t.go(Input::Launch(LaunchInput::PermitGranted));
    let old = t.seq();
    t.at(STARTUP_TIMEOUT, Input::Timeout);
    assert_eq!(t.s.shown(), Shown::Failed);
    t.go(Input::Relaunch(RelaunchMode::Resume));
    let e = t.go(Input::SpawnFailed {
        seq: old,
        reason: "E2BIG".into(),
    });
    assert!(
        !e.iter().any(|e| matches!(
            e,
            Effect::Emit(Event::State {
                state: Shown::Failed
            })
        )),
        "{e:?}"
    );
    assert_eq!(
        t.s.record().queue.front().map(|p| p.text.as_str()),
        Some("a")
    );
    let e = t.go(Input::Launch(LaunchInput::PermitGranted));
    assert_eq!(spawns(&e), 1, "{e:?}");
    assert_eq!(t.s.shown(), Shown::Pending);
}

#[test]
fn a_closed_session_with_nothing_running_journals_nothing_at_a_service_stop() {
    let mut t = T::idle();
    t.go(Input::Close);
    let e = t.go(Input::ServiceStop);
    assert_eq!(e, vec![], "its journal is over");
    // It still refuses commands as a stopping service does.
    let (o, _) = t.at(t.now, Input::message("x".into()));
    assert_eq!(o, Outcome::Refused(Refusal::ServiceStopping));
    // A closed session whose turn is still ending says the service stopped.
    let mut t = T::running(&[]);
    t.go(Input::Close);
    let e = t.go(Input::ServiceStop);
    assert!(e.contains(&Effect::Emit(Event::ServiceStopped)), "{e:?}");
}

#[test]
fn a_capped_turn_whose_prompt_never_reached_the_harness_keeps_it_queued() {
    let mut t = T::running(&[]);
    t.go(Input::OutputCapped {
        seq: 2,
        cap: JournalCap::Events(10),
    });
    t.go(Input::PromptUndelivered {
        seq: 2,
        error: "ENOSPC".into(),
    });
    let e = t.end(2, Exit::Code(0));
    assert!(
        e.iter()
            .any(|e| matches!(e, Effect::Emit(Event::PromptRequeued { prompt: 2, .. }))),
        "{e:?}"
    );
    assert_eq!(t.s.record().queue[0].text, "two");
    assert!(t.s.record().paused);
}

#[test]
fn output_over_the_journal_cap_ends_the_turn_pauses_the_queue_and_says_so() {
    let mut t = T::running(&["three"]);
    let cap = JournalCap::Bytes(256 << 20);
    let e = t.go(Input::OutputCapped { seq: 2, cap });
    let full = Failure::JournalFull {
        cap,
        turn: 2,
        launch: false,
    };
    assert_eq!(
        e,
        vec![
            Effect::Persist,
            Effect::CloseInput { seq: 2 },
            term(2),
            Effect::Emit(Event::Error {
                failure: full.clone()
            }),
        ]
    );
    assert!(t.s.record().paused);
    assert_eq!(t.s.record().error, Some(full));
    // Said once per turn: a repeat changes nothing more than the message.
    let (_, e) = t.at(t.now + GRACE, Input::Timeout);
    assert!(has(&e, &kill(2)), "{e:?}");
    let e = t.end(2, Exit::Signal(9));
    assert!(
        has(
            &e,
            &Effect::Emit(Event::TurnEnded {
                turn: 2,
                prompt: 2,
                exit: Some(Exit::Signal(9)),
                by: Some(EndWhy::OutputCapped),
                usage: None,
            })
        ),
        "{e:?}"
    );
    // Not run again, the next one not started: the queue is paused.
    assert_eq!(spawns(&e), 0, "{e:?}");
    assert!(!e
        .iter()
        .any(|e| matches!(e, Effect::Emit(Event::PromptRequeued { .. }))));
    assert_eq!(t.s.record().queue.len(), 1);
    assert_eq!(t.s.shown(), Shown::Idle);
    // A resume runs the next prompt (which meets the full journal in turn).
    let e = t.go(Input::Resume);
    assert_eq!(spawns(&e), 1, "{e:?}");
}

#[test]
fn output_over_the_journal_cap_in_a_launchs_first_turn_fails_the_launch() {
    let mut t = T::spawned("hello");
    let e = t.go(Input::OutputCapped {
        seq: 1,
        cap: JournalCap::Events(1000),
    });
    assert!(has(&e, &term(1)), "{e:?}");
    assert!(
        has(&e, &launch_effect(LaunchEffect::ReleasePermit)),
        "{e:?}"
    );
    assert_eq!(t.s.shown(), Shown::Failed);
    assert_eq!(
        t.s.record().error,
        Some(Failure::JournalFull {
            cap: JournalCap::Events(1000),
            turn: 1,
            launch: true
        })
    );
    let e = t.end(1, Exit::Signal(15));
    // Its prompt is not kept for a relaunch: the journal stays full.
    assert!(t.s.record().queue.is_empty(), "{e:?}");
    assert_eq!(t.s.shown(), Shown::Failed);
}

#[test]
fn output_capped_for_another_or_no_turn_is_ignored() {
    let mut t = T::running(&[]);
    let cap = JournalCap::Bytes(1000);
    let (o, e) = t.at(t.now, Input::OutputCapped { seq: 1, cap });
    assert_eq!((o, e), (Outcome::Ignored, vec![]));
    let mut t = T::idle();
    let (o, e) = t.at(t.now, Input::OutputCapped { seq: 1, cap });
    assert_eq!((o, e), (Outcome::Ignored, vec![]));
}

#[test]
fn journal_caps_read_as_sizes() {
    assert_eq!(JournalCap::Bytes(256 << 20).to_string(), "256 MiB");
    assert_eq!(JournalCap::Bytes(384 << 10).to_string(), "384 KiB");
    assert_eq!(JournalCap::Bytes(1000).to_string(), "1000 bytes");
    assert_eq!(JournalCap::Events(5).to_string(), "5 events");
}

#[test]
fn a_launchs_first_turn_is_noted_before_its_spawn_since_no_write_names_it() {
    let (mut t, _) = T::new(false, Some("hello"));
    t.observe(Observation::missing());
    let e = t.go(Input::Launch(LaunchInput::PermitGranted));
    let note = e.iter().position(|e| *e == Effect::NoteSpawn { seq: 1 });
    let spawn = e
        .iter()
        .position(|e| matches!(e, Effect::SpawnTurn { seq: 1, .. }));
    assert!(note.is_some() && note < spawn, "{e:?}");
    assert!(!has(&e, &Effect::Persist), "{e:?}");
}

#[test]
fn a_turn_whose_write_came_first_gets_no_note() {
    let mut t = T::idle();
    t.go(Input::Stop);
    t.go(Input::message("two".into()));
    let e = t.go(Input::Resume);
    assert_eq!(e[0], Effect::Persist);
    assert_eq!(spawns(&e), 1);
    assert!(!e.iter().any(|e| matches!(e, Effect::NoteSpawn { .. })));
}

/// Carries out the session's effects one at a time as the runtime does,
/// failing every `Persist` with ENOSPC; returns what was carried out.
fn carry_out_on_a_full_disk(t: &mut T) -> Vec<Effect> {
    let mut done = Vec::new();
    while let Some(e) = t.s.poll_effect() {
        let failed = e == Effect::Persist;
        done.push(e);
        if failed {
            let o = t.s.handle(
                t.now,
                Input::PersistFailed {
                    error: "No space left on device".into(),
                },
            );
            assert_eq!(o, Outcome::Applied);
        }
        if done.len() > 50 {
            panic!("no end to the writes: {done:?}");
        }
    }
    done
}

#[test]
fn a_prompt_whose_turn_could_not_be_recorded_is_not_handed_over() {
    let mut t = T::idle();
    t.now = 10;
    t.s.handle(10, Input::message("two".into()));
    let done = carry_out_on_a_full_disk(&mut t);
    // The spawn the record does not name is noted first.
    let note = done.iter().position(|e| *e == Effect::NoteSpawn { seq: 2 });
    let spawn = done
        .iter()
        .position(|e| matches!(e, Effect::SpawnTurn { seq: 2, .. }));
    assert!(note.is_some() && note < spawn, "{done:?}");
    t.s.handle(10, Input::TurnSpawned { seq: 2, process: P });
    let done = carry_out_on_a_full_disk(&mut t);
    assert!(
        !done
            .iter()
            .any(|e| matches!(e, Effect::DeliverPrompt { .. })),
        "{done:?}"
    );
    assert!(has(&done, &term(2)), "{done:?}");
    assert_eq!(
        t.s.record().error,
        Some(Failure::PromptUndelivered {
            prompt: 2,
            error: "its turn could not be recorded (No space left on device)".into()
        })
    );
}

#[test]
fn a_record_that_could_not_be_written_is_written_again_a_second_later() {
    let mut t = T::idle();
    t.now = 10;
    t.go(Input::message("two".into()));
    t.s.handle(10, Input::TurnSpawned { seq: 2, process: P });
    carry_out_on_a_full_disk(&mut t);
    assert_eq!(
        t.s.poll_timeout(),
        Some((10 + PERSIST_RETRY, Timer::PersistRetry))
    );
    assert_eq!(
        t.at(10 + PERSIST_RETRY - 1, Input::Timeout).0,
        Outcome::Ignored
    );
    let (o, e) = t.at(10 + PERSIST_RETRY, Input::Timeout);
    assert_eq!((o, e), (Outcome::Applied, vec![Effect::Persist]));
    let timer = t.s.poll_timeout().map(|(_, timer)| timer);
    assert_ne!(timer, Some(Timer::PersistRetry), "written: no retry is due");
}

#[test]
fn a_write_that_another_input_makes_ends_the_retry() {
    let mut t = T::idle();
    t.go(Input::message("two".into()));
    t.s.handle(0, Input::TurnSpawned { seq: 2, process: P });
    carry_out_on_a_full_disk(&mut t);
    assert!(t.s.state().timers.is_set(Deadline::PersistRetry));
    let e = t.go(Input::Resume);
    assert_eq!(e[0], Effect::Persist);
    assert_eq!(t.s.state().timers.get(Deadline::PersistRetry), None);
}

/// A started session with `approvals: app` whose turn 2 runs (and named
/// its session).
fn asking(mode: ApprovalMode) -> T {
    let mut t = T::running(&[]);
    t.named(2);
    t.s.options.approvals = mode;
    t
}

fn ask(t: &mut T, harness_ref: &str) -> Vec<Effect> {
    t.go(Input::ApprovalRequested {
        seq: 2,
        request: Request {
            harness_ref: harness_ref.into(),
            tool: "Bash".into(),
            input: r#"{"command":"rm -rf build"}"#.into(),
            reason: Some("outside the folder".into()),
        },
    })
}

fn answer(harness_ref: &str, decision: Decision, by: DecidedBy) -> Effect {
    Effect::AnswerApproval {
        seq: 2,
        harness_ref: harness_ref.into(),
        tool: "Bash".into(),
        decision,
        by,
        message: None,
    }
}

#[test]
fn with_approvals_auto_what_the_modes_leave_to_ask_about_is_denied_at_once() {
    let mut t = asking(ApprovalMode::Auto);
    let e = ask(&mut t, "q1");
    assert!(
        has(&e, &answer("q1", Decision::Deny, DecidedBy::Modes)),
        "{e:?}"
    );
    assert!(t.s.record().pending_approvals.is_empty());
}

#[test]
fn with_approvals_auto_a_harness_without_room_cores_modes_is_allowed_at_once() {
    let mut t = asking(ApprovalMode::Auto);
    t.s.options.auto_allows = true;
    let e = ask(&mut t, "q1");
    assert!(
        has(&e, &answer("q1", Decision::Allow, DecidedBy::Modes)),
        "{e:?}"
    );
    assert!(t.s.record().pending_approvals.is_empty());
    // plan_only still changes nothing.
    let mut t = asking(ApprovalMode::Auto);
    t.s.options.auto_allows = true;
    t.s.options.plan_only = true;
    let e = ask(&mut t, "q2");
    assert!(
        has(&e, &answer("q2", Decision::Deny, DecidedBy::Modes)),
        "{e:?}"
    );
}

#[test]
fn with_approvals_app_a_request_waits_for_the_app_and_is_answered_once() {
    let mut t = asking(ApprovalMode::App);
    let e = ask(&mut t, "q1");
    assert_eq!(e[0], Effect::Persist, "pending requests are on record");
    assert!(has(
        &e,
        &Effect::Emit(Event::ApprovalRequested {
            approval: 1,
            turn: 2,
            tool: "Bash".into(),
            input: r#"{"command":"rm -rf build"}"#.into(),
            reason: Some("outside the folder".into()),
        })
    ));
    assert!(!e.iter().any(|e| matches!(e, Effect::AnswerApproval { .. })));
    assert_eq!(t.s.record().pending_approvals.len(), 1);
    let e = t.go(Input::ApprovalDecided {
        id: 1,
        decision: Decision::Allow,
        message: None,
    });
    assert!(
        has(&e, &answer("q1", Decision::Allow, DecidedBy::App)),
        "{e:?}"
    );
    for (id, refusal) in [(1, Refusal::ApprovalAnswered), (2, Refusal::NoApproval)] {
        let input = Input::ApprovalDecided {
            id,
            decision: Decision::Deny,
            message: None,
        };
        assert_eq!(t.at(t.now, input).0, Outcome::Refused(refusal));
    }
}

#[test]
fn an_unanswered_request_is_denied_at_the_approval_timeout() {
    let mut t = asking(ApprovalMode::App);
    t.now = 100;
    ask(&mut t, "q1");
    let until = 100 + APPROVAL_TIMEOUT;
    assert_eq!(t.s.poll_timeout(), Some((until, Timer::Approval)));
    assert_eq!(t.at(until - 1, Input::Timeout).0, Outcome::Ignored);
    let (_, e) = t.at(until, Input::Timeout);
    assert!(
        has(&e, &answer("q1", Decision::Deny, DecidedBy::Timeout)),
        "{e:?}"
    );
    assert!(t.s.record().pending_approvals.is_empty());
}

#[test]
fn stop_denies_what_is_pending_before_it_ends_the_turn() {
    let mut t = asking(ApprovalMode::App);
    ask(&mut t, "q1");
    let e = t.go(Input::Stop);
    let denied = e
        .iter()
        .position(|e| *e == answer("q1", Decision::Deny, DecidedBy::TurnEnding(EndWhy::Stop)));
    let term = e.iter().position(|e| *e == term(2));
    assert!(denied.is_some() && denied < term, "{e:?}");
    // A request that comes while the turn ends is denied at once.
    let e = ask(&mut t, "q2");
    assert!(has(
        &e,
        &answer("q2", Decision::Deny, DecidedBy::TurnEnding(EndWhy::Stop))
    ));
}

#[test]
fn more_than_the_pending_cap_are_denied_at_once() {
    let mut t = asking(ApprovalMode::App);
    for i in 0..MAX_PENDING {
        ask(&mut t, &format!("q{i}"));
    }
    let e = ask(&mut t, "over");
    assert!(has(&e, &answer("over", Decision::Deny, DecidedBy::TooMany)));
    assert_eq!(t.s.record().pending_approvals.len(), MAX_PENDING);
}

#[test]
fn a_turn_that_ends_by_itself_leaves_its_requests_void_and_unanswered() {
    let mut t = asking(ApprovalMode::App);
    ask(&mut t, "q1");
    let e = t.end(2, Exit::Code(0));
    assert!(!e.iter().any(|e| matches!(e, Effect::AnswerApproval { .. })));
    assert!(has(
        &e,
        &Effect::Emit(Event::ApprovalResolved {
            approval: 1,
            turn: 2,
            decision: Decision::Deny,
            by: DecidedBy::TurnGone,
            message: None,
        })
    ));
    assert!(t.s.record().pending_approvals.is_empty());
}

#[test]
fn after_a_kill_9_a_pending_request_is_void() {
    let mut t = asking(ApprovalMode::App);
    ask(&mut t, "q1");
    let record = t.s.record().clone();
    let mut s = Session::restore(Config::default(), t.s.options().clone(), record, 0);
    drain(&mut s);
    s.handle(0, Input::SurvivorGone { seq: 2 });
    let e = drain(&mut s);
    assert!(e.iter().any(|e| matches!(
        e,
        Effect::Emit(Event::ApprovalResolved {
            by: DecidedBy::TurnGone,
            ..
        })
    )));
    assert!(!e.iter().any(|e| matches!(e, Effect::AnswerApproval { .. })));
    assert!(s.record().pending_approvals.is_empty());
}

#[test]
fn a_request_denied_at_once_costs_no_write_and_no_event() {
    let mut t = asking(ApprovalMode::Auto);
    let e = ask(&mut t, "q1");
    assert_eq!(e, vec![answer("q1", Decision::Deny, DecidedBy::Modes)]);
    assert_eq!(t.s.record().next_approval, 1, "no number given");
}
