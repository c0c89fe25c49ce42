//! The runtime: the event pool, the timer and watch threads, the startup
//! permits, and the driver that steps each session's launch machine and
//! carries out its effects. It holds no business rules: the launch machine
//! decides when a harness may start; this module only does the I/O.

pub mod clock;
mod driver;
mod follow;
pub mod harness_pids;
mod ops;
pub mod permits;
pub mod record;
pub mod timer;
mod turns;
pub mod watch;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crossbeam_channel::{Receiver, Sender};
use room_machines::Input;

use crate::config::Config;
use crate::harness::Programs;
use crate::metrics::Metrics;
use crate::sessions::{Registry, Session, SessionRef};
use crate::store::Store;
use clock::Clock;
use harness_pids::HarnessPids;
use permits::Permits;
use timer::Timer;
use watch::Watch;

pub use crate::sessions::Start;
pub use follow::{ListQuery, DEFAULT_LIST, MAX_LIST};
pub use ops::RelaunchMode;

/// A session as the timer knows it: its own handle, no registry lookup.
pub type SessionHandle = Weak<Mutex<Session>>;

/// Work for the event pool.
#[derive(Debug)]
pub enum Event {
    /// Feed an input to a session's launch.
    Input(String, Input),
    /// Deadlines that fell due together: feed each session a `Timeout`.
    Timeouts(Vec<SessionHandle>),
    /// A launch's first pass (its first status-file read), run here rather
    /// than on the thread that began it (an HTTP request, the restore at
    /// start-up); `done` hears when it has run.
    Begin(SessionHandle, Option<Sender<()>>),
}

/// Everything the driver needs; shared by the API, the pool and turn threads.
pub struct Runtime {
    /// The configuration.
    pub config: Arc<Config>,
    /// The machines' clock.
    pub clock: Clock,
    /// The harness programs.
    pub programs: Programs,
    /// Harness pids for the agent socket.
    pub harness_pids: HarnessPids,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    store: Store,
    registry: Mutex<Registry>,
    events: Sender<Event>,
    timer: Timer<SessionHandle>,
    permits: Permits,
    watch: Option<Watch>,
    stopping: AtomicBool,
    me: Weak<Runtime>,
    /// The journals and readiness (follow.rs).
    follow: follow::Follow,
}

/// Event pool workers: short jobs only (inputs from the timer, the watch and
/// permit hand-offs). Turns, which block for their whole run, get their own
/// threads.
const POOL_WORKERS: usize = 2;

impl Runtime {
    /// Builds the runtime, starts its threads and restores persisted sessions.
    pub fn start(
        config: Arc<Config>,
        harness_pids: HarnessPids,
        metrics: Arc<Metrics>,
    ) -> std::io::Result<Arc<Runtime>> {
        let store = Store::open(&config.state_dir)?;
        let clock = Clock::default();
        let (events, rx) = crossbeam_channel::unbounded();
        let watch = if config.watch {
            Some(Watch::start(events.clone())?)
        } else {
            None
        };
        let programs = Programs::resolve(&config.claude_program, &config.codex_program);
        let rt = Arc::new_cyclic(|me| Runtime {
            permits: Permits::new(config.permits()),
            follow: follow::Follow::new(&config.state_dir),
            timer: {
                let events = events.clone();
                Timer::start(clock, move |due| events.send(Event::Timeouts(due)).is_ok())
            },
            config,
            clock,
            programs,
            harness_pids,
            metrics,
            store,
            registry: Mutex::default(),
            events,
            watch,
            stopping: AtomicBool::new(false),
            me: me.clone(),
        });
        for n in 0..POOL_WORKERS {
            let rt = Arc::downgrade(&rt);
            let rx: Receiver<Event> = rx.clone();
            std::thread::Builder::new()
                .name(format!("pool-{n}"))
                .spawn(move || {
                    while let Ok(ev) = rx.recv() {
                        let Some(rt) = rt.upgrade() else { return };
                        match ev {
                            Event::Input(id, input) => rt.feed(&id, input),
                            Event::Begin(s, done) => {
                                if let Some(s) = s.upgrade() {
                                    let mut s = crate::sessions::lock(&s);
                                    if s.launch.is_some() {
                                        rt.drive(&mut s, None);
                                    }
                                }
                                if let Some(done) = done {
                                    let _ = done.send(());
                                }
                            }
                            Event::Timeouts(due) => {
                                for s in due.iter().filter_map(Weak::upgrade) {
                                    let mut s = crate::sessions::lock(&s);
                                    if s.launch.is_some() {
                                        rt.drive(&mut s, Some(Input::Timeout));
                                    }
                                }
                            }
                        }
                    }
                })?;
        }
        rt.restore()?;
        Ok(rt)
    }

    fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn session(&self, id: &str) -> Option<SessionRef> {
        self.registry().by_id.get(id).cloned()
    }

    fn all_sessions(&self) -> Vec<SessionRef> {
        self.registry().by_id.values().cloned().collect()
    }

    fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Service stop: ends every wait (the persisted starts wait again next
    /// run) and kills running turns.
    pub fn shutdown(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        for s in self.all_sessions() {
            let mut s = crate::sessions::lock(&s);
            if s.launch.is_some() {
                self.drive(&mut s, Some(Input::ServiceStop));
            }
            if s.turn.is_some() {
                // WRITE SIDE (follow.rs): the turn is cut.
                self.journal_event(&s, room_machines::session::Event::ServiceStopped);
                self.journal_flush(&s);
            }
            self.kill_turn(&mut s);
        }
    }
}
