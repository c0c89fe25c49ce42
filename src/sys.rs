//! The system calls room-core makes that nix 0.29 gives no safe call for,
//! each in one `unsafe` block with the reason it is sound. Everything else
//! goes through nix's safe calls where it is made; the clone and the
//! child's side of a spawn keep to `supervise::spawn::raw`.
//!
//! - `openat` (and `create_at`, its `O_CREAT | O_EXCL` form, and
//!   `tmpfile_at`, its `O_TMPFILE` form) and `openat2`: nix returns a bare
//!   descriptor, which becomes an `OwnedFd` here, once for every caller.
//! - `pidfd_open` and `pidfd_send_signal`: nix 0.29 has neither.
//! - `getsockopt(SO_PEERPIDFD)`: nix 0.29 has no such option.
//! - The stop signals' handler, which may only make async-signal-safe calls.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow};
use nix::libc;
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::sys::stat::Mode;

/// `openat(dir, name, flags)`; `dir` may be `AT_FDCWD`. Nothing is created
/// (no `O_CREAT`), so no mode is passed.
pub(crate) fn openat(dir: RawFd, name: &CStr, flags: OFlag) -> io::Result<OwnedFd> {
    let fd = nix::fcntl::openat(Some(dir), name, flags, Mode::empty())?;
    // SAFETY: `openat` just returned this descriptor; nothing else holds
    // it, so the `OwnedFd` is its only owner and closes it once.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `openat(dir, name, flags | O_CREAT | O_EXCL, mode)`: a file made new,
/// never one that was there.
pub(crate) fn create_at(dir: RawFd, name: &CStr, flags: OFlag, mode: Mode) -> io::Result<OwnedFd> {
    let flags = flags | OFlag::O_CREAT | OFlag::O_EXCL;
    let fd = nix::fcntl::openat(Some(dir), name, flags, mode)?;
    // SAFETY: `openat` just returned this descriptor; nothing else holds
    // it, so the `OwnedFd` is its only owner and closes it once.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `openat(dir, ".", flags | O_TMPFILE, mode)`: a new regular file in
/// folder `dir` with no name, freed when its last descriptor closes unless
/// it is linked first. The error stays an `Errno`, which the caller tells
/// apart (EOPNOTSUPP, EISDIR, EINVAL: no `O_TMPFILE` there).
pub(crate) fn tmpfile_at(dir: RawFd, flags: OFlag, mode: Mode) -> nix::Result<OwnedFd> {
    let fd = nix::fcntl::openat(Some(dir), c".", flags | OFlag::O_TMPFILE, mode)?;
    // SAFETY: `openat` just returned this descriptor; nothing else holds
    // it, so the `OwnedFd` is its only owner and closes it once.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `openat2(dir, path, how)`; `dir` may be `AT_FDCWD`. The error stays an
/// `Errno`, which the caller tells apart (ELOOP, ENOSYS, EPERM).
pub(crate) fn openat2(dir: RawFd, path: &Path, how: OpenHow) -> nix::Result<OwnedFd> {
    let fd = nix::fcntl::openat2(dir, path, how)?;
    // SAFETY: `openat2` just returned this descriptor; nothing else holds
    // it, so the `OwnedFd` is its only owner and closes it once.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `pidfd_open(2)`: a descriptor that names the process `pid` (ESRCH when
/// there is none).
pub fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor
    // or -1; no memory is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `pidfd_send_signal(2)`: ESRCH once the process has exited.
pub fn pidfd_send_signal(fd: BorrowedFd<'_>, signal: Signal) -> io::Result<()> {
    // SAFETY: a descriptor the borrow keeps open, a signal number, a null
    // siginfo (the kernel fills one in as kill(2) would) and no flags.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            signal as libc::c_int,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `SO_PEERPIDFD` (include/uapi/asm-generic/socket.h); the libc crate may
/// not name it.
pub const SO_PEERPIDFD: libc::c_int = 77;

/// `getsockopt(SO_PEERPIDFD)` on a connected Unix socket: a pidfd of the
/// process that called `connect` (Linux 6.5; ENOPROTOOPT before). ESRCH
/// when that process is gone.
pub(crate) fn peer_pidfd(socket: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let mut fd: libc::c_int = -1;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: a descriptor the borrow keeps open, and an int-sized buffer
    // and its length, as the option returns.
    let r = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_PEERPIDFD,
            (&mut fd as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    // SAFETY: the kernel just made this descriptor for us; nothing else
    // owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The write end of the wake pipe, for the signal handler (-1: none yet).
static WAKE_PIPE: AtomicI32 = AtomicI32::new(-1);
/// The caught signal that arrived last (0: none yet).
static LAST_CAUGHT: AtomicI32 = AtomicI32::new(0);

/// A caught signal: note it and write a byte to the wake pipe. Only
/// async-signal-safe calls (atomic loads and stores, `write`); errno is
/// kept for the code the signal interrupted.
extern "C" fn on_signal(signal: libc::c_int) {
    let saved = Errno::last_raw();
    LAST_CAUGHT.store(signal, Ordering::SeqCst);
    let fd = WAKE_PIPE.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: write(2) is async-signal-safe; the byte outlives the call,
        // and a failed write (a closed or full pipe) harms nothing.
        unsafe { libc::write(fd, [1u8].as_ptr().cast(), 1) };
    }
    Errno::set_raw(saved);
}

/// Catches `signals` (SA_RESTART) with a handler that notes the signal (see
/// [`last_caught`]) and writes one byte to `wake`, the write end of a
/// non-blocking pipe (the self-pipe trick). The pipe is kept open for the
/// process's life: the handler may run at any time.
pub(crate) fn catch_into_pipe(signals: &[Signal], wake: OwnedFd) -> nix::Result<()> {
    WAKE_PIPE.store(wake.into_raw_fd(), Ordering::SeqCst);
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for signal in signals {
        // SAFETY: the handler only makes async-signal-safe calls and reads
        // nothing a signal could catch half-written (atomics only).
        unsafe { sigaction(*signal, &action)? };
    }
    Ok(())
}

/// The signal [`catch_into_pipe`]'s handler caught last, as a raw number (0
/// when none has arrived).
pub(crate) fn last_caught() -> libc::c_int {
    LAST_CAUGHT.load(Ordering::SeqCst)
}
