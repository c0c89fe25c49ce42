//! The HTTP API for the app (tiny_http), on loopback with a bearer token.
//! Routes are in `routes`, bodies in `bodies`; docs/api.md describes both.

mod auth;
pub mod bodies;
mod routes;

use std::sync::Arc;
use std::thread::JoinHandle;

use crate::runtime::Runtime;
use crate::service::Shared;

/// The running HTTP API and the sessions behind it.
pub struct Server {
    http: Arc<tiny_http::Server>,
    workers: Vec<JoinHandle<()>>,
    runtime: Arc<Runtime>,
}

/// Starts the runtime (restoring persisted sessions) and the HTTP API. The
/// bound address is written to `<state_dir>/listen`, so `listen` may use port 0.
pub fn start(shared: &Shared) -> std::io::Result<Server> {
    let config = shared.config.clone();
    let token = auth::token(&config)?;
    let runtime = Runtime::start(config.clone(), shared.harness_pids.clone())?;
    let http = tiny_http::Server::http(config.listen.as_str())
        .map(Arc::new)
        .map_err(|e| std::io::Error::other(format!("cannot listen on {}: {e}", config.listen)))?;
    let addr = http
        .server_addr()
        .to_ip()
        .ok_or_else(|| std::io::Error::other("not an IP listener"))?;
    crate::store::write_atomic(
        &config.state_dir.join("listen"),
        format!("{addr}\n").as_bytes(),
    )?;
    log::info!("HTTP API on http://{addr}");
    let mut workers = Vec::new();
    for n in 0..config.http_workers {
        let http = http.clone();
        let runtime = runtime.clone();
        let token = token.clone();
        workers.push(
            std::thread::Builder::new()
                .name(format!("http-{n}"))
                .spawn(move || {
                    while let Ok(request) = http.recv() {
                        routes::serve(&runtime, &token, request);
                    }
                })?,
        );
    }
    Ok(Server {
        http,
        workers,
        runtime,
    })
}

impl Server {
    /// Stops serving and ends every wait; waiting starts stay persisted and
    /// wait again next run.
    pub fn stop(self) {
        for _ in &self.workers {
            self.http.unblock();
        }
        for w in self.workers {
            let _ = w.join();
        }
        self.runtime.shutdown();
    }
}
