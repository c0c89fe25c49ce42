//! The runtime: the event pool, the timer and watch threads, the startup
//! permits, the supervisor, and the driver that steps each session's
//! machine and carries out its effects. It holds no business rule: the
//! session machine (`room_machines::session`) decides what happens to a
//! session; this module looks sessions up, locks them, feeds them inputs and
//! does the I/O their effects ask for (docs/machines.md, "Driving the
//! session machine", is the contract).

pub(crate) mod alarms;

mod command_answer;
mod conversation_cut;
mod driver;
mod follow;
mod follow_state;
mod fork;
pub(crate) mod harness_io;
pub(crate) mod harness_pids;
mod job;
mod launching;
pub(crate) mod line_reports;
mod list_query;

mod ops;
pub(crate) mod permits;

mod reading;
mod restore;
mod rewind;
mod snapshot_index;
mod snapshot_lanes;
mod snapshotting;
mod spawn_order;
mod talking;
mod turn_diff;
mod turn_output;
mod turns;
mod undo_asks;
pub(crate) mod watch;

use std::cell::Cell;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use room_machines::session::{Input, LaunchInput};

use crate::agent::turn_files::TurnFolder;
use crate::clock::Clock;
use crate::config::Config;
use crate::harness::installed::{AgentToAsk, Installed};
use crate::harness::{command, Programs};
use crate::metrics::Metrics;
use crate::sessions::{lock, Registry, SessionRef};
use crate::store::Store;
use crate::supervise::{Supervisor, KILL_WAIT};
use alarms::Alarms;
use harness_pids::HarnessPids;
use permits::Permits;
use watch::Watch;

pub(crate) use crate::sessions::SessionHandle;
pub(crate) use crate::sessions::Start;
pub(crate) use command_answer::CommandAnswer;
use job::Job;
pub(crate) use list_query::{ListQuery, DEFAULT_LIST, MAX_LIST};
pub(crate) use room_machines::session::RelaunchMode;
pub(crate) use undo_asks::{Fork, Rewind};

/// Everything the driver needs; shared by the API, the pool and turn threads.
pub struct Runtime {
    /// The configuration.
    pub config: Arc<Config>,
    /// The machines' clock.
    pub clock: Clock,
    /// The harness programs.
    pub programs: Programs,
    /// Which harness CLIs are installed, and their versions.
    pub installed: Installed,
    /// What no harness's environment may hold ([`command::secrets`]).
    secrets: Vec<String>,
    /// Harness pids for the agent socket.
    pub harness_pids: HarnessPids,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Starts turns and ends their whole process trees.
    pub supervisor: Arc<Supervisor>,
    /// The poller that watches every harness process.
    io: harness_io::HarnessIo,
    store: Store,
    registry: Mutex<Registry>,
    events: Sender<Job>,
    timer: Alarms<SessionHandle>,
    permits: Permits,
    watch: Option<Watch>,
    stopping: AtomicBool,
    /// The journals and readiness (follow.rs).
    follow: follow_state::Follow,
    /// Where files a harness reads are written (claude's MCP config).
    turn_files: TurnFolder,
    /// The store of the sessions' folders at turn boundaries, unless the
    /// config turns snapshots off.
    snapshots: Option<crate::snapshot::Snapshots>,
    /// The lanes that take snapshots (started once the runtime exists).
    lanes: OnceLock<snapshot_lanes::Lanes>,
}

/// Event pool workers: short jobs only (timeouts, status reads, permit
/// hand-offs, survivors, rounds of a turn's output). Four of them: a
/// launch's first turn is spawned from here, with a record write before it
/// and one after (each an fsync), and a turn's output is journalled from
/// here, so the workers mostly wait for the disk (docs/performance.md,
/// section 4).
const POOL_WORKERS: usize = 4;

/// How much longer than the kill grace an answer (stop, close, interrupt,
/// relaunch restart) or the service's stop waits for a turn to be gone:
/// SIGKILL's own bound in the supervisor and a timer bucket.
pub(crate) const TURN_MARGIN: Duration = Duration::from_millis(KILL_WAIT.as_millis() as u64 + 1000);

thread_local! {
    /// Set on the event pool's threads: a status read asked for there is
    /// done at once, under the session's lock, as part of the same pass.
    static ON_POOL: Cell<bool> = const { Cell::new(false) };
}

