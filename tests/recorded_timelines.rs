//! The runtime records each session it drives (`record_timelines`) in the
//! format of `fixtures/timelines/`: one run per service process, begun by
//! `Session::new` or by `Session::restore` with the record the service read.
//! A recording of a real session, across a service stop or a kill -9,
//! replays through the session machine step for step. This ties the driver
//! to the machine: an effect the driver missed, or an input fed outside it,
//! would make the replay differ.

use std::time::Duration;

use room_kit::*;
use room_machines::launch::{WaitEnd, WaitOn};
use room_machines::session::{Effect, Event, LaunchEffect, Stage};
use room_machines::timeline::{Begin, SessionRun, Timeline};
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// Starts a service that records timelines; returns it and the folder.
fn recording_service() -> (Service, std::path::PathBuf) {
    let mut svc = Service::start(ROOM_CORE, json!({}));
    let dir = svc.root.join("timelines");
    svc.set_config("record_timelines", json!(dir));
    svc.restart();
    (svc, dir)
}

/// The recording of session `id` once it has `runs` runs and `done` holds.
fn recording(
    dir: &std::path::Path,
    id: &str,
    runs: usize,
    done: impl Fn(&SessionRun) -> bool,
) -> Timeline {
    let path = dir.join(format!("{id}.json"));
    wait_until("the recording", Duration::from_secs(10), || {
        let t: Timeline = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
        match &t {
            Timeline::Session { runs: r, .. } if r.len() == runs && done(&r[runs - 1]) => Some(t),
            _ => None,
        }
    })
}

/// Every effect of a run, in order.
fn effects(run: &SessionRun) -> Vec<Effect> {
    run.effects
        .iter()
        .chain(run.steps.iter().flat_map(|s| s.effects.iter()))
        .cloned()
        .collect()
}

fn position(all: &[Effect], want: impl Fn(&Effect) -> bool) -> usize {
    all.iter()
        .position(want)
        .unwrap_or_else(|| panic!("not in {all:?}"))
}

fn ended_turn(run: &SessionRun) -> bool {
    effects(run)
        .iter()
        .any(|e| matches!(e, Effect::Emit(Event::TurnEnded { .. })))
}

#[test]
fn a_recorded_session_across_a_service_stop_replays_through_the_machine() {
    let (mut svc, dir) = recording_service();
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
    svc.await_session(&id, "the first turn to end", |v| v["state"] == "idle");

    let timeline = recording(&dir, &id, 2, ended_turn);
    timeline
        .replay()
        .unwrap_or_else(|e| panic!("{e}\n{}", svc.log()));
    let Timeline::Session { runs, .. } = &timeline else {
        unreachable!()
    };
    assert!(
        matches!(runs[0].begin, Begin::New { .. }),
        "{:?}",
        runs[0].begin
    );
    let first = effects(&runs[0]);
    assert!(
        first.contains(&Effect::Emit(Event::ServiceStopped)),
        "{first:?}"
    );
    assert!(!first.iter().any(|e| matches!(e, Effect::SpawnTurn { .. })));
    // The second run restores the waiting start, which waits again: on a
    // missing mark, then on copying, until ready; then the turn runs.
    let Begin::Restore { record, .. } = &runs[1].begin else {
        panic!("{:?}", runs[1].begin)
    };
    assert_eq!(record.stage, Stage::Starting);
    assert_eq!(
        runs[1].effects,
        [
            Effect::Launch(LaunchEffect::Watch),
            Effect::Launch(LaunchEffect::Observe)
        ]
    );
    let second = effects(&runs[1]);
    let wait_for = position(&second, |e| {
        matches!(
            e,
            Effect::Launch(LaunchEffect::WaitFor {
                on: WaitOn::MissingMark,
                ..
            })
        )
    });
    let landed = position(&second, |e| {
        matches!(
            e,
            Effect::Launch(LaunchEffect::WaitEnded {
                why: WaitEnd::Landed,
                ..
            })
        )
    });
    let ask = position(&second, |e| *e == Effect::Launch(LaunchEffect::AskPermit));
    let spawn = position(&second, |e| matches!(e, Effect::SpawnTurn { seq: 1, .. }));
    let deliver = position(&second, |e| *e == Effect::DeliverPrompt { seq: 1 });
    let release = position(&second, |e| {
        *e == Effect::Launch(LaunchEffect::ReleasePermit)
    });
    assert!(
        wait_for < landed && landed < ask && ask < spawn && spawn < deliver && deliver < release,
        "{second:?}"
    );
}

#[test]
fn a_recorded_session_across_a_kill_9_mid_turn_replays_through_the_machine() {
    let (mut svc, dir) = recording_service();
    let folder = svc.folder("code");
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({"prompt": "sleep: 600"}),
    ));
    let id = s["id"].as_str().unwrap().to_string();
    svc.await_record(&folder, 1, Duration::from_secs(10));
    svc.await_session(&id, "the turn to run", |v| v["state"] == "running");
    svc.kill9();
    svc.start_again();
    let v = svc.await_session(&id, "the survivor to be killed", |v| v["state"] == "idle");
    assert!(
        v["error"].as_str().unwrap_or_default().contains("cut by"),
        "{v}"
    );
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "after"}),
    );
    assert_eq!(status, 200, "{v}");
    svc.await_record(&folder, 2, Duration::from_secs(10));
    svc.await_session(&id, "the second turn to end", |v| {
        v["state"] == "idle" && v["queue"]["length"] == 0
    });

    let timeline = recording(&dir, &id, 2, |r| {
        effects(r)
            .iter()
            .filter(|e| matches!(e, Effect::Emit(Event::TurnEnded { .. })))
            .count()
            == 2
    });
    timeline
        .replay()
        .unwrap_or_else(|e| panic!("{e}\n{}", svc.log()));
    let Timeline::Session { runs, .. } = &timeline else {
        unreachable!()
    };
    // The restored turn is killed before anything else runs.
    let Begin::Restore { record, .. } = &runs[1].begin else {
        panic!("{:?}", runs[1].begin)
    };
    assert!(record.turn.as_ref().is_some_and(|t| t.process().is_some()));
    assert!(
        matches!(
            runs[1].effects.as_slice(),
            [Effect::KillSurvivor { seq: 1, .. }]
        ),
        "{:?}",
        runs[1].effects
    );
    assert!(effects(&runs[1]).contains(&Effect::DeliverPrompt { seq: 2 }));
}
