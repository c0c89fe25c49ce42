//! Property tests of the session machine over random timed input sequences,
//! restarts included (a restart is a kill -9: the last persisted record,
//! completed by the prompt log and the journal's tail, goes through
//! `Session::restore`, and the old run's processes live on until a
//! `KillSurvivor` ends them).
//!
//! A small world answers the machine's effects the way the runtime would:
//! it grants permits it was asked for, spawns processes, hands prompts over,
//! lets harnesses name their sessions and exit, kills survivors. Which
//! answer comes next, and when, is random; so are raw inputs that do not
//! apply (late timeouts, wrong turns, commands in any state).

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use room_machines::copy::{CopyMark, Observation};
use room_machines::launch;
use room_machines::session::{
    retry_difference, ApprovalId, ApprovalMode, ApprovalRequest, Attachment, Boundary, Budget,
    Config, Cut, DecidedBy, Decision, Effect, Effort, Event, Exit, Failure, Input, LaunchEffect,
    LaunchInput, ModelChoice, NewPrompt, Options, Outcome, Process, PromptId, Record, RelaunchMode,
    Session, Signal, Stage, StartFields, Timer, TurnSeq, TurnTail, Usage, UsageReport, Usd,
    KILL_WAIT, MAX_PENDING,
};
use room_machines::Millis;

type Check = Result<(), TestCaseError>;

fn config() -> Config {
    config_for(0, false)
}

/// The limits, for a harness whose process lingers `linger` ms after its
/// turn, with the folder recorded at turn boundaries or not.
fn config_for(linger: Millis, snapshots: bool) -> Config {
    Config {
        launch: launch::Config {
            copy_wait: 5_000,
            mark_max_age: 5_000,
            poll: 250,
        },
        startup_timeout: 2_000,
        kill_grace: 500,
        approval_timeout: 1_500,
        linger,
        max_queued_prompts: 6,
        snapshots,
        snapshot_wait: 1_200,
    }
}

/// What happens next.
#[derive(Debug, Clone)]
enum Act {
    /// Time passes; every deadline on the way fires on time.
    Wait(Millis),
    /// An app command or the service's stop.
    App(Input),
    /// The status file is read (the answer to `Observe`, or a watch event).
    Observe(Observation),
    /// A queued permit ask is granted.
    Grant,
    /// The asked-for spawn succeeds or fails.
    Spawn(bool),
    /// The current turn's harness names its session.
    Name,
    /// The current turn's harness process says it takes no steers (an ACP
    /// agent without the steering extension), then names its session.
    NameNoSteers,
    /// The current turn's process exits.
    End(Exit),
    /// The current turn's process exited and left processes in its tree.
    LeftBehind,
    /// Handing the prompt over failed.
    Undeliver,
    /// The current turn's harness reports what it used: its own figures,
    /// or (`true`) a running total grown by them.
    Report(bool, Usage),
    /// The restore's `KillSurvivor` is done.
    SurvivorGone,
    /// The snapshot asked for before the next turn is taken.
    Snapshot,
    /// kill -9 and a restart.
    Restart,
    /// kill -9 and a restart, with a line the current turn's harness
    /// printed journalled but not fed yet (the reader journals a line
    /// before it waits for the session).
    Crash,
    /// The current turn's harness asks before it runs a tool.
    Ask,
    /// The app answers approval request `n` (one that exists, or not).
    Decide(ApprovalId, Decision),
    /// The current turn's harness says its turn is done (and whether it
    /// says the turn failed).
    Finish(bool),
    /// The last prompt steered into the current turn was not written.
    SteerLost,
    /// Any input at all, applicable or not.
    Raw(Input),
}

fn observation() -> impl Strategy<Value = Observation> {
    prop_oneof![
        Just(Observation::missing()),
        (0..10_000u64).prop_map(|a| Observation::marked(CopyMark::Copying, a)),
        Just(Observation::marked(CopyMark::Ready, 0)),
        Just(Observation::marked(CopyMark::Failed("disk full".into()), 0)),
    ]
}

fn decision() -> impl Strategy<Value = Decision> {
    prop_oneof![
        Just(Decision::Allow),
        Just(Decision::Deny),
        Just(Decision::AllowForSession),
    ]
}

fn exit() -> impl Strategy<Value = Exit> {
    prop_oneof![
        3 => Just(Exit::Code(0)),
        1 => Just(Exit::Code(1)),
        1 => Just(Exit::Signal(15)),
    ]
}

fn mode() -> impl Strategy<Value = RelaunchMode> {
    prop_oneof![
        Just(RelaunchMode::Resume),
        Just(RelaunchMode::Wake),
        Just(RelaunchMode::Restart),
    ]
}

/// A message, which now and then chooses a model or an effort.
fn message() -> impl Strategy<Value = Input> {
    let model = prop_oneof![4 => Just(None), 1 => Just(Some("a")), 1 => Just(Some("b"))];
    let effort = prop_oneof![
        4 => Just(None),
        1 => Just(Some(Effort::Low)),
        1 => Just(Some(Effort::High))
    ];
    let images = prop_oneof![
        4 => Just(Vec::new()),
        1 => prop::collection::vec(attachment(), 1..3)
    ];
    ("[a-z]{1,3}", model, effort, images).prop_map(|(text, model, effort, attachments)| {
        Input::Message(NewPrompt {
            text,
            choice: ModelChoice {
                model: model.map(str::to_string),
                effort,
            },
            attachments,
        })
    })
}

fn app() -> impl Strategy<Value = Input> {
    prop_oneof![
        4 => message(),
        2 => "[a-z]{1,3}".prop_map(Input::Steer),
        1 => prop::option::of(1..120u64).prop_map(|max_tokens| Input::SetBudget(Budget {
            max_cost_usd: None,
            max_tokens,
        })),
        2 => Just(Input::Stop),
        1 => Just(Input::Interrupt),
        2 => Just(Input::Resume),
        1 => Just(Input::Close),
        1 => mode().prop_map(Input::Relaunch),
        1 => Just(Input::ServiceStop),
        1 => Just(Input::RewindBegin { to_turn: 1 }),
        1 => prop::option::of(Just(Cut {
            after_turn: 1,
            at: "m1".into(),
            carried_by: None,
            fork: false,
        }))
        .prop_map(|cut| Input::RewindOver { cut }),
    ]
}

fn raw() -> impl Strategy<Value = Input> {
    let seq = 0..5u64;
    let process = (1..5u32).prop_map(|p| Process {
        pid: p,
        pgid: p,
        start_time: 1,
    });
    prop_oneof![
        Just(Input::Timeout),
        Just(Input::Launch(LaunchInput::PermitGranted)),
        Just(Input::Launch(LaunchInput::Changed)),
        Just(Input::PersistFailed {
            error: "ENOSPC".into()
        }),
        (seq.clone(), process).prop_map(|(seq, process)| Input::TurnSpawned { seq, process }),
        seq.clone().prop_map(|seq| Input::SpawnFailed {
            seq,
            reason: "raw".into()
        }),
        seq.clone().prop_map(|seq| Input::NativeId {
            seq,
            native_id: "raw".into()
        }),
        (seq.clone(), exit()).prop_map(|(seq, exit)| Input::TurnEnded {
            seq,
            exit,
            detail: String::new()
        }),
        seq.clone().prop_map(|seq| Input::PromptUndelivered {
            seq,
            error: "raw".into()
        }),
        seq.clone().prop_map(|seq| Input::LeftBehind { seq }),
        seq.prop_map(|seq| Input::SurvivorGone { seq }),
    ]
}

/// Small figures, with a cost or not.
fn usage() -> impl Strategy<Value = Usage> {
    (
        0..100u64,
        0..100u64,
        0..100u64,
        0..100u64,
        prop::option::of(0..1_000_000u32),
    )
        .prop_map(|(i, o, r, w, micros)| Usage {
            input_tokens: i,
            output_tokens: o,
            cache_read_tokens: r,
            cache_write_tokens: w,
            cost_usd: micros.and_then(|m| Usd::reported(m as f64 / 1e6)),
        })
}

