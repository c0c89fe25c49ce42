//! The helper processes that read and write the agent's folder for the
//! store: the service's own binary in a helper mode (`--snapshot-walk`),
//! started as the harness version check is ([`crate::supervise::spawn`]:
//! as the agent account with its groups, no capabilities, `no_new_privs`,
//! an empty environment, cwd `/`, its own process group,
//! `dies_with_spawner`, and a cgroup of its own when the snapshots were
//! given a cgroup root).
//!
//! A walker lingers between snapshots ([`Walker::lend`],
//! [`Walker::keep`]): a warm follow-up's snapshot then costs a request and
//! its answer, not a spawn and a cgroup. At most [`IDLE_MAX`] wait, each
//! for at most [`IDLE_KEEP`]; the walker itself exits after
//! [`super::walk::WALKER_IDLE`] with no request, so an idle one is never
//! more than a zombie that the next snapshot or the store's end reaps.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use super::protocol::bad;
use crate::supervise::{cgroup, spawn, Child, SpawnSpec};

/// The most walkers kept waiting for a snapshot: one per snapshot lane.
pub(crate) const IDLE_MAX: usize = 2;
/// How long a waiting walker is kept; well under the walker's own idle
/// limit, so one lent out has not just decided to exit.
pub(crate) const IDLE_KEEP: Duration = Duration::from_secs(30);

/// How helpers are started: the program, the account it runs as, the
/// cgroups it runs in; and the walkers waiting for their next snapshot.
#[derive(Debug)]
pub(crate) struct Walker {
    /// The program, run with a helper mode's flag.
    pub helper: PathBuf,
    /// The agent account (`None`: the service's own).
    pub account: Option<crate::supervise::Account>,
    /// Where each helper gets a cgroup of its own, if anywhere.
    pub cgroups: Option<cgroup::CgroupRoot>,
    /// Walkers that answered in full, with when.
    pub idle: Mutex<Vec<Helper>>,
}

impl Walker {
    /// A waiting walker, if one has waited less than [`IDLE_KEEP`] (the
    /// others are ended).
    pub(crate) fn lend(&self) -> Option<Helper> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(helper) = idle.pop() {
            if helper.idle_since.elapsed() < IDLE_KEEP {
                return Some(helper);
            }
        }
        None
    }

    /// Keeps `helper`, which has just answered in full, for the next
    /// snapshot (or ends it, when [`IDLE_MAX`] already wait).
    pub(crate) fn keep(&self, mut helper: Helper) {
        helper.idle_since = Instant::now();
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < IDLE_MAX {
            idle.push(helper);
        }
    }
}

/// A running helper, its pipes and its cgroup. Dropped, its whole process
/// group and cgroup are killed, it is reaped and its cgroup removed.
#[derive(Debug)]
pub(crate) struct Helper {
    child: Child,
    stdin: File,
    stdout: File,
    cgroup: Option<PathBuf>,
    idle_since: Instant,
}

