//! Seed 000's Rust unit test: the launch's copy wait, stepped by hand the way
//! the runtime's driver steps it (handle, drain effects, poll_timeout).

use room_machines::launch::{Effect, Phase, Reason, WaitEnd, WaitOn};
use room_machines::{CopyMark, Input, Launch, LaunchConfig, Observation, Plan, Timer};

const CONFIG: LaunchConfig = LaunchConfig {
    copy_wait: 300_000,
    mark_max_age: 300_000,
    poll: 250,
};

fn drain(l: &mut Launch) -> Vec<Effect> {
    std::iter::from_fn(|| l.poll_effect()).collect()
}

/// A launch begun at 0 that has read `first`.
fn launch(promised: bool, first: Observation) -> (Launch, Vec<Effect>) {
    let mut l = Launch::new(
        CONFIG,
        Plan {
            promised,
            relaunch: false,
        },
        0,
    );
    assert_eq!(drain(&mut l), [Effect::Observe]);
    l.handle(0, Input::Observed(first));
    let effects = drain(&mut l);
    (l, effects)
}

fn copying(age: u64) -> Observation {
    Observation::marked(CopyMark::Copying, age)
}

/// Follows the poll timer with the same observation until the launch asks
/// for a permit; returns when that happened and the effects of that step.
fn run_to_end(l: &mut Launch, o: &Observation) -> (u64, Vec<Effect>) {
    loop {
        let (at, _) = l.poll_timeout().expect("a waiting launch has a deadline");
        l.handle(at, Input::Timeout);
        let mut effects = drain(l);
        if effects == [Effect::Observe] {
            l.handle(at, Input::Observed(o.clone()));
            effects = drain(l);
        }
        if effects.contains(&Effect::AskPermit) {
            return (at, effects);
        }
        assert!(effects.is_empty(), "{effects:?}");
    }
}

#[test]
fn a_launch_waits_for_a_copy_only_while_it_runs_and_never_past_its_limit() {
    // No copy: an unpromised start with no mark, or a ready one, asks for a
    // permit at once.
    for o in [
        Observation::missing(),
        Observation::marked(CopyMark::Ready, 5),
    ] {
        let (l, effects) = launch(false, o);
        assert_eq!(effects, [Effect::AskPermit]);
        assert_eq!(l.state().phase, Phase::AwaitingPermit);
        assert_eq!(l.poll_timeout(), None);
    }

    // A stuck (copying) or unmarked promised copy waits exactly until the limit.
    for (o, on) in [
        (copying(0), WaitOn::Copying),
        (Observation::missing(), WaitOn::MissingMark),
    ] {
        let (mut l, effects) = launch(true, o.clone());
        assert_eq!(effects, [Effect::WaitFor { on, until: 300_000 }]);
        assert_eq!(l.poll_timeout(), Some((250, Timer::Poll)));
        let (at, effects) = run_to_end(&mut l, &o);
        assert_eq!(at, 300_000);
        assert_eq!(
            effects,
            [
                Effect::WaitEnded {
                    why: WaitEnd::Limit,
                    waited: 300_000
                },
                Effect::AskPermit
            ]
        );
    }

    // Ready or failed ends the wait at once.
    for (mark, why) in [
        (CopyMark::Ready, WaitEnd::Landed),
        (
            CopyMark::Failed("disk full".into()),
            WaitEnd::CopyFailed("disk full".into()),
        ),
    ] {
        let (mut l, _) = launch(true, copying(0));
        l.handle(1_000, Input::Changed);
        assert_eq!(drain(&mut l), [Effect::Observe]);
        l.handle(1_000, Input::Observed(Observation::marked(mark, 0)));
        assert_eq!(
            drain(&mut l),
            [Effect::WaitEnded { why, waited: 1_000 }, Effect::AskPermit]
        );
    }

    // Cancelling ends the wait: stop only pauses the queue; close and service
    // stop end it, and a late permit is handed back.
    let (mut l, _) = launch(true, copying(0));
    l.handle(10, Input::Stop);
    assert_eq!(drain(&mut l), [Effect::PauseQueue]);
    assert_eq!(l.state().phase, Phase::Waiting(WaitOn::Copying));
    l.handle(20, Input::Close);
    assert_eq!(drain(&mut l), [Effect::Closed]);
    assert_eq!(l.poll_timeout(), None);
    l.handle(30, Input::Observed(Observation::marked(CopyMark::Ready, 0)));
    assert_eq!(drain(&mut l), []);

    let (mut l, _) = launch(false, copying(0));
    l.handle(10, Input::ServiceStop);
    assert_eq!(drain(&mut l), [Effect::Ended(Reason::ServiceStop)]);
    assert_eq!(l.poll_timeout(), None);

    // A mark older than the age limit holds a promised start, not an
    // unpromised one.
    let old = copying(360_000);
    let (_, effects) = launch(false, old.clone());
    assert_eq!(effects, [Effect::AskPermit]);
    let (l, effects) = launch(true, old);
    assert_eq!(
        effects,
        [Effect::WaitFor {
            on: WaitOn::Copying,
            until: 300_000
        }]
    );
    assert_eq!(l.state().phase, Phase::Waiting(WaitOn::Copying));

    // A fresh copying mark holds an unpromised start too, and a relaunch
    // never waits.
    let (_, effects) = launch(false, copying(1_000));
    assert!(matches!(effects[..], [Effect::WaitFor { .. }]));
    let mut r = Launch::new(
        CONFIG,
        Plan {
            promised: true,
            relaunch: true,
        },
        0,
    );
    assert_eq!(drain(&mut r), [Effect::AskPermit]);
}
