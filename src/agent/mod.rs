//! The agent socket for room-cli (Unix socket, SO_PEERCRED, SO_PEERPIDFD).
//!
//! One JSON request per connection, `{"argv": [...], "cwd": "..."}`, one JSON
//! answer, `{"exit": n, "stdout": "...", "stderr": "..."}`. A peer whose uid is
//! not the agent account's is refused before anything is read. Otherwise the
//! peer is held by a pidfd ([`peer`]), its ancestry and cgroup are read from
//! `/proc`, the peer is confirmed to be still the process that connected, the
//! caller machine classifies it, the policy decides, and this module only
//! forwards to the website or prints the refusal.
//!
//! No caller can delay another: the acceptor only checks the peer (its uid,
//! its process's places: `MAX_PER_PROCESS`, and everyone's:
//! `MAX_CONNECTIONS`) and hands the connection to a worker of its own (an
//! idle one, else a new thread); a classified caller takes a place of its
//! session (`MAX_PER_SESSION`, or `MAX_OUTSIDE_SESSIONS` shared by callers of
//! no session) before its request is read; past any cap a caller is told Core
//! is busy at once. Each request has one deadline for the whole of it, and
//! website calls (at most `MAX_WEBSITE_CALLS` at once, each with its own
//! timeout) hold only their own connection.

pub(crate) mod caps;
pub(crate) mod conn;
mod gate;
pub mod peer;
pub(crate) mod socket_file;
pub(crate) mod turn_files;

use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use room_machines::{classify, decide, Caller, Command, Decision, Parsed};

pub use caps::{
    Caps, MAX_CONNECTIONS, MAX_OUTSIDE_SESSIONS, MAX_PER_PROCESS, MAX_PER_SESSION,
    MAX_WEBSITE_CALLS,
};
use caps::{Counts, Held};
pub use conn::{AgentRequest, ReadError, ANSWER_DEADLINE, MAX_REQUEST, REQUEST_DEADLINE};
pub use gate::{Gate, Pass};
use peer::{NotIdentified, Peer, PeerKey};

use crate::backoff::Failures;
use crate::metrics::Metrics;
use crate::procfs::Procfs;
use crate::runtime::harness_pids::HarnessPids;
use crate::service::shared::Shared;
use crate::website::{Answer, Website};

/// On stop, connections in hand get this long to answer; the rest are left
/// to end with the process.
pub const STOP_GRACE: Duration = Duration::from_millis(300);
/// How long an idle connection worker waits for the next connection before
/// it ends (spawning a thread costs more than the rest of a refusal).
pub const WORKER_IDLE: Duration = Duration::from_secs(10);
/// What a peer of another account is told; nothing of its request is read.
pub const WRONG_ACCOUNT: &str = "room-cli: this socket serves the agent account only.";
/// What a connection is told when the process that made it exited (or its
/// pid is another process's) before Core knew who it was and answered it.
pub const CALLER_GONE: &str = "room-cli: the process that connected to Core exited before Core could answer it, so Core cannot tell who is calling (its pid may be another process's now); nothing was done.";

/// What a caller is told when every place of `what` is taken.
pub fn busy(what: &str, cap: usize) -> Answer {
    Answer::fail(
        1,
        format!("room-cli: Core is busy ({cap} {what} at once); try again in a moment."),
    )
}

/// What a connection worker needs.
#[derive(Debug, Clone)]
pub struct Context {
    /// The only uid served.
    pub agent_uid: u32,
    /// Which pids are harnesses Core started.
    pub harness_pids: HarnessPids,
    /// Where to read ancestries.
    pub procfs: Procfs,
    /// Where forwarded commands go.
    pub website: Website,
    /// Places for website calls (`MAX_WEBSITE_CALLS`).
    pub website_calls: Gate,
    /// Where calls are counted by decision.
    pub metrics: Arc<Metrics>,
    /// Places per session (`MAX_PER_SESSION` each).
    pub sessions: Counts<String>,
    /// Places for callers of no session (`MAX_OUTSIDE_SESSIONS` in all).
    pub outside: Gate,
    /// Places per process (`MAX_PER_PROCESS` each), taken at accept.
    pub per_process: Counts<PeerKey>,
    /// Places in all (`MAX_CONNECTIONS`), taken at accept.
    pub connections: Gate,
}

