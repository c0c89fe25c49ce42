//! Who connected: the process itself, held by a pidfd, not a pid that the
//! next process may take once it is reaped.
//!
//! The pidfd comes from `SO_PEERPIDFD` (Linux 6.5), which names the process
//! that called `connect`. On an older kernel it is a `pidfd_open` of the
//! pid from `SO_PEERCRED` at accept, and the process found at that pid must
//! have started no later than the accept. Whatever is read of `/proc/PID`
//! afterwards belongs to the peer only if, once read, the pidfd shows the
//! peer still running (a pid is not reused before its process is reaped)
//! and its start time is unchanged: [`Peer::still_there`].

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::libc;

use crate::procfs::Procfs;

/// `SO_PEERPIDFD` (include/uapi/asm-generic/socket.h); the libc crate may
/// not name it.
pub use crate::sys::SO_PEERPIDFD;

/// One process, as the per-process cap counts it: its pid and its pidfd's
/// inode (unique per process where pidfds live in pidfs, Linux 6.9; the
/// same for every pidfd before, where the pid alone tells processes apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PeerKey {
    pid: u32,
    inode: u64,
}

/// The process that connected.
#[derive(Debug)]
pub struct Peer {
    /// Its pid (in this service's pid namespace).
    pub pid: u32,
    /// Its uid at `connect`.
    pub uid: u32,
    pidfd: OwnedFd,
}

/// Why a peer could not be identified.
#[derive(Debug)]
pub enum NotIdentified {
    /// The peer is gone (or its pid is another process's already).
    Gone,
    /// The socket gave no credentials.
    Failed(io::Error),
}

/// Whether `SO_PEERPIDFD` was found missing (then every later accept uses
/// the fallback without asking again).
static NO_PEERPIDFD: AtomicBool = AtomicBool::new(false);

impl Peer {
    /// The peer of `stream`; its uid is `uid`, its pid `pid` (from
    /// `SO_PEERCRED`), and `accepted_ticks` is the accept's time in clock
    /// ticks after boot (for the fallback's start-time check).
    pub fn of(
        stream: &UnixStream,
        pid: u32,
        uid: u32,
        accepted_ticks: u64,
    ) -> Result<Peer, NotIdentified> {
        if !NO_PEERPIDFD.load(Ordering::Relaxed) {
            match peer_pidfd(stream) {
                Ok(pidfd) => return Ok(Peer { pid, uid, pidfd }),
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOPROTOOPT | libc::EINVAL)) => {
                    log::info!("agent socket: no SO_PEERPIDFD ({e}); pidfd_open at accept");
                    NO_PEERPIDFD.store(true, Ordering::Relaxed);
                }
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Err(NotIdentified::Gone),
                Err(e) => return Err(NotIdentified::Failed(e)),
            }
        }
        Peer::by_pid(pid, uid, accepted_ticks, &Procfs::default())
    }

    /// The fallback: a pidfd of whatever process has `pid` now, which must
    /// have started no later than the accept (else the peer is gone and the
    /// pid another's). A pid reused within the accept's clock tick (10 ms)
    /// passes; `SO_PEERPIDFD` has no such gap.
    pub fn by_pid(
        pid: u32,
        uid: u32,
        accepted_ticks: u64,
        procfs: &Procfs,
    ) -> Result<Peer, NotIdentified> {
        let pidfd = match crate::supervise::process::pidfd_open(pid) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Err(NotIdentified::Gone),
            Err(e) => return Err(NotIdentified::Failed(e)),
        };
        let peer = Peer { pid, uid, pidfd };
        match procfs.stat(pid) {
            Some(s) if s.start_time <= accepted_ticks && !peer.exited() => Ok(peer),
            _ => Err(NotIdentified::Gone),
        }
    }

    /// A pidfd of the process itself (tests that pose as a peer; behind
    /// the test exports, so the service never builds a peer it did not
    /// accept).
    #[cfg(any(test, feature = "_internal_test_exports"))]
    pub fn from_pidfd(pid: u32, uid: u32, pidfd: OwnedFd) -> Peer {
        Peer { pid, uid, pidfd }
    }

    /// What the per-process cap counts it as.
    pub fn key(&self) -> PeerKey {
        let inode = nix::sys::stat::fstat(self.pidfd.as_raw_fd()).map_or(0, |st| st.st_ino);
        PeerKey {
            pid: self.pid,
            inode,
        }
    }

    /// The pidfd, to poll beside the socket: it turns readable when the peer
    /// exits.
    pub fn pidfd(&self) -> BorrowedFd<'_> {
        self.pidfd.as_fd()
    }

    /// Whether the peer has exited (a zombie counts: its pid is about to be
    /// free).
    pub fn exited(&self) -> bool {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let mut fds = [PollFd::new(self.pidfd.as_fd(), PollFlags::POLLIN)];
        loop {
            match poll(&mut fds, PollTimeout::ZERO) {
                Ok(n) => return n > 0,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return true,
            }
        }
    }

    /// Whether the peer still runs and `/proc/PID` still shows it: not
    /// exited, and its start time is `start_time`. What was read of
    /// `/proc/PID` before this holds was read of the peer.
    pub fn still_there(&self, procfs: &Procfs, start_time: u64) -> bool {
        !self.exited() && procfs.stat(self.pid).map(|s| s.start_time) == Some(start_time)
    }
}