/// A turn's life without the app's commands that end it: messages and
/// steers, harnesses that seldom name their sessions, lines lost on the
/// way. What becomes of turns with no sign of life, and of steers handed
/// back, shows in these.
fn quiet_act() -> impl Strategy<Value = Act> {
    prop_oneof![
        6 => prop_oneof![0..300u64, 0..3_000u64].prop_map(Act::Wait),
        1 => message().prop_map(Act::App),
        4 => "[a-z]{1,3}".prop_map(|t| Act::App(Input::Steer(t))),
        2 => observation().prop_map(Act::Observe),
        2 => Just(Act::Grant),
        4 => Just(Act::Spawn(true)),
        2 => Just(Act::Name),
        1 => Just(Act::NameNoSteers),
        3 => exit().prop_map(Act::End),
        2 => Just(Act::Finish(false)),
        3 => Just(Act::SteerLost),
        3 => Just(Act::Snapshot),
    ]
}

/// Warm follow-ups and crashes among them: messages to a lingering
/// process, its harness naming the session or not, a kill -9 between the
/// prompt and its record.
fn warm_act() -> impl Strategy<Value = Act> {
    prop_oneof![
        3 => (0..300u64).prop_map(Act::Wait),
        4 => message().prop_map(Act::App),
        2 => observation().prop_map(Act::Observe),
        2 => Just(Act::Grant),
        3 => Just(Act::Spawn(true)),
        3 => Just(Act::Name),
        4 => Just(Act::Finish(false)),
        1 => Just(Act::Crash),
        1 => Just(Act::Restart),
        2 => Just(Act::SurvivorGone),
        3 => Just(Act::Snapshot),
        1 => Just(Act::App(Input::RewindBegin { to_turn: 1 })),
        1 => Just(Act::App(Input::RewindOver {
            cut: Some(Cut {
                after_turn: 1,
                at: "m1".into(),
                carried_by: None,
                fork: false,
            })
        })),
    ]
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![
        2 => (any::<bool>(), usage()).prop_map(|(total, u)| Act::Report(total, u)),
        6 => prop_oneof![0..300u64, 0..3_000u64].prop_map(Act::Wait),
        6 => app().prop_map(Act::App),
        3 => observation().prop_map(Act::Observe),
        3 => Just(Act::Grant),
        4 => prop_oneof![5 => Just(true), 1 => Just(false)].prop_map(Act::Spawn),
        3 => Just(Act::Name),
        1 => Just(Act::NameNoSteers),
        3 => exit().prop_map(Act::End),
        2 => Just(Act::LeftBehind),
        1 => Just(Act::Undeliver),
        2 => Just(Act::SurvivorGone),
        2 => Just(Act::Restart),
        2 => Just(Act::Crash),
        3 => Just(Act::Ask),
        2 => (0..8u64, decision()).prop_map(|(id, d)| Act::Decide(id, d)),
        2 => Just(Act::Finish(false)),
        1 => Just(Act::Finish(true)),
        3 => Just(Act::SteerLost),
        3 => Just(Act::Snapshot),
        2 => raw().prop_map(Act::Raw),
        1 => (0..5u64).prop_map(|seq| Act::Raw(Input::OutputCapped {
            seq,
            cap: room_machines::session::JournalCap::Events(10)
        })),
    ]
}

/// A process of this session in the world.
#[derive(Debug, Clone)]
struct Proc {
    seq: TurnSeq,
    run: u32,
    prompt: PromptId,
    delivered: bool,
}

/// What happened to one accepted prompt.
#[derive(Debug, Default)]
struct Ledger {
    /// Each time it was handed to a harness: the turn, and whether that
    /// harness then named its session.
    deliveries: Vec<(TurnSeq, bool)>,
    done: bool,
    failed: bool,
}

/// A prompt handed to a running turn (`Effect::Steer`).
#[derive(Debug, Clone)]
struct Steered {
    seq: TurnSeq,
    run: u32,
    prompt: PromptId,
    text: String,
}

/// The world around one session, and what the properties need to remember.
struct World {
    opts: Options,
    /// How long its process lingers after a turn (`Config::linger`).
    linger: Millis,
    /// Turns whose stdin was closed (`CloseInput`), with the run.
    closed_input: BTreeSet<(TurnSeq, u32)>,
    /// Turns asked to stop in their protocol: turn, when, run.
    asked_to_stop: Vec<(TurnSeq, Millis, u32)>,
    /// Prompts steered into turns, in order.
    steered: Vec<Steered>,
    /// Turns whose process said it takes no steers (`NoSteers`), with the
    /// run.
    no_steers: BTreeSet<(TurnSeq, u32)>,
    s: Session,
    now: Millis,
    /// Which run of the service (a restart begins the next).
    run: u32,
    persisted: Record,
    /// The journal's last started turn that did not end, and whether
    /// something its harness printed for it was journalled after it.
    tail: Option<TurnTail>,
    /// Every prompt appended to the prompt log (`PersistPrompt`), oldest first.
    logged: Vec<room_machines::session::Prompt>,
    /// The prompts handed to harnesses, in the order they were handed
    /// over, less each one taken back (undelivered or queued again): the
    /// order the session ran its prompts in.
    ran: Vec<PromptId>,
    /// Approval requests asked so far (their harness refs are `r1`, `r2`, …)
    /// and those answered.
    asked_refs: u64,
    answered: BTreeSet<String>,
    // This run's outstanding requests and permit count.
    asked: bool,
    granted: u32,
    released: u32,
    /// Since when this run holds a permit.
    held_since: Option<Millis>,
    spawn: Option<TurnSeq>,
    survivor: Option<TurnSeq>,
    /// A restored start that had not started: its next launch must wait.
    must_wait_from: Option<Millis>,
    // Across runs.
    procs: Vec<Proc>,
    closed: bool,
    ledger: BTreeMap<PromptId, Ledger>,
    terms: Vec<(TurnSeq, Millis, u32)>,
    kills: Vec<(TurnSeq, Millis, u32)>,
    /// Trees given up (`AbandonTree`).
    abandons: Vec<(TurnSeq, Millis, u32)>,
    ends: Vec<(TurnSeq, Millis, u32)>,
    /// The native session's running total as the world's harness counts it.
    thread_total: Usage,
    /// What each turn's harness reported it used, as taken (none until one
    /// report was).
    fed: BTreeMap<TurnSeq, Usage>,
    /// The usage every journalled `turn_ended` carried, added up.
    journalled: Usage,
    /// The outcome of the last input fed.
    last: Outcome,
    /// What each logged prompt chose.
    choices: BTreeMap<PromptId, ModelChoice>,
    /// The images each logged prompt carries.
    images: BTreeMap<PromptId, Vec<Attachment>>,
    /// The images each new process was handed (`SpawnTurn`), by turn.
    spawned_images: BTreeMap<TurnSeq, Vec<Attachment>>,
    /// The prompt of the last turn started.
    started_prompt: Option<PromptId>,
    /// The model and effort in force, as the turns started so far chose.
    in_force: ModelChoice,
    /// What each new process was asked to run (`SpawnTurn`), by turn.
    spawned_with: BTreeMap<TurnSeq, ModelChoice>,
    /// What the last started turn changed of the choice in force.
    switched: ModelChoice,
    /// The folder is recorded at turn boundaries.
    snapshots: bool,
    /// This run's outstanding ask for the snapshot before a turn.
    snapshot_asked: Option<TurnSeq>,
    /// The turn whose snapshot before it was taken (or waited out) since
    /// it was last asked for: the one turn that may start.
    snapshot_ready: Option<TurnSeq>,
    /// This run's outstanding ask for the snapshot after a turn.
    after_asked: Option<TurnSeq>,
    /// Every step, for the failure report.
    trace: Vec<String>,
    /// What the run reached (applied inputs, effects, events), for the
    /// coverage test.
    seen: BTreeSet<String>,
}

/// The record as a restart would see it: a turn that was asked for but
/// never spawned is its prompt at the head of the queue.
fn durable(r: &Record) -> Record {
    let mut r = r.clone();
    if r.turn.as_ref().is_some_and(|t| t.process().is_none()) {
        let t = r.turn.take().unwrap();
        r.queue.push_front(t.prompt);
    }
    r.next_turn = 0;
    r
}

