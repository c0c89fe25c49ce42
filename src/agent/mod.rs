//! The agent socket for room-cli (Unix socket, SO_PEERCRED).
//!
//! One JSON request per connection, `{"argv": [...], "cwd": "..."}`, one JSON
//! answer, `{"exit": n, "stdout": "...", "stderr": "..."}`. A peer whose uid is
//! not the agent account's is refused before anything is read. Otherwise the
//! caller's ancestry is read from `/proc`, the caller machine classifies it,
//! the policy decides, and this module only forwards to the website or prints
//! the refusal.
//!
//! No caller can delay another: the acceptor only checks the peer and hands
//! the connection to a worker of its own (an idle one, else a new thread; at
//! most `MAX_CONNECTIONS` at once, beyond which a caller is told Core is
//! busy), each request has one deadline for the whole of it, and website
//! calls (at most `MAX_WEBSITE_CALLS` at once, each with its own timeout)
//! hold only their own connection.

mod conn;
mod gate;

use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use room_machines::{classify, decide, Command, Decision, Parsed};
use serde::Deserialize;

pub use conn::{ANSWER_DEADLINE, MAX_REQUEST, REQUEST_DEADLINE};
pub use gate::{Gate, Pass};

use crate::backoff::Failures;
use crate::metrics::Metrics;
use crate::procfs::Procfs;
use crate::runtime::harness_pids::HarnessPids;
use crate::service::Shared;
use crate::website::{Answer, Website};

/// The most connections served at once (each on its own thread); past it a
/// caller is answered [`busy`] at once.
pub const MAX_CONNECTIONS: usize = 256;
/// The most website calls at once; past it a forwarded command is answered
/// [`busy`] at once. Calls hold connections for up to the website's timeout,
/// so this leaves most connections to calls that need no website.
pub const MAX_WEBSITE_CALLS: usize = 64;
/// On stop, connections in hand get this long to answer; the rest are left
/// to end with the process.
pub const STOP_GRACE: Duration = Duration::from_millis(300);
/// How long an idle connection worker waits for the next connection before
/// it ends (spawning a thread costs more than the rest of a refusal).
pub const WORKER_IDLE: Duration = Duration::from_secs(10);
/// What a peer of another account is told; nothing of its request is read.
pub const WRONG_ACCOUNT: &str = "room-cli: this socket serves the agent account only.";

/// What a caller is told when every place of `what` is taken.
pub fn busy(what: &str, cap: usize) -> Answer {
    Answer::fail(
        1,
        format!("room-cli: Core is busy ({cap} {what} at once); try again in a moment."),
    )
}

/// One room-cli request.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
pub struct AgentRequest {
    /// room-cli's arguments, without the program name.
    pub argv: Vec<String>,
    /// room-cli's working directory.
    #[serde(default)]
    pub cwd: String,
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
}

impl Context {
    /// The context for a service's shared state.
    pub fn new(shared: &Shared) -> Context {
        let config = &shared.config;
        Context {
            agent_uid: config
                .agent_uid
                .unwrap_or_else(|| nix::unistd::geteuid().as_raw()),
            harness_pids: shared.harness_pids.clone(),
            procfs: Procfs::default(),
            website: Website::new(config.website_base(), config.website_token.clone()),
            website_calls: Gate::new(MAX_WEBSITE_CALLS),
            metrics: shared.metrics.clone(),
        }
    }

    /// The answer for `argv` from the process `pid` (already known to run as
    /// the agent account).
    pub fn respond(&self, pid: u32, argv: &[String]) -> Answer {
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
        let ancestry = self
            .procfs
            .ancestry(pid, |key| self.harness_pids.session_of(key));
        let caller = classify(&ancestry);
        let decision = decide(&caller, &cmd);
        calls.inc(match &decision {
            Decision::Forward(_) => "forwarded",
            Decision::Refuse { .. } => "refused",
            Decision::Local => "local",
        });
        log::info!(
            "room-cli {} from pid {pid} (ancestry depth {}): {caller:?} -> {}",
            cmd.name(),
            ancestry.len(),
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

    /// The peer's pid when it runs as the agent account; otherwise it is
    /// answered `WRONG_ACCOUNT` (without waiting on it) and `None`. Nothing
    /// is read from the peer here.
    fn admit(&self, stream: &UnixStream) -> Option<u32> {
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
        Some(creds.pid() as u32)
    }

    /// Serves one admitted connection on its own thread: request (one
    /// deadline for all of it), answer.
    fn serve(&self, stream: &UnixStream, pid: u32, accepted: Instant) {
        let answer = match conn::read_request(stream, accepted + REQUEST_DEADLINE) {
            Ok(req) => self.respond(pid, &req.argv),
            Err(e) => Answer::fail(2, format!("room-cli: Core could not read the request: {e}")),
        };
        conn::write_answer(stream, &answer);
    }
}

/// The running agent socket.
pub struct Server {
    path: PathBuf,
    stopping: Arc<AtomicBool>,
    listener: UnixListener,
    acceptor: Option<JoinHandle<()>>,
    connections: Gate,
}

/// Binds `path` (replacing a stale socket file), mode 0600; when the agent
/// account is another non-root uid, the socket is handed to it.
fn bind(path: &Path, agent_uid: u32) -> std::io::Result<UnixListener> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => std::fs::remove_file(path)?,
        Ok(_) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("{} exists and is not a socket", path.display()),
            ))
        }
        Err(_) => {}
    }
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    let me = nix::unistd::geteuid().as_raw();
    // Root connects whatever the mode; another account needs the socket.
    if agent_uid != me && agent_uid != 0 {
        let uid = nix::unistd::Uid::from_raw(agent_uid);
        if let Err(e) = nix::unistd::chown(path, Some(uid), None) {
            log::warn!(
                "agent socket: cannot hand {} to uid {agent_uid} ({e}); making it 0666, \
                 so the peer uid check is the only guard",
                path.display()
            );
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
        }
    }
    Ok(listener)
}

/// Starts the agent socket at the configured path.
pub fn start(shared: &Shared) -> std::io::Result<Server> {
    start_with(shared.config.agent_socket_path(), Context::new(shared))
}

/// Starts the agent socket at `path` with `context` (tests build their own).
pub fn start_with(path: PathBuf, context: Context) -> std::io::Result<Server> {
    let listener = bind(&path, context.agent_uid)?;
    let stopping = Arc::new(AtomicBool::new(false));
    let connections = Gate::new(MAX_CONNECTIONS);
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
        let Some(pid) = context.admit(&stream) else {
            continue;
        };
        let Some(pass) = connections.enter() else {
            conn::answer_now(&stream, &busy("connections", connections.cap()));
            continue;
        };
        let job = Job {
            stream,
            pid,
            accepted,
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

/// An admitted connection and its place under the cap.
struct Job {
    stream: UnixStream,
    pid: u32,
    accepted: Instant,
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
        context.serve(&job.stream, job.pid, job.accepted);
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
        let _ = std::fs::remove_file(&self.path);
        if !self.connections.wait_empty(STOP_GRACE) {
            log::info!(
                "agent socket: {} connections still open at stop",
                self.connections.held()
            );
        }
    }
}
