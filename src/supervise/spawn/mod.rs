//! Starts one turn's process as cheaply as posix_spawn, with what
//! posix_spawn cannot do: join a cgroup, close every inherited descriptor,
//! drop privileges and switch account before exec, without a window in
//! which the agent account can hold a service thread.
//!
//! std's `pre_exec` would force a `fork`, and copying the service's page
//! tables (and the copy-on-write faults after) costs about a millisecond
//! per spawn on this kind of VM. So the child shares the service's memory
//! (`CLONE_VM`, as glibc's posix_spawn does), but not with `CLONE_VFORK`:
//! once the child has switched to the agent's account, that account can
//! SIGSTOP it, and a vfork parent would wait in `clone` for ever. The
//! spawning thread instead waits for EOF on a close-on-exec pipe with a
//! deadline, notices a stopped child, kills and reaps it, and returns an
//! error ([`exec_wait`]); the reap lock is held only across the clone
//! itself ([`super::reap`]).
//!
//! - [`prepare`]: everything the child reads (paths, argv, envp, groups,
//!   descriptors), made before the clone: the child allocates nothing.
//! - [`raw`]: the clone and the child side (every `unsafe` of spawning),
//!   and the order of the child's steps.
//! - [`exec_wait`]: the bounded wait for the exec.
//!
//! By default the child runs with `PR_SET_NO_NEW_PRIVS`, and when it
//! switches account, with empty bounding, inheritable and ambient
//! capability sets ([`SpawnSpec::may_escalate`] turns both off). Only
//! stdin, stdout and stderr reach it: every other descriptor is closed.

mod error;
mod exec_wait;
mod prepare;
mod raw;
mod spec;
#[cfg(test)]
mod tests;

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ChildStderr, ChildStdin, ChildStdout, ExitStatus};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use nix::libc::{self, c_int};
use nix::sys::signal::Signal;

use super::{process, reap};
use exec_wait::Outcome;
use raw::{CloneError, Cloned, Step};

pub use error::SpawnError;
pub use exec_wait::EXEC_WAIT;
pub use prepare::resolve_program;
pub use spec::{Account, Leader, SpawnSpec};

/// A started process: its ids, its pipes, and the wait for its status.
#[derive(Debug)]
pub struct Child {
    pid: u32,
    pgid: u32,
    start_time: u64,
    pidfd: Option<Arc<OwnedFd>>,
    status: Option<ExitStatus>,
    /// The write end of its stdin (drop it to send EOF).
    pub stdin: Option<ChildStdin>,
    /// The read end of its stdout.
    pub stdout: Option<ChildStdout>,
    /// The read end of its stderr.
    pub stderr: Option<ChildStderr>,
}

impl Child {
    /// The process ID.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Its process group (its own: equal to the pid).
    pub fn pgid(&self) -> u32 {
        self.pgid
    }

    /// Its start time, `/proc/PID/stat` field 22 (clock ticks since boot).
    pub fn start_time(&self) -> u64 {
        self.start_time
    }

    /// A pidfd for it (None on a kernel before 5.2): signals through it can
    /// never reach a process that later got the same pid.
    pub fn pidfd(&self) -> Option<Arc<OwnedFd>> {
        self.pidfd.clone()
    }

    /// Waits for it to exit (closing its stdin first, so a harness reading
    /// it to the end does not wait for us) and returns its status. Only
    /// this reaps the pid; a second call returns the same status.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        drop(self.stdin.take());
        self.wait_flags(0)
            .map(|s| s.expect("a blocking wait returns a status"))
    }

    /// Its status if it has exited, without blocking.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.wait_flags(libc::WNOHANG)
    }

    fn wait_flags(&mut self, flags: c_int) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        // Our own child, claimed in `spawn`: nothing else reaps it (see
        // reap.rs), so the pid is still this process.
        let Some(raw) = raw::wait_pid(self.pid, flags)? else {
            return Ok(None);
        };
        let status = ExitStatus::from_raw(raw);
        self.status = Some(status);
        reap::release(self.pid);
        Ok(Some(status))
    }

    /// Sends `signal` to this process only (through its pidfd: a no-op once
    /// it has exited).
    pub fn signal(&self, signal: Signal) -> io::Result<()> {
        match &self.pidfd {
            Some(fd) => process::pidfd_signal(fd.as_fd(), signal),
            None if self.status.is_none() => {
                // Unreaped, so the pid cannot have been recycled.
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid as i32), signal)
                    .map_err(io::Error::from)
            }
            None => Ok(()),
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.status.is_none() && !matches!(self.try_wait(), Ok(Some(_))) {
            // Nobody will wait for it: the sweep reaps it once it exits.
            reap::abandon(self.pid);
        }
    }
}