impl World {
    fn new(life: Life, first: Option<String>) -> Result<World, TestCaseError> {
        let Life {
            promised,
            linger,
            effort_at_spawn,
            snapshots,
        } = life;
        let opts = Options {
            promised,
            plan_only: false,
            approvals: ApprovalMode::App,
            budget: Default::default(),
            choice: ModelChoice::default(),
            effort_at_spawn,
            auto_allows: false,
        };
        let s = Session::new(
            config_for(linger, snapshots),
            opts.clone(),
            first.map(NewPrompt::from),
            0,
        );
        let mut w = World {
            opts,
            linger,
            closed_input: BTreeSet::new(),
            asked_to_stop: Vec::new(),
            steered: Vec::new(),
            no_steers: BTreeSet::new(),
            s,
            now: 0,
            run: 0,
            persisted: Record::new(),
            tail: None,
            logged: Vec::new(),
            ran: Vec::new(),
            asked_refs: 0,
            answered: BTreeSet::new(),
            asked: false,
            granted: 0,
            released: 0,
            held_since: None,
            spawn: None,
            survivor: None,
            must_wait_from: None,
            procs: Vec::new(),
            closed: false,
            ledger: BTreeMap::new(),
            terms: Vec::new(),
            kills: Vec::new(),
            abandons: Vec::new(),
            ends: Vec::new(),
            thread_total: Usage::default(),
            fed: BTreeMap::new(),
            journalled: Usage::default(),
            last: Outcome::Applied,
            trace: Vec::new(),
            seen: BTreeSet::new(),
            choices: BTreeMap::new(),
            in_force: ModelChoice::default(),
            spawned_with: BTreeMap::new(),
            switched: ModelChoice::default(),
            images: BTreeMap::new(),
            spawned_images: BTreeMap::new(),
            started_prompt: None,
            snapshots,
            snapshot_asked: None,
            snapshot_ready: None,
            after_asked: None,
        };
        let effects: Vec<Effect> = std::iter::from_fn(|| w.s.poll_effect()).collect();
        w.trace.push(format!("new: {effects:?}"));
        w.apply(None, &effects)?;
        w.invariants()?;
        Ok(w)
    }

    /// The record as a restart reads it back: the last one written, with
    /// the prompts logged since, completed by the journal's tail.
    fn on_disk(&self) -> Record {
        self.persisted
            .clone()
            .with_logged(self.logged.clone())
            .with_journal_tail(self.tail)
    }

    /// Takes back the last time `prompt` was handed over: it never ran there.
    fn unrun(&mut self, prompt: PromptId) {
        if let Some(at) = self.ran.iter().rposition(|p| *p == prompt) {
            self.ran.remove(at);
        }
    }

    fn current_proc(&self) -> Option<&Proc> {
        let seq = self.s.record().turn.as_ref()?.seq;
        self.procs
            .iter()
            .find(|p| p.seq == seq && p.run == self.run)
    }

    fn act(&mut self, act: Act) -> Check {
        match act {
            Act::Wait(dt) => return self.wait(dt),
            Act::App(input) | Act::Raw(input) => self.feed(input)?,
            Act::Observe(o) => self.feed(Input::Launch(LaunchInput::Observed(o)))?,
            Act::Grant if self.asked => self.feed(Input::Launch(LaunchInput::PermitGranted))?,
            Act::Spawn(ok) => {
                if let Some(seq) = self.spawn {
                    self.feed(if ok {
                        Input::TurnSpawned {
                            seq,
                            process: Process {
                                pid: 1000 + seq as u32,
                                pgid: 1000 + seq as u32,
                                start_time: self.run as u64,
                            },
                        }
                    } else {
                        Input::SpawnFailed {
                            seq,
                            reason: "E2BIG".into(),
                        }
                    })?;
                }
            }
            Act::Name => {
                if let Some(p) = self.current_proc().filter(|p| p.delivered) {
                    let seq = p.seq;
                    self.feed(Input::NativeId {
                        seq,
                        native_id: "n1".into(),
                    })?;
                }
            }
            Act::NameNoSteers => {
                if let Some(p) = self.current_proc().filter(|p| p.delivered) {
                    let seq = p.seq;
                    self.no_steers.insert((seq, self.run));
                    self.feed(Input::NoSteers { seq })?;
                    self.feed(Input::NativeId {
                        seq,
                        native_id: "n1".into(),
                    })?;
                }
            }
            Act::End(exit) => {
                if let Some(seq) = self.current_proc().map(|p| p.seq) {
                    self.feed(Input::TurnEnded {
                        seq,
                        exit,
                        detail: "tail".into(),
                    })?;
                }
            }
            Act::LeftBehind => {
                if let Some(seq) = self.current_proc().map(|p| p.seq) {
                    self.feed(Input::LeftBehind { seq })?;
                }
            }
            Act::Ask => {
                if let Some(seq) = self.current_proc().map(|p| p.seq) {
                    self.asked_refs += 1;
                    let request = ApprovalRequest {
                        harness_ref: format!("r{}", self.asked_refs),
                        tool: "Bash".into(),
                        input: "{}".into(),
                        reason: None,
                    };
                    self.feed(Input::ApprovalRequested { seq, request })?;
                }
            }
            Act::Decide(id, decision) => self.feed(Input::ApprovalDecided {
                id,
                decision,
                message: None,
            })?,
            Act::Undeliver => {
                if let Some(seq) = self.current_proc().filter(|p| p.delivered).map(|p| p.seq) {
                    self.feed(Input::PromptUndelivered {
                        seq,
                        error: "ENOSPC".into(),
                    })?;
                }
            }
            Act::Report(total, used) => {
                let Some(seq) = self.current_proc().map(|p| p.seq) else {
                    return Ok(());
                };
                let named = self.s.record().turn.as_ref().is_some_and(|t| t.reported());
                // A harness that reports a running total names its
                // session first (codex's thread.started), and counts no cost.
                let used = if total {
                    Usage {
                        cost_usd: None,
                        ..used
                    }
                } else {
                    used
                };
                let report = match total {
                    true if !named => return Ok(()),
                    true => UsageReport::Total(self.thread_total.plus(used)),
                    false => UsageReport::Turn(used),
                };
                self.feed(Input::TurnUsage { seq, report })?;
                if self.last == Outcome::Applied {
                    if let UsageReport::Total(t) = report {
                        self.thread_total = t;
                    }
                    let fed = self.fed.entry(seq).or_default();
                    *fed = fed.plus(used);
                    self.seen.insert(format!("reported {}", name(&report)));
                }
            }
            Act::SurvivorGone => {
                if let Some(seq) = self.survivor {
                    self.feed(Input::SurvivorGone { seq })?;
                }
            }
            Act::Restart => self.restart()?,
            Act::Crash => {
                let live = self.current_proc().filter(|p| p.delivered).map(|p| p.seq);
                if let Some(t) = self.tail.as_mut().filter(|t| Some(t.turn) == live) {
                    self.seen
                        .insert("crashed with a line journalled, not fed".into());
                    t.printed = true;
                }
                self.restart()?
            }
            Act::Finish(failed) => {
                if let Some(seq) = self.current_proc().filter(|p| p.delivered).map(|p| p.seq) {
                    let failed = failed.then(|| "the model is gone".to_string());
                    self.feed(Input::TurnFinished {
                        seq,
                        failed,
                        usage: None,
                    })?;
                }
            }
            Act::SteerLost => {
                // The runtime reports a steer it could not write before the
                // turn's end: only while its turn's process is there.
                let run = self.run;
                let live = self.current_proc().map(|p| p.seq);
                let last = self.steered.iter().rev().find(|st| st.run == run).cloned();
                if let Some(st) = last.filter(|st| Some(st.seq) == live) {
                    self.feed(Input::SteerUndelivered {
                        seq: st.seq,
                        prompt: st.prompt,
                        text: st.text,
                    })?;
                }
            }
            Act::Snapshot => {
                if let Some(turn) = self.after_asked.take() {
                    self.feed(Input::Snapshotted {
                        turn,
                        at: Boundary::After,
                    })?;
                } else if let Some(turn) = self.snapshot_asked.take() {
                    self.snapshot_ready = Some(turn);
                    self.feed(Input::Snapshotted {
                        turn,
                        at: Boundary::Before,
                    })?;
                }
            }
            Act::Grant => {}
        }
        Ok(())
    }

    fn wait(&mut self, dt: Millis) -> Check {
        let target = self.now + dt;
        for _ in 0..10_000 {
            match self.s.poll_timeout() {
                Some((at, timer)) if at <= target => {
                    self.now = self.now.max(at);
                    if timer == Timer::SnapshotWait {
                        // The turn starts without it.
                        self.seen.insert("a snapshot's wait ran out".into());
                        self.snapshot_ready = self.snapshot_asked.take();
                        self.after_asked = None;
                    }
                    self.feed(Input::Timeout)?;
                }
                _ => {
                    self.now = target;
                    self.kill_follows_term()?;
                    self.term_follows_asking()?;
                    self.abandon_follows_kill()?;
                    return self.permit_within_startup_timeout();
                }
            }
        }
        Err(TestCaseError::fail(
            "a due deadline that a Timeout does not clear",
        ))
    }

