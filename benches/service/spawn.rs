//! Section 6, `spawn`: one turn's process started four ways (std's
//! posix_spawn, fork + exec, `supervise::spawn` leading a process group or
//! a session, and into a cgroup), the call and the time to the harness's
//! `main`, as the bench is and with 256 MiB more resident.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::stats::{ms, realtime_us, stats, Table};
use crate::STAMP_ENV;

/// Spawns timed per way and resident size.
const SPAWN_RUNS: usize = 200;
/// The pause before each spawn: turns start seconds apart, and the
/// kernel's cgroup work for the last turn (its exit, its cgroup's removal)
/// is done by then; back to back, each spawn would wait for the last one's.
const SPAWN_GAP: Duration = Duration::from_millis(10);

/// How one turn's process is started.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    /// std's `Command::spawn` with no `pre_exec`: glibc's posix_spawn.
    PosixSpawn,
    /// std's `Command::spawn` with a no-op `pre_exec`: fork + exec.
    Fork,
    /// `supervise::spawn`: clone(CLONE_VM | CLONE_VFORK), a process group.
    Supervise,
    /// The same leading a session (`setsid`): a scheduler autogroup here.
    SuperviseSession,
    /// `supervise::spawn` into a fresh cgroup (made before the timing).
    SuperviseCgroup,
}

impl Way {
    /// The way as the table names it.
    fn label(self) -> &'static str {
        match self {
            Way::PosixSpawn => "std Command::spawn (posix_spawn)",
            Way::Fork => "std Command::spawn + pre_exec (fork+exec)",
            Way::Supervise => "supervise::spawn (process group)",
            Way::SuperviseSession => "supervise::spawn (session: setsid)",
            Way::SuperviseCgroup => "supervise::spawn (process group, into a cgroup)",
        }
    }
}

/// The cost of starting one turn's process: the time the spawning thread
/// is held (the call) and the time until the harness's `main` runs (its
/// stamp), the stamp harness being this binary, with three pipes.
pub(crate) fn spawn_cost(table: &mut Table) {
    use room_core::supervise::{self, cgroup::CgroupRoot, SpawnSpec};
    use std::os::unix::process::CommandExt;

    println!("\n6. spawn cost: one turn's process, from the call to the harness's main");
    let root = std::env::temp_dir().join(format!("room-core-bench-clone-{}", std::process::id()));
    let (stamps, cwd) = (root.join("stamps"), root.join("spawn"));
    std::fs::create_dir_all(&stamps).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let me = std::env::current_exe().unwrap();
    let mut spec = SpawnSpec::new(&me, &cwd);
    spec.env = std::env::vars_os().collect();
    spec.set_env(STAMP_ENV, &stamps);
    let cgroups = CgroupRoot::find();
    if let Err(why) = &cgroups {
        println!("  (no cgroup row: {why})");
    }
    let mut ways = vec![
        Way::PosixSpawn,
        Way::Fork,
        Way::Supervise,
        Way::SuperviseSession,
    ];
    if cgroups.is_ok() {
        ways.push(Way::SuperviseCgroup);
    }
    let once = |way: Way, n: usize, spec: &mut SpawnSpec| -> (f64, f64) {
        let _ = std::fs::remove_file(stamps.join("spawn"));
        spec.cgroup = match (&cgroups, way) {
            (Ok(root), Way::SuperviseCgroup) => {
                let key = format!("bench-{}-{n}", std::process::id());
                Some(root.create(&key).expect("make a cgroup"))
            }
            _ => None,
        };
        spec.leader = match way {
            Way::SuperviseSession => supervise::Leader::Session,
            _ => supervise::Leader::ProcessGroup,
        };
        std::thread::sleep(SPAWN_GAP);
        let before = realtime_us();
        let t = Instant::now();
        let (call, status) = match way {
            Way::PosixSpawn | Way::Fork => {
                let mut cmd = Command::new(&me);
                cmd.current_dir(&cwd)
                    .env(STAMP_ENV, &stamps)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .process_group(0);
                if way == Way::Fork {
                    // SAFETY: a closure that does nothing; it only forces
                    // std to fork instead of posix_spawn.
                    unsafe { cmd.pre_exec(|| Ok(())) };
                }
                let mut child = cmd.spawn().expect("spawn");
                let call = t.elapsed();
                (call, child.wait().unwrap())
            }
            Way::Supervise | Way::SuperviseSession | Way::SuperviseCgroup => {
                let mut child = supervise::spawn(spec).expect("spawn");
                let call = t.elapsed();
                (call, child.wait().unwrap())
            }
        };
        assert!(status.success());
        if let Some(dir) = spec.cgroup.take() {
            std::fs::remove_dir(dir).unwrap();
        }
        let at: u64 = std::fs::read_to_string(stamps.join("spawn"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        (
            call.as_secs_f64() * 1000.0,
            at.saturating_sub(before) as f64 / 1000.0,
        )
    };
    // Twice: as the bench is, then with 256 MiB more of resident memory (a
    // fork copies page tables and faults on every page written after it;
    // a vfork-style spawn touches none of it).
    for (resident, extra) in [("bench as it is", 0), ("256 MiB more resident", 256 << 20)] {
        // Written (not zero pages), so it is resident.
        let ballast = vec![1u8; extra];
        let rss = std::fs::read_to_string("/proc/self/status")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:").map(|v| v.trim().to_string()))
            .unwrap_or_default();
        for &way in &ways {
            let mut calls = Vec::with_capacity(SPAWN_RUNS);
            let mut mains = Vec::with_capacity(SPAWN_RUNS);
            for n in 0..SPAWN_RUNS {
                let (c, m) = once(way, n, &mut spec);
                calls.push(c);
                mains.push(m);
            }
            std::hint::black_box(&ballast);
            let (c50, c99) = stats(&calls);
            let (m50, m99) = stats(&mains);
            table.row(
                "spawn call",
                &format!("{}, {resident} (RSS {rss})", way.label()),
                ms(c50),
                ms(c99),
                format!(
                    "{SPAWN_RUNS} runs, {} ms apart; the spawning thread is held this long",
                    SPAWN_GAP.as_millis()
                ),
            );
            table.row(
                "spawn to harness main",
                &format!("{}, {resident}", way.label()),
                ms(m50),
                ms(m99),
                format!("{SPAWN_RUNS} runs; includes exec and dynamic loading"),
            );
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}