impl Runtime {
    /// Builds the runtime (the state dir made private, crash leftovers
    /// removed, the supervisor chosen and logged), starts its threads and
    /// restores persisted sessions.
    pub fn start(
        config: Arc<Config>,
        harness_pids: HarnessPids,
        metrics: Arc<Metrics>,
    ) -> std::io::Result<Arc<Runtime>> {
        let store = Store::open(&config.state_dir)?;
        let supervisor = Arc::new(Supervisor::from_config(&config).map_err(std::io::Error::other)?);
        let io = harness_io::HarnessIo::start(supervisor.clone())?;
        let clock = Clock::default();
        let (events, rx) = crossbeam_channel::unbounded();
        let watch = if config.watch {
            Some(Watch::start(events.clone())?)
        } else {
            None
        };
        let programs = Programs::resolve(&config.claude_program, &config.codex_program);
        let secrets = command::secrets(&config);
        let agent = crate::harness::account::for_agent(config.agent_uid);
        let owner = agent
            .as_ref()
            .ok()
            .and_then(Option::as_ref)
            .map(|a| (a.uid, a.gid));
        let snapshots = if config.snapshots {
            let agent = agent.as_ref().ok().and_then(Option::as_ref);
            Some(open_snapshots(&config, agent, &supervisor)?)
        } else {
            None
        };
        let asked = config
            .acp_agents
            .iter()
            .map(|(name, a)| {
                let account = agent.as_ref().ok().and_then(Option::as_ref);
                let env = command::turn_environment(&config, &secrets, account, &a.env);
                AgentToAsk {
                    name: name.clone(),
                    command: a.command.clone(),
                    args: a.args.clone(),
                    env,
                }
            })
            .collect();
        let installed = Installed::start(
            &programs,
            command::basics(std::env::vars_os(), &secrets),
            agent,
            asked,
        );
        let rt = Arc::new(Runtime {
            turn_files: TurnFolder::new(config.agent_socket_path(), owner),
            permits: Permits::new(config.permits()),
            follow: follow_state::Follow::new(&config.state_dir, config.journal_caps()),
            timer: {
                let events = events.clone();
                Alarms::start(clock, move |due| events.send(Job::Timeouts(due)).is_ok())
            },
            config,
            clock,
            secrets,
            programs,
            installed,
            harness_pids,
            metrics,
            supervisor,
            io,
            store,
            registry: Mutex::default(),
            events,
            watch,
            stopping: AtomicBool::new(false),
            snapshots,
            lanes: OnceLock::new(),
        });
        if rt.snapshots.is_some() {
            let weak = Arc::downgrade(&rt);
            let lanes = snapshot_lanes::Lanes::start(move |job| match weak.upgrade() {
                Some(rt) => {
                    rt.snapshot(job);
                    true
                }
                None => false,
            })?;
            let _ = rt.lanes.set(lanes);
        }
        for n in 0..POOL_WORKERS {
            let rt = Arc::downgrade(&rt);
            let rx: Receiver<Job> = rx.clone();
            std::thread::Builder::new()
                .name(format!("pool-{n}"))
                .spawn(move || {
                    ON_POOL.with(|p| p.set(true));
                    while let Ok(ev) = rx.recv() {
                        let Some(rt) = rt.upgrade() else { return };
                        rt.work(ev);
                    }
                })?;
        }
        rt.restore()?;
        Ok(rt)
    }

    /// One job of the event pool.
    fn work(&self, ev: Job) {
        match ev {
            Job::Input(id, input) => self.feed_id(&id, Input::Launch(input)),
            Job::Timeouts(due) => {
                for s in due.iter().filter_map(Weak::upgrade) {
                    self.drive(&mut lock(&s), Input::Timeout);
                }
            }
            Job::Observe(s, folder) => {
                // Read without the session's lock; the launch takes the
                // answer whenever it comes (a late one changes nothing).
                let observation = crate::files::observe(&folder);
                self.feed(&s, Input::Launch(LaunchInput::Observed(observation)));
            }
            Job::Turn(work) => self.work_turn(&work),
            Job::Survivor(s, seq, record) => {
                let ended = self.supervisor.kill_survivor(&record);
                if !ended.is_clean() {
                    log::error!(
                        "turn {}: not all of it could be killed: {ended:?}",
                        record.key
                    );
                }
                self.feed(&s, Input::SurvivorGone { seq });
            }
        }
    }