    /// kill -9, then the service starts again from the persisted record.
    fn restart(&mut self) -> Check {
        let disk = self.on_disk();
        if disk.turn.as_ref().map(|t| t.seq) != self.persisted.turn.as_ref().map(|t| t.seq) {
            let printed = disk.turn.as_ref().is_some_and(|t| t.reported());
            self.seen.insert(format!(
                "a turn restored from the journal, printed: {printed}"
            ));
        }
        let recorded = disk
            .turn
            .as_ref()
            .filter(|t| t.process().is_some())
            .map(|t| t.seq);
        // A process that had its prompt is always on record.
        for p in &self.procs {
            prop_assert!(
                !p.delivered || Some(p.seq) == recorded,
                "an unrecorded turn has its prompt: {p:?}, record {:?}, tail {:?}",
                self.persisted,
                self.tail
            );
        }
        // One without its prompt and off the record reads EOF and exits.
        self.procs.retain(|p| Some(p.seq) == recorded);
        self.run += 1;
        self.now += 1;
        self.asked = false;
        self.granted = 0;
        self.released = 0;
        self.held_since = None;
        self.spawn = None;
        self.survivor = None;
        self.snapshot_asked = None;
        self.snapshot_ready = None;
        self.after_asked = None;
        self.must_wait_from = (self.persisted.stage == Stage::Starting).then_some(self.now);
        self.s = Session::restore(
            config_for(self.linger, self.snapshots),
            self.opts.clone(),
            self.on_disk(),
            self.now,
        );
        let effects: Vec<Effect> = std::iter::from_fn(|| self.s.poll_effect()).collect();
        self.trace
            .push(format!("restart at {}: {effects:?}", self.now));
        if recorded.is_some() {
            prop_assert!(
                matches!(effects.as_slice(), [Effect::KillSurvivor { .. }]),
                "a recorded turn is killed before anything else: {effects:?}"
            );
        }
        self.apply(None, &effects)?;
        self.invariants()
    }

    /// Hands `input` to the machine and checks what came out.
    fn feed(&mut self, input: Input) -> Check {
        // What a harness printed is journalled before it is fed.
        let printed = match &input {
            Input::NativeId { seq, .. }
            | Input::TurnFinished { seq, .. }
            | Input::ApprovalRequested { seq, .. }
            | Input::TurnUsage { seq, .. } => Some(*seq),
            _ => None,
        };
        if let Some(t) = self.tail.as_mut().filter(|t| Some(t.turn) == printed) {
            t.printed = true;
        }
        let before = self.s.state().clone();
        let launch_before = self.s.launch().map(|l| l.state().clone());
        let outcome = self.s.handle(self.now, input.clone());
        self.last = outcome;
        if let Outcome::Refused(why) = outcome {
            self.seen.insert(format!("refused {why:?}"));
        }
        if let (Outcome::Applied, Input::RewindBegin { to_turn }) = (outcome, &input) {
            let running = self.s.record().turn.as_ref().is_some_and(|t| !t.finished());
            prop_assert!(!running, "a rewind began while a turn ran");
            prop_assert!(
                *to_turn >= 1 && *to_turn < self.s.record().next_turn,
                "a rewind began to turn {to_turn}, which has not ended"
            );
        }
        if outcome == Outcome::Refused(room_machines::session::Refusal::QueueFull) {
            prop_assert!(self.s.record().queue.len() >= config().max_queued_prompts);
        }
        let effects: Vec<Effect> = std::iter::from_fn(|| self.s.poll_effect()).collect();
        self.trace
            .push(format!("{} {input:?} -> {outcome:?} {effects:?}", self.now));
        if outcome != Outcome::Applied {
            prop_assert!(effects.is_empty(), "{outcome:?} emitted {effects:?}");
            prop_assert_eq!(&before, self.s.state(), "{:?} changed the state", outcome);
            prop_assert_eq!(
                launch_before.as_ref(),
                self.s.launch().map(|l| l.state()),
                "{:?} changed the launch",
                outcome
            );
            return Ok(());
        }
        // Stop, interrupt, close, service stop and restart signal a running turn.
        let ends_turn = matches!(
            input,
            Input::Stop
                | Input::Interrupt
                | Input::Close
                | Input::ServiceStop
                | Input::Relaunch(RelaunchMode::Restart)
        );
        if let Some(t) = before.record.turn.as_ref() {
            // A tree that had a signal already (what its exited harness
            // left got SIGTERM) gets no second one.
            let signalled = before.signalled.is_some();
            if ends_turn
                && t.process().is_some()
                && t.ending.is_none()
                && !before.survivor
                && !signalled
            {
                // Asked only while its stdin is open; else signalled.
                let asks = t.delivered() && !before.stdin.closed && input == Input::Interrupt;
                let want = if asks {
                    Effect::InterruptTurn { seq: t.seq }
                } else {
                    Effect::Signal {
                        seq: t.seq,
                        signal: Signal::Term,
                    }
                };
                prop_assert!(
                    effects.contains(&want),
                    "{input:?} left turn {} running: {effects:?}",
                    t.seq
                );
            }
        }
        // What an exited harness left gets SIGTERM at once (a tree that
        // had a signal already leaves the input ignored, above).
        if let Input::LeftBehind { seq } = input {
            let want = Effect::Signal {
                seq,
                signal: Signal::Term,
            };
            prop_assert!(effects.contains(&want), "left behind: {effects:?}");
        }
        self.seen.insert(format!("applied {}", name(&input)));
        if let Some(Input::Steer(_)) = Some(&input) {
            if self.s.steered(self.s.record().next_prompt - 1) {
                self.seen.insert("steered".into());
            }
        }
        self.world_follows(&input, &before)?;
        self.apply(Some(&input), &effects)?;
        self.invariants()?;
        self.kill_follows_term()?;
        self.term_follows_asking()?;
        self.abandon_follows_kill()?;
        self.permit_within_startup_timeout()
    }

