//! The runtime records each launch it drives (`record_timelines`) in the
//! format of `fixtures/timelines/`; a recording of a real run, across a
//! service restart, replays through the launch machine step for step. This
//! ties the driver to the machine: an effect the driver missed, or an input
//! fed outside it, would make the replay differ.

mod common;

use std::time::Duration;

use common::*;
use room_machines::launch::{Effect, Reason, WaitEnd, WaitOn};
use room_machines::timeline::Timeline;
use serde_json::json;

#[test]
fn a_recorded_launch_across_a_restart_replays_through_the_machine() {
    let mut svc = Service::start(json!({}));
    let dir = svc.root.join("timelines");
    // The config is the test default plus the recording folder.
    svc.set_config("record_timelines", json!(dir));
    svc.restart();

    let folder = svc.folder("code");
    let s = svc.start_session(start_body(&folder, "codex", json!({"project_copy": true})));
    let id = s["id"].as_str().unwrap().to_string();
    svc.await_session(&id, "the wait on a missing mark", |v| {
        v["waiting_for"]["mark"] == "missing"
    });
    // A service stop mid-wait ends the first run; the restart begins a second.
    svc.restart();
    mark(&folder, "copying\n");
    svc.await_session(&id, "the copying mark", |v| {
        v["waiting_for"]["mark"] == "copying"
    });
    land_project(&folder);
    mark(&folder, "ready\n");
    svc.await_record(&folder, 1, Duration::from_secs(10));

    let path = dir.join(format!("{id}.json"));
    let timeline: Timeline = wait_until("the recording", Duration::from_secs(10), || {
        let t: Timeline = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
        match &t {
            Timeline::Launch { runs, .. } if runs.len() == 2 => Some(t),
            _ => None,
        }
    });
    timeline
        .replay()
        .unwrap_or_else(|e| panic!("{e}\n{}", svc.log()));

    let Timeline::Launch { runs, .. } = &timeline else {
        unreachable!()
    };
    let effects = |r: usize| -> Vec<Effect> {
        runs[r]
            .effects
            .iter()
            .chain(runs[r].steps.iter().flat_map(|s| s.effects.iter()))
            .cloned()
            .collect()
    };
    let first = effects(0);
    assert!(
        first.contains(&Effect::Ended(Reason::ServiceStop)),
        "{first:?}"
    );
    assert!(!first.contains(&Effect::AskPermit), "{first:?}");
    // The second run waits again, on a missing mark, then on copying, until ready.
    let second = effects(1);
    let position = |want: &dyn Fn(&Effect) -> bool| {
        second
            .iter()
            .position(want)
            .unwrap_or_else(|| panic!("{second:?}"))
    };
    let wait_for = position(&|e| {
        matches!(
            e,
            Effect::WaitFor {
                on: WaitOn::MissingMark,
                ..
            }
        )
    });
    let landed = position(&|e| {
        matches!(
            e,
            Effect::WaitEnded {
                why: WaitEnd::Landed,
                ..
            }
        )
    });
    let ask = position(&|e| *e == Effect::AskPermit);
    let start = position(&|e| *e == Effect::StartHarness);
    let release = position(&|e| *e == Effect::ReleasePermit);
    assert!(wait_for < landed && landed < ask && ask < start && start < release);
    // A new run begins with a new watch and read (its clock is the new
    // process's own).
    assert_eq!(runs[1].effects, [Effect::Watch, Effect::Observe]);
}
