//! When stop, close, interrupt, relaunch `restart` or the service's own
//! stop has answered, nothing of the turn runs: not a tool that ignores
//! SIGTERM, not a `setsid` daemon it started (checked in /proc, by pid and
//! by the turn's marker). The answer comes only after SIGKILL, a kill
//! grace after SIGTERM, and the wait for it holds no worker of the API's
//! blocking pool. Each case runs under the supervision this machine
//! chooses (a cgroup where it can make one) and under process groups.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use room_kit::events::journal;
use room_kit::procs::{alive, pid_in, turn_processes};
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// The kill grace in these tests.
const GRACE: Duration = Duration::from_millis(1000);

/// A turn whose tool ignores SIGTERM and starts a `setsid` daemon that
/// ignores it too; both write their pids into the session's folder.
const STUBBORN: &str = "run: echo $$ > tool.pid; setsid sh -c 'echo $$ > daemon.pid; trap \"\" TERM; exec sleep 600' & trap '' TERM; sleep 600";

const MODES: [&str; 2] = ["auto", "process_group"];

fn service(mode: &str, extra: Value) -> Service {
    let mut config = json!({"kill_grace_ms": GRACE.as_millis() as u64, "supervision": mode});
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    Service::start(ROOM_CORE, config)
}

/// Starts a session running [`STUBBORN`]: its ID, folder, and the pids of
/// the harness, the tool and the daemon, all running.
fn stubborn_turn(svc: &Service, name: &str) -> (String, PathBuf, Vec<u32>) {
    let folder = svc.folder(name);
    std::fs::create_dir_all(&folder).unwrap();
    let s = svc.start_session(start_body(&folder, "claude", json!({"prompt": STUBBORN})));
    let id = s["id"].as_str().unwrap().to_string();
    let harness = svc.await_record(&folder, 1, Duration::from_secs(10))["pid"]
        .as_u64()
        .unwrap() as u32;
    let tool = pid_in(&folder.join("tool.pid"));
    let daemon = pid_in(&folder.join("daemon.pid"));
    svc.await_session(&id, "the turn to run", |v| v["state"] == "running");
    let pids = vec![harness, tool, daemon];
    assert!(pids.iter().all(|p| alive(*p)), "{pids:?}");
    // A process between its pid file and its `exec` may show no
    // environment for a moment: its mark is awaited, not read once.
    wait_until(
        &format!("{pids:?} all marked as the turn's"),
        Duration::from_secs(5),
        || {
            let marked = turn_processes(&id);
            pids.iter().all(|p| marked.contains(p)).then_some(())
        },
    );
    (id, folder, pids)
}

/// Nothing of session `id`'s turns runs; `pids` are all gone.
fn nothing_left(id: &str, pids: &[u32], svc: &Service) {
    let left: Vec<u32> = pids.iter().copied().filter(|p| alive(*p)).collect();
    let marked = turn_processes(id);
    assert!(
        left.is_empty() && marked.is_empty(),
        "still running: {left:?}, marked {marked:?}\n{}",
        svc.log()
    );
}

/// Posts `command` and checks that it answered only once the whole turn
/// was gone, SIGKILL after the grace having been needed.
fn answers_once_the_turn_is_gone(
    mode: &str,
    command: &str,
    body: Value,
) -> (Service, String, Value) {
    let svc = service(mode, json!({}));
    let (id, _, pids) = stubborn_turn(&svc, "code");
    let t0 = Instant::now();
    let (status, v) = svc.post(&format!("/v1/sessions/{id}/{command}"), body);
    let took = t0.elapsed();
    nothing_left(&id, &pids, &svc);
    assert_eq!(status, 200, "{v}");
    assert!(
        took >= GRACE - Duration::from_millis(100),
        "{command} answered after {took:?}, before the grace was over: SIGTERM alone ends nothing here"
    );
    assert!(
        took < GRACE + Duration::from_secs(3),
        "{command} took {took:?}"
    );
    eprintln!("{mode}: {command} answered after {took:?}");
    (svc, id, v)
}

#[test]
fn stop_answers_once_a_term_ignoring_tool_and_its_setsid_daemon_are_gone() {
    for mode in MODES {
        let (_svc, _, v) = answers_once_the_turn_is_gone(mode, "stop", json!({}));
        assert_eq!(v["state"], "idle", "{v}");
        assert_eq!(v["queue"]["paused"], true, "{v}");
    }
}

#[test]
fn close_answers_once_a_term_ignoring_tool_and_its_setsid_daemon_are_gone() {
    for mode in MODES {
        let (svc, id, v) = answers_once_the_turn_is_gone(mode, "close", json!({}));
        assert_eq!(v["state"], "closed", "{v}");
        // The turn's end is journalled before its session's last word.
        let kinds: Vec<Value> = journal(&svc.state, &id)
            .iter()
            .map(|e| e["kind"].clone())
            .collect();
        assert!(kinds.contains(&json!("turn_ended")), "{kinds:?}");
    }
}

