//! The reference website: the half of seed 001 that Core leaves to the
//! website. It keeps loops and threads, runs each loop's check script on
//! its schedule (or at once, on `run`), and answers Core's forwarded
//! room-cli calls (its routes: routes.rs). docs/website.md describes it as
//! built.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use room_machines::request::Value as BodyValue;
use room_machines::{Body, Scope};
use serde_json::{json, Value};

use super::account::AgentAccount;
use super::core_client::CoreClient;
use super::http::{self, Request, Response};
use super::loops::Loop;
use super::records::{valid_key, Records};
use super::runner::{self, Runner};
use super::threads::{Launches, Thread};
use super::website_config::{SandboxConfig, WebsiteConfig};
use room_core::harness::Harness;

/// How many locks launches are spread over.
pub const STRIPES: usize = 64;

/// One sandbox the website knows.
pub struct Sandbox {
    /// Its configuration.
    pub config: SandboxConfig,
    /// Its Core's API.
    pub core: CoreClient,
}

/// Who a Core call acts as: the owner, project and sandbox of the calling
/// thread, or of the calling script's loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The user the website acts as.
    pub owner: String,
    /// The project it acts in.
    pub project: String,
    /// The sandbox of the Core that called.
    pub sandbox: String,
    /// The thread's or the loop's agent.
    pub agent: Harness,
    /// The thread or loop that called.
    pub scope: Scope,
}

/// The website's state.
pub struct Website {
    /// Its configuration.
    pub config: WebsiteConfig,
    sandboxes: BTreeMap<String, Sandbox>,
    /// The loops.
    pub loops: Records<Loop>,
    /// The threads it started.
    pub threads: Records<Thread>,
    /// The launches made, per scope.
    pub launches: Records<Launches>,
    /// Launch locks, by [`crate::launch::stripe`].
    pub stripes: Vec<Mutex<()>>,
    /// The app routes' bearer token.
    pub(super) admin_token: String,
    public_url: OnceLock<String>,
    runner: OnceLock<Runner>,
}

/// Constant-time equality, for tokens.
pub fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Website {
    /// Opens the state and knows the sandboxes; runs nothing yet.
    pub fn open(config: WebsiteConfig) -> std::io::Result<Website> {
        config.validate().map_err(std::io::Error::other)?;
        let state = &config.state_dir;
        std::fs::create_dir_all(state)?;
        let sandboxes = config
            .sandboxes
            .iter()
            .map(|s| {
                let core = CoreClient::new(&s.core_url, &s.core_token);
                (
                    s.name.clone(),
                    Sandbox {
                        config: s.clone(),
                        core,
                    },
                )
            })
            .collect();
        Ok(Website {
            loops: Records::open(&state.join("loops"))?,
            threads: Records::open(&state.join("threads"))?,
            launches: Records::open(&state.join("launches"))?,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            admin_token: config.admin_token.clone(),
            public_url: OnceLock::new(),
            runner: OnceLock::new(),
            sandboxes,
            config,
        })
    }

    /// The wall clock, Unix ms.
    pub fn now_ms(&self) -> u64 {
        room_core::clock::unix_ms()
    }

    /// A configured sandbox.
    pub fn sandbox(&self, name: &str) -> Option<&Sandbox> {
        self.sandboxes.get(name)
    }

    /// The base of hook URLs.
    pub fn public_url(&self) -> String {
        self.public_url.get().cloned().unwrap_or_default()
    }

    /// Queues a run of loop `id`; false if it is already queued or running
    /// (or nothing runs loops yet).
    pub fn trigger(&self, id: &str) -> bool {
        self.runner.get().is_some_and(|r| r.trigger(id))
    }

    /// What `run` answers: `{"run": {"loop", "queued", "note"?}}`.
    pub fn trigger_view(&self, id: &str) -> Value {
        let queued = self.trigger(id);
        let mut run = json!({ "loop": id, "queued": queued });
        if !queued {
            run["note"] = json!("It is already queued or running.");
        }
        json!({ "run": run })
    }

    /// The sandbox whose Core signed this request, by its bearer token.
    pub(super) fn signed_in(&self, req: &Request) -> Option<&Sandbox> {
        let token = req.bearer()?;
        self.sandboxes
            .values()
            .find(|s| same(token, &s.config.signin_token))
    }

    /// Who a Core call acts as (seed 001, points 2 and 3).
    pub fn actor(&self, sandbox: &str, body: &Body) -> Result<Actor, Response> {
        let text = |k: &str| match body.get(k) {
            Some(BodyValue::Str(s)) => Some(s.clone()),
            _ => None,
        };
        let forbidden = |m: String| Response::error(403, "wrong_sandbox", m);
        match (body.get("session"), body.get("automation")) {
            (Some(_), None) => {
                let id = text("session").unwrap_or_default();
                let t = self
                    .threads
                    .get(&id)
                    .filter(|t| valid_key(&id) && t.sandbox == sandbox)
                    .ok_or_else(|| forbidden(format!("No thread {id} runs in this sandbox.")))?;
                Ok(Actor {
                    owner: t.owner,
                    project: t.project,
                    sandbox: t.sandbox,
                    agent: t.agent,
                    scope: Scope::Session(id),
                })
            }
            (None, Some(_)) => {
                let id = text("automation").unwrap_or_default();
                // A loop ID is not a secret: the sandbox is the boundary.
                let l = self
                    .loops
                    .get(&id)
                    .filter(|l| valid_key(&id) && l.sandbox == sandbox)
                    .ok_or_else(|| {
                        log::info!("refused automation {id:?} from sandbox {sandbox}");
                        forbidden(format!(
                            "No loop {id} runs its check script in this sandbox."
                        ))
                    })?;
                Ok(Actor {
                    owner: l.owner,
                    project: l.project,
                    sandbox: l.sandbox,
                    agent: l.agent,
                    scope: Scope::Automation(id),
                })
            }
            _ => Err(Response::error(
                400,
                "bad_scope",
                "Send exactly one of session or automation.",
            )),
        }
    }
}