impl Context {
    /// The context for a service's shared state.
    pub fn new(shared: &Shared) -> Context {
        Context::with_caps(shared, Caps::default())
    }

    /// The context for a service's shared state, with these caps (tests).
    pub fn with_caps(shared: &Shared, caps: Caps) -> Context {
        let config = &shared.config;
        Context {
            agent_uid: config
                .agent_uid
                .unwrap_or_else(|| nix::unistd::geteuid().as_raw()),
            harness_pids: shared.harness_pids.clone(),
            procfs: Procfs::default(),
            website: Website::new(config.website_base(), config.website_token.clone()),
            website_calls: Gate::new(caps.website_calls),
            metrics: shared.metrics.clone(),
            sessions: Counts::new(caps.per_session),
            outside: Gate::new(caps.outside_sessions),
            per_process: Counts::new(caps.per_process),
            connections: Gate::new(caps.connections),
        }
    }

    /// Who `peer` is: its ancestry and the turn whose cgroup holds it, read
    /// from `/proc` and confirmed to be the peer's (it still runs, with the
    /// start time it had before the reads), classified; `None` when the
    /// peer is gone or replaced.
    pub fn identify(&self, peer: &Peer) -> Option<Caller> {
        let start = self.procfs.stat(peer.pid)?.start_time;
        let ancestry = self
            .procfs
            .ancestry(peer.pid, |key| self.harness_pids.session_of(key));
        let turn = self
            .procfs
            .cgroup(peer.pid)
            .and_then(|c| self.harness_pids.session_in_cgroup(&c));
        if !peer.still_there(&self.procfs, start) {
            return None;
        }
        let caller = classify(turn.as_deref(), &ancestry);
        log::debug!(
            "agent socket: pid {} (ancestry depth {}, turn cgroup {turn:?}) is {caller:?}",
            peer.pid,
            ancestry.len()
        );
        Some(caller)
    }

    /// A place for a connection of `caller`: its session's, or the one
    /// shared by callers of no session; else the busy answer naming the cap.
    fn place(&self, caller: &Caller) -> Result<Place, Answer> {
        match caller {
            Caller::Harness(session) => match self.sessions.enter(session) {
                Some(held) => Ok(Place {
                    _session: Some(held),
                    _outside: None,
                }),
                None => Err(busy("connections of one session", self.sessions.cap())),
            },
            _ => match self.outside.enter() {
                Some(pass) => Ok(Place {
                    _session: None,
                    _outside: Some(pass),
                }),
                None => Err(busy(
                    "connections from outside any session",
                    self.outside.cap(),
                )),
            },
        }
    }

    /// The answer for `argv` from `caller` (a process of the agent account,
    /// classified).
    pub fn respond(&self, caller: &Caller, argv: &[String]) -> Answer {
        let calls = &self.metrics.agent_calls;
        let cmd = match Command::parse(argv) {
            Err(e) => {
                calls.inc("usage_error");
                return Answer::fail(2, e.to_string());
            }
            Ok(Parsed::Help(text)) => {
                calls.inc("help");
                return Answer::ok(text);
            }
            Ok(Parsed::Run(cmd)) => cmd,
        };
        let decision = decide(caller, &cmd);
        calls.inc(match &decision {
            Decision::Forward(_) => "forwarded",
            Decision::Refuse { .. } => "refused",
            Decision::Local => "local",
        });
        log::info!(
            "room-cli {}: {caller:?} -> {}",
            cmd.name(),
            match &decision {
                Decision::Forward(scope) => format!("forward {:?}", scope.field()),
                Decision::Refuse { .. } => "refuse".into(),
                Decision::Local => "local".into(),
            }
        );
        match decision {
            Decision::Forward(scope) => {
                let Some(_call) = self.website_calls.enter() else {
                    return busy("website calls", self.website_calls.cap());
                };
                let request = room_machines::website_request(&cmd, &scope, || {
                    uuid::Uuid::new_v4().to_string()
                });
                self.website.send(&request)
            }
            Decision::Refuse { message, exit_code } => Answer::fail(exit_code, message),
            Decision::Local => Answer::fail(
                2,
                format!(
                    "room-cli runs {} itself; Core does not answer it.",
                    cmd.name()
                ),
            ),
        }
    }