#[test]
fn relaunch_restart_answers_once_the_old_turn_is_gone() {
    for mode in MODES {
        let (_svc, _, v) =
            answers_once_the_turn_is_gone(mode, "relaunch", json!({"mode": "restart"}));
        assert_ne!(v["state"], "running", "{v}");
    }
}

#[test]
fn interrupt_answers_once_the_turn_is_gone_and_the_queue_goes_on() {
    for mode in MODES {
        let svc = service(mode, json!({}));
        let (id, folder, pids) = stubborn_turn(&svc, "code");
        let (status, v) = svc.post(
            &format!("/v1/sessions/{id}/messages"),
            json!({"prompt": "after"}),
        );
        assert_eq!(status, 200, "{v}");
        let t0 = Instant::now();
        let (status, v) = svc.post(&format!("/v1/sessions/{id}/interrupt"), json!({}));
        let took = t0.elapsed();
        assert!(pids.iter().all(|p| !alive(*p)), "{pids:?}");
        assert_eq!(status, 200, "{v}");
        assert!(took >= GRACE - Duration::from_millis(100), "{took:?}");
        assert_eq!(v["queue"]["paused"], false, "{v}");
        let next = svc.await_record(&folder, 2, Duration::from_secs(10));
        assert_eq!(next["prompt"], "after");
    }
}

#[test]
fn a_service_stop_ends_every_turn_whole_and_records_each_cut_turn() {
    for mode in MODES {
        let mut svc = service(mode, json!({}));
        let (a, folder, mut pids) = stubborn_turn(&svc, "a");
        let (b, _, more) = stubborn_turn(&svc, "b");
        pids.extend(more);
        let t0 = Instant::now();
        svc.stop();
        let took = t0.elapsed();
        nothing_left(&a, &pids, &svc);
        nothing_left(&b, &pids, &svc);
        // The front ends get 0.75 s; then one grace for both turns.
        assert!(
            took < GRACE + Duration::from_millis(2500),
            "the stop took {took:?}"
        );
        eprintln!("{mode}: stopped in {took:?}");
        svc.start_again();
        for id in [&a, &b] {
            let v = svc.session(id);
            assert_eq!(v["state"], "idle", "{v}");
            assert_eq!(
                v["error"],
                "turn 1 was cut by a service stop; claude had begun prompt 1, which is not run again",
                "{v}"
            );
        }
        // Not run again.
        assert_eq!(svc.records_in(&folder).len(), 1);
    }
}

#[test]
fn waiting_answers_hold_no_worker_of_the_api() {
    // Two workers and four stops of turns that ignore SIGTERM: were the
    // waits on the workers, every other request would stall for the grace.
    let grace = Duration::from_millis(2500);
    let svc = Service::start(
        ROOM_CORE,
        json!({"kill_grace_ms": grace.as_millis() as u64, "http_workers": 2}),
    );
    let sessions: Vec<(String, PathBuf, Vec<u32>)> = (0..4)
        .map(|n| stubborn_turn(&svc, &format!("s{n}")))
        .collect();
    let t0 = Instant::now();
    let stops: Vec<_> = sessions
        .iter()
        .map(|(id, _, _)| {
            let (base, id) = (svc.base.clone(), id.clone());
            std::thread::spawn(move || {
                let r = ureq::post(&format!("{base}/v1/sessions/{id}/stop"))
                    .set("Authorization", &format!("Bearer {TOKEN}"))
                    .timeout(Duration::from_secs(20))
                    .send_string("");
                (r.map(|r| r.status()).unwrap_or(0), t0.elapsed())
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // Meanwhile the API answers at once.
    let mut slowest = Duration::ZERO;
    while t0.elapsed() < grace - Duration::from_millis(500) {
        let t = Instant::now();
        let (status, _) = svc.get(&format!("/v1/sessions/{}", sessions[0].0));
        assert_eq!(status, 200);
        slowest = slowest.max(t.elapsed());
    }
    let other = svc.folder("other");
    let (status, v) = svc.post("/v1/sessions", start_body(&other, "codex", json!({})));
    assert_eq!(status, 201, "{v}");
    assert!(
        slowest < Duration::from_millis(500),
        "a GET took {slowest:?} while the stops waited"
    );
    for stop in stops {
        let (status, took) = stop.join().unwrap();
        assert_eq!(status, 200);
        assert!(took >= grace - Duration::from_millis(100), "{took:?}");
    }
    for (id, _, pids) in &sessions {
        nothing_left(id, pids, &svc);
    }
}
