//! The HTTP API for the app, on loopback with a bearer token: hyper's HTTP/1
//! server on a small tokio runtime of its own, confined to this module. One
//! thread runs the connections (reading heads and bodies under the limits in
//! `limits`); the runtime's work runs on a bounded blocking pool
//! (`http_workers` threads). Routes are in `routes` (one table), bodies in
//! `bodies`, query strings in `query`, the event stream in `stream`, the
//! browser console's files in `console` (its URL in `console_url`);
//! docs/api.md and docs/openapi.json describe them and every limit.

mod auth;
pub(crate) mod bodies;
pub mod console;
mod console_url;
mod follow;
mod front;
pub(crate) mod limits;
mod listen;
pub(crate) mod query;
mod reply;
mod request;
pub mod routes;
pub(crate) mod stream;

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::{watch, Semaphore};

use crate::runtime::Runtime;
use crate::service::shared::Shared;

pub use console_url::console_url;

/// The running HTTP API and the sessions behind it.
pub struct Server {
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
    runtime: Arc<Runtime>,
}

/// Starts the runtime (restoring persisted sessions) and the HTTP API. The
/// bound address is written to `<state_dir>/listen`, so `listen` may use port 0.
pub fn start(shared: &Shared) -> std::io::Result<Server> {
    let config = shared.config.clone();
    // The runtime first: it makes the state dir private (the token file
    // 0600 included) before the token is read from it.
    let runtime = Runtime::start(
        config.clone(),
        shared.harness_pids.clone(),
        shared.metrics.clone(),
    )?;
    let token = auth::token(&config)?;
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(config.http_workers)
        .thread_name("http-worker")
        .build()?;
    let cannot = |e: std::io::Error| {
        std::io::Error::new(e.kind(), format!("cannot listen on {}: {e}", config.listen))
    };
    let listener = {
        let _entered = tokio.enter();
        bind(&config.listen).map_err(cannot)?
    };
    let addr = listener.local_addr()?;
    // The address for scripts and tests; the log line below says it too,
    // so a state dir without room for it (a full disk) stops nothing. The
    // file comes first: a reader that finds the address in the log finds
    // the file written as well.
    let listen = config.state_dir.join("listen");
    if let Err(e) = crate::store::write_atomic(&listen, format!("{addr}\n").as_bytes()) {
        log::error!("cannot write {}: {e}", listen.display());
        runtime.state_write_failed(&listen.display().to_string(), e);
    }
    let cap = limits::connection_cap();
    log::info!("HTTP API on http://{addr} (at most {cap} connections)");
    // Without the token, which is never logged.
    log::info!("console on http://{addr}/ (`room-core --console-url` prints it with the token)");
    let (stop, stopped) = watch::channel(false);
    let front = Arc::new(front::Front {
        runtime: runtime.clone(),
        token,
        stop: stopped.clone(),
        streams: Arc::new(Semaphore::new(limits::MAX_STREAMS)),
        large_bodies: Arc::new(Semaphore::new(limits::LARGE_BODIES)),
    });
    let thread = std::thread::Builder::new()
        .name("http".into())
        .spawn(move || {
            tokio.block_on(listen::serve(listener, front, cap, stopped));
            // Requests still on the blocking pool are not waited for long.
            tokio.shutdown_timeout(limits::STOP_RUNTIME);
        })?;
    Ok(Server {
        stop,
        thread: Some(thread),
        runtime,
    })
}

/// Binds the listening socket (SO_REUSEADDR, as std does; backlog `BACKLOG`).
fn bind(listen: &str) -> std::io::Result<tokio::net::TcpListener> {
    let addr: SocketAddr = listen
        .parse()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(limits::BACKLOG)
}

impl Server {
    /// Says the service is ready (`GET /v1/ready` answers 200 from now on):
    /// the restore ran in `start`, and the caller has both sockets serving.
    pub fn set_ready(&self) {
        self.runtime.set_ready();
    }

    /// Stops serving within about a second whatever the clients do (requests
    /// in hand get `STOP_GRACE`, streams end at once, stalled connections
    /// are dropped), then ends every wait and turn and returns once every
    /// turn has ended (SIGTERM, the kill grace, SIGKILL; each cut turn
    /// recorded); waiting starts stay persisted and wait again next run.
    pub fn stop(mut self) {
        self.runtime.set_stopping();
        let _ = self.stop.send(true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.runtime.shutdown();
    }
}
