//! The session launch: from "start accepted" to "start the harness".
//!
//! A start first looks at the project copy's status file. It waits while the
//! copy is still coming (see [`holds`]), at most [`Config::copy_wait`] from the
//! moment the launch began, and only then asks for a startup permit, so a
//! waiting start holds no permit. A relaunch (resume, wake, restart of a
//! session that already started) never waits.
//!
//! The machine decides every read of the status file. It asks the runtime to
//! watch the file's path ([`LaunchEffect::Watch`]) and learns whether that worked
//! ([`Input::Watched`]). Unwatched, it reads every [`Config::poll`]; watched,
//! it reads on each change the watch reports ([`Input::Changed`]) and on its
//! own deadlines only: an unpromised wait on a `copying` mark reads again at
//! the moment the mark turns [`Config::mark_max_age`] old. A watch that is
//! lost (`Watched(false)`) makes it read at once, poll again and ask for a
//! new watch.

use serde::{Deserialize, Serialize};

use crate::copy::{CopyMark, MarkError, Observation};
use crate::time::Millis;

/// `PROJECT_COPY_WAIT`: the longest a launch waits for its project copy.
pub const PROJECT_COPY_WAIT: Millis = 5 * 60 * 1000;
/// `MARK_MAX_AGE`: a `copying` mark older than this holds no unpromised start.
pub const MARK_MAX_AGE: Millis = 5 * 60 * 1000;
/// `POLL`: how often the status file is read while waiting unwatched.
pub const POLL: Millis = 250;
/// A `copying` mark dated further ahead of the service's clock than this is
/// clock trouble, not a fresh copy: it holds no unpromised start.
pub const MARK_MAX_AHEAD: Millis = 60 * 1000;

/// The launch's limits; the defaults are the constants above.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    /// Longest wait for a copy, from the moment the launch began.
    pub copy_wait: Millis,
    /// Oldest `copying` mark that still holds an unpromised start.
    pub mark_max_age: Millis,
    /// Interval between reads of the status file while it is not watched.
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
    /// The status file was read (answer to [`LaunchEffect::Observe`]).
    Observed(Observation),
    /// The watch saw something change on the status file's path.
    Changed,
    /// Whether the status file's path is watched: `true` answers
    /// [`LaunchEffect::Watch`]; `false` answers a watch that could not be made, or
    /// says that a watch was lost (events dropped, a folder on the path
    /// moved or deleted), after which a change may go unreported.
    Watched(bool),
    /// A timer fired; the machine compares `now` with its own deadlines.
    Timeout,
    /// The app stopped the session.
    Stop,
    /// The app closed the session.
    Close,
    /// The service is shutting down; the persisted start will wait again.
    ServiceStop,
    /// A startup permit was granted (answer to [`LaunchEffect::AskPermit`]).
    PermitGranted,
    /// The harness is up; `native_id` once its first event named it.
    HarnessStarted {
        /// The harness's own session ID, if it reported one yet.
        native_id: Option<String>,
    },
    /// The harness could not be started (the session says why).
    HarnessFailed,
}

/// The launch's named deadlines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timer {
    /// Read the status file again (only while it is not watched).
    Poll,
    /// The `copying` mark holding an unpromised wait turns too old: read it.
    MarkAge,
    /// The wait reaches [`Config::copy_wait`].
    CopyLimit,
}

/// Why a wait for the copy ended (also when it never held the launch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitEnd {
    /// No copy is coming: an unpromised start found no `copying` mark.
    NoCopy,
    /// The mark says `ready`.
    Landed,
    /// The mark says `failed` or `failed: <reason>` (the reason, maybe
    /// empty); the harness starts anyway.
    CopyFailed(String),
    /// An unpromised start found a `copying` mark older than the mark age limit.
    MarkTooOld,
    /// An unpromised start found a `copying` mark dated more than
    /// [`MARK_MAX_AHEAD`] ahead of the service's clock.
    MarkInFuture,
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
    HarnessFailed,
}

/// What the launch wants done: the session acts on its start, pause and
/// end itself and passes its work for the runtime on.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Start the harness and answer with `HarnessStarted` or `HarnessFailed`.
    StartHarness,
    /// Stop completed: pause the session's prompt queue.
    PauseQueue,
    /// The session is closed; its harness must never start.
    Closed,
    /// The launch ended without a harness.
    Ended(Reason),
    /// Work for the runtime (its serde form is the work's own).
    #[serde(untagged)]
    Runtime(LaunchEffect),
}