    /// Feeds `input` to the session behind `handle`, if it still exists.
    pub(crate) fn feed(&self, handle: &SessionHandle, input: Input) {
        if let Some(s) = handle.upgrade() {
            self.drive(&mut lock(&s), input);
        }
    }

    /// Feeds `input` to session `id`. A permit handed to a session that is
    /// not there goes back at once.
    fn feed_id(&self, id: &str, input: Input) {
        match self.session(id) {
            Some(s) => {
                self.drive(&mut lock(&s), input);
            }
            None if input == Input::Launch(LaunchInput::PermitGranted) => self.release_permit(),
            None => {}
        }
    }

    /// Hands `ev` to the pool.
    fn send(&self, ev: Job) {
        if let Err(e) = self.events.send(ev) {
            log::error!("the event pool is gone: {:?} is dropped", e.0);
        }
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

    /// How long an answer waits for a turn to be gone at most: the kill
    /// grace and [`TURN_MARGIN`].
    pub fn turn_bound(&self) -> Duration {
        Duration::from_millis(self.config.kill_grace_ms) + TURN_MARGIN
    }

    /// Service stop: every session gets `ServiceStop` (launches end, a
    /// start that had not started waits again next run, each running turn
    /// gets SIGTERM and, after the kill grace, SIGKILL); returns once no
    /// session has a turn any more, each cut turn recorded, or at
    /// [`Runtime::turn_bound`]. One grace for all: the turns end side by side.
    pub fn shutdown(&self) {
        // Under the registry's lock: a start either is registered before
        // (and gets `ServiceStop` below) or sees the stop and is refused.
        let all: Vec<SessionRef> = {
            let reg = self.registry();
            self.stopping.store(true, Ordering::SeqCst);
            reg.by_id.values().cloned().collect()
        };
        // Each session whose turn is still there tells when it is gone:
        // the wait is for those answers, never a poll.
        let (gone, ends) = crossbeam_channel::unbounded();
        let mut waiting = 0;
        for s in &all {
            let mut s = lock(s);
            self.drive(&mut s, Input::ServiceStop);
            if let Some(seq) = s.machine.record().turn.as_ref().map(|t| t.seq) {
                let gone = gone.clone();
                s.waiters.push((
                    seq,
                    Box::new(move || {
                        let _ = gone.send(());
                    }),
                ));
                waiting += 1;
            }
        }
        let give_up = Instant::now() + self.turn_bound();
        for _ in 0..waiting {
            if ends.recv_deadline(give_up).is_err() {
                let left: Vec<String> = all
                    .iter()
                    .filter_map(|s| {
                        let s = lock(s);
                        s.machine.record().turn.is_some().then(|| s.id.clone())
                    })
                    .collect();
                log::error!(
                    "the turns of {} did not end within {:?}; stopping anyway",
                    left.join(", "),
                    self.turn_bound()
                );
                break;
            }
        }
        log::info!("every turn has ended");
    }
}

/// The snapshot store under the state dir, its walker run as the agent
/// account (the service's own binary in its walker mode), each in a cgroup
/// of its own where turns get one.
fn open_snapshots(
    config: &Config,
    agent: Option<&crate::harness::account::Account>,
    supervisor: &Supervisor,
) -> std::io::Result<crate::snapshot::Snapshots> {
    let limits = crate::snapshot::Limits {
        max_bytes: config.snapshot_max_bytes,
        max_entries: config.snapshot_max_entries,
        ignore: std::iter::once(".git".to_string())
            .chain(config.snapshot_ignore.iter().cloned())
            .collect(),
        deadline: Duration::from_millis(config.snapshot_deadline_ms),
    };
    let account = agent.map(|a| crate::supervise::Account {
        uid: a.uid,
        gid: a.gid,
        groups: a.groups.clone(),
    });
    let snapshots = crate::snapshot::Snapshots::open(
        &config.state_dir,
        limits,
        account,
        std::env::current_exe()?,
    )?;
    Ok(match supervisor.mode() {
        crate::supervise::Mode::Cgroup(root) => snapshots.in_cgroups(root.clone()),
        crate::supervise::Mode::ProcessGroups { .. } => snapshots,
    })
}
