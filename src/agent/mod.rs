//! The agent socket for room-cli (Unix socket, SO_PEERCRED).
//!
//! One JSON request per connection, `{"argv": [...], "cwd": "..."}`, one JSON
//! answer, `{"exit": n, "stdout": "...", "stderr": "..."}`. A peer whose uid is
//! not the agent account's is refused before anything is read. Otherwise the
//! caller's ancestry is read from `/proc`, the caller machine classifies it,
//! the policy decides, and this module only forwards to the website or prints
//! the refusal.

use std::io::{BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use room_machines::{classify, decide, Command, Decision, Parsed};
use serde::Deserialize;

use crate::procfs::Procfs;
use crate::runtime::harness_pids::HarnessPids;
use crate::service::Shared;
use crate::website::{Answer, Website};

/// Connection workers; a website call holds one for its duration.
pub const WORKERS: usize = 4;
/// The largest request read (room-cli's argv and cwd).
pub const MAX_REQUEST: u64 = 1 << 20;
/// How long a peer may take to send its request (or to take its answer).
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// What a peer of another account is told; nothing of its request is read.
pub const WRONG_ACCOUNT: &str = "room-cli: this socket serves the agent account only.";

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
        }
    }

    /// The answer for `argv` from the process `pid` (already known to run as
    /// the agent account).
    pub fn respond(&self, pid: u32, argv: &[String]) -> Answer {
        let cmd = match Command::parse(argv) {
            Err(e) => return Answer::fail(2, e.to_string()),
            Ok(Parsed::Help(text)) => return Answer::ok(text),
            Ok(Parsed::Run(cmd)) => cmd,
        };
        let ancestry = self
            .procfs
            .ancestry(pid, |key| self.harness_pids.session_of(key));
        let caller = classify(&ancestry);
        let decision = decide(&caller, &cmd);
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

    /// Serves one connection: peer check, request, answer.
    pub fn serve(&self, stream: UnixStream) {
        // A peer that never reads its answer does not hold a worker forever.
        let _ = stream.set_write_timeout(Some(READ_TIMEOUT));
        let creds =
            match nix::sys::socket::getsockopt(&stream, nix::sys::socket::sockopt::PeerCredentials)
            {
                Ok(c) => c,
                Err(e) => {
                    log::warn!("agent socket: no peer credentials: {e}");
                    return;
                }
            };
        if creds.uid() != self.agent_uid {
            log::warn!(
                "agent socket: refused pid {} of uid {} (serves uid {})",
                creds.pid(),
                creds.uid(),
                self.agent_uid
            );
            write_answer(&stream, &Answer::fail(1, WRONG_ACCOUNT));
            return;
        }
        let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
        let answer = match read_request(&stream) {
            Ok(req) => self.respond(creds.pid() as u32, &req.argv),
            Err(e) => Answer::fail(2, format!("room-cli: Core could not read the request: {e}")),
        };
        write_answer(&stream, &answer);
    }
}

fn read_request(stream: &UnixStream) -> Result<AgentRequest, String> {
    let reader = BufReader::new(stream.take(MAX_REQUEST));
    match serde_json::Deserializer::from_reader(reader)
        .into_iter::<AgentRequest>()
        .next()
    {
        Some(Ok(req)) => Ok(req),
        Some(Err(e)) => Err(e.to_string()),
        None => Err("it is empty".into()),
    }
}

fn write_answer(mut stream: &UnixStream, answer: &Answer) {
    let mut bytes = serde_json::to_vec(answer).unwrap_or_default();
    bytes.push(b'\n');
    // The caller may be gone; Core has done the work either way.
    let _ = stream.write_all(&bytes).and_then(|()| stream.flush());
}

/// The running agent socket.
pub struct Server {
    path: PathBuf,
    stopping: Arc<AtomicBool>,
    listener: UnixListener,
    acceptor: Option<JoinHandle<()>>,
    workers: Vec<JoinHandle<()>>,
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
    let (tx, rx) = crossbeam_channel::bounded::<UnixStream>(64);
    let context = Arc::new(context);
    let workers = (0..WORKERS)
        .map(|i| {
            let rx = rx.clone();
            let context = context.clone();
            std::thread::Builder::new()
                .name(format!("agent-{i}"))
                .spawn(move || {
                    for stream in rx {
                        context.serve(stream);
                    }
                })
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    let accepting = listener.try_clone()?;
    let flag = stopping.clone();
    let acceptor = std::thread::Builder::new()
        .name("agent-accept".into())
        .spawn(move || {
            for stream in accepting.incoming() {
                if flag.load(Ordering::SeqCst) {
                    break;
                }
                match stream {
                    Ok(s) => {
                        if tx.send(s).is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        log::warn!("agent socket: accept failed: {e}");
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
            }
        })?;
    log::info!("agent socket on {}", path.display());
    Ok(Server {
        path,
        stopping,
        listener,
        acceptor: Some(acceptor),
        workers,
    })
}

impl Server {
    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops accepting, lets the workers finish their connections, and removes
    /// the socket file.
    pub fn stop(mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // On Linux, shutting a listening socket down wakes a blocked accept.
        let _ =
            nix::sys::socket::shutdown(self.listener.as_raw_fd(), nix::sys::socket::Shutdown::Both);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}