    /// The peer when it runs as the agent account and is still there;
    /// otherwise it is answered `WRONG_ACCOUNT` or `CALLER_GONE` (without
    /// waiting on it) and `None`. Nothing is read from the peer here.
    fn admit(&self, stream: &UnixStream, accepted_ticks: u64) -> Option<Peer> {
        let creds = match nix::sys::socket::getsockopt(
            stream,
            nix::sys::socket::sockopt::PeerCredentials,
        ) {
            Ok(c) => c,
            Err(e) => {
                log::warn!("agent socket: no peer credentials: {e}");
                return None;
            }
        };
        if creds.uid() != self.agent_uid {
            log::warn!(
                "agent socket: refused pid {} of uid {} (serves uid {})",
                creds.pid(),
                creds.uid(),
                self.agent_uid
            );
            conn::answer_now(stream, &Answer::fail(1, WRONG_ACCOUNT));
            return None;
        }
        let (pid, uid) = (creds.pid() as u32, creds.uid());
        match Peer::of(stream, pid, uid, accepted_ticks) {
            Ok(peer) => Some(peer),
            Err(NotIdentified::Gone) => {
                // Debug: any agent process can cause this at will, so a
                // line per connection could fill the log.
                log::debug!("agent socket: pid {pid} exited before its connection was accepted");
                conn::answer_now(stream, &Answer::fail(1, CALLER_GONE));
                None
            }
            Err(NotIdentified::Failed(e)) => {
                log::debug!("agent socket: cannot hold pid {pid} by a pidfd: {e}");
                let text = format!(
                    "room-cli: Core cannot tell who is calling ({e}); nothing was done; try again in a moment."
                );
                conn::answer_now(stream, &Answer::fail(1, text));
                None
            }
        }
    }

    /// Serves one admitted connection on its own thread: who it is, a place
    /// of its session, the request (one deadline for all of it), the
    /// answer.
    fn serve(&self, stream: &UnixStream, peer: &Peer, accepted: Instant) {
        let answer = self.answer(stream, peer, accepted);
        conn::write_answer(stream, &answer);
    }

    /// The answer for one connection. Refusals of a gone caller and of one
    /// past its cap are logged at debug: any agent process can cause them at
    /// will, so a line each could fill the log.
    fn answer(&self, stream: &UnixStream, peer: &Peer, accepted: Instant) -> Answer {
        let gone = || {
            log::debug!(
                "agent socket: pid {} is gone or replaced; its call is refused",
                peer.pid
            );
            Answer::fail(1, CALLER_GONE)
        };
        let Some(caller) = self.identify(peer) else {
            return gone();
        };
        let _place = match self.place(&caller) {
            Ok(p) => p,
            Err(busy) => {
                log::debug!(
                    "agent socket: pid {} ({caller:?}) is past its cap",
                    peer.pid
                );
                return busy;
            }
        };
        let req = match conn::read_request(stream, accepted + REQUEST_DEADLINE, peer.pidfd()) {
            Ok(req) => req,
            Err(ReadError::Gone) => return gone(),
            Err(ReadError::Bad(e)) => {
                return Answer::fail(2, format!("room-cli: Core could not read the request: {e}"))
            }
        };
        // The answer is for the process that connected, if it still runs.
        if peer.exited() {
            return gone();
        }
        self.respond(&caller, &req.argv)
    }
}

/// A classified connection's place under its session's cap (or the one
/// for callers of no session), given back on drop.
struct Place {
    _session: Option<Held<String>>,
    _outside: Option<Pass>,
}

/// The running agent socket.
pub struct Server {
    path: PathBuf,
    socket: socket_file::Bound,
    stopping: Arc<AtomicBool>,
    listener: UnixListener,
    acceptor: Option<JoinHandle<()>>,
    connections: Gate,
}

/// Starts the agent socket at the configured path, refused (with the
/// reason) where the agent account could not reach it or another account
/// could write its folder.
pub fn start(shared: &Shared) -> std::io::Result<Server> {
    let path = shared.config.agent_socket_path();
    let context = Context::new(shared);
    socket_file::outside_state_dir(&path, &shared.config.state_dir, context.agent_uid)?;
    start_with(path, context)
}

