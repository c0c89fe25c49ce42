//! The spawning thread's wait for its child's exec: bounded, and a child
//! stopped before its exec (by the agent account, once it runs as that
//! account) is noticed within milliseconds, killed and reaped.

use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::sys::signal::Signal;

use super::super::process::{self, KILL_WAIT};
use super::raw;

/// How long a child has to reach its exec (or fail) before it is killed.
/// A spawn takes about a millisecond; this bounds a folder on a hung file
/// system or a machine starved of CPU.
pub const EXEC_WAIT: Duration = Duration::from_secs(5);

/// The first look at a child that has not exec'd yet; the looks then
/// double up to [`MAX_LOOK`].
const FIRST_LOOK: Duration = Duration::from_millis(2);
const MAX_LOOK: Duration = Duration::from_millis(50);

/// How the wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// EOF on the notify pipe: the child has exec'd or is exiting.
    Done,
    /// The child is stopped (its state letter) before its exec.
    Stopped(u8),
    /// [`EXEC_WAIT`] has passed.
    TimedOut,
}

/// Waits for EOF on `notify` (nothing is ever written to it) until
/// `deadline`, looking at `pid`'s state between polls (a stop is not acted
/// on while `held()`: tests hold a stopped child so).
pub(super) fn until_exec(
    notify: &OwnedFd,
    pid: u32,
    deadline: Instant,
    held: impl Fn() -> bool,
) -> Outcome {
    let mut look = FIRST_LOOK;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let wait = look.min(left).as_millis().min(u16::MAX as u128) as u16;
        let mut fds = [PollFd::new(notify.as_fd(), PollFlags::POLLIN)];
        match nix::poll::poll(&mut fds, PollTimeout::from(wait)) {
            Ok(n) if n > 0 => return Outcome::Done,
            Err(Errno::EINTR) => continue,
            _ => {}
        }
        if Instant::now() >= deadline {
            return Outcome::TimedOut;
        }
        if let Some(st) = process::stat(pid) {
            if matches!(st.state, b'T' | b't') && !held() {
                return Outcome::Stopped(st.state);
            }
        }
        look = (look * 2).min(MAX_LOOK);
    }
}

/// Kills the child (through its pidfd when there is one; it is unreaped
/// and claimed, so its pid is still its own) when `kill`, and reaps it.
/// Returns whether it was reaped within [`KILL_WAIT`] (a
/// process in uninterruptible sleep dies only when it wakes).
pub(super) fn reap(pid: u32, pidfd: Option<&OwnedFd>, kill: bool) -> bool {
    if kill {
        let _ = match pidfd {
            Some(fd) => process::pidfd_signal(fd.as_fd(), Signal::SIGKILL),
            None => nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), Signal::SIGKILL)
                .map_err(std::io::Error::from),
        };
    }
    let give_up = Instant::now() + KILL_WAIT;
    let mut pause = Duration::from_millis(1);
    loop {
        match raw::wait_pid(pid, nix::libc::WNOHANG) {
            Ok(Some(_)) => return true,
            Ok(None) => {}
            Err(_) => return false,
        }
        let now = Instant::now();
        if now >= give_up {
            return false;
        }
        match pidfd {
            // Readable once the process has exited.
            Some(fd) => {
                let ms = pause.min(give_up - now).as_millis().max(1) as u16;
                let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
                let _ = nix::poll::poll(&mut fds, PollTimeout::from(ms));
            }
            None => std::thread::sleep(pause),
        }
        pause = (pause * 2).min(MAX_LOOK);
    }
}
