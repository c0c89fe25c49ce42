//! What the API asks of the runtime: start, look up, message, stop, resume,
//! close and relaunch sessions, and restore them after a restart.

use room_machines::session::{EndWhy, Event as SessionEvent, RelaunchMode as MachineMode};
use room_machines::{Input, Launch, Plan};
use serde_json::{json, Value};

use super::clock::unix_ms;
use super::{Event, Runtime};
use crate::error::Refusal;
use crate::files;
use crate::sessions::{lock, new_id, view, Record, Session, SessionState, Start};

/// How `POST /v1/sessions/{id}/relaunch` brings a started session back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelaunchMode {
    /// Unpause the queue and run what is queued, resuming the native session.
    Resume,
    /// Run what is queued; the pause stays as it is.
    Wake,
    /// Kill the running turn first, then as `resume`.
    Restart,
}

/// The longest `POST /v1/sessions` waits for its launch's first pass on the
/// event pool before answering (pending, what holds it not known yet).
const FIRST_PASS_WAIT: std::time::Duration = std::time::Duration::from_millis(250);

impl Runtime {
    fn launch_config(&self) -> room_machines::LaunchConfig {
        self.config.launch()
    }

    /// Rebuilds sessions from the store: a waiting start waits again (a new
    /// limit from now); a started session is idle with its native ID and
    /// runs what is queued, without waiting.
    pub(super) fn restore(&self) -> std::io::Result<()> {
        let records: Vec<Record> = self.store.load_all()?;
        let mut restored = Vec::new();
        {
            let mut reg = self.registry();
            for mut rec in records {
                let was = rec.state;
                // A turn or relaunch in progress died with the old process.
                let started = !rec.waiting_start;
                if let Some(prompt) = rec.in_flight.take() {
                    if !started {
                        rec.queue.push_front(prompt);
                    }
                }
                if rec.state == SessionState::Running
                    || (started && rec.state == SessionState::Pending)
                {
                    rec.state = SessionState::Idle;
                }
                let s = Session::shared(rec.clone());
                reg.insert(&rec, s.clone());
                restored.push((s, was));
            }
        }
        for (s, was) in restored {
            let mut s = lock(&s);
            // WRITE SIDE (follow.rs): a state event if the restore changed it.
            self.journal_restored(&s, was);
            if s.rec.waiting_start && s.rec.state != SessionState::Closed {
                log::info!("{}: restored start waits again", s.rec.id);
                // Its first read runs on the pool: whatever lies at a status
                // path cannot hold up the start-up.
                let _ = self.begin_launch(&mut s, false);
            } else {
                self.pump(&mut s);
            }
        }
        Ok(())
    }

    /// Begins a launch. A relaunch (no status read) runs its first pass
    /// here; a start's first pass, which reads the status file, runs on the
    /// event pool, and the returned receiver hears when it has.
    fn begin_launch(
        &self,
        s: &mut Session,
        relaunch: bool,
    ) -> Option<crossbeam_channel::Receiver<()>> {
        let plan = Plan {
            promised: s.rec.start.project_copy && !relaunch,
            relaunch,
        };
        // A relaunch keeps its state on record (the view shows it pending
        // while the launch runs), so a crash mid-relaunch restores it idle.
        if !relaunch {
            s.rec.state = SessionState::Pending;
        } else if s.rec.state == SessionState::Failed {
            s.rec.state = SessionState::Idle;
        }
        let now = self.clock.now();
        s.recording = self
            .config
            .record_timelines
            .is_some()
            .then(|| room_machines::timeline::Run::new(plan, now));
        s.launch = Some(Launch::new(self.launch_config(), plan, now));
        s.armed = None;
        if relaunch {
            self.drive(s, None);
            return None;
        }
        let (done, first_pass) = crossbeam_channel::bounded(1);
        if let Err(e) = self.events.send(Event::Begin(s.me.clone(), Some(done))) {
            // The pool is gone (the service is stopping): run it here.
            log::debug!("{}: no event pool ({e}); first pass inline", s.rec.id);
            self.drive(s, None);
            return None;
        }
        Some(first_pass)
    }

