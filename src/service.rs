//! Starts the service's parts, waits for SIGTERM or SIGINT, and stops them.

use std::os::fd::{AsRawFd, IntoRawFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

use crate::config::Config;
use crate::runtime::harness_pids::HarnessPids;

/// What the service's parts share.
#[derive(Clone)]
pub struct Shared {
    /// The loaded configuration.
    pub config: Arc<Config>,
    /// Which pids are harnesses Core started, for caller classification.
    pub harness_pids: HarnessPids,
}

/// The write end of the stop pipe, for the signal handler (-1: none yet).
static STOP_PIPE: AtomicI32 = AtomicI32::new(-1);
/// The stop signal that arrived last.
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// SIGTERM and SIGINT: note the signal and wake `run` through the pipe.
/// Only async-signal-safe calls (an atomic store, `write`); errno is kept.
extern "C" fn on_stop(signal: nix::libc::c_int) {
    let saved = Errno::last_raw();
    STOP_SIGNAL.store(signal, Ordering::SeqCst);
    let fd = STOP_PIPE.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: write(2) is async-signal-safe; the byte outlives the call.
        unsafe { nix::libc::write(fd, [1u8].as_ptr().cast(), 1) };
    }
    Errno::set_raw(saved);
}

/// Runs the service until SIGTERM or SIGINT.
pub fn run(config: Config) -> Result<(), Box<dyn std::error::Error>> {
    // The stop signals are caught by a handler that writes to a pipe (the
    // self-pipe trick), not blocked and waited for: a blocked mask is
    // inherited by every harness the service spawns and survives exec, and
    // std's spawn (posix_spawn, no fork) does not reset it, so a blocked
    // SIGTERM would keep stop and close from ending a turn. A caught signal
    // is reset to its default by exec.
    let (wake, stop_pipe) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    // A full pipe (signals piling up) must not block the handler.
    fcntl(stop_pipe.as_raw_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
    STOP_PIPE.store(stop_pipe.into_raw_fd(), Ordering::SeqCst);
    let action = SigAction::new(
        SigHandler::Handler(on_stop),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler only makes async-signal-safe calls.
    unsafe {
        sigaction(Signal::SIGTERM, &action)?;
        sigaction(Signal::SIGINT, &action)?;
    }

    std::fs::create_dir_all(&config.state_dir)?;
    let shared = Shared {
        config: Arc::new(config),
        harness_pids: HarnessPids::default(),
    };
    let agent = crate::agent::start(&shared)?;
    let api = crate::api::start(&shared)?;

    let mut byte = [0u8; 1];
    loop {
        match nix::unistd::read(wake.as_raw_fd(), &mut byte) {
            Ok(_) => break,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    let signal = Signal::try_from(STOP_SIGNAL.load(Ordering::SeqCst));
    log::info!("{signal:?}: stopping");
    api.stop();
    agent.stop();
    Ok(())
}