/// Starts `spec`'s program with stdin, stdout and stderr as pipes. Returns
/// once the child has exec'd (or with the reason it could not), within
/// [`EXEC_WAIT`] however the child is held up.
pub fn spawn(spec: &SpawnSpec) -> Result<Child, SpawnError> {
    let err =
        |step: Option<&str>, e: io::Error| SpawnError::new(&spec.program, step.map(Into::into), e);
    let mut p = prepare::prepare(spec)?;
    let into = p.cgroup_dir.as_ref().map(|d| d.as_raw_fd());
    let cloned = match clone_claimed(&p, into) {
        Err(CloneError::Unsupported) => {
            p.move_by_procs(spec)?;
            clone_claimed(&p, None)
        }
        other => other,
    };
    let Cloned { pid, pidfd } = cloned.map_err(|e| match (e, &spec.cgroup) {
        (CloneError::Failed(e), Some(dir)) if into.is_some() && p.cgroup_procs.is_none() => {
            prepare::join_error(spec, dir, e)
        }
        (CloneError::Failed(e), _) => err(Some("cannot clone"), e),
        (CloneError::Unsupported, _) => err(
            Some("cannot clone"),
            io::Error::from_raw_os_error(libc::ENOSYS),
        ),
    })?;
    // The child has its copies; the last copy of the notify pipe's write
    // end must be the child's.
    p.child_ends.clear();
    p.cgroup_procs = None;
    p.cgroup_dir = None;

    #[cfg(test)]
    let hold = spec.test.stop_before_exec.clone();
    #[cfg(test)]
    let held = move || hold.as_ref().is_some_and(|h| h.load(Ordering::SeqCst));
    #[cfg(not(test))]
    let held = || false;
    let deadline = Instant::now() + EXEC_WAIT;
    let outcome = exec_wait::until_exec(&p.parent.notify, pid, deadline, held);
    let stopped = match outcome {
        Outcome::Done => None,
        Outcome::Stopped(state) => Some(format!(
            "its process was stopped (state {}) before it could exec, and was killed",
            state as char
        )),
        Outcome::TimedOut => Some(format!(
            "its process did not exec within {EXEC_WAIT:?}, and was killed"
        )),
    };
    let step = p.frame.args.failed_step.load(Ordering::SeqCst);
    if stopped.is_some() || step != 0 {
        // A failed child exits right after it reports (EOF came from its
        // exit); a stopped or late one is killed.
        if exec_wait::reap(pid, pidfd.as_ref(), stopped.is_some()) {
            reap::release(pid);
        } else {
            // It still runs (in uninterruptible sleep) on our memory: that
            // memory is never freed, and the sweep reaps it once it exits.
            log::error!(
                "spawn of {}: pid {pid} cannot be reaped; leaving it to the sweep",
                spec.program.display()
            );
            reap::abandon(pid);
            std::mem::forget(p);
            return Err(err(
                None,
                io::Error::other(stopped.unwrap_or_else(|| "its process did not exit".into())),
            ));
        }
        if let Some(why) = stopped {
            log::warn!("spawn of {}: {why}", spec.program.display());
            return Err(err(None, io::Error::other(why)));
        }
        let e = io::Error::from_raw_os_error(p.frame.args.failed_errno.load(Ordering::SeqCst));
        return Err(step_error(spec, Step::from_raw(step), e));
    }
    let prepare::ParentEnds {
        stdin,
        stdout,
        stderr,
        ..
    } = p.parent;
    let mut child = Child {
        pid,
        pgid: pid,
        start_time: 0,
        pidfd: pidfd.map(Arc::new),
        status: None,
        stdin: Some(ChildStdin::from(stdin)),
        stdout: Some(ChildStdout::from(stdout)),
        stderr: Some(ChildStderr::from(stderr)),
    };
    // Unreaped, so /proc/PID is this process, even if it has exited.
    match process::start_time(pid) {
        Some(t) => child.start_time = t,
        None => {
            let _ = child.signal(Signal::SIGKILL);
            let _ = child.wait();
            let e = io::Error::other("its /proc/PID/stat cannot be read");
            return Err(err(None, e));
        }
    }
    Ok(child)
}

/// Clones `p`'s child under the reap lock, held across the clone only,
/// and claims its pid before the lock is let go (so the sweep never reaps
/// it: see reap.rs).
fn clone_claimed(
    p: &prepare::Prepared,
    into: Option<std::os::fd::RawFd>,
) -> Result<Cloned, CloneError> {
    let _spawning = reap::spawning();
    let cloned = raw::clone_child(&p.frame, into)?;
    reap::claim(cloned.pid);
    Ok(cloned)
}

/// The error of a child that reported failing at `step`.
fn step_error(spec: &SpawnSpec, step: Option<Step>, e: io::Error) -> SpawnError {
    let err = |step: Option<String>| SpawnError::new(&spec.program, step, e);
    match step {
        Some(Step::Exec) | None => err(None),
        Some(Step::Session) => err(Some(match spec.leader {
            Leader::Session => "cannot start a session".into(),
            Leader::ProcessGroup => "cannot start a process group".into(),
        })),
        Some(Step::Cgroup) => {
            let dir = spec.cgroup.as_deref().unwrap_or(Path::new("?"));
            err(Some(format!("cannot join the cgroup {}", dir.display())))
        }
        Some(Step::Stdio) => err(Some("cannot set up its stdin, stdout and stderr".into())),
        Some(Step::Descriptors) => err(Some(
            "cannot close the descriptors it must not inherit".into(),
        )),
        Some(Step::Privileges) => err(Some("cannot drop its privileges".into())),
        Some(Step::Account) => {
            let a = spec.account.as_ref();
            let (uid, gid) = a.map_or((0, 0), |a| (a.uid, a.gid));
            err(Some(format!("cannot switch to uid {uid} gid {gid}")))
        }
        Some(Step::Chdir) => err(Some(format!("cannot enter {}", spec.cwd.display()))),
    }
}