/// A running website: its HTTP server, run queue and schedule.
pub struct Running {
    /// The website.
    pub website: Arc<Website>,
    server: http::Server,
    stopping: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl Running {
    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Stops the schedule and the server (runs in progress finish on their
    /// own threads).
    pub fn stop(mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }
}

/// Opens the state, starts the run queue, the schedule and the HTTP server,
/// and writes the bound address to `<state_dir>/listen`.
pub fn start(config: WebsiteConfig) -> std::io::Result<Running> {
    let tick = Duration::from_millis(config.tick_ms);
    let runners = config.runners;
    let state_dir = config.state_dir.clone();
    let public = config.public_url.clone();
    let website = Arc::new(Website::open(config.clone())?);
    for s in &config.sandboxes {
        match &s.agent_account {
            Some(a) => log::info!("sandbox {}: scripts run as {a}", s.name),
            None => log::info!(
                "sandbox {}: no separate agent account configured; scripts run as {}",
                s.name,
                AgentAccount::current().name
            ),
        }
    }
    let w = website.clone();
    let _ = website.runner.set(Runner::start(
        runners,
        Arc::new(move |id: &str| w.run_loop(id)),
    ));
    let stopping = Arc::new(AtomicBool::new(false));
    let (w1, w2) = (website.clone(), website.clone());
    let ticker = runner::start_ticker(
        tick,
        move || w1.loops.all(),
        move |id| {
            w2.trigger(id);
        },
        stopping.clone(),
    )?;
    let w = website.clone();
    let server = http::Server::start(
        &config.listen,
        http::Limits::default(),
        Arc::new(move |req: &Request| w.handle(req)),
    )?;
    let _ = website
        .public_url
        .set(public.unwrap_or_else(|| server.url()));
    room_core::store::write_atomic(
        &state_dir.join("listen"),
        format!("{}\n", server.addr()).as_bytes(),
    )?;
    log::info!("website on {}", server.url());
    Ok(Running {
        website,
        server,
        stopping,
        ticker: Some(ticker),
    })
}

/// Loads `path` and runs the website until the process ends.
pub fn run_from(path: &Path) -> Result<(), String> {
    let config = WebsiteConfig::load(path)?;
    let _running = start(config).map_err(|e| format!("cannot start: {e}"))?;
    loop {
        std::thread::park();
    }
}