    /// `POST /v1/sessions`: starts a session, or returns the one a retry
    /// with the same request ID started (`false` when it already existed).
    pub fn create(&self, start: Start) -> Result<(Value, bool), Refusal> {
        let mut reg = self.registry();
        if let Some(existing) = start
            .request_id
            .as_ref()
            .and_then(|r| reg.by_request.get(r))
            .and_then(|id| reg.by_id.get(id))
            .cloned()
        {
            drop(reg);
            let s = lock(&existing);
            if let Some(field) = retry_difference(&s.rec.start, &start) {
                return Err(Refusal::new(
                    409,
                    "request_conflict",
                    format!(
                        "Request ID {} already started session {} with a different {field}.",
                        start.request_id.as_deref().unwrap_or_default(),
                        s.rec.id
                    ),
                ));
            }
            return Ok((self.render(&s), false));
        }
        let rec = Record {
            id: new_id(),
            queue: start.prompt.iter().cloned().collect(),
            start,
            state: SessionState::Pending,
            native_id: None,
            paused: false,
            waiting_start: true,
            agent_start_ms: None,
            error: None,
            created_ms: unix_ms(),
            in_flight: None,
            copy: None,
        };
        // Persist before the launch begins: a kill -9 from here on restores
        // the start and it waits again. A start that cannot be recorded is
        // refused rather than run unrecorded.
        if let Err(e) = self.store.save(&rec.id, &rec) {
            log::error!("{}: cannot persist the start: {e}", rec.id);
            return Err(Refusal::new(
                500,
                "state_unwritable",
                format!(
                    "Cannot record the session in {}: {e}. It was not started.",
                    self.config.state_dir.display()
                ),
            ));
        }
        let s = Session::shared(rec.clone());
        let mut guard = lock(&s);
        reg.insert(&rec, s.clone());
        drop(reg);
        log::info!(
            "{}: start in {} (project_copy: {})",
            rec.id,
            rec.start.folder.display(),
            rec.start.project_copy
        );
        let first_pass = self.begin_launch(&mut guard, false);
        // WRITE SIDE (follow.rs): `pending` is the session's first event,
        // written with what its first pass journals.
        self.note_state(&guard);
        drop(guard);
        // The answer shows the first read's outcome (what holds the start)
        // when the pool runs it promptly, as it does unless it is busy; it
        // never waits longer than FIRST_PASS_WAIT for it.
        if let Some(first_pass) = first_pass {
            let _ = first_pass.recv_timeout(FIRST_PASS_WAIT);
        }
        let view = self.render(&lock(&s));
        Ok((view, true))
    }

    pub(super) fn render(&self, s: &Session) -> Value {
        view::render(s, &self.clock, self.config.copy_wait_ms)
    }

    pub(super) fn with<T>(
        &self,
        id: &str,
        f: impl FnOnce(&mut Session) -> Result<T, Refusal>,
    ) -> Result<T, Refusal> {
        let s = self.session(id).ok_or_else(|| Refusal::no_session(id))?;
        let mut s = lock(&s);
        let result = f(&mut s);
        // WRITE SIDE (follow.rs): what the command staged is written.
        self.journal_flush(&s);
        result
    }

    pub(super) fn open_or_refuse(s: &Session) -> Result<(), Refusal> {
        match s.rec.state {
            SessionState::Closed => Err(Refusal::finished(&s.rec.id, "closed")),
            _ => Ok(()),
        }
    }

    /// `GET /v1/sessions/{id}`.
    pub fn get(&self, id: &str) -> Result<Value, Refusal> {
        self.with(id, |s| Ok(self.render(s)))
    }

    /// `POST /v1/sessions/{id}/messages`: queues a prompt; it runs when the
    /// session is started, idle and unpaused.
    pub fn message(&self, id: &str, prompt: String) -> Result<Value, Refusal> {
        self.with(id, |s| {
            Self::open_or_refuse(s)?;
            if s.rec.state == SessionState::Failed {
                return Err(Refusal::finished(&s.rec.id, "failed"));
            }
            s.rec.queue.push_back(prompt);
            self.persist(s);
            self.pump(s);
            Ok(self.render(s))
        })
    }

