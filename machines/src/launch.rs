//! The session launch: from "start accepted" to "start the harness".
//!
//! A start first looks at the project copy's status file. It waits while the
//! copy is still coming (see [`holds`]), at most [`Config::copy_wait`] from the
//! moment the launch began, and only then asks for a startup permit, so a
//! waiting start holds no permit. A relaunch (resume, wake, restart of a
//! session that already started) never waits.

use serde::{Deserialize, Serialize};

use crate::copy::{CopyMark, MarkError, Observation};
use crate::Millis;

/// `PROJECT_COPY_WAIT`: the longest a launch waits for its project copy.
pub const PROJECT_COPY_WAIT: Millis = 5 * 60 * 1000;
/// `MARK_MAX_AGE`: a `copying` mark older than this holds no unpromised start.
pub const MARK_MAX_AGE: Millis = 5 * 60 * 1000;
/// `POLL`: how often the status file is read while waiting, as a fallback to
/// the runtime's change notifications.
pub const POLL: Millis = 250;

/// The launch's limits; the defaults are the constants above.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    /// Longest wait for a copy, from the moment the launch began.
    pub copy_wait: Millis,
    /// Oldest `copying` mark that still holds an unpromised start.
    pub mark_max_age: Millis,
    /// Interval between fallback reads of the status file.
    pub poll: Millis,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            copy_wait: PROJECT_COPY_WAIT,
            mark_max_age: MARK_MAX_AGE,
            poll: POLL,
        }
    }
}

/// What the start request said about this launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Plan {
    /// `project_copy: true`: the app is about to copy files into the folder.
    pub promised: bool,
    /// A resume, wake or restart of a session that already started.
    pub relaunch: bool,
}

/// Everything the runtime tells a launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Input {
    /// The status file was read (answer to [`Effect::Observe`] or a watch event).
    Observed(Observation),
    /// The watch saw the folder's parent change: worth reading the file again.
    Changed,
    /// A timer fired; the machine compares `now` with its own deadlines.
    Timeout,
    /// The app stopped the session.
    Stop,
    /// The app closed the session.
    Close,
    /// The service is shutting down; the persisted start will wait again.
    ServiceStop,
    /// A startup permit was granted (answer to [`Effect::AskPermit`]).
    PermitGranted,
    /// The harness is up; `native_id` once its first event named it.
    HarnessStarted {
        /// The harness's own session ID, if it reported one yet.
        native_id: Option<String>,
    },
    /// The harness could not be started.
    HarnessFailed(String),
}

/// The launch's named deadlines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timer {
    /// Read the status file again.
    Poll,
    /// The wait reaches [`Config::copy_wait`].
    CopyLimit,
}

/// Why a wait for the copy ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitEnd {
    /// No copy is coming: an unpromised start found no `copying` mark.
    NoCopy,
    /// The mark says `ready`.
    Landed,
    /// The mark says `failed: <reason>`; the harness starts anyway.
    CopyFailed(String),
    /// An unpromised start found a `copying` mark older than the mark age limit.
    MarkTooOld,
    /// The wait reached its limit; the harness starts as without a copy.
    Limit,
}

/// What the wait is currently held by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitOn {
    /// A promised copy whose status file does not exist (or is malformed).
    MissingMark,
    /// A `copying` mark.
    Copying,
}

/// Why a launch ended without a running harness (other than `Close`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The service stopped; the start is still persisted and will wait again.
    ServiceStop,
    /// The harness failed to start.
    HarnessFailed(String),
}

/// What the launch wants the runtime to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Read `<folder>.cloudroom-files` now and answer with [`Input::Observed`].
    Observe,
    /// The status file exists but is not a mark; it is treated as missing.
    MalformedMark(MarkError),
    /// The launch holds for the copy, at most until `until`.
    WaitFor {
        /// What holds it now.
        on: WaitOn,
        /// When the wait ends at the latest.
        until: Millis,
    },
    /// The wait that [`Effect::WaitFor`] began is over after `waited` ms.
    WaitEnded {
        /// Why it ended.
        why: WaitEnd,
        /// How long it lasted.
        waited: Millis,
    },
    /// Queue for a startup permit and answer with [`Input::PermitGranted`].
    AskPermit,
    /// Start the harness and answer with `HarnessStarted` or `HarnessFailed`.
    StartHarness,
    /// Give the startup permit back.
    ReleasePermit,
    /// Stop completed: pause the session's prompt queue.
    PauseQueue,
    /// The session is closed; its harness must never start.
    Closed,
    /// The launch ended without a harness.
    Ended(Reason),
}

