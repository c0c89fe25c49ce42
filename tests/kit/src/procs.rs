//! Processes seen through /proc: whether one runs, how long it took to
//! exit, its descriptors, a session's turns, a process group's members.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::time::wait_until;

/// Whether `pid` runs (exists and is not a zombie).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let state = s.rsplit_once(')')?.1.split_whitespace().next()?.to_string();
            Some(state != "Z" && state != "X")
        })
        .unwrap_or(false)
}

/// Whether process `pid` has exited (gone, or a zombie not reaped yet).
pub fn exited(pid: u32) -> bool {
    !alive(pid)
}

/// How long process `pid` took to exit, if it did within `limit`.
pub fn exited_within(pid: u32, limit: Duration) -> Option<Duration> {
    let t = Instant::now();
    while t.elapsed() < limit {
        if exited(pid) {
            return Some(t.elapsed());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    exited(pid).then(|| t.elapsed())
}

/// Sends `signal` to process `pid` and asserts it exits within 2 s (`log`
/// is shown if not); how long it took.
pub fn stops_within_2_s(
    pid: u32,
    signal: nix::sys::signal::Signal,
    log: impl Fn() -> String,
) -> Duration {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).unwrap();
    let limit = Duration::from_secs(2);
    let took = exited_within(pid, limit)
        .unwrap_or_else(|| panic!("still running 2 s after {signal}\n{}", log()));
    assert!(took < limit, "{signal}: {took:?}");
    took
}

/// The number of descriptors process `pid` has open.
pub fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Sets process `pid`'s soft RLIMIT_NOFILE (prlimit(2)); returns the old
/// (soft, hard).
pub fn set_nofile(pid: u32, soft: u64) -> (u64, u64) {
    use nix::libc;
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: prlimit reads `new` and writes `old`, both valid for the call.
    let rc = unsafe {
        let mut now = old;
        libc::prlimit(
            pid as libc::pid_t,
            libc::RLIMIT_NOFILE,
            std::ptr::null(),
            &mut now,
        );
        let new = libc::rlimit {
            rlim_cur: soft,
            rlim_max: now.rlim_max,
        };
        libc::prlimit(pid as libc::pid_t, libc::RLIMIT_NOFILE, &new, &mut old)
    };
    assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
    (old.rlim_cur, old.rlim_max)
}

/// Every running process marked as one of session `id`'s turns (the
/// supervisor puts `ROOM_CORE_TURN=<id>-<turn>` in each turn's
/// environment, which everything the turn starts inherits).
pub fn turn_processes(id: &str) -> Vec<u32> {
    let marker = format!("ROOM_CORE_TURN={id}-");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split(|b| *b == 0)
                    .any(|e| e.starts_with(marker.as_bytes()))
            })
        })
        .filter(|pid| alive(*pid))
        .collect()
}

/// The pid a tool wrote into `file` (waited for, 10 s at most).
pub fn pid_in(file: &Path) -> u32 {
    wait_until(
        &format!("a pid in {}", file.display()),
        Duration::from_secs(10),
        || std::fs::read_to_string(file).ok()?.trim().parse().ok(),
    )
}

/// The pids in process group `pgid`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // Fields after the command (which may hold spaces): state, ppid, pgrp.
            let after = &stat[stat.rfind(')')? + 2..];
            (after.split(' ').nth(2)?.parse::<i32>().ok()? == pgid).then_some(pid)
        })
        .collect()
}

/// A hard link (or copy) of `program` named `name` in `dir`: a helper the
/// service starts from it is found by that name alone (`running`), so a
/// test sees its own helpers, not another test's.
pub fn named_copy(program: &str, dir: &Path, name: &str) -> std::path::PathBuf {
    let copy = dir.join(name);
    if std::fs::hard_link(program, &copy).is_err() {
        std::fs::copy(program, &copy).unwrap();
    }
    copy
}

/// The pids of the processes (zombies too) running `program`.
pub fn running(program: &Path) -> Vec<u32> {
    let program = program.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).starts_with(&program))
                || std::fs::read_link(e.path().join("exe"))
                    .is_ok_and(|x| x.display().to_string().starts_with(&program))
        })
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}
