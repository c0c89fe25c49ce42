//! Measurements, not checks: the cost of one caller classification (ancestry
//! depth 10) and of one room-cli round trip. Run with
//! `cargo test --release --test measure -- --ignored --nocapture`.

mod agent_support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_support::{room_cli, FakeWebsite, Service, ID};
use room_core::procfs::Procfs;
use room_machines::{classify, Caller, EnvView, ProcView};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn per_call(batch: u32, f: &mut impl FnMut()) -> Duration {
    let t = Instant::now();
    for _ in 0..batch {
        f();
    }
    t.elapsed() / batch
}

#[test]
#[ignore = "prints measurements; run with --ignored --nocapture"]
fn measure_classification_and_round_trip() {
    // 1. classify() alone on a depth-10 ancestry, the marker on the farthest
    // process (the whole ancestry is scanned twice: harness, then marker).
    let mut ancestry: Vec<ProcView> = (0..10)
        .map(|i| ProcView {
            pid: 1000 - i,
            harness: None,
            env: EnvView::Readable { loop_marker: None },
        })
        .collect();
    ancestry[9].env = EnvView::Readable {
        loop_marker: Some(ID.into()),
    };
    assert_eq!(classify(&ancestry), Caller::Loop(ID.into()));
    let samples: Vec<Duration> = (0..301)
        .map(|_| {
            per_call(1000, &mut || {
                std::hint::black_box(classify(std::hint::black_box(&ancestry)));
            })
        })
        .collect();
    println!(
        "classify(), depth 10: median {:?} per call (301 samples of 1000 calls)",
        median(samples)
    );

    // 2. The real /proc walk plus classify() for a process at depth 10: a
    // chain of shells under this test, a `sleep` at the bottom.
    let procfs = Procfs::default();
    let own = procfs.ancestry(std::process::id(), |_| None).len();
    let shells = 10usize.saturating_sub(own + 1);
    let mut script = String::from("exec sleep 60");
    for _ in 0..shells {
        script = format!("sh -c {}; :", agent_support::quote(&script));
    }
    let mut chain = Command::new("sh")
        .arg("-c")
        .arg(format!("{script}; :"))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Find the sleep: the deepest descendant.
    let leaf = {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let found = std::fs::read_dir("/proc")
                .unwrap()
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .find(|&pid| {
                    std::fs::read(format!("/proc/{pid}/cmdline"))
                        .is_ok_and(|c| c.starts_with(b"sleep\0"))
                        && procfs
                            .ancestry(pid, |_| None)
                            .iter()
                            .any(|p| p.pid == chain.id())
                });
            if let Some(pid) = found {
                break pid;
            }
            assert!(Instant::now() < deadline, "no leaf");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let depth = procfs.ancestry(leaf, |_| None).len();
    let samples: Vec<Duration> = (0..301)
        .map(|_| {
            per_call(20, &mut || {
                let a = procfs.ancestry(leaf, |_| None);
                std::hint::black_box(classify(&a));
            })
        })
        .collect();
    println!(
        "/proc ancestry walk + classify(), real depth {depth}: median {:?} per call (301 samples of 20 calls)",
        median(samples)
    );
    let _ = chain.kill();
    let _ = chain.wait();

    // 3. One room-cli round trip (process start to exit) against the real
    // service: forwarded to the fake website, and refused.
    let web = FakeWebsite::start();
    let core = Service::start(&web);
    let round_trip = |marker: &str, args: &[&str]| {
        let samples: Vec<Duration> = (0..101)
            .map(|_| {
                let t = Instant::now();
                let out = Command::new(room_cli())
                    .args(args)
                    .env_clear()
                    .env("ROOM_CORE_SOCKET", &core.socket)
                    .env("CLOUDROOM_LOOP", marker)
                    .output()
                    .unwrap();
                let took = t.elapsed();
                assert!(out.status.code().is_some());
                took
            })
            .collect();
        median(samples)
    };
    let forwarded = round_trip(ID, &["loop", "list"]);
    let refused = round_trip(ID, &["thread", "list"]);
    let help = round_trip(ID, &["loop", "--help"]);
    println!("room-cli loop list, forwarded to the fake website: median {forwarded:?} (101 runs)");
    println!("room-cli thread list, refused by Core: median {refused:?} (101 runs)");
    println!(
        "room-cli loop --help, no Core (process start/exit alone): median {help:?} (101 runs)"
    );
    assert_eq!(web.calls().len(), 101);
}