impl std::fmt::Debug for Effect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Effect::StartHarness => f.write_str("StartHarness"),
            Effect::PauseQueue => f.write_str("PauseQueue"),
            Effect::Closed => f.write_str("Closed"),
            Effect::Ended(r) => f.debug_tuple("Ended").field(r).finish(),
            Effect::Runtime(e) => e.fmt(f),
        }
    }
}

/// The launch's work for the runtime: the status file's watch and reads,
/// the startup permit, and the copy wait's reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaunchEffect {
    /// Watch the status file's path for changes and answer with
    /// [`Input::Watched`] (no answer means no watch).
    Watch,
    /// Stop watching the status file's path.
    Unwatch,
    /// Read `<folder>.cloudroom-files` now and answer with [`Input::Observed`].
    Observe,
    /// The status file exists but is not a mark; it is treated as missing.
    MalformedMark(MarkError),
    /// A `copying` mark is dated `ahead` ms ahead of the service's clock
    /// (over [`MARK_MAX_AHEAD`]): clock trouble, reported once per launch.
    MarkInFuture {
        /// How far ahead of the clock its mtime lies.
        ahead: Millis,
    },
    /// The launch holds for the copy, at most until `until`.
    WaitFor {
        /// What holds it now.
        on: WaitOn,
        /// When the wait ends at the latest.
        until: Millis,
    },
    /// The check for the copy is over after `waited` ms (0 or a few when
    /// the first read let the launch go): emitted once per fresh launch
    /// that gets that far, whether or not a [`LaunchEffect::WaitFor`] came first.
    WaitEnded {
        /// Why it ended.
        why: WaitEnd,
        /// How long it lasted.
        waited: Millis,
    },
    /// Queue for a startup permit and answer with [`Input::PermitGranted`].
    AskPermit,
    /// Withdraw the queued ask: the launch is over before its permit came.
    /// A grant already on its way still arrives, and is given back.
    CancelPermitAsk,
    /// Give a startup permit back (the one held, or one granted when no
    /// launch wanted it).
    ReleasePermit,
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
    /// The status file's path is watched: changes are reported, so the
    /// machine does not poll.
    pub watched: bool,
    /// A read was asked for ([`LaunchEffect::Observe`]) and not answered yet.
    pub reading: bool,
    /// A read was wanted while one was under way: it is asked for once
    /// that one answers, so reads never overlap (an older read answering
    /// after a newer one would have the last word).
    #[serde(default)]
    pub reread: bool,
    /// The next poll of the status file, while checking or waiting unwatched.
    pub next_poll: Option<Millis>,
    /// When the `copying` mark that holds an unpromised wait turns
    /// `mark_max_age` old (from its last read), so it is read then.
    pub mark_ages_at: Option<Millis>,
    /// The last malformed-mark report, so a file that stays malformed is
    /// reported once.
    pub malformed: Option<MarkError>,
    /// A mark dated ahead of the clock was reported (once per launch).
    pub ahead_reported: bool,
}

/// One session's launch.
#[derive(Debug, Clone)]
pub struct Launch {
    config: Config,
    plan: Plan,
    state: State,
    effects: std::collections::VecDeque<Effect>,
}

/// Whether a `copying` mark is dated so far ahead of the clock that it is
/// clock trouble rather than a fresh copy.
fn far_ahead(observation: &Observation) -> bool {
    observation.ahead.is_some_and(|a| a > MARK_MAX_AHEAD)
}

/// Whether `observation` holds a launch with `plan`: `Ok(what holds it)` or
/// `Err(why the wait is over)`. This is the rule of seed 000.
pub fn holds(plan: Plan, observation: &Observation, config: &Config) -> Result<WaitOn, WaitEnd> {
    match &observation.mark {
        Some(CopyMark::Ready) => Err(WaitEnd::Landed),
        Some(CopyMark::Failed(reason)) => Err(WaitEnd::CopyFailed(reason.clone())),
        Some(CopyMark::Copying) if plan.promised => Ok(WaitOn::Copying),
        Some(CopyMark::Copying) if far_ahead(observation) => Err(WaitEnd::MarkInFuture),
        Some(CopyMark::Copying) if observation.age.unwrap_or(0) <= config.mark_max_age => {
            Ok(WaitOn::Copying)
        }
        Some(CopyMark::Copying) => Err(WaitEnd::MarkTooOld),
        None if plan.promised => Ok(WaitOn::MissingMark),
        None => Err(WaitEnd::NoCopy),
    }
}