/// Whether an input changed anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The input applied to the current state.
    Applied,
    /// The input does not apply in this state (late, duplicate or early); nothing changed.
    Ignored,
}

/// Where the launch is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The first read of the status file is under way.
    Checking,
    /// Holding for the copy.
    Waiting(WaitOn),
    /// Queued for a startup permit.
    AwaitingPermit,
    /// Permit held; the harness is being started.
    Starting,
    /// The harness is up.
    Started {
        /// The harness's own session ID, when known.
        native_id: Option<String>,
    },
    /// Closed by the app; the harness never starts.
    Closed,
    /// Ended without a harness.
    Ended(Reason),
}

/// The startup permit as the launch sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permit {
    /// Not asked for.
    None,
    /// Asked for, not granted yet.
    Asked,
    /// Granted and held.
    Held,
    /// Granted and given back.
    Released,
}

/// The launch's whole state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Where the launch is.
    pub phase: Phase,
    /// The startup permit.
    pub permit: Permit,
    /// When the launch (and so its wait) began.
    pub began: Millis,
    /// The next fallback read of the status file, while checking or waiting.
    pub next_poll: Option<Millis>,
    /// The last malformed-mark report, so a file that stays malformed is
    /// reported once.
    pub malformed: Option<MarkError>,
}

/// One session's launch.
#[derive(Debug, Clone)]
pub struct Launch {
    config: Config,
    plan: Plan,
    state: State,
    effects: std::collections::VecDeque<Effect>,
}

/// Whether `observation` holds a launch with `plan`: `Ok(what holds it)` or
/// `Err(why the wait is over)`. This is the rule of seed 000.
pub fn holds(plan: Plan, observation: &Observation, config: &Config) -> Result<WaitOn, WaitEnd> {
    match &observation.mark {
        Some(CopyMark::Ready) => Err(WaitEnd::Landed),
        Some(CopyMark::Failed(reason)) => Err(WaitEnd::CopyFailed(reason.clone())),
        Some(CopyMark::Copying) if plan.promised => Ok(WaitOn::Copying),
        Some(CopyMark::Copying) if observation.age.unwrap_or(0) <= config.mark_max_age => {
            Ok(WaitOn::Copying)
        }
        Some(CopyMark::Copying) => Err(WaitEnd::MarkTooOld),
        None if plan.promised => Ok(WaitOn::MissingMark),
        None => Err(WaitEnd::NoCopy),
    }
}

impl Launch {
    /// Begins a launch at `now`. A fresh start asks for the status file
    /// ([`Effect::Observe`]); a relaunch asks for a permit straight away.
    pub fn new(config: Config, plan: Plan, now: Millis) -> Launch {
        let mut launch = Launch {
            config,
            plan,
            state: State {
                phase: Phase::Checking,
                permit: Permit::None,
                began: now,
                next_poll: None,
                malformed: None,
            },
            effects: Default::default(),
        };
        if plan.relaunch {
            launch.ask_permit();
        } else {
            launch.observe(now);
        }
        launch
    }

    // ---- getters ----

    /// The current state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The plan this launch was made with.
    pub fn plan(&self) -> Plan {
        self.plan
    }

    /// When the wait ends at the latest, while checking or waiting.
    pub fn wait_limit(&self) -> Option<Millis> {
        self.in_wait()
            .then(|| self.state.began.saturating_add(self.config.copy_wait))
    }

    // ---- handle_* ----

    /// Applies one input at time `now`.
    pub fn handle(&mut self, now: Millis, input: Input) -> Outcome {
        match input {
            Input::Observed(o) if self.in_wait() => self.handle_observed(now, o),
            Input::Changed if self.in_wait() => {
                self.observe(now);
                Outcome::Applied
            }
            Input::Timeout if self.in_wait() => self.handle_timeout(now),
            Input::Stop if self.is_pending() => {
                self.effects.push_back(Effect::PauseQueue);
                Outcome::Applied
            }
            Input::Close if self.is_live() => {
                self.finish(Phase::Closed, Effect::Closed);
                Outcome::Applied
            }
            Input::ServiceStop if self.is_live() => {
                let r = Reason::ServiceStop;
                self.finish(Phase::Ended(r.clone()), Effect::Ended(r));
                Outcome::Applied
            }
            Input::PermitGranted if self.state.permit == Permit::Asked => self.handle_permit(),
            Input::HarnessStarted { native_id } if self.state.phase == Phase::Starting => {
                self.release_permit();
                self.state.phase = Phase::Started { native_id };
                Outcome::Applied
            }
            Input::HarnessFailed(msg) if self.state.phase == Phase::Starting => {
                self.release_permit();
                let r = Reason::HarnessFailed(msg);
                self.state.phase = Phase::Ended(r.clone());
                self.effects.push_back(Effect::Ended(r));
                Outcome::Applied
            }
            _ => Outcome::Ignored,
        }
    }

