//! Reaping: the one place that decides who waits for which child.
//!
//! - A turn's own process (the harness) is waited for by its owner, through
//!   [`Child::wait`](super::spawn::Child::wait) on its pid. Its pid is
//!   *claimed* from the moment it exists until that wait has reaped it, and
//!   nothing else here ever reaps a claimed pid, so its exit status always
//!   reaches the code that waits for it.
//! - In process-group mode the service is a child subreaper
//!   (PR_SET_CHILD_SUBREAPER): a turn's orphans (a `setsid` + double-fork
//!   daemon) are re-parented to the service and turn into its zombies when
//!   they exit. [`sweep`] reaps those: zombie children of this process that
//!   are not claimed and are in a process group other than the service's
//!   own. Every turn leads a session of its own, so none of its processes
//!   can join the service's group (`setpgid` into another session fails):
//!   every orphan of a turn is outside it. A child the service starts some
//!   other way (std's `Command`, whose owner will wait for it) is in the
//!   service's group and is left alone; so the service must not start
//!   children in a group of their own except through this module (their
//!   status could be reaped here first). A `Child` dropped without a wait is
//!   *abandoned*: the sweep reaps it wherever it is.
//!
//! Claims and sweeps are ordered by one lock: a spawn holds it shared
//! across its clone system call and the claim of the new pid, nothing else
//! (the wait for the child's exec is outside it: a child stopped before its
//! exec holds no lock); a sweep holds it exclusively, so a sweep never sees
//! a fresh child's zombie before its claim.

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard, OnceLock, RwLock, RwLockReadGuard};
use std::time::Duration;

use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;

use super::process;

/// How often the background sweep runs.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(1);

static SPAWNS: RwLock<()> = RwLock::new(());
static CLAIMED: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());
static ABANDONED: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

fn locked(m: &'static Mutex<BTreeSet<u32>>) -> MutexGuard<'static, BTreeSet<u32>> {
    // A panic elsewhere leaves a set of numbers, still consistent.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Held (shared) by a spawn across its clone until its pid is claimed.
pub(crate) fn spawning() -> RwLockReadGuard<'static, ()> {
    SPAWNS.read().unwrap_or_else(|e| e.into_inner())
}

/// `pid` is waited for by its owner: never reaped here.
pub(crate) fn claim(pid: u32) {
    locked(&CLAIMED).insert(pid);
}

/// `pid` has been reaped by its owner.
pub(crate) fn release(pid: u32) {
    locked(&CLAIMED).remove(&pid);
}

/// `pid`'s owner will not wait for it: the sweep reaps it once it exits.
pub(crate) fn abandon(pid: u32) {
    locked(&CLAIMED).remove(&pid);
    locked(&ABANDONED).insert(pid);
}

/// Whether `pid` is a claimed child (its owner reaps it).
pub(crate) fn is_claimed(pid: u32) -> bool {
    locked(&CLAIMED).contains(&pid)
}

/// The children of this process, from every thread's
/// `/proc/self/task/TID/children` (an orphan is re-parented to one thread
/// of the subreaper); a full scan where that file does not exist.
fn children() -> Vec<u32> {
    let me = std::process::id();
    let mut out = BTreeSet::new();
    let mut found_file = false;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for t in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(t.path().join("children")) {
                found_file = true;
                out.extend(
                    text.split_ascii_whitespace()
                        .filter_map(|p| p.parse::<u32>().ok()),
                );
            }
        }
    }
    if !found_file {
        out.extend(
            process::snapshot()
                .into_iter()
                .filter(|s| s.ppid == me)
                .map(|s| s.pid),
        );
    }
    out.into_iter().collect()
}

/// Reaps the zombie children that are a turn's orphans or abandoned (see
/// the module doc); returns how many.
pub(crate) fn sweep() -> usize {
    let _exclusive = SPAWNS.write().unwrap_or_else(|e| e.into_inner());
    let own_group = nix::unistd::getpgid(None).map_or(0, |g| g.as_raw() as u32);
    let mut reaped = 0;
    for pid in children() {
        let Some(st) = process::stat(pid) else {
            continue;
        };
        if !st.is_gone() || is_claimed(pid) {
            continue;
        }
        let abandoned = locked(&ABANDONED).contains(&pid);
        if st.pgid == own_group && !abandoned {
            continue;
        }
        // A zombie child that no owner waits for (checked above, under the
        // lock that orders claims); WNOHANG never blocks.
        let child = Pid::from_raw(pid as i32);
        match waitpid(child, Some(WaitPidFlag::WNOHANG)) {
            Ok(status) if status.pid() == Some(child) => {
                locked(&ABANDONED).remove(&pid);
                log::debug!("reaped pid {pid} ({status:?}), an orphan of a turn");
                reaped += 1;
            }
            _ => {}
        }
    }
    reaped
}

/// Starts the background sweep (once per process).
pub(crate) fn start_sweeper() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let spawned = std::thread::Builder::new()
            .name("reaper".into())
            .spawn(|| loop {
                std::thread::sleep(SWEEP_EVERY);
                sweep();
            });
        if let Err(e) = spawned {
            log::error!("cannot start the reaper thread: {e}");
        }
    });
}