    /// What an applied input did to the world.
    fn world_follows(&mut self, input: &Input, before: &room_machines::session::State) -> Check {
        match input {
            Input::Launch(LaunchInput::PermitGranted) => {
                self.asked = false;
                self.granted += 1;
                self.held_since = Some(self.now);
            }
            Input::TurnSpawned { seq, .. } => {
                self.spawn = None;
                let prompt = before.record.turn.as_ref().unwrap().prompt.id;
                self.procs.push(Proc {
                    seq: *seq,
                    run: self.run,
                    prompt,
                    delivered: false,
                });
            }
            Input::SpawnFailed { .. } => self.spawn = None,
            Input::TurnEnded { seq, .. } => {
                self.procs.retain(|p| !(p.seq == *seq && p.run == self.run));
                self.ends.push((*seq, self.now, self.run));
            }
            Input::SurvivorGone { seq } => {
                self.procs.retain(|p| p.seq != *seq);
                self.survivor = None;
                self.ends.push((*seq, self.now, self.run));
            }
            Input::NativeId { seq, native_id } => {
                if before.record.native_id.as_deref() != Some(native_id.as_str()) {
                    // Another native session: another running total.
                    self.thread_total = Usage::default();
                }
                let p = self
                    .procs
                    .iter()
                    .find(|p| p.seq == *seq && p.run == self.run);
                if let Some(p) = p.filter(|p| p.delivered) {
                    let l = self.ledger.get_mut(&p.prompt).unwrap();
                    l.deliveries.last_mut().unwrap().1 = true;
                }
            }
            Input::PromptUndelivered { seq, .. } => {
                let run = self.run;
                if let Some(p) = self
                    .procs
                    .iter_mut()
                    .find(|p| p.seq == *seq && p.run == run)
                {
                    p.delivered = false;
                    // It never reached the harness.
                    let prompt = p.prompt;
                    self.ledger.get_mut(&prompt).unwrap().deliveries.pop();
                    self.unrun(prompt);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Carries out the effects of one step, checking each.
    fn apply(&mut self, input: Option<&Input>, effects: &[Effect]) -> Check {
        let durable = |e: &Effect| matches!(e, Effect::Persist | Effect::PersistPrompt(_));
        let writes = effects.iter().take_while(|e| durable(e)).count();
        prop_assert!(
            effects[writes..].iter().all(|e| !durable(e)),
            "a durable write after another effect: {effects:?}"
        );
        let persists = effects.iter().filter(|e| **e == Effect::Persist).count();
        prop_assert!(persists <= 1, "two Persists in one step: {effects:?}");
        if persists == 1 {
            prop_assert_eq!(
                &effects[writes - 1],
                &Effect::Persist,
                "Persist is not after the prompts"
            );
            self.persisted = self.s.record().clone();
        }
        // What comes after the writes may rely on the record: `Persist` was
        // among them.
        let written = effects[..writes].contains(&Effect::Persist);
        let mut ended_now = Vec::new();
        let mut settled_now = BTreeSet::new();
        let mut noted = None;
        for e in effects {
            match e {
                Effect::Emit(Event::TurnStarted {
                    turn,
                    prompt,
                    model,
                    ..
                }) => {
                    let chose = self.choices.get(prompt).cloned().unwrap_or_default();
                    let now_in_force = self.in_force.with(&chose);
                    let was = std::mem::replace(&mut self.in_force, now_in_force);
                    prop_assert_eq!(
                        model,
                        &self.in_force.model,
                        "turn {} of prompt {} started with another model",
                        turn,
                        prompt
                    );
                    if let Some(spawned) = self.spawned_with.get(turn) {
                        prop_assert_eq!(spawned, &self.in_force, "turn {}'s process", turn);
                    }
                    let carries = self.images.get(prompt).cloned().unwrap_or_default();
                    if let Some(handed) = self.spawned_images.get(turn) {
                        prop_assert_eq!(handed, &carries, "turn {}'s images", turn);
                    }
                    if !carries.is_empty() {
                        self.seen.insert("a turn with images".into());
                    }
                    self.started_prompt = Some(*prompt);
                    self.switched = was.changes_to(&self.in_force);
                    self.tail = Some(TurnTail {
                        turn: *turn,
                        prompt: *prompt,
                        printed: false,
                    });
                }
                Effect::Emit(Event::TurnEnded { turn, .. })
                    if self.tail.is_some_and(|t| t.turn == *turn) =>
                {
                    self.tail = None;
                }
                _ => {}
            }
            self.seen.insert(name(e));
            if let Effect::Emit(Event::Error { failure }) = e {
                self.seen
                    .insert(format!("error: {}", failure_kind(failure)));
            }
            match e {
                Effect::Persist => {}
                Effect::PersistPrompt(prompt) => {
                    let queued = self.s.record().queue.iter().any(|p| p.id == prompt.id)
                        || self
                            .s
                            .record()
                            .turn
                            .as_ref()
                            .is_some_and(|t| t.prompt.id == prompt.id);
                    prop_assert!(queued, "logged prompt {} is nowhere", prompt.id);
                    self.choices.insert(prompt.id, prompt.choice.clone());
                    self.images.insert(prompt.id, prompt.attachments.clone());
                    self.logged.push(prompt.clone());
                }
                Effect::NoteSpawn { seq } => noted = Some(*seq),
                Effect::Snapshot { turn, at } => {
                    prop_assert!(self.snapshots, "{e:?} with snapshots off");
                    match at {
                        Boundary::Before => {
                            // A new launch asks again (the folder may have
                            // changed during its wait).
                            self.snapshot_asked = Some(*turn);
                            self.snapshot_ready = None;
                        }
                        Boundary::After => {
                            let ended = effects.iter().any(|x| {
                                matches!(x, Effect::Emit(Event::TurnEnded { turn: t, .. }) if t == turn)
                            });
                            prop_assert!(ended, "turn {} recorded after, with no turn_ended", turn);
                            self.after_asked = Some(*turn);
                            self.seen.insert("a folder recorded after a turn".into());
                        }
                    }
                }
                Effect::CloseInput { seq } => {
                    self.closed_input.insert((*seq, self.run));
                    if let Some(Input::Message(NewPrompt { choice, .. })) = input {
                        prop_assert!(
                            self.opts.effort_at_spawn && choice.effort.is_some(),
                            "a message closed turn {}'s stdin",
                            seq
                        );
                        self.seen.insert("a linger ended for an effort".into());
                    }
                }
                Effect::InterruptTurn { seq } => {
                    let live = self
                        .current_proc()
                        .is_some_and(|p| p.seq == *seq && p.delivered);
                    prop_assert!(live, "asked turn {seq} to stop, which has no prompt");
                    prop_assert!(
                        !self.closed_input.contains(&(*seq, self.run)),
                        "asked turn {seq} to stop after its stdin closed"
                    );
                    self.asked_to_stop.push((*seq, self.now, self.run));
                }
                Effect::ContinueTurn {
                    seq,
                    switch,
                    attachments,
                    ..
                } => {
                    self.folder_was_recorded(*seq)?;
                    prop_assert!(!self.s.state().rewinding, "a turn went on during a rewind");
                    prop_assert!(
                        self.s.record().cut.is_none(),
                        "a lingering process went on past a cut"
                    );
                    prop_assert!(self.linger > 0, "{e:?} with no lingering");
                    let carries = self
                        .started_prompt
                        .and_then(|p| self.images.get(&p).cloned())
                        .unwrap_or_default();
                    prop_assert_eq!(attachments, &carries, "turn {}'s images", seq);
                    prop_assert_eq!(switch, &self.switched, "turn {}'s switch", seq);
                    prop_assert!(
                        !(self.opts.effort_at_spawn && switch.effort.is_some()),
                        "turn {} changes the effort of a process that cannot",
                        seq
                    );
                    if switch.model.is_some() {
                        self.seen.insert("a model switched in place".into());
                    }
                    if switch.effort.is_some() {
                        self.seen.insert("an effort switched in place".into());
                    }
                    prop_assert!(!self.closed, "a closed session continued a turn");
                    // On record, or (a warm follow-up) on disk as the
                    // record before, its prompt logged and the turn's start
                    // journalled (the `TurnStarted` just before).
                    let disk = self.on_disk();
                    if !written {
                        self.seen
                            .insert("a warm follow-up with no record write".into());
                    }
                    let t = disk.turn.as_ref().filter(|t| t.seq == *seq);
                    prop_assert!(
                        t.is_some_and(|t| t.process().is_some()),
                        "continued an unrecorded turn: {:?}",
                        disk
                    );
                    let prompt = t.unwrap().prompt.id;
                    let run = self.run;
                    let p = self
                        .procs
                        .iter_mut()
                        .find(|p| p.run == run && p.delivered)
                        .expect("continued in a live process that had its prompt");
                    prop_assert!(
                        !self.closed_input.contains(&(p.seq, run)),
                        "continued in a process whose stdin is closed"
                    );
                    p.seq = *seq;
                    p.prompt = prompt;
                    self.ran.push(prompt);
                    let l = self.ledger.get_mut(&prompt).unwrap();
                    prop_assert!(
                        !l.done && !l.failed,
                        "prompt {prompt} continued after it was settled"
                    );
                    prop_assert!(
                        !l.deliveries.iter().any(|(_, reported)| *reported),
                        "prompt {prompt} runs twice"
                    );
                    l.deliveries.push((*seq, false));
                }
                Effect::Steer { seq, prompt, text } => {
                    let live = self
                        .current_proc()
                        .is_some_and(|p| p.seq == *seq && p.delivered);
                    prop_assert!(live, "steered into turn {seq}, which has no prompt");
                    prop_assert!(
                        !self.closed_input.contains(&(*seq, self.run)),
                        "steered into turn {seq} after its stdin closed"
                    );
                    prop_assert!(
                        !self.no_steers.contains(&(*seq, self.run)),
                        "steered into turn {seq}, whose process takes no steers"
                    );
                    let ending = self.s.record().turn.as_ref().and_then(|t| t.ending);
                    prop_assert_eq!(ending, None, "steered into a turn being ended");
                    self.ran.push(*prompt);
                    self.steered.push(Steered {
                        seq: *seq,
                        run: self.run,
                        prompt: *prompt,
                        text: text.clone(),
                    });
                }
                Effect::AnswerApproval {
                    harness_ref,
                    decision,
                    by,
                    ..
                } => {
                    self.seen.insert(format!("answer by {}", name(by)));
                    prop_assert!(
                        self.answered.insert(harness_ref.clone()),
                        "request {harness_ref} answered twice"
                    );
                    prop_assert!(
                        *decision == Decision::Deny || *by == DecidedBy::App,
                        "{harness_ref} allowed by {by:?}"
                    );
                }
                Effect::Launch(le) => {
                    // A wait asks for its watch, then reads: the read is
                    // what shows it waits again. A permit given back (one
                    // granted when no launch wanted it) says nothing of it.
                    let not_the_wait =
                        matches!(le, LaunchEffect::Watch | LaunchEffect::ReleasePermit);
                    if let Some(from) = self.must_wait_from.take_if(|_| !not_the_wait) {
                        prop_assert_eq!(
                            le,
                            &LaunchEffect::Observe,
                            "a restored waiting start did not wait again"
                        );
                        let _ = from;
                    }
                    match le {
                        LaunchEffect::AskPermit => {
                            prop_assert!(!self.closed, "a closed session asked for a permit");
                            if self.s.record().stage == Stage::Starting {
                                prop_assert!(
                                    matches!(
                                        input,
                                        Some(Input::Launch(LaunchInput::Observed(_)))
                                            | Some(Input::Timeout)
                                    ),
                                    "a first launch asked for a permit before its wait ended ({input:?})"
                                );
                            }
                            self.asked = true;
                        }
                        LaunchEffect::ReleasePermit => {
                            self.released += 1;
                            self.held_since = None;
                            prop_assert!(
                                self.released <= self.granted,
                                "released {} permits, granted {}",
                                self.released,
                                self.granted
                            );
                        }
                        LaunchEffect::WaitFor { until, .. } => {
                            let began = self.s.launch().unwrap().state().began;
                            prop_assert_eq!(*until, began + config().launch.copy_wait);
                        }
                        _ => {}
                    }
                }
                Effect::SpawnTurn {
                    seq,
                    choice,
                    attachments,
                    resume,
                    cut,
                    ..
                } => {
                    self.folder_was_recorded(*seq)?;
                    // A rewound conversation resumes at its cut until a turn
                    // has run from it.
                    let want = resume
                        .as_ref()
                        .and(self.s.record().cut.as_ref())
                        .map(|c| c.at.clone());
                    let carried = cut.as_ref().map(|c| c.at.clone());
                    prop_assert_eq!(carried, want, "the cut a spawn carries");
                    if cut.is_some() {
                        self.seen.insert("cut carried".into());
                    }
                    self.spawned_with.insert(*seq, choice.clone());
                    self.spawned_images.insert(*seq, attachments.clone());
                    let r = self.s.record();
                    prop_assert!(
                        !self.closed && r.stage != Stage::Closed,
                        "a closed session spawned"
                    );
                    prop_assert!(!r.paused, "a paused queue started a turn");
                    prop_assert!(!self.s.state().rewinding, "a turn started during a rewind");
                    prop_assert!(
                        self.procs.is_empty() && self.spawn.is_none(),
                        "a second turn: live {:?}, spawning {:?}",
                        self.procs,
                        self.spawn
                    );
                    if r.stage == Stage::Starting {
                        // Or the snapshot the permit's holder waited for.
                        let held = self.granted > self.released;
                        prop_assert!(
                            matches!(input, Some(Input::Launch(LaunchInput::PermitGranted)))
                                || (held
                                    && matches!(
                                        input,
                                        Some(Input::Snapshotted { .. } | Input::Timeout)
                                    )),
                            "a first turn without its permit ({input:?})"
                        );
                    }
                    prop_assert!(
                        written || noted == Some(*seq),
                        "turn {seq} spawned with neither a write nor a note naming it: {effects:?}"
                    );
                    self.spawn = Some(*seq);
                }
                Effect::DeliverPrompt { seq } => {
                    prop_assert!(!self.closed, "a closed session delivered a prompt");
                    prop_assert!(written, "delivered before the record was written");
                    let recorded = self.persisted.turn.as_ref().filter(|t| t.seq == *seq);
                    prop_assert!(
                        recorded.is_some_and(|t| t.process().is_some()),
                        "delivered to an unrecorded turn"
                    );
                    let run = self.run;
                    let p = self
                        .procs
                        .iter_mut()
                        .find(|p| p.seq == *seq && p.run == run)
                        .expect("delivered to a live process");
                    p.delivered = true;
                    let l = self.ledger.get_mut(&p.prompt).unwrap();
                    prop_assert!(
                        !l.done && !l.failed,
                        "prompt {} delivered after it was settled",
                        p.prompt
                    );
                    prop_assert!(
                        !l.deliveries.iter().any(|(_, reported)| *reported),
                        "prompt {} runs twice: {:?}",
                        p.prompt,
                        l.deliveries
                    );
                    l.deliveries.push((*seq, false));
                    let prompt = p.prompt;
                    self.ran.push(prompt);
                }
                Effect::Signal { seq, signal } => {
                    let at = (*seq, self.now, self.run);
                    let sent = match signal {
                        Signal::Term => &mut self.terms,
                        Signal::Kill => &mut self.kills,
                    };
                    // A second SIGTERM means "hurry" to some CLIs.
                    prop_assert!(
                        !sent.iter().any(|&(s, _, r)| s == *seq && r == self.run),
                        "turn {seq} got {signal:?} twice"
                    );
                    sent.push(at);
                }
                Effect::AbandonTree { seq } => {
                    let run = self.run;
                    prop_assert!(
                        self.kills.iter().any(|&(s, _, r)| s == *seq && r == run),
                        "turn {seq} given up before SIGKILL"
                    );
                    self.abandons.push((*seq, self.now, run));
                }
                Effect::KillSurvivor { seq, .. } => self.survivor = Some(*seq),
                Effect::Emit(Event::ApprovalResolved {
                    by: DecidedBy::TurnGone,
                    ..
                }) => {
                    self.seen.insert("approval void".into());
                }
                Effect::Emit(Event::PromptQueued { prompt, .. }) => {
                    prop_assert!(self.ledger.insert(*prompt, Ledger::default()).is_none());
                }
                Effect::Emit(Event::PromptSteered { prompt, turn, .. }) => {
                    // Handed to the turn: it runs there, unless it is lost
                    // on the way and queued again.
                    let l = Ledger {
                        deliveries: vec![(*turn, false)],
                        done: true,
                        failed: false,
                    };
                    prop_assert!(self.ledger.insert(*prompt, l).is_none());
                }
                Effect::Emit(Event::Unresponsive { retried, .. }) => {
                    self.seen
                        .insert(format!("unresponsive, retried: {retried}"));
                }
                Effect::Emit(Event::PromptFailed { prompt, .. }) => {
                    self.ledger.get_mut(prompt).unwrap().failed = true;
                    settled_now.insert(*prompt);
                }
                Effect::Emit(Event::PromptRequeued { prompt, .. }) => {
                    let l = self.ledger.get_mut(prompt).unwrap();
                    prop_assert!(
                        !l.deliveries.iter().any(|(_, reported)| *reported),
                        "prompt {prompt} queued again after its harness reported in"
                    );
                    // A lost steer goes back to the queue.
                    l.done = false;
                    settled_now.insert(*prompt);
                    self.unrun(*prompt);
                }
                Effect::Emit(Event::TurnEnded {
                    turn,
                    prompt,
                    usage,
                    ..
                }) => {
                    // A turn's end carries what its harness reported, no
                    // more and no less (a total counted by its growth).
                    let fed = self.fed.remove(turn);
                    prop_assert_eq!(usage, &fed, "turn {} used", turn);
                    if let Some(u) = usage {
                        self.journalled = self.journalled.plus(*u);
                    }
                    ended_now.push(*prompt)
                }
                Effect::Emit(_) => {}
            }
        }
        for prompt in ended_now {
            if !settled_now.contains(&prompt) {
                let l = self.ledger.get_mut(&prompt).unwrap();
                prop_assert!(
                    !l.deliveries.is_empty(),
                    "prompt {prompt} counted as run but never delivered"
                );
                l.done = true;
            }
        }
        Ok(())
    }

    /// What holds after every step.
    fn invariants(&mut self) -> Check {
        let r = self.s.record().clone();
        // Nothing pending outlives its turn, and the pending are bounded.
        let current = r.turn.as_ref().map(|t| t.seq);
        prop_assert!(
            r.pending_approvals.iter().all(|a| Some(a.turn) == current),
            "a request pending past its turn: {:?}",
            r.pending_approvals
        );
        prop_assert!(r.pending_approvals.len() <= MAX_PENDING);
        if r.stage == Stage::Closed {
            self.closed = true;
        }
        prop_assert!(!self.closed || r.stage == Stage::Closed, "closed, then not");
        // Every change of the record was persisted, or is in the journal:
        // a restore reads both, and what the journal says of a warm turn
        // (its harness printed for it) it would say of the live record.
        prop_assert_eq!(
            durable(&r.clone().with_journal_tail(self.tail)),
            durable(&self.on_disk()),
            "a change was not persisted"
        );
        // Prompts run in the order they were accepted, whatever way they
        // took (queued, steered, handed back, queued again, a restart).
        prop_assert!(
            self.ran.windows(2).all(|w| w[0] < w[1]),
            "prompts ran out of order: {:?}",
            self.ran
        );
        // The queue holds its prompts in that order, within its bound (and
        // those that came back to it).
        prop_assert!(r
            .queue
            .iter()
            .zip(r.queue.iter().skip(1))
            .all(|(a, b)| a.id < b.id));
        // A turn's prompt that comes back (a restart, a failed launch) and
        // a lost steer are never refused.
        prop_assert!(r.queue.len() <= config().max_queued_prompts + 1 + self.steered.len());
        // At most one turn, across runs.
        prop_assert!(
            self.procs.len() + self.spawn.is_some() as usize <= 1,
            "{:?}",
            self.procs
        );
        // Every accepted prompt is queued, the turn's, run once or failed.
        let mut whereabouts: BTreeMap<PromptId, usize> = BTreeMap::new();
        for p in &r.queue {
            *whereabouts.entry(p.id).or_default() += 1;
        }
        // A finished turn's prompt has run (its process only lingers).
        if let Some(t) = r.turn.as_ref().filter(|t| !t.finished()) {
            *whereabouts.entry(t.prompt.id).or_default() += 1;
        }
        for (id, l) in &self.ledger {
            let places = whereabouts.remove(id).unwrap_or(0) + l.done as usize + l.failed as usize;
            prop_assert_eq!(
                places,
                1,
                "prompt {} is in {} places: {:?} {:?}",
                id,
                places,
                l,
                r
            );
        }
        prop_assert!(whereabouts.is_empty(), "unknown prompts {:?}", whereabouts);
        // The session's totals are its journalled turns' usage, added up.
        prop_assert_eq!(r.usage, self.journalled, "the totals");
        Ok(())
    }

    /// A turn that got SIGTERM gets SIGKILL within the grace unless it ended.
    /// Turn `seq` starts (a spawn, or a lingering process): with snapshots
    /// on, only once the snapshot before it was taken or waited out.
    fn folder_was_recorded(&mut self, seq: TurnSeq) -> Check {
        if self.snapshots {
            prop_assert_eq!(
                self.snapshot_ready.take(),
                Some(seq),
                "turn {} started before its folder was recorded",
                seq
            );
            self.seen.insert("a turn waited for its snapshot".into());
        }
        Ok(())
    }

    fn kill_follows_term(&self) -> Check {
        let grace = config().kill_grace;
        self.follows_within(grace, &self.terms, &self.kills, "got SIGTERM", "SIGKILL")
    }

    /// A turn that got SIGKILL is given up within the kill wait unless it
    /// ended.
    fn abandon_follows_kill(&self) -> Check {
        let (kills, abandons) = (&self.kills, &self.abandons);
        self.follows_within(KILL_WAIT, kills, abandons, "got SIGKILL", "given up")
    }

    /// A turn asked in its protocol to stop gets SIGTERM within the kill
    /// grace unless it ended.
    fn term_follows_asking(&self) -> Check {
        self.follows_within(
            config().kill_grace,
            &self.asked_to_stop,
            &self.terms,
            "was asked to stop",
            "SIGTERM",
        )
    }

    /// Each of this run's `causes` (turn, when, run) is followed within
    /// `grace` by one of `effects` for its turn, or by the turn's end.
    fn follows_within(
        &self,
        grace: Millis,
        causes: &[(TurnSeq, Millis, u32)],
        effects: &[(TurnSeq, Millis, u32)],
        cause: &str,
        effect: &str,
    ) -> Check {
        for &(seq, at, run) in causes {
            if run != self.run || self.now < at + grace {
                continue;
            }
            let within = |list: &[(TurnSeq, Millis, u32)]| {
                list.iter()
                    .any(|&(s, t, r)| s == seq && r == run && t >= at && t <= at + grace)
            };
            prop_assert!(
                within(effects) || within(&self.ends),
                "turn {seq} {cause} at {at} and neither ended nor got {effect} by {}",
                at + grace
            );
        }
        Ok(())
    }

    /// A permit is never held past the startup timeout (after the wait for
    /// the first turn's snapshot, when there is one): a harness that does
    /// not name its session in time gives it back.
    fn permit_within_startup_timeout(&self) -> Check {
        if let Some(since) = self.held_since {
            let c = config_for(self.linger, self.snapshots);
            let limit = since + c.startup_timeout + if c.snapshots { c.snapshot_wait } else { 0 };
            prop_assert!(
                self.now <= limit,
                "a permit granted at {since} is still held at {} (limit {limit})",
                self.now
            );
        }
        Ok(())
    }

    /// At the end of a run: every granted permit came back, except the one
    /// a launch's first turn holds while its harness is starting.
    fn permits_settled(&self) -> Check {
        let starting = self.s.launch_live()
            && self.s.shown() == room_machines::session::Shown::Pending
            && self
                .s
                .record()
                .turn
                .as_ref()
                .is_some_and(|t| t.launch && !t.reported());
        // A launch whose first turn waits for its snapshot holds its permit.
        let starting = starting || self.s.state().snapshot.holds_launch;
        let held = self.granted - self.released;
        prop_assert!(
            held == 0 || (held == 1 && starting),
            "{} permits granted, {} given back; launch {:?}, record {:?}",
            self.granted,
            self.released,
            self.s.launch().map(|l| l.state()),
            self.s.record()
        );
        Ok(())
    }
}

/// The kinds of error a session reports, by a phrase of each.
const ERRORS: [&str; 12] = [
    "NotStarted",
    "Cut ServiceStop before reporting in",
    "Cut ServiceStop after reporting in",
    "Cut ServiceEnd",
    "PromptNotRun",
    "NotSpawned",
    "PromptUndelivered",
    "ExitedBeforeNamed",
    "TurnFailed",
    "HarnessSaidFailed",
    "JournalFull",
    "Unresponsive",
];

/// A failure's kind, as `ERRORS` names them: its variant, and for a cut
/// turn what cut it and whether its harness had reported in.
fn failure_kind(failure: &Failure) -> String {
    match failure {
        Failure::Cut { by, reported, .. } => format!(
            "Cut {by:?} {} reporting in",
            if *reported { "after" } else { "before" }
        )
        .replace("Cut ServiceEnd after reporting in", "Cut ServiceEnd")
        .replace("Cut ServiceEnd before reporting in", "Cut ServiceEnd"),
        other => name(other),
    }
}

/// A value's variant as Debug prints it, with the launch's or event's own
/// variant for the wrappers: `Signal { seq: 2, signal: Kill }` is
/// `Signal Kill`, `Emit(TurnEnded { .. })` is `Emit TurnEnded`.
fn name(v: &impl std::fmt::Debug) -> String {
    let text = format!("{v:?}");
    let mut words = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().next().is_some_and(char::is_uppercase));
    let first = words.next().unwrap_or_default().to_string();
    match first.as_str() {
        "Emit" | "Launch" | "Signal" | "Relaunch" => {
            format!("{first} {}", words.next().unwrap_or_default())
        }
        _ => first,
    }
}

/// What a life's session is started with.
#[derive(Debug, Clone, Copy)]
struct Life {
    /// `project_copy`.
    promised: bool,
    /// How long its process lingers after a turn.
    linger: Millis,
    /// Its harness takes an effort only when its process starts.
    effort_at_spawn: bool,
    /// Its folder is recorded at turn boundaries.
    snapshots: bool,
}

fn life() -> impl Strategy<Value = Life> {
    // A third of the lives record their folder: they take longer to run
    // each turn, and the rest must still reach every other situation.
    let snapshots = prop_oneof![2 => Just(false), 1 => Just(true)];
    (any::<bool>(), linger(), any::<bool>(), snapshots).prop_map(
        |(promised, linger, effort_at_spawn, snapshots)| Life {
            promised,
            linger,
            effort_at_spawn,
            snapshots,
        },
    )
}

fn run(life: Life, first: Option<String>, acts: Vec<Act>) -> Result<World, TestCaseError> {
    let mut w = World::new(life, first)?;
    for act in acts {
        let r = w.act(act);
        if let Err(e) = r {
            return Err(TestCaseError::fail(format!(
                "{e}\ntrace:\n{}",
                w.trace.join("\n")
            )));
        }
    }
    w.permits_settled()
        .map_err(|e| TestCaseError::fail(format!("{e}\ntrace:\n{}", w.trace.join("\n"))))?;
    Ok(w)
}

/// How long the harness's process lingers after a turn.
fn linger() -> impl Strategy<Value = Millis> {
    prop_oneof![Just(0), 0..2_000u64]
}

fn acts() -> impl Strategy<Value = Vec<Act>> {
    prop::collection::vec(act(), 0..80)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Every property at once over one random life: a paused queue never
    /// starts a turn; at most one turn, across restarts; a closed session
    /// starts nothing; every prompt is run once, failed, or still queued;
    /// a restored waiting start waits again; every granted permit comes
    /// back once; no first turn before the wait ended and the permit came;
    /// a Kill follows a Term within the grace unless the turn ended, and the
    /// tree is given up within the kill wait after it; a turn's tree gets
    /// each signal once, and what an exited harness left gets SIGTERM at
    /// once unless the tree had a signal already; every
    /// change is persisted, and Persist comes first; a turn's end carries
    /// what its harness reported, and the session's totals are the sum of
    /// its journalled turns' usage; an interrupt asks before it signals and
    /// SIGTERM follows within the grace; nothing is steered into, or asked
    /// of, a turn without its prompt, being ended or with its stdin closed;
    /// a lost steer is queued again; prompts run in the order they were
    /// accepted.
    #[test]
    fn a_session_keeps_its_rules_through_any_sequence_of_inputs_and_restarts(
        life in life(),
        first in prop::option::of("[a-z]{1,3}"),
        acts in acts(),
    ) {
        run(life, first, acts)?;
    }
}

/// The random lives above reach every situation the rules are about; a
/// change to the generators that stops reaching one fails here, not silently.
#[test]
fn the_random_lives_reach_every_situation() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = (life(), prop::option::of("[a-z]{1,3}"), acts());
    let mut seen = BTreeSet::new();
    for _ in 0..10_000 {
        let (life, first, acts) = strategy.new_tree(&mut runner).unwrap().current();
        seen.extend(run(life, first, acts).unwrap().seen);
    }
    let quiet = prop::collection::vec(quiet_act(), 0..80);
    for _ in 0..2000 {
        let acts = quiet.new_tree(&mut runner).unwrap().current();
        let life = Life {
            promised: false,
            linger: 1_000,
            effort_at_spawn: false,
            snapshots: false,
        };
        seen.extend(run(life, None, acts).unwrap().seen);
    }
    let warm = prop::collection::vec(warm_act(), 0..80);
    for i in 0..1000 {
        // Launched, its first turn done and its process lingering.
        let mut acts = vec![
            Act::Observe(Observation::marked(CopyMark::Ready, 0)),
            Act::Grant,
            Act::Spawn(true),
            Act::Name,
            Act::Finish(false),
        ];
        acts.extend(warm.new_tree(&mut runner).unwrap().current());
        let life = Life {
            promised: false,
            linger: 60_000,
            effort_at_spawn: i % 2 == 0,
            snapshots: i % 3 == 0,
        };
        seen.extend(run(life, Some("a".into()), acts).unwrap().seen);
    }
    let want = [
        "a warm follow-up with no record write",
        "a model switched in place",
        "an effort switched in place",
        "a linger ended for an effort",
        "a turn with images",
        "a turn waited for its snapshot",
        "a snapshot's wait ran out",
        "a folder recorded after a turn",
        "applied Snapshotted",
        "crashed with a line journalled, not fed",
        "a turn restored from the journal, printed: true",
        "a turn restored from the journal, printed: false",
        "applied TurnSpawned",
        "applied NativeId",
        "applied NoSteers",
        "applied TurnEnded",
        "applied SpawnFailed",
        "applied PromptUndelivered",
        "applied SurvivorGone",
        "applied LeftBehind",
        "applied TurnUsage",
        "reported Turn",
        "reported Total",
        "applied OutputCapped",
        "applied Timeout",
        "applied Stop",
        "applied Interrupt",
        "applied Close",
        "applied Resume",
        "applied Relaunch Resume",
        "applied Relaunch Wake",
        "applied Relaunch Restart",
        "applied ServiceStop",
        "applied Steer",
        "applied TurnFinished",
        "applied SteerUndelivered",
        "CloseInput",
        "InterruptTurn",
        "Steer",
        "Emit PromptSteered",
        "ContinueTurn",
        "Emit BudgetSpent",
        "applied SetBudget",
        "Launch AskPermit",
        "Launch ReleasePermit",
        "Launch WaitFor",
        "Launch WaitEnded",
        "Launch CancelPermitAsk",
        "Launch Unwatch",
        "SpawnTurn",
        "DeliverPrompt",
        "Signal Term",
        "Signal Kill",
        "AbandonTree",
        "KillSurvivor",
        "applied ApprovalRequested",
        "applied ApprovalDecided",
        "AnswerApproval",
        "Emit ApprovalRequested",
        "Emit ApprovalResolved",
        "answer by App",
        "answer by Timeout",
        "answer by TurnEnding",
        "approval void",
        "Emit PromptRequeued",
        "Emit PromptFailed",
        "Emit TurnEnded",
        "unresponsive, retried: true",
        "unresponsive, retried: false",
        "PersistPrompt",
        "refused QueueFull",
        "applied RewindBegin",
        "applied RewindOver",
        "cut carried",
        "refused TurnRunning",
        "refused Rewinding",
        "refused NoSuchTurn",
        "steered",
    ];
    let errors = ERRORS.iter().map(|p| format!("error: {p}"));
    let missing: Vec<String> = want
        .iter()
        .map(|w| w.to_string())
        .chain(errors)
        .filter(|w| !seen.contains(w))
        .collect();
    assert!(
        missing.is_empty(),
        "never reached: {missing:?}\nreached: {seen:?}"
    );
}

/// workspace, folder, harness, kind, parent, shared_sandbox, prompt, then
/// model, effort, instructions, mcp_servers, then attachments.
type Fields = (
    String,
    String,
    u8,
    u8,
    Option<String>,
    bool,
    Option<String>,
    (Option<String>, Option<String>, Option<String>, Option<u8>),
    Vec<Attachment>,
);

/// An image with one of two contents.
fn attachment() -> impl Strategy<Value = Attachment> {
    "[ab]".prop_map(|sha256| Attachment {
        media_type: room_machines::session::ImageType::Png,
        bytes: 1,
        sha256,
    })
}

fn fields() -> impl Strategy<Value = Fields> {
    (
        "[ab]",
        "/[ab]",
        0..2u8,
        0..2u8,
        prop::option::of("[ab]"),
        any::<bool>(),
        prop::option::of("[ab]"),
        (
            prop::option::of("[ab]"),
            prop::option::of("[ab]"),
            prop::option::of("[ab]"),
            prop::option::of(0..2u8),
        ),
        prop::collection::vec(attachment(), 0..2),
    )
}

fn view(f: &Fields, project_copy: bool, plan_only: bool) -> StartFields<'_, u8, u8, u8> {
    StartFields {
        workspace: f.0.as_str(),
        folder: std::path::Path::new(f.1.as_str()),
        harness: &f.2,
        kind: &f.3,
        parent: f.4.as_deref(),
        shared_sandbox: f.5,
        prompt: f.6.as_deref(),
        model: f.7 .0.as_deref(),
        effort: f.7 .1.as_deref(),
        instructions: f.7 .2.as_deref(),
        mcp_servers: f.7 .3.as_ref(),
        project_copy,
        plan_only,
        attachments: &f.8,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A retry that differs only in project_copy or plan_only is the same
    /// start; otherwise the first differing field is named.
    #[test]
    fn a_retry_differing_only_in_project_copy_or_plan_only_returns_the_same_session(
        a in fields(), b in fields(), flags in any::<[bool; 4]>(),
    ) {
        let was = view(&a, flags[0], flags[1]);
        // The same start with only project_copy and plan_only changed.
        prop_assert_eq!(retry_difference(&was, &view(&a, flags[2], flags[3])), None);
        // Any other start: the first field that differs, in order.
        let differs = [
            a.0 != b.0, a.1 != b.1, a.2 != b.2, a.3 != b.3,
            a.4 != b.4, a.5 != b.5, a.6 != b.6, a.8 != b.8,
            a.7.0 != b.7.0, a.7.1 != b.7.1, a.7.2 != b.7.2, a.7.3 != b.7.3,
        ];
        let want = room_machines::session::retry::COMPARED
            .iter()
            .zip(differs)
            .find(|(_, d)| *d)
            .map(|(f, _)| *f);
        prop_assert_eq!(retry_difference(&was, &view(&b, flags[2], flags[3])), want);
    }
}