    fn handle_observed(&mut self, now: Millis, o: Observation) -> Outcome {
        if o.malformed != self.state.malformed {
            if let Some(e) = &o.malformed {
                self.effects.push_back(Effect::MalformedMark(e.clone()));
            }
            self.state.malformed = o.malformed.clone();
        }
        let limit = self.state.began.saturating_add(self.config.copy_wait);
        match holds(self.plan, &o, &self.config) {
            Ok(_) if now >= limit => self.end_wait(now, WaitEnd::Limit),
            Ok(on) => {
                if self.state.phase == Phase::Checking {
                    self.effects.push_back(Effect::WaitFor { on, until: limit });
                }
                self.state.phase = Phase::Waiting(on);
            }
            Err(why) => self.end_wait(now, why),
        }
        Outcome::Applied
    }

    fn handle_timeout(&mut self, now: Millis) -> Outcome {
        let limit = self.state.began.saturating_add(self.config.copy_wait);
        if now >= limit {
            self.end_wait(now, WaitEnd::Limit);
            Outcome::Applied
        } else if self.state.next_poll.is_some_and(|t| now >= t) {
            self.observe(now);
            Outcome::Applied
        } else {
            Outcome::Ignored
        }
    }

    fn handle_permit(&mut self) -> Outcome {
        self.state.permit = Permit::Held;
        if self.state.phase == Phase::AwaitingPermit {
            self.state.phase = Phase::Starting;
            self.effects.push_back(Effect::StartHarness);
        } else {
            // Closed or ended while queued: the permit is not needed any more.
            self.release_permit();
        }
        Outcome::Applied
    }

    // ---- poll_* ----

    /// The next effect to carry out, oldest first.
    pub fn poll_effect(&mut self) -> Option<Effect> {
        self.effects.pop_front()
    }

    /// The earliest deadline and which timer it is, while the launch waits.
    pub fn poll_timeout(&self) -> Option<(Millis, Timer)> {
        let limit = self.wait_limit()?;
        match self.state.next_poll {
            Some(p) if p < limit => Some((p, Timer::Poll)),
            _ => Some((limit, Timer::CopyLimit)),
        }
    }

    // ---- helpers ----

    fn in_wait(&self) -> bool {
        matches!(self.state.phase, Phase::Checking | Phase::Waiting(_))
    }

    /// Before the harness is up: stop completes by pausing the queue.
    fn is_pending(&self) -> bool {
        matches!(
            self.state.phase,
            Phase::Checking | Phase::Waiting(_) | Phase::AwaitingPermit | Phase::Starting
        )
    }

    /// Not closed or ended yet.
    fn is_live(&self) -> bool {
        self.is_pending() || matches!(self.state.phase, Phase::Started { .. })
    }

    fn observe(&mut self, now: Millis) {
        self.state.next_poll = Some(now.saturating_add(self.config.poll));
        self.effects.push_back(Effect::Observe);
    }

    fn end_wait(&mut self, now: Millis, why: WaitEnd) {
        if matches!(self.state.phase, Phase::Waiting(_)) {
            let waited = now.saturating_sub(self.state.began);
            self.effects.push_back(Effect::WaitEnded { why, waited });
        }
        self.state.next_poll = None;
        self.ask_permit();
    }

    fn ask_permit(&mut self) {
        self.state.phase = Phase::AwaitingPermit;
        self.state.permit = Permit::Asked;
        self.effects.push_back(Effect::AskPermit);
    }

    fn release_permit(&mut self) {
        if self.state.permit == Permit::Held {
            self.state.permit = Permit::Released;
            self.effects.push_back(Effect::ReleasePermit);
        }
    }

