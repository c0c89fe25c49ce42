//! Process facts from `/proc` and signals that cannot hit a recycled pid.
//!
//! A pid alone names a process only while it lives: once it has exited and
//! been reaped, the kernel may hand the number to an unrelated process (pid
//! numbers wrap at `/proc/sys/kernel/pid_max`, 32768 on small machines).
//! So every signal sent here goes through a pidfd, opened first and checked
//! second: a pidfd refers to the process that held the pid when it was
//! opened, and if that process still matches (start time, cgroup) after the
//! open, the signal reaches exactly it.

use std::os::fd::AsFd;
use std::sync::OnceLock;
use std::time::Duration;

use nix::libc;
use nix::sys::signal::Signal;

/// How long SIGKILL is given to take effect before a tree is reported as
/// not gone (a process in uninterruptible sleep dies only when it wakes).
pub const KILL_WAIT: Duration = Duration::from_secs(5);

/// The fields of `/proc/PID/stat` that supervision reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// The process ID.
    pub pid: u32,
    /// The state letter (`R`, `S`, `D`, `Z` zombie, `X` dead, ...).
    pub state: u8,
    /// The parent's pid.
    pub ppid: u32,
    /// The process group.
    pub pgid: u32,
    /// The session.
    pub sid: u32,
    /// Field 22: when the process started, in clock ticks since boot.
    pub start_time: u64,
}

impl Stat {
    /// A zombie or dead process runs nothing: it only waits to be reaped.
    pub fn is_gone(&self) -> bool {
        matches!(self.state, b'Z' | b'X' | b'x')
    }
}

/// Parses the text of `/proc/PID/stat`. The second field (comm) is in
/// parentheses and may hold spaces and parentheses itself, so the fields are
/// read after the LAST `)`: ` state ppid pgrp session ...`, field 22 being
/// the start time.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let pid = text.split_ascii_whitespace().next()?.parse().ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let mut f = rest.split_ascii_whitespace();
    let state = *f.next()?.as_bytes().first()?;
    let ppid = f.next()?.parse().ok()?;
    let pgid = f.next()?.parse().ok()?;
    let sid = f.next()?.parse().ok()?;
    // Fields 7 to 21 (tty_nr ... itrealvalue), then 22.
    let start_time = f.nth(15)?.parse().ok()?;
    Some(Stat {
        pid,
        state,
        ppid,
        pgid,
        sid,
        start_time,
    })
}

/// `/proc/PID/stat`; `None` when the process is gone. Read as bytes: comm
/// is whatever name the process gave itself, not always UTF-8, and a name
/// must not hide a process.
pub fn stat(pid: u32) -> Option<Stat> {
    parse_stat(&String::from_utf8_lossy(
        &std::fs::read(format!("/proc/{pid}/stat")).ok()?,
    ))
}

/// The start time (field 22) of `pid`, if it exists.
pub fn start_time(pid: u32) -> Option<u64> {
    stat(pid).map(|s| s.start_time)
}

/// Every process in `/proc` (thread-group leaders), as one snapshot.
pub fn snapshot() -> Vec<Stat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(stat)
        .collect()
}

/// Whether `pid`'s environment holds exactly the entry `entry`
/// (`KEY=value`). `None` when it cannot be read (gone, a zombie, EACCES).
pub fn environ_has(pid: u32, entry: &[u8]) -> Option<bool> {
    let bytes = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    if bytes.is_empty() {
        // A zombie's (or a kernel thread's) environment reads as empty.
        return None;
    }
    Some(bytes.split(|b| *b == 0).any(|e| e == entry))
}

/// The line `0::/path` of `/proc/PID/cgroup`: the cgroup v2 path, relative
/// to the cgroup2 mount as this process sees it.
pub fn cgroup_of(pid: u32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    parse_cgroup_v2(&text).map(str::to_string)
}

/// The v2 path in the text of `/proc/PID/cgroup` (the `0::` line).
pub fn parse_cgroup_v2(text: &str) -> Option<&str> {
    text.lines().find_map(|l| l.strip_prefix("0::"))
}

/// This boot's ID: start times count from boot, so a record from an earlier
/// boot names no process that runs now.
pub fn boot_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    })
}

/// `pidfd_open(2)`.
pub use crate::sys::pidfd_open;
/// `pidfd_send_signal(2)`: ESRCH once the process has exited.
pub use crate::sys::pidfd_send_signal as pidfd_signal;

/// Sends `signal` to `pid` only if `still_it()` holds once the pid is
/// pinned by a pidfd (so the check and the signal are about the same
/// process). True when it was sent. On a kernel without pidfds (before
/// 5.3) it falls back to check-then-kill.
pub fn signal_checked(pid: u32, signal: Signal, still_it: impl FnOnce() -> bool) -> bool {
    match pidfd_open(pid) {
        Ok(fd) => still_it() && pidfd_signal(fd.as_fd(), signal).is_ok(),
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
            still_it()
                && nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).is_ok()
        }
        Err(_) => false,
    }
}

/// Sends `signal` to `pid` if it is still the process that started at
/// `start_time`.
pub fn signal_exact(pid: u32, start_time: u64, signal: Signal) -> bool {
    signal_checked(pid, signal, || start_time_is(pid, start_time))
}

fn start_time_is(pid: u32, start_time: u64) -> bool {
    stat(pid).is_some_and(|s| s.start_time == start_time && !s.is_gone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_after_the_last_parenthesis() {
        let line =
            "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 3 1 0 0 20 0 1 0 987654 1000 200";
        let s = parse_stat(line).unwrap();
        assert_eq!(
            s,
            Stat {
                pid: 4242,
                state: b'S',
                ppid: 17,
                pgid: 4242,
                sid: 4242,
                start_time: 987654
            }
        );
        assert!(!s.is_gone());
        let z = parse_stat("7 (x) Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 0 0").unwrap();
        assert!(z.is_gone());
        assert_eq!(z.start_time, 55);
        assert_eq!(parse_stat("7 (x) S 1 7 7"), None, "cut short");
        assert_eq!(parse_stat(""), None);
    }

    #[test]
    fn the_session_machine_gives_a_tree_up_after_this_same_wait() {
        let machine = room_machines::session::KILL_WAIT;
        assert_eq!(KILL_WAIT, Duration::from_millis(machine));
    }

    #[test]
    fn this_process_reads_as_itself() {
        let me = stat(std::process::id()).unwrap();
        assert_eq!(me.pid, std::process::id());
        assert!(me.start_time > 0);
        assert!(!snapshot().is_empty());
        assert!(!boot_id().is_empty());
    }

    #[test]
    fn the_v2_line_is_found_among_v1_lines() {
        let text = "4:memory:/x\n1:cpu:/\n0::/room-core/abc\n";
        assert_eq!(parse_cgroup_v2(text), Some("/room-core/abc"));
        assert_eq!(parse_cgroup_v2("1:cpu:/\n"), None);
    }
}