    /// `POST /v1/sessions/{id}/stop`: kills the running turn and pauses the
    /// queue; during the launch (and its copy wait) it completes at once.
    pub fn stop(&self, id: &str) -> Result<Value, Refusal> {
        self.with(id, |s| {
            Self::open_or_refuse(s)?;
            self.journal_event(s, SessionEvent::Stopped);
            if s.launch.is_some() {
                // The launch answers with `PauseQueue`, which pauses and persists.
                self.drive(s, Some(Input::Stop));
            }
            self.end_turn(s, EndWhy::Stop);
            if !s.rec.paused {
                s.rec.paused = true;
                self.persist(s);
            }
            Ok(self.render(s))
        })
    }

    /// `POST /v1/sessions/{id}/resume`: unpauses the queue.
    pub fn resume(&self, id: &str) -> Result<Value, Refusal> {
        self.with(id, |s| {
            Self::open_or_refuse(s)?;
            if s.rec.paused {
                self.journal_event(s, SessionEvent::Resumed);
            }
            s.rec.paused = false;
            self.persist(s);
            self.pump(s);
            Ok(self.render(s))
        })
    }

    /// `POST /v1/sessions/{id}/close`: ends the launch (its harness never
    /// starts) or kills the running turn, and closes the session.
    pub fn close(&self, id: &str) -> Result<Value, Refusal> {
        self.with(id, |s| {
            if s.rec.state == SessionState::Closed {
                return Ok(self.render(s));
            }
            self.journal_event(s, SessionEvent::Closed);
            if s.launch.is_some() {
                // The launch settles as closed: unwatched, its permit (held or
                // queued) given back, the record persisted.
                self.drive(s, Some(Input::Close));
            }
            self.end_turn(s, EndWhy::Close);
            if s.rec.state != SessionState::Closed {
                s.rec.state = SessionState::Closed;
                s.rec.waiting_start = false;
                self.persist(s);
            }
            Ok(self.render(s))
        })
    }

    /// `POST /v1/sessions/{id}/relaunch`: brings a started session back
    /// through a relaunch, which never waits for a copy.
    pub fn relaunch(&self, id: &str, mode: RelaunchMode) -> Result<Value, Refusal> {
        self.with(id, |s| {
            Self::open_or_refuse(s)?;
            if s.rec.waiting_start || s.launch.is_some() {
                return Err(Refusal::new(
                    409,
                    "session_starting",
                    format!(
                        "Session {} is still starting; it cannot be relaunched before its harness has started.",
                        s.rec.id
                    ),
                ));
            }
            self.journal_event(
                s,
                SessionEvent::Relaunched {
                    mode: match mode {
                        RelaunchMode::Resume => MachineMode::Resume,
                        RelaunchMode::Wake => MachineMode::Wake,
                        RelaunchMode::Restart => MachineMode::Restart,
                    },
                },
            );
            if mode == RelaunchMode::Restart {
                self.end_turn(s, EndWhy::Restart);
            }
            if mode != RelaunchMode::Wake {
                s.rec.paused = false;
            }
            s.rec.error = None;
            let _ = self.begin_launch(s, true);
            Ok(self.render(s))
        })
    }

    /// `GET /v1/workspaces/{id}`: the folder a start registered.
    pub fn workspace(&self, id: &str) -> Result<Value, Refusal> {
        let folder = self.registry().workspaces.get(id).cloned().ok_or_else(|| {
            Refusal::new(
                404,
                "workspace_not_found",
                format!("No workspace {id} is registered yet; a session start registers it."),
            )
        })?;
        Ok(json!({
            "id": id,
            "folder": folder,
            "status_file": files::status_file(&folder),
        }))
    }
}

/// The first field (other than `project_copy` and `plan_only`, which a retry
/// may change) in which a retry differs from the start it repeats.
fn retry_difference(was: &Start, start: &Start) -> Option<&'static str> {
    if was.workspace != start.workspace {
        Some("workspace")
    } else if was.folder != start.folder {
        Some("folder")
    } else if was.harness != start.harness {
        Some("harness")
    } else if was.kind != start.kind {
        Some("kind")
    } else if was.parent != start.parent {
        Some("parent")
    } else if was.shared_sandbox != start.shared_sandbox {
        Some("shared_sandbox")
    } else if was.prompt != start.prompt {
        Some("prompt")
    } else {
        None
    }
}