    fn finish(&mut self, phase: Phase, effect: Effect) {
        self.state.next_poll = None;
        self.state.phase = phase;
        self.effects.push_back(effect);
        self.release_permit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::copy::CopyMark;

    const MIN: Millis = 60_000;

    fn drain(l: &mut Launch) -> Vec<Effect> {
        std::iter::from_fn(|| l.poll_effect()).collect()
    }

    fn copying(age: Millis) -> Input {
        Input::Observed(Observation::marked(CopyMark::Copying, age))
    }

    /// Runs a launch with `plan` whose status file always reads `mark`,
    /// delivering every timeout on time; returns when it asked for a permit.
    fn asks_permit_at(plan: Plan, obs: Observation) -> Millis {
        let mut l = Launch::new(Config::default(), plan, 1_000);
        let mut now = 1_000;
        loop {
            while let Some(e) = l.poll_effect() {
                match e {
                    Effect::Observe => {
                        l.handle(now, Input::Observed(obs.clone()));
                    }
                    Effect::AskPermit => return now,
                    _ => {}
                }
            }
            let (at, _) = l.poll_timeout().expect("a waiting launch has a deadline");
            now = at;
            l.handle(now, Input::Timeout);
        }
    }

    #[test]
    fn a_launch_waits_for_a_copy_only_while_it_runs_and_never_past_its_limit() {
        let promised = Plan {
            promised: true,
            relaunch: false,
        };
        let unpromised = Plan::default();
        let copying_fresh = Observation::marked(CopyMark::Copying, 0);
        // No copy: no wait.
        assert_eq!(asks_permit_at(unpromised, Observation::missing()), 1_000);
        // A stuck or unmarked promised copy waits exactly until the limit.
        assert_eq!(
            asks_permit_at(promised, copying_fresh.clone()),
            1_000 + 5 * MIN
        );
        assert_eq!(
            asks_permit_at(promised, Observation::missing()),
            1_000 + 5 * MIN
        );
        // Ready or failed returns at once.
        assert_eq!(
            asks_permit_at(promised, Observation::marked(CopyMark::Ready, 0)),
            1_000
        );
        let failed = Observation::marked(CopyMark::Failed("no space".into()), 0);
        assert_eq!(asks_permit_at(promised, failed), 1_000);
        // A mark older than the limit holds a promised start but not an unpromised one.
        let old = Observation::marked(CopyMark::Copying, 6 * MIN);
        assert_eq!(asks_permit_at(unpromised, old.clone()), 1_000);
        assert_eq!(asks_permit_at(promised, old), 1_000 + 5 * MIN);
        // Cancelling ends the wait: close, and the harness never starts.
        let mut l = Launch::new(Config::default(), promised, 0);
        l.handle(0, copying(0));
        drain(&mut l);
        assert_eq!(l.handle(10, Input::Close), Outcome::Applied);
        assert_eq!(drain(&mut l), vec![Effect::Closed]);
        assert_eq!(l.poll_timeout(), None);
        assert_eq!(
            l.handle(20, Input::Observed(Observation::marked(CopyMark::Ready, 0))),
            Outcome::Ignored
        );
        assert_eq!(l.handle(20, Input::PermitGranted), Outcome::Ignored);
        assert!(drain(&mut l).is_empty());
    }

    #[test]
    fn an_unpromised_wait_ends_once_the_mark_grows_too_old() {
        let mut l = Launch::new(Config::default(), Plan::default(), 0);
        l.handle(0, copying(4 * MIN));
        assert!(matches!(
            drain(&mut l)[..],
            [Effect::Observe, Effect::WaitFor { .. }]
        ));
        l.handle(MIN + 1, copying(5 * MIN + 1));
        assert_eq!(
            drain(&mut l),
            vec![
                Effect::WaitEnded {
                    why: WaitEnd::MarkTooOld,
                    waited: MIN + 1
                },
                Effect::AskPermit
            ]
        );
    }

    #[test]
    fn early_and_duplicate_timeouts_change_nothing() {
        let mut l = Launch::new(
            Config::default(),
            Plan {
                promised: true,
                relaunch: false,
            },
            0,
        );
        l.handle(0, Input::Observed(Observation::missing()));
        drain(&mut l);
        assert_eq!(l.handle(100, Input::Timeout), Outcome::Ignored);
        assert_eq!(l.handle(250, Input::Timeout), Outcome::Applied);
        assert_eq!(drain(&mut l), vec![Effect::Observe]);
        assert_eq!(l.handle(250, Input::Timeout), Outcome::Ignored);
    }

    #[test]
    fn a_malformed_mark_is_reported_once_and_treated_as_missing() {
        let mut l = Launch::new(
            Config::default(),
            Plan {
                promised: true,
                relaunch: false,
            },
            0,
        );
        let bad = Observation::from_file(b"half", 0);
        l.handle(0, Input::Observed(bad.clone()));
        let first = drain(&mut l);
        assert!(
            first.contains(&Effect::MalformedMark(crate::copy::MarkError::Unknown(
                "half".into()
            )))
        );
        assert_eq!(l.state().phase, Phase::Waiting(WaitOn::MissingMark));
        l.handle(250, Input::Observed(bad));
        assert!(drain(&mut l).is_empty());
    }
}