impl Helper {
    /// Starts `walker.helper` with `mode` (its one argument).
    pub(crate) fn start(walker: &Walker, mode: &str) -> Result<Helper, String> {
        let mut spec = SpawnSpec::new(&walker.helper, "/");
        spec.args = vec![mode.into()];
        spec.account = walker.account.clone();
        spec.dies_with_spawner = true;
        if let Some(cgroups) = &walker.cgroups {
            let key = format!("snapshot-{}", uuid::Uuid::new_v4().simple());
            let dir = cgroups
                .create(&key)
                .map_err(|e| format!("cannot create the helper's cgroup: {e}"))?;
            spec.cgroup = Some(dir);
        }
        let mut child = match spawn(&spec) {
            Ok(c) => c,
            Err(e) => {
                if let Some(dir) = &spec.cgroup {
                    let _ = cgroup::remove(dir, Instant::now() + crate::supervise::KILL_WAIT);
                }
                return Err(format!(
                    "cannot run the snapshot helper {}: {e}",
                    walker.helper.display()
                ));
            }
        };
        drop(child.stderr.take());
        let stdin = child.stdin.take().map(OwnedFd::from).map(File::from);
        let stdout = child.stdout.take().map(OwnedFd::from).map(File::from);
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            Helper::ended(child, spec.cgroup);
            return Err("the snapshot helper has no pipes".into());
        };
        // Pipes of 1 MiB, not 64 KiB: a request and an answer's frames
        // (80 bytes a file) pass in a few wake-ups, not one per 64 KiB,
        // each of which, on a busy machine, waits for the other side's turn.
        widen(&stdin);
        widen(&stdout);
        Ok(Helper {
            child,
            stdin,
            stdout,
            cgroup: spec.cgroup,
            idle_since: Instant::now(),
        })
    }

    /// Kills and reaps a helper whose pipes could not be taken.
    fn ended(mut child: Child, cgroup_dir: Option<PathBuf>) {
        let _ = killpg(Pid::from_raw(child.pgid() as i32), Signal::SIGKILL);
        let _ = child.wait();
        if let Some(dir) = cgroup_dir {
            let _ = cgroup::remove(&dir, Instant::now() + crate::supervise::KILL_WAIT);
        }
    }

    /// The helper's stdin.
    pub(crate) fn stdin(&self) -> &File {
        &self.stdin
    }

    /// Its stdout, read until `end` and up to `cap` bytes.
    pub(crate) fn reader(&self, end: Instant, cap: u64) -> Bounded<'_> {
        Bounded {
            pipe: &self.stdout,
            end,
            read: 0,
            cap,
        }
    }

    /// SIGKILL to its process group and cgroup, at once: its pipes close,
    /// so a write to it blocked on another thread ends.
    pub(crate) fn kill(&self) {
        // Unreaped, the leader keeps its group's number: this reaches only
        // what the helper started.
        let _ = killpg(Pid::from_raw(self.child.pgid() as i32), Signal::SIGKILL);
        if let Some(dir) = &self.cgroup {
            let _ = cgroup::kill(dir);
        }
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        self.kill();
        let _ = self.child.wait();
        if let Some(dir) = &self.cgroup {
            let _ = cgroup::remove(dir, Instant::now() + crate::supervise::KILL_WAIT);
        }
    }
}

/// A helper's stdout, read within a deadline and up to a cap.
pub(crate) struct Bounded<'a> {
    pipe: &'a File,
    end: Instant,
    /// The bytes read so far.
    pub(crate) read: u64,
    cap: u64,
}

impl Read for Bounded<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let left = self.end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "the deadline"));
            }
            let mut fds = [PollFd::new(self.pipe.as_fd(), PollFlags::POLLIN)];
            let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
            match poll(&mut fds, timeout) {
                Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
                Ok(_) => break,
                Err(e) => return Err(e.into()),
            }
        }
        let n = self.pipe.read(buf)?;
        self.read += n as u64;
        if self.read > self.cap {
            return Err(bad(&format!("it sent more than {} bytes", self.cap)));
        }
        Ok(n)
    }
}

/// Why reading a helper's answer failed, as a sentence: `what` ("the
/// snapshot of /x") missed its `deadline`, or `who` ("the snapshot
/// walker") ended before answering or broke the protocol.
pub(crate) fn read_failure(e: &io::Error, what: &str, who: &str, deadline: Duration) -> String {
    match e.kind() {
        io::ErrorKind::TimedOut => format!(
            "{what} did not finish within {} s (its deadline)",
            deadline.as_secs_f64()
        ),
        io::ErrorKind::UnexpectedEof => format!("{who} ended before it had answered"),
        _ => format!("{who}'s answer was refused: {e}"),
    }
}

/// Asks for a pipe of [`PIPE_BYTES`] (the default `pipe-max-size`);
/// a smaller one only costs wake-ups.
fn widen(fd: &impl AsRawFd) {
    let _ = nix::fcntl::fcntl(
        fd.as_raw_fd(),
        nix::fcntl::FcntlArg::F_SETPIPE_SZ(PIPE_BYTES),
    );
}

/// The pipe size asked for.
const PIPE_BYTES: i32 = 1 << 20;