/// `getsockopt(SO_PEERPIDFD)`.
fn peer_pidfd(stream: &UnixStream) -> io::Result<OwnedFd> {
    crate::sys::peer_pidfd(stream.as_fd())
}

/// Now, in clock ticks after boot: the unit of `/proc/PID/stat`'s start
/// time, which counts boot time (suspend included).
pub fn boot_ticks() -> u64 {
    use nix::time::{clock_gettime, ClockId};
    use nix::unistd::{sysconf, SysconfVar};
    let Ok(t) = clock_gettime(ClockId::CLOCK_BOOTTIME) else {
        return u64::MAX;
    };
    let hz = sysconf(SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(0)
        .max(1) as u128;
    let nanos = t.tv_sec() as u128 * 1_000_000_000 + t.tv_nsec() as u128;
    (nanos * hz / 1_000_000_000) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    fn pair(name: &str) -> (UnixStream, UnixStream, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("peer-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s");
        let l = UnixListener::bind(&path).unwrap();
        let c = UnixStream::connect(&path).unwrap();
        let (s, _) = l.accept().unwrap();
        (s, c, dir)
    }

    #[test]
    fn this_process_is_its_own_peer_and_still_there() {
        let (s, _c, dir) = pair("self");
        let me = std::process::id();
        let peer = Peer::of(&s, me, 0, boot_ticks()).unwrap();
        let start = Procfs::default().stat(me).unwrap().start_time;
        assert!(!peer.exited());
        assert!(peer.still_there(&Procfs::default(), start));
        assert!(!peer.still_there(&Procfs::default(), start + 1));
        assert_eq!(peer.key(), peer.key());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_peer_that_exited_is_not_still_there() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let start = Procfs::default().stat(pid).unwrap().start_time;
        let pidfd = crate::supervise::process::pidfd_open(pid).unwrap();
        let peer = Peer::from_pidfd(pid, 0, pidfd);
        child.wait().unwrap();
        assert!(peer.exited());
        assert!(!peer.still_there(&Procfs::default(), start));
    }

    #[test]
    fn the_fallback_refuses_a_process_younger_than_the_accept() {
        let me = std::process::id();
        let start = Procfs::default().stat(me).unwrap().start_time;
        let procfs = Procfs::default();
        assert!(Peer::by_pid(me, 0, boot_ticks(), &procfs).is_ok());
        // An accept before this process started: the pid was another's then.
        assert!(matches!(
            Peer::by_pid(me, 0, start.saturating_sub(1), &procfs),
            Err(NotIdentified::Gone)
        ));
        // A pid with no process.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(matches!(
            Peer::by_pid(pid, 0, boot_ticks(), &procfs),
            Err(NotIdentified::Gone)
        ));
    }
}