/// Starts the agent socket at `path` with `context` (tests build their own).
pub fn start_with(path: PathBuf, context: Context) -> std::io::Result<Server> {
    let (listener, socket) = socket_file::bind(&path, context.agent_uid)?;
    let stopping = Arc::new(AtomicBool::new(false));
    let connections = context.connections.clone();
    let accepting = listener.try_clone()?;
    let acceptor = {
        let (stopping, connections) = (stopping.clone(), connections.clone());
        let context = Arc::new(context);
        std::thread::Builder::new()
            .name("agent-accept".into())
            .spawn(move || accept(&accepting, &context, &connections, &stopping))?
    };
    log::info!("agent socket on {}", path.display());
    Ok(Server {
        path,
        socket,
        stopping,
        listener,
        acceptor: Some(acceptor),
        connections,
    })
}

/// The acceptor: checks each peer and hands it to a worker of its own. It
/// never reads from a peer nor waits on one; a failed accept (out of
/// descriptors) pauses it, with backoff, and never ends it.
fn accept(
    listener: &UnixListener,
    context: &Arc<Context>,
    connections: &Gate,
    stopping: &AtomicBool,
) {
    let mut failures = Failures::new("agent socket");
    let per_process = &context.per_process;
    // A rendezvous channel: a send succeeds only into a worker that waits.
    let (handoff, handoffs) = crossbeam_channel::bounded::<Job>(0);
    for stream in listener.incoming() {
        if stopping.load(Ordering::SeqCst) {
            break;
        }
        let stream = match stream {
            Ok(s) => {
                failures.recovered();
                s
            }
            Err(e) => {
                std::thread::sleep(failures.failed(&e));
                continue;
            }
        };
        let accepted = Instant::now();
        let Some(peer) = context.admit(&stream, peer::boot_ticks()) else {
            continue;
        };
        let Some(mine) = per_process.enter(&peer.key()) else {
            conn::answer_now(
                &stream,
                &busy("connections from one process", per_process.cap()),
            );
            continue;
        };
        let Some(pass) = connections.enter() else {
            conn::answer_now(&stream, &busy("connections", connections.cap()));
            continue;
        };
        let job = Job {
            stream,
            peer,
            accepted,
            _mine: mine,
            _pass: pass,
        };
        // An idle worker takes it if one waits; else a new worker does.
        if let Err(e) = handoff.try_send(job) {
            let (job, context, handoffs) = (e.into_inner(), context.clone(), handoffs.clone());
            let spawned = std::thread::Builder::new()
                .name("agent-conn".into())
                .spawn(move || work(job, &context, &handoffs));
            if let Err(e) = spawned {
                log::warn!("agent socket: no thread for a connection: {e}");
            }
        }
    }
}

/// An admitted connection and its places under the caps.
struct Job {
    stream: UnixStream,
    peer: Peer,
    accepted: Instant,
    _mine: Held<PeerKey>,
    _pass: Pass,
}

/// A worker serves connections one after another; it waits `WORKER_IDLE`
/// for the next and then ends (or when the acceptor is gone). Workers are
/// never more than the connections served at once, so `MAX_CONNECTIONS`
/// bounds them too, and a caller never waits for one: the acceptor starts
/// a new worker when none is idle.
fn work(first: Job, context: &Context, handoffs: &crossbeam_channel::Receiver<Job>) {
    let mut job = first;
    loop {
        context.serve(&job.stream, &job.peer, job.accepted);
        drop(job);
        match handoffs.recv_timeout(WORKER_IDLE) {
            Ok(next) => job = next,
            Err(_) => return,
        }
    }
}

impl Server {
    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops accepting, gives the connections in hand `STOP_GRACE` to answer
    /// (the rest, e.g. a stalled peer or a slow website call, end with the
    /// process), and removes the socket file.
    pub fn stop(mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // On Linux, shutting a listening socket down wakes a blocked accept.
        let _ =
            nix::sys::socket::shutdown(self.listener.as_raw_fd(), nix::sys::socket::Shutdown::Both);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        self.socket.remove();
        if !self.connections.wait_empty(STOP_GRACE) {
            log::info!(
                "agent socket: {} connections still open at stop",
                self.connections.held()
            );
        }
    }
}