impl Launch {
    /// Begins a launch at `now`. A fresh start asks for a watch on the
    /// status file's path and for one read of it ([`LaunchEffect::Watch`],
    /// [`LaunchEffect::Observe`]); a relaunch asks for a permit straight away.
    pub fn new(config: Config, plan: Plan, now: Millis) -> Launch {
        let mut launch = Launch {
            config,
            plan,
            state: State {
                phase: Phase::Checking,
                permit: Permit::None,
                began: now,
                watched: false,
                reading: false,
                reread: false,
                next_poll: None,
                mark_ages_at: None,
                malformed: None,
                ahead_reported: false,
            },
            effects: Default::default(),
        };
        if plan.relaunch {
            launch.ask_permit();
        } else {
            // The watch first, so that the read comes after it: a change
            // between the two is then reported, never lost.
            launch
                .effects
                .push_back(Effect::Runtime(LaunchEffect::Watch));
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
            Input::Watched(w) if self.in_wait() && w != self.state.watched => {
                self.handle_watched(now, w)
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
            Input::HarnessFailed if self.state.phase == Phase::Starting => {
                self.release_permit();
                let r = Reason::HarnessFailed;
                self.state.phase = Phase::Ended(r.clone());
                self.effects.push_back(Effect::Ended(r));
                Outcome::Applied
            }
            _ => Outcome::Ignored,
        }
    }

    fn handle_observed(&mut self, now: Millis, o: Observation) -> Outcome {
        self.state.reading = false;
        if o.malformed != self.state.malformed {
            if let Some(e) = &o.malformed {
                self.effects
                    .push_back(Effect::Runtime(LaunchEffect::MalformedMark(e.clone())));
            }
            self.state.malformed = o.malformed.clone();
        }
        if o.mark == Some(CopyMark::Copying) && far_ahead(&o) && !self.state.ahead_reported {
            self.state.ahead_reported = true;
            let ahead = o.ahead.unwrap_or(0);
            self.effects
                .push_back(Effect::Runtime(LaunchEffect::MarkInFuture { ahead }));
        }
        let limit = self.state.began.saturating_add(self.config.copy_wait);
        match holds(self.plan, &o, &self.config) {
            Ok(_) if now >= limit => self.end_wait(now, WaitEnd::Limit),
            Ok(on) => {
                if self.state.phase == Phase::Checking {
                    self.effects
                        .push_back(Effect::Runtime(LaunchEffect::WaitFor { on, until: limit }));
                }
                self.state.phase = Phase::Waiting(on);
                self.state.mark_ages_at = self.mark_ages_at(now, &o);
            }
            Err(why) => self.end_wait(now, why),
        }
        if std::mem::take(&mut self.state.reread) && self.in_wait() {
            self.observe(now);
        }
        Outcome::Applied
    }

    /// When a `copying` mark that holds an unpromised start turns too old:
    /// the first millisecond its age exceeds `mark_max_age`.
    fn mark_ages_at(&self, now: Millis, o: &Observation) -> Option<Millis> {
        if self.plan.promised || o.mark != Some(CopyMark::Copying) {
            return None;
        }
        let left = self
            .config
            .mark_max_age
            .saturating_sub(o.age.unwrap_or(0))
            .saturating_add(o.ahead.unwrap_or(0));
        Some(now.saturating_add(left).saturating_add(1))
    }

    fn handle_watched(&mut self, now: Millis, watched: bool) -> Outcome {
        self.state.watched = watched;
        if watched {
            // Changes are reported from now on: no more polls. A read asked
            // for before the watch existed may have missed one, so read
            // again unless a read is under way (it comes after the watch).
            self.state.next_poll = None;
            if !self.state.reading {
                self.observe(now);
            }
        } else {
            // A change may have gone unreported: ask for a new watch, read
            // at once and poll until a watch is back.
            self.effects.push_back(Effect::Runtime(LaunchEffect::Watch));
            self.observe(now);
        }
        Outcome::Applied
    }

    fn handle_timeout(&mut self, now: Millis) -> Outcome {
        let limit = self.state.began.saturating_add(self.config.copy_wait);
        let due = |t: Option<Millis>| t.is_some_and(|t| now >= t);
        if now >= limit {
            self.end_wait(now, WaitEnd::Limit);
            Outcome::Applied
        } else if due(self.state.next_poll) || due(self.state.mark_ages_at) {
            // The read answers with a new age deadline if the mark still holds.
            self.state.mark_ages_at = None;
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
        let effect = self.effects.pop_front();
        if effect.is_none() {
            // Drained: a waiting launch keeps no buffer it no longer uses.
            self.effects = Default::default();
        }
        effect
    }

    /// The earliest deadline and which timer it is, while the launch waits:
    /// the next poll (unwatched only), the moment the holding mark turns too
    /// old, or the copy limit, whichever comes first.
    pub fn poll_timeout(&self) -> Option<(Millis, Timer)> {
        let limit = self.wait_limit()?;
        [
            (self.state.next_poll, Timer::Poll),
            (self.state.mark_ages_at, Timer::MarkAge),
        ]
        .into_iter()
        .filter_map(|(at, timer)| Some((at?, timer)))
        .filter(|(at, _)| *at < limit)
        .min_by_key(|(at, _)| *at)
        .or(Some((limit, Timer::CopyLimit)))
    }

    // ---- helpers ----

    fn in_wait(&self) -> bool {
        matches!(self.state.phase, Phase::Checking | Phase::Waiting(_))
    }

    /// Whether the launch is under way, before its harness is up (the copy
    /// wait, the permit, the first turn until it named its session): a stop
    /// then completes by pausing the queue.
    pub fn is_pending(&self) -> bool {
        matches!(
            self.state.phase,
            Phase::Checking | Phase::Waiting(_) | Phase::AwaitingPermit | Phase::Starting
        )
    }

    /// Not closed or ended yet.
    fn is_live(&self) -> bool {
        self.is_pending() || matches!(self.state.phase, Phase::Started { .. })
    }

    /// Asks for a read (or, while one is under way, for another once it
    /// answers); unwatched, the next poll comes `poll` after it.
    fn observe(&mut self, now: Millis) {
        self.state.next_poll = (!self.state.watched).then(|| now.saturating_add(self.config.poll));
        if self.state.reading {
            self.state.reread = true;
            return;
        }
        self.state.reading = true;
        self.effects
            .push_back(Effect::Runtime(LaunchEffect::Observe));
    }

    fn end_wait(&mut self, now: Millis, why: WaitEnd) {
        let waited = now.saturating_sub(self.state.began);
        self.effects
            .push_back(Effect::Runtime(LaunchEffect::WaitEnded { why, waited }));
        self.leave_wait();
        self.ask_permit();
    }

    /// No more reads, deadlines or watch: the wait is over.
    fn leave_wait(&mut self) {
        self.state.next_poll = None;
        self.state.mark_ages_at = None;
        self.state.reading = false;
        self.state.reread = false;
        self.state.watched = false;
        self.effects
            .push_back(Effect::Runtime(LaunchEffect::Unwatch));
    }

    fn ask_permit(&mut self) {
        self.state.phase = Phase::AwaitingPermit;
        self.state.permit = Permit::Asked;
        self.effects
            .push_back(Effect::Runtime(LaunchEffect::AskPermit));
    }

    fn release_permit(&mut self) {
        if self.state.permit == Permit::Held {
            self.state.permit = Permit::Released;
            self.effects
                .push_back(Effect::Runtime(LaunchEffect::ReleasePermit));
        }
    }

    fn finish(&mut self, phase: Phase, effect: Effect) {
        let waiting = self.in_wait();
        self.state.phase = phase;
        self.effects.push_back(effect);
        if waiting {
            self.leave_wait();
        }
        if self.state.permit == Permit::Asked {
            self.effects
                .push_back(Effect::Runtime(LaunchEffect::CancelPermitAsk));
        }
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

    const PROMISED: Plan = Plan {
        promised: true,
        relaunch: false,
    };

    /// Runs a launch with `plan` whose status file always reads `mark`,
    /// delivering every timeout on time; returns when it asked for a permit.
    fn asks_permit_at(plan: Plan, obs: Observation) -> Millis {
        let mut l = Launch::new(Config::default(), plan, 1_000);
        let mut now = 1_000;
        loop {
            while let Some(e) = l.poll_effect() {
                match e {
                    Effect::Runtime(LaunchEffect::Observe) => {
                        l.handle(now, Input::Observed(obs.clone()));
                    }
                    Effect::Runtime(LaunchEffect::AskPermit) => return now,
                    _ => {}
                }
            }
            let (at, _) = l.poll_timeout().expect("a waiting launch has a deadline");
            now = at;
            l.handle(now, Input::Timeout);
        }
    }

    /// A fresh launch at 0 whose watch is armed and whose first read gave `first`.
    fn watched(plan: Plan, first: Input) -> Launch {
        let mut l = Launch::new(Config::default(), plan, 0);
        assert_eq!(
            drain(&mut l),
            [
                Effect::Runtime(LaunchEffect::Watch),
                Effect::Runtime(LaunchEffect::Observe)
            ]
        );
        assert_eq!(l.handle(0, Input::Watched(true)), Outcome::Applied);
        l.handle(0, first);
        drain(&mut l);
        l
    }

    #[test]
    fn a_launch_waits_for_a_copy_only_while_it_runs_and_never_past_its_limit() {
        let unpromised = Plan::default();
        let copying_fresh = Observation::marked(CopyMark::Copying, 0);
        // No copy: no wait.
        assert_eq!(asks_permit_at(unpromised, Observation::missing()), 1_000);
        // A stuck or unmarked promised copy waits exactly until the limit.
        assert_eq!(
            asks_permit_at(PROMISED, copying_fresh.clone()),
            1_000 + 5 * MIN
        );
        assert_eq!(
            asks_permit_at(PROMISED, Observation::missing()),
            1_000 + 5 * MIN
        );
        // Ready or failed returns at once.
        assert_eq!(
            asks_permit_at(PROMISED, Observation::marked(CopyMark::Ready, 0)),
            1_000
        );
        let failed = Observation::marked(CopyMark::Failed("no space".into()), 0);
        assert_eq!(asks_permit_at(PROMISED, failed), 1_000);
        // A mark older than the limit holds a promised start but not an unpromised one.
        let old = Observation::marked(CopyMark::Copying, 6 * MIN);
        assert_eq!(asks_permit_at(unpromised, old.clone()), 1_000);
        assert_eq!(asks_permit_at(PROMISED, old), 1_000 + 5 * MIN);
        // Cancelling ends the wait: close, and the harness never starts.
        let mut l = Launch::new(Config::default(), PROMISED, 0);
        l.handle(0, copying(0));
        drain(&mut l);
        assert_eq!(l.handle(10, Input::Close), Outcome::Applied);
        assert_eq!(
            drain(&mut l),
            vec![Effect::Closed, Effect::Runtime(LaunchEffect::Unwatch)]
        );
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
            [
                Effect::Runtime(LaunchEffect::Watch),
                Effect::Runtime(LaunchEffect::Observe),
                Effect::Runtime(LaunchEffect::WaitFor { .. })
            ]
        ));
        l.handle(MIN + 1, copying(5 * MIN + 1));
        assert_eq!(
            drain(&mut l),
            vec![
                Effect::Runtime(LaunchEffect::WaitEnded {
                    why: WaitEnd::MarkTooOld,
                    waited: MIN + 1
                }),
                Effect::Runtime(LaunchEffect::Unwatch),
                Effect::Runtime(LaunchEffect::AskPermit)
            ]
        );
    }

    #[test]
    fn early_and_duplicate_timeouts_change_nothing() {
        let mut l = Launch::new(Config::default(), PROMISED, 0);
        l.handle(0, Input::Observed(Observation::missing()));
        drain(&mut l);
        assert_eq!(l.handle(100, Input::Timeout), Outcome::Ignored);
        assert_eq!(l.handle(250, Input::Timeout), Outcome::Applied);
        assert_eq!(drain(&mut l), vec![Effect::Runtime(LaunchEffect::Observe)]);
        assert_eq!(l.handle(250, Input::Timeout), Outcome::Ignored);
    }

    #[test]
    fn a_malformed_mark_is_reported_once_and_treated_as_missing() {
        let mut l = Launch::new(Config::default(), PROMISED, 0);
        let bad = Observation::from_file(b"half", 0);
        l.handle(0, Input::Observed(bad.clone()));
        let first = drain(&mut l);
        assert!(first.contains(&Effect::Runtime(LaunchEffect::MalformedMark(
            crate::copy::MarkError::Unknown(4)
        ))));
        assert_eq!(l.state().phase, Phase::Waiting(WaitOn::MissingMark));
        l.handle(250, Input::Observed(bad));
        assert!(drain(&mut l).is_empty());
    }

    #[test]
    fn a_bare_failed_mark_ends_the_wait_at_once() {
        let bare = Observation::from_file(b"failed\n", 0);
        assert_eq!(asks_permit_at(PROMISED, bare.clone()), 1_000);
        // Also after a wait, with the empty reason.
        let mut l = watched(PROMISED, copying(0));
        l.handle(700, Input::Changed);
        assert_eq!(drain(&mut l), [Effect::Runtime(LaunchEffect::Observe)]);
        l.handle(700, Input::Observed(bare));
        assert_eq!(
            drain(&mut l),
            [
                Effect::Runtime(LaunchEffect::WaitEnded {
                    why: WaitEnd::CopyFailed(String::new()),
                    waited: 700
                }),
                Effect::Runtime(LaunchEffect::Unwatch),
                Effect::Runtime(LaunchEffect::AskPermit)
            ]
        );
    }

    #[test]
    fn a_failure_at_the_first_read_is_reported() {
        let mut l = Launch::new(Config::default(), PROMISED, 0);
        drain(&mut l);
        let failed = Observation::marked(CopyMark::Failed("disk full".into()), 0);
        l.handle(2, Input::Observed(failed));
        assert_eq!(
            drain(&mut l),
            [
                Effect::Runtime(LaunchEffect::WaitEnded {
                    why: WaitEnd::CopyFailed("disk full".into()),
                    waited: 2
                }),
                Effect::Runtime(LaunchEffect::Unwatch),
                Effect::Runtime(LaunchEffect::AskPermit)
            ]
        );
    }

    #[test]
    fn a_copying_mark_dated_over_a_minute_ahead_holds_no_unpromised_start() {
        let ahead = |ms| Observation::marked(CopyMark::Copying, 0).dated_ahead(ms);
        // Within a minute: a fresh copy, held; its age deadline counts the lead.
        let l = watched(Plan::default(), Input::Observed(ahead(MIN)));
        assert_eq!(l.state().phase, Phase::Waiting(WaitOn::Copying));
        assert_eq!(l.poll_timeout(), Some((5 * MIN, Timer::CopyLimit)));
        assert_eq!(l.state().mark_ages_at, Some(6 * MIN + 1));
        // Over a minute: clock trouble, reported, and the start goes.
        let mut l = Launch::new(Config::default(), Plan::default(), 0);
        drain(&mut l);
        l.handle(3, Input::Observed(ahead(MIN + 1)));
        assert_eq!(
            drain(&mut l),
            [
                Effect::Runtime(LaunchEffect::MarkInFuture { ahead: MIN + 1 }),
                Effect::Runtime(LaunchEffect::WaitEnded {
                    why: WaitEnd::MarkInFuture,
                    waited: 3
                }),
                Effect::Runtime(LaunchEffect::Unwatch),
                Effect::Runtime(LaunchEffect::AskPermit)
            ]
        );
    }

    #[test]
    fn a_copying_mark_dated_ahead_holds_a_promised_start_and_is_reported_once() {
        let far = Observation::marked(CopyMark::Copying, 0).dated_ahead(10 * MIN);
        let mut l = Launch::new(Config::default(), PROMISED, 0);
        drain(&mut l);
        l.handle(0, Input::Observed(far.clone()));
        assert_eq!(
            drain(&mut l),
            [
                Effect::Runtime(LaunchEffect::MarkInFuture { ahead: 10 * MIN }),
                Effect::Runtime(LaunchEffect::WaitFor {
                    on: WaitOn::Copying,
                    until: 5 * MIN
                })
            ]
        );
        l.handle(250, Input::Timeout);
        l.handle(250, Input::Observed(far));
        assert_eq!(drain(&mut l), [Effect::Runtime(LaunchEffect::Observe)]);
        assert_eq!(l.state().phase, Phase::Waiting(WaitOn::Copying));
    }

    #[test]
    fn a_watched_wait_reads_only_on_changes_and_at_its_deadlines() {
        // Promised, watched: no poll at all, only the copy limit.
        let mut l = watched(PROMISED, Input::Observed(Observation::missing()));
        assert_eq!(l.poll_timeout(), Some((5 * MIN, Timer::CopyLimit)));
        assert_eq!(l.handle(250, Input::Timeout), Outcome::Ignored);
        assert_eq!(l.handle(900, Input::Changed), Outcome::Applied);
        assert_eq!(drain(&mut l), [Effect::Runtime(LaunchEffect::Observe)]);
        l.handle(900, copying(0));
        assert!(drain(&mut l).is_empty());
        assert_eq!(l.poll_timeout(), Some((5 * MIN, Timer::CopyLimit)));
    }

    #[test]
    fn an_unpromised_watched_wait_reads_when_its_mark_turns_too_old() {
        let mut l = watched(Plan::default(), copying(4 * MIN));
        // The mark turns 5 min old at 1 min: the first ms it is older is the deadline.
        assert_eq!(l.poll_timeout(), Some((MIN + 1, Timer::MarkAge)));
        assert_eq!(l.handle(MIN, Input::Timeout), Outcome::Ignored);
        assert_eq!(l.handle(MIN + 10, Input::Timeout), Outcome::Applied);
        assert_eq!(drain(&mut l), [Effect::Runtime(LaunchEffect::Observe)]);
        assert_eq!(l.handle(MIN + 10, Input::Timeout), Outcome::Ignored);
        l.handle(MIN + 10, copying(5 * MIN + 10));
        assert_eq!(
            drain(&mut l),
            [
                Effect::Runtime(LaunchEffect::WaitEnded {
                    why: WaitEnd::MarkTooOld,
                    waited: MIN + 10
                }),
                Effect::Runtime(LaunchEffect::Unwatch),
                Effect::Runtime(LaunchEffect::AskPermit)
            ]
        );
        // A mark rewritten meanwhile (a copy restarting) moves the deadline.
        let mut l = watched(Plan::default(), copying(4 * MIN));
        l.handle(30_000, Input::Changed);
        l.handle(30_000, copying(0));
        assert_eq!(l.poll_timeout(), Some((5 * MIN, Timer::CopyLimit)));
    }

    #[test]
    fn a_lost_watch_reads_at_once_and_polls_until_watched_again() {
        let mut l = watched(PROMISED, copying(0));
        assert_eq!(l.handle(1_000, Input::Watched(false)), Outcome::Applied);
        assert_eq!(
            drain(&mut l),
            [
                Effect::Runtime(LaunchEffect::Watch),
                Effect::Runtime(LaunchEffect::Observe)
            ]
        );
        assert_eq!(l.poll_timeout(), Some((1_250, Timer::Poll)));
        // No watch to be had: polling it is.
        assert_eq!(l.handle(1_000, Input::Watched(false)), Outcome::Ignored);
        l.handle(1_001, copying(1));
        assert_eq!(l.handle(1_250, Input::Timeout), Outcome::Applied);
        assert_eq!(drain(&mut l), [Effect::Runtime(LaunchEffect::Observe)]);
        l.handle(1_251, copying(1_251));
        // The watch is back: one read (none was under way), then no polls.
        assert_eq!(l.handle(1_300, Input::Watched(true)), Outcome::Applied);
        assert_eq!(drain(&mut l), [Effect::Runtime(LaunchEffect::Observe)]);
        assert_eq!(l.poll_timeout(), Some((5 * MIN, Timer::CopyLimit)));
    }

    #[test]
    fn reads_never_overlap_so_an_older_read_never_has_the_last_word() {
        let mut l = Launch::new(Config::default(), PROMISED, 0);
        drain(&mut l);
        l.handle(1, Input::Watched(true));
        assert_eq!(
            drain(&mut l),
            vec![],
            "the read asked for at the start is under way"
        );
        // A change while that read is under way: read again once it answers.
        assert_eq!(l.handle(2, Input::Changed), Outcome::Applied);
        assert_eq!(drain(&mut l), vec![]);
        // The older read answers (it saw no mark yet): the newer one goes out.
        l.handle(3, Input::Observed(Observation::missing()));
        let e = drain(&mut l);
        assert!(e.contains(&Effect::Runtime(LaunchEffect::Observe)), "{e:?}");
        assert_eq!(l.state().phase, Phase::Waiting(WaitOn::MissingMark));
        // The newer read has the last word.
        l.handle(4, copying(0));
        assert_eq!(l.state().phase, Phase::Waiting(WaitOn::Copying));
        assert!(!drain(&mut l).contains(&Effect::Runtime(LaunchEffect::Observe)));
    }
}
