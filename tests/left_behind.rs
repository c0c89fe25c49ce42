//! What a harness that exits by itself leaves in its tree (a background
//! job, a daemon) is ended by the session's own kill grace: what obeys
//! SIGTERM is gone at once and the turn ends then; what ignores it gets
//! SIGKILL once `kill_grace_ms` is over, and the turn ends only then.
//! Either way the signals are the session's (its `Signal` effects, in the
//! log), nothing of the tree is left in /proc, and the turn ended by itself
//! (exit 0, no `by`). Each case runs under the supervision this
//! machine chooses (a cgroup where it can make one) and under process
//! groups.

use std::time::Duration;

use room_kit::events::{journal, turn_ended};
use room_kit::procs::{alive, pid_in, turn_processes};
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// The kill grace in these tests.
const GRACE: Duration = Duration::from_millis(2000);

const MODES: [&str; 2] = ["auto", "process_group"];

/// What became of a turn whose harness left a job behind.
struct Left {
    /// The session.
    id: String,
    /// The job's pid.
    job: u32,
    /// From the harness's exit to its turn's `turn_ended` in the journal.
    took: Duration,
    /// That event's data.
    ended: Value,
}

/// Runs a claude turn whose tool starts `job` (a shell command) in the
/// background and returns; the harness then exits (nothing lingers), the
/// job still running.
fn leave_behind(mode: &str, job: &str) -> (Service, Left) {
    let config = json!({
        "kill_grace_ms": GRACE.as_millis() as u64,
        "supervision": mode,
        "linger_ms": 0,
    });
    let svc = Service::start(ROOM_CORE, config);
    let folder = svc.folder("left");
    std::fs::create_dir_all(&folder).unwrap();
    let prompt = format!("run: ({job}) >/dev/null 2>&1 & echo $! > job.pid");
    let s = svc.start_session(start_body(&folder, "claude", json!({"prompt": prompt})));
    let id = s["id"].as_str().unwrap().to_string();
    let harness = svc.await_record(&folder, 1, Duration::from_secs(10))["pid"]
        .as_u64()
        .unwrap() as u32;
    let job = pid_in(&folder.join("job.pid"));
    let exited_ms = poll_until(Duration::from_secs(10), || {
        let now = unix_ms();
        (!alive(harness)).then_some(now)
    })
    .expect("the harness exits once its turn is done");
    let ended = wait_until("the turn's end", GRACE + Duration::from_secs(10), || {
        journal(&svc.state, &id).into_iter().find(turn_ended)
    });
    let at_ms = ended["at_ms"].as_u64().unwrap();
    let took = Duration::from_millis(at_ms.saturating_sub(exited_ms));
    eprintln!("{mode}: the turn ended {took:?} after its harness exited");
    let ended = ended["data"].clone();
    (
        svc,
        Left {
            id,
            job,
            took,
            ended,
        },
    )
}

/// Whether the service's log says turn 1 of `left`'s session got `signal`
/// (the session's `Signal` effect, carried out).
fn signalled(svc: &Service, left: &Left, signal: &str) -> bool {
    svc.log()
        .contains(&format!("{}: {signal} to turn 1", left.id))
}

/// Nothing of the session's turns runs, the job included; the turn ended
/// by itself and the session is idle without an error.
fn nothing_left(svc: &Service, left: &Left) {
    let marked = turn_processes(&left.id);
    assert!(
        !alive(left.job) && marked.is_empty(),
        "still running: job {} ({}), marked {marked:?}\n{}",
        left.job,
        alive(left.job),
        svc.log()
    );
    assert_eq!(
        (&left.ended["exit"], &left.ended["by"]),
        (&json!({"code": 0}), &Value::Null),
        "{}",
        left.ended
    );
    let v = svc.await_session(&left.id, "idle", |v| v["state"] == "idle");
    assert_eq!(v["error"], Value::Null, "{v}");
}

#[test]
fn a_job_left_behind_that_ignores_sigterm_holds_the_turns_end_for_the_kill_grace() {
    for mode in MODES {
        let (svc, left) = leave_behind(mode, "trap '' TERM; exec sleep 600");
        nothing_left(&svc, &left);
        assert!(signalled(&svc, &left, "SIGTERM"), "{}", svc.log());
        assert!(signalled(&svc, &left, "SIGKILL"), "{}", svc.log());
        assert!(
            left.took >= GRACE - Duration::from_millis(50),
            "{mode}: ended {:?} after the exit, before the grace was over",
            left.took
        );
        assert!(
            left.took < GRACE + Duration::from_secs(2),
            "{mode}: {:?}",
            left.took
        );
    }
}

#[test]
fn a_job_left_behind_that_obeys_sigterm_ends_with_the_turn_at_once() {
    for mode in MODES {
        let (svc, left) = leave_behind(mode, "exec sleep 600");
        nothing_left(&svc, &left);
        assert!(signalled(&svc, &left, "SIGTERM"), "{}", svc.log());
        assert!(!signalled(&svc, &left, "SIGKILL"), "{}", svc.log());
        assert!(
            left.took < GRACE / 2,
            "{mode}: ended {:?} after the exit",
            left.took
        );
    }
}
