//! Starts the service's parts, says it is ready (`GET /v1/ready`, and
//! sd_notify `READY=1` under systemd), waits for a stop signal (SIGTERM,
//! SIGINT, SIGHUP or SIGQUIT), says it is stopping (`STOPPING=1`), and stops
//! them, within about a second whatever the clients do.

pub(crate) mod shared;

use std::os::fd::AsRawFd;
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::signal::Signal;

pub use shared::Shared;

use crate::config::Config;

/// The signals that stop the service cleanly. SIGHUP (the terminal went
/// away) and SIGQUIT would otherwise end it on the spot, leaving its turns
/// running and its socket file behind.
const STOP_SIGNALS: [Signal; 4] = [
    Signal::SIGTERM,
    Signal::SIGINT,
    Signal::SIGHUP,
    Signal::SIGQUIT,
];

/// If a stop has not finished this long after the signal (something the
/// service waits on hangs), the socket file is removed and the process exits
/// anyway; or later, when the turns' own bound is longer (see
/// [`backstop`]). The stop itself takes about a second, plus the kill grace
/// when a turn ignores SIGTERM.
const STOP_BACKSTOP: Duration = Duration::from_secs(10);

/// The backstop for `config`: [`STOP_BACKSTOP`], or the front ends' second
/// plus the longest the runtime waits for its turns to end (the kill grace
/// and SIGKILL's bound), whichever is longer.
fn backstop(config: &Config) -> Duration {
    let turns = Duration::from_millis(config.kill_grace_ms) + crate::runtime::TURN_MARGIN;
    STOP_BACKSTOP.max(turns + Duration::from_secs(2))
}

/// Raises the soft descriptor limit to the hard one: the front ends hold a
/// descriptor per connection, and running out is what a crowd of idle
/// connections aims at. A failure is logged; the limit stays as it was.
fn raise_nofile() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource, RLIM_INFINITY};
    let (soft, hard) = match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok(limits) => limits,
        Err(e) => return log::warn!("cannot read the descriptor limit: {e}"),
    };
    // An unlimited hard limit still stops at the kernel's nr_open.
    let target = match hard {
        RLIM_INFINITY => std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(soft),
        hard => hard,
    };
    if soft < target {
        match setrlimit(Resource::RLIMIT_NOFILE, target, hard) {
            Ok(()) => log::debug!("descriptor limit raised from {soft} to {target}"),
            Err(e) => log::warn!("cannot raise the descriptor limit from {soft} to {target}: {e}"),
        }
    }
}

/// Refuses, as a config error, process-group supervision (asked for, or
/// what `auto` falls back to) with another agent account: it cannot hold
/// that boundary (`allow_process_group_with_agent_uid` accepts it). The
/// runtime's supervisor refuses it too; this says so before anything
/// starts.
fn refuse_unheld_boundary(config: &Config) -> Result<(), crate::config::ConfigError> {
    if config.agent_uid.is_none() {
        return Ok(());
    }
    // A `cgroup` that cannot be had is the supervisor's own error, later.
    if let Ok(mode) = crate::supervise::Supervisor::choose(config.supervision) {
        if let Some(why) = crate::supervise::boundary_refusal(config, &mode) {
            return Err(crate::config::ConfigError::Invalid(why));
        }
    }
    Ok(())
}

/// Runs the service until a stop signal.
pub fn run(config: Config) -> Result<(), Box<dyn std::error::Error>> {
    refuse_unheld_boundary(&config)?;
    // The stop signals are caught by a handler that writes to a pipe (the
    // self-pipe trick), not blocked and waited for: a blocked mask is
    // inherited by every harness the service spawns and survives exec, and
    // std's spawn (posix_spawn, no fork) does not reset it, so a blocked
    // SIGTERM would keep stop and close from ending a turn. A caught signal
    // is reset to its default by exec.
    let (wake, stop_pipe) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    // A full pipe (signals piling up) must not block the handler.
    fcntl(stop_pipe.as_raw_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
    crate::sys::catch_into_pipe(&STOP_SIGNALS, stop_pipe)?;
    raise_nofile();

    std::fs::create_dir_all(&config.state_dir)?;
    let shared = Shared::new(config);
    let agent = crate::agent::start(&shared)?;
    let api = crate::api::start(&shared)?;
    // The restore ran in `api::start` and both sockets are listening (a
    // connection from here on is accepted or waits in the backlog).
    api.set_ready();
    crate::notify::notify("READY=1");
    log::info!("ready");

    let mut byte = [0u8; 1];
    loop {
        match nix::unistd::read(wake.as_raw_fd(), &mut byte) {
            Ok(_) => break,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    let signal = Signal::try_from(crate::sys::last_caught());
    crate::notify::notify("STOPPING=1");
    log::info!("{signal:?}: stopping");
    let socket = shared.config.agent_socket_path();
    let backstop = backstop(&shared.config);
    std::thread::Builder::new()
        .name("stop-backstop".into())
        .spawn(move || {
            std::thread::sleep(backstop);
            log::error!("the stop did not finish in {backstop:?}; exiting anyway");
            let _ = std::fs::remove_file(&socket);
            std::process::exit(1);
        })?;
    // Both front ends stop side by side, each bounded: the agent socket
    // stops accepting, removes its file and gives its callers a moment; the
    // HTTP API gives requests in hand a moment, then ends every wait and
    // turn, returning once every turn has ended (SIGTERM, the kill grace,
    // SIGKILL), each cut turn recorded.
    std::thread::scope(|scope| {
        scope.spawn(|| agent.stop());
        api.stop();
    });
    log::info!("stopped");
    Ok(())
}
