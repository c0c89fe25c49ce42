//! What goes in and out of a session machine: its config, inputs, effects,
//! timers and outcomes.

use serde::{Deserialize, Serialize};

use super::approval::{ApprovalId, ApprovalMode, DecidedBy, Decision, Request, APPROVAL_TIMEOUT};
use super::attachment::Attachment;
use super::budget::Budget;
use super::choice::ModelChoice;
use super::event::Event;
use super::launch_io::LaunchInput;
use super::prompt::{NewPrompt, Prompt};
use super::usage::UsageReport;
use super::values::{Boundary, Cut, Exit, JournalCap, RelaunchMode};
use super::values::{Process, PromptId, TurnSeq};
use crate::launch;
use crate::launch::LaunchEffect;
use crate::time::Millis;

/// `startup_timeout_ms`: how long a launch's first turn has to name its session.
pub const STARTUP_TIMEOUT: Millis = 120_000;
/// `kill_grace_ms`: how long a turn has between SIGTERM and SIGKILL.
pub const KILL_GRACE: Millis = 4_000;
/// How long what is left of a turn's tree has after SIGKILL before the
/// runtime is told to give it up (`AbandonTree`): a process in
/// uninterruptible sleep dies only when it wakes. The supervisor's own
/// `KILL_WAIT` is the same bound.
pub const KILL_WAIT: Millis = 5_000;
/// `linger_ms`: how long a harness's process waits for the next
/// prompt after its turn is done, before its stdin closes.
pub const LINGER: Millis = 30_000;
/// How long after a failed `Persist` the record is written again, unless
/// another input writes it first.
pub const PERSIST_RETRY: Millis = 1_000;
/// `max_queued_prompts`: the most prompts a session holds waiting.
pub const MAX_QUEUED_PROMPTS: usize = 1000;
/// The longest a turn waits for the snapshot of its folder before it: a
/// snapshot is bounded by its own deadline (60 s by default), and this
/// leaves it room to say why it failed.
pub const SNAPSHOT_WAIT: Millis = 65_000;

/// The session's limits; the defaults are the constants above and the launch's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    /// The launch's limits (copy wait, mark age, poll).
    pub launch: launch::Config,
    /// From `SpawnTurn` of a launch's first turn to its `NativeId`, at most.
    pub startup_timeout: Millis,
    /// From `Signal(Term)` to `Signal(Kill)`.
    pub kill_grace: Millis,
    /// How long an approval request waits for the app.
    #[serde(default = "approval_timeout")]
    pub approval_timeout: Millis,
    /// How long a harness's process lingers after its turn, for
    /// the next prompt to go straight to it; 0: its stdin closes at once.
    #[serde(default)]
    pub linger: Millis,
    /// The most prompts waiting in the queue: a message past it is refused
    /// (a prompt that comes back to the queue is never refused).
    #[serde(default = "max_queued_prompts")]
    pub max_queued_prompts: usize,
    /// The session's folder is recorded at turn boundaries (`Snapshot`):
    /// no turn starts before its folder is recorded.
    #[serde(default)]
    pub snapshots: bool,
    /// How long a turn waits for the snapshot before it; then it starts
    /// without.
    #[serde(default = "snapshot_wait")]
    pub snapshot_wait: Millis,
}

fn snapshot_wait() -> Millis {
    SNAPSHOT_WAIT
}

fn approval_timeout() -> Millis {
    APPROVAL_TIMEOUT
}

fn max_queued_prompts() -> usize {
    MAX_QUEUED_PROMPTS
}

impl Default for Config {
    fn default() -> Self {
        Config {
            launch: launch::Config::default(),
            startup_timeout: STARTUP_TIMEOUT,
            kill_grace: KILL_GRACE,
            approval_timeout: APPROVAL_TIMEOUT,
            linger: LINGER,
            max_queued_prompts: MAX_QUEUED_PROMPTS,
            snapshots: false,
            snapshot_wait: SNAPSHOT_WAIT,
        }
    }
}

/// What the start request fixed for the session's whole life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Options {
    /// `project_copy`: the first launch waits for the promised copy.
    pub promised: bool,
    /// `plan_only`: every turn plans and edits nothing.
    pub plan_only: bool,
    /// `approvals`: who answers the harness's approval requests.
    #[serde(default)]
    pub approvals: ApprovalMode,
    /// `max_cost_usd`, `max_tokens`: the budget it starts with (the record
    /// holds the one in force).
    #[serde(default)]
    pub budget: Budget,
    /// `model` and `effort`: what every turn runs until a message
    /// chooses otherwise, as each `turn_started` says; none for the CLI's
    /// own default.
    #[serde(flatten)]
    pub choice: ModelChoice,
    /// The harness takes an effort only when its process starts (claude's
    /// `--effort`): a prompt that changes it runs in a new process.
    #[serde(default)]
    pub effort_at_spawn: bool,
    /// No permission modes of room-core's stand before the harness (an ACP
    /// agent asks as its own config says): with `approvals: auto`, what it
    /// asks about is allowed, not denied.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub auto_allows: bool,
}

/// Everything the runtime tells a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Input {
    // ---- from the app ----
    /// `POST …/fork`: this new session (nothing run yet) goes on from
    /// another's conversation, cut after one of its turns: its first
    /// process resumes that native session at the cut, as a session of
    /// its own.
    Fork {
        /// The session it is forked from.
        parent: String,
        /// That session's native session.
        native_id: String,
        /// Where its conversation is cut (`fork` set).
        cut: Cut,
    },
    /// `POST …/rewind`: hold the queue while the folder is put back (no
    /// turn may be running or about to start); `RewindOver` lets it go.
    RewindBegin {
        /// The turn the session goes back to: one that has ended.
        to_turn: TurnSeq,
    },
    /// The rewind that `RewindBegin` held the queue for is over; with a
    /// cut, the conversation ends where it says from the next process on
    /// (a lingering one ends).
    RewindOver {
        /// Where the conversation is cut, if it is.
        cut: Option<Cut>,
    },
    /// `POST …/messages`: queue a prompt, which may choose the model and
    /// effort of its turn and the turns after it.
    Message(NewPrompt),
    /// `POST …/messages` with `deliver: steer`: hand the prompt to the
    /// running turn when it can take one ([`Session::steerable`]), else
    /// queue it.
    ///
    /// [`Session::steerable`]: super::Session::steerable
    Steer(String),
    /// `POST …/budget`: the session's new budget.
    SetBudget(Budget),
    /// `POST …/stop`: end the running turn and pause the queue.
    Stop,
    /// `POST …/interrupt`: end the running turn; the queue goes on.
    Interrupt,
    /// `POST …/resume`: unpause the queue.
    Resume,
    /// `POST …/close`: end everything; nothing starts again.
    Close,
    /// `POST …/relaunch`.
    Relaunch(RelaunchMode),
    /// `POST …/approvals/{id}`: the app's answer to a request.
    ApprovalDecided {
        /// The request.
        id: ApprovalId,
        /// The answer.
        decision: Decision,
        /// What the model is told with it.
        message: Option<String>,
    },
    // ---- from the service ----
    /// The service is shutting down.
    ServiceStop,
    /// What the runtime reports to the launch (a read, a watch, a permit).
    Launch(LaunchInput),
    /// A timer fired; the machine compares `now` with its own deadlines.
    Timeout,
    /// The `Persist` just carried out could not be written. Fed before the
    /// effects after it are carried out, so a prompt whose turn is not on
    /// record is never handed over and a spawn the record does not name
    /// gets its note.
    PersistFailed {
        /// Why, in a sentence.
        error: String,
    },
    // ---- from the turn's supervisor ----
    /// The turn's harness asks before it runs a tool.
    ApprovalRequested {
        /// The turn.
        seq: TurnSeq,
        /// What it asks.
        request: Request,
    },
    /// `SpawnTurn` ran: the process exists, waiting for its prompt on stdin.
    TurnSpawned {
        /// The turn.
        seq: TurnSeq,
        /// Its process.
        process: Process,
    },
    /// `SpawnTurn` could not start a process.
    SpawnFailed {
        /// The turn.
        seq: TurnSeq,
        /// Why, in a sentence.
        reason: String,
    },
    /// `DeliverPrompt` could not be carried out: the `Persist` before it
    /// failed, or the harness's stdin refused the prompt. The prompt never
    /// reached the harness.
    PromptUndelivered {
        /// The turn.
        seq: TurnSeq,
        /// Why, in a sentence.
        error: String,
    },
    /// Turn `seq`'s harness process takes no prompt into its running turn
    /// (an ACP agent that offers no steering): a steer waits in the queue
    /// as any message does. Said before the turn names its session.
    NoSteers {
        /// The turn.
        seq: TurnSeq,
    },
    /// The turn's first event named the harness's session.
    NativeId {
        /// The turn.
        seq: TurnSeq,
        /// claude's `session_id`, codex's `thread_id`.
        native_id: String,
    },
    /// The turn's harness says its turn is done (claude's `result`,
    /// codex's `turn/completed`); its process waits for more input.
    TurnFinished {
        /// The turn.
        seq: TurnSeq,
        /// Why, when the harness says the turn failed: a failed turn does
        /// not linger, and the session's error says why.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failed: Option<String>,
        /// What the turn used, when the line that finishes it says so
        /// (claude's `result`): taken as a `TurnUsage` first, so one line
        /// is one input.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<UsageReport>,
    },
    /// A `Steer` could not be written to the turn's stdin: the prompt goes
    /// to the head of the queue.
    SteerUndelivered {
        /// The turn.
        seq: TurnSeq,
        /// The prompt.
        prompt: PromptId,
        /// Its text.
        text: String,
    },
    /// The turn's harness said what it used (one of its events).
    TurnUsage {
        /// The turn.
        seq: TurnSeq,
        /// What it said.
        report: UsageReport,
    },
    /// The turn's process (and everything it started) is gone.
    TurnEnded {
        /// The turn.
        seq: TurnSeq,
        /// How the harness ended.
        exit: Exit,
        /// The end of its stderr, for an error message (may be empty).
        detail: String,
    },
    /// The turn's harness exited, and the first look at its tree found
    /// processes it left behind (a daemon, a background job): ending them
    /// is the session's, as ending the turn is. Not said of a tree found
    /// empty.
    LeftBehind {
        /// The turn.
        seq: TurnSeq,
    },
    /// `Snapshot` is done: the folder is recorded, or could not be (the
    /// runtime journals which).
    Snapshotted {
        /// The turn.
        turn: TurnSeq,
        /// Which side of it.
        at: Boundary,
    },
    /// `KillSurvivor` is done: nothing of the restored turn runs any more.
    SurvivorGone {
        /// The turn.
        seq: TurnSeq,
    },
    /// The session's journal is at its cap: the turn printed output that
    /// was not journalled, and the rest of its output is being dropped.
    /// The runtime says it once per turn.
    OutputCapped {
        /// The turn.
        seq: TurnSeq,
        /// The cap it reached.
        cap: JournalCap,
    },
}

impl Input {
    /// `POST …/messages` that chooses nothing: the prompt runs with the
    /// session's choice in force.
    pub fn message(text: String) -> Input {
        Input::Message(NewPrompt::text(text))
    }

    /// Whether the app's answer to this command is due only once the turn
    /// it ends is gone (stop, interrupt, close, a restart): the app then
    /// knows nothing of that turn runs any more.
    pub fn answers_after_turn(&self) -> bool {
        matches!(
            self,
            Input::Stop | Input::Interrupt | Input::Close | Input::Relaunch(RelaunchMode::Restart)
        )
    }
}

/// The signals a turn gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// SIGTERM to everything the turn started.
    Term,
    /// SIGKILL to everything the turn started.
    Kill,
}

/// What the session wants the runtime to do, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Write [`Session::record`](super::Session::record) durably now. It
    /// always comes before the effects of the same input, so when it fails
    /// the runtime can restore its snapshot and drop them.
    Persist,
    /// Append this accepted prompt to the session's prompt log durably
    /// now, the one write a queued message needs: a record read back with
    /// its log holds every prompt accepted after it was written
    /// ([`Record::with_logged`](super::Record::with_logged)). It comes
    /// before everything else its input emits, `Persist` included, so
    /// when it fails the runtime can undo the command.
    PersistPrompt(Prompt),
    /// A launch effect for the runtime: the status file's watch and reads,
    /// the startup permit, and the copy wait's reports.
    Launch(LaunchEffect),
    /// Make turn `seq` findable after a kill -9 although the record on
    /// disk does not name it yet (a launch's first turn, which no input
    /// persisted, or a turn whose record could not be written): a restart
    /// kills whatever a note names. The next written record that names
    /// the spawned turn, or no turn, makes the note moot.
    NoteSpawn {
        /// The turn about to be spawned.
        seq: TurnSeq,
    },
    /// Start the turn's process (its own cgroup or process group) in the
    /// session's folder, making the folder first, with stdin left open and
    /// empty; answer `TurnSpawned` or `SpawnFailed`.
    SpawnTurn {
        /// The turn.
        seq: TurnSeq,
        /// The prompt (kept until `DeliverPrompt`).
        prompt: String,
        /// The native session to resume, if any.
        resume: Option<String>,
        /// Where its conversation is cut (a rewind's or a fork's), if it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cut: Option<Cut>,
        /// Plan only.
        plan_only: bool,
        /// The model and effort the process runs.
        #[serde(default, skip_serializing_if = "ModelChoice::is_empty")]
        choice: ModelChoice,
        /// The images the prompt carries.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<Attachment>,
    },
    /// Say the turn's prompt on its stdin (which stays open); answer
    /// `PromptUndelivered` if that (or the `Persist` before it) failed.
    DeliverPrompt {
        /// The turn.
        seq: TurnSeq,
    },
    /// Close the turn's stdin: the harness then ends its process once its
    /// turn is done.
    CloseInput {
        /// The turn.
        seq: TurnSeq,
    },
    /// Ask the turn's harness, in its protocol, to stop its turn; it ends
    /// the turn as it reports it. SIGTERM follows after the kill grace.
    InterruptTurn {
        /// The turn.
        seq: TurnSeq,
    },
    /// Turn `seq` runs in the lingering process of the turn before it:
    /// point what follows that process at `seq` and write `prompt` to its
    /// stdin; answer `PromptUndelivered` if that fails.
    ContinueTurn {
        /// The new turn.
        seq: TurnSeq,
        /// Its prompt.
        prompt: String,
        /// What the process must change first (the model, the effort) to
        /// run it as chosen.
        #[serde(default, skip_serializing_if = "ModelChoice::is_empty")]
        switch: ModelChoice,
        /// The images the prompt carries.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<Attachment>,
    },
    /// Record the session's folder `at` turn `turn`'s boundary; answer
    /// `Snapshotted` once it is recorded or cannot be.
    Snapshot {
        /// The turn.
        turn: TurnSeq,
        /// Which side of it.
        at: Boundary,
    },
    /// Write a prompt to the running turn's stdin; answer
    /// `SteerUndelivered` if that fails.
    Steer {
        /// The turn.
        seq: TurnSeq,
        /// The prompt.
        prompt: PromptId,
        /// Its text.
        text: String,
    },
    /// Signal everything the turn started; answer `TurnEnded` once it is gone.
    Signal {
        /// The turn.
        seq: TurnSeq,
        /// Which signal.
        signal: Signal,
    },
    /// SIGKILL did not end the turn's tree within [`KILL_WAIT`]: stop
    /// waiting for what is left of it (logged), and answer `TurnEnded`
    /// once its harness has exited and its pipes are read.
    AbandonTree {
        /// The turn.
        seq: TurnSeq,
    },
    /// A restart found this turn recorded: SIGKILL whatever still matches
    /// its pid and start time (or its cgroup), then answer `SurvivorGone`.
    KillSurvivor {
        /// The turn.
        seq: TurnSeq,
        /// What was recorded.
        process: Process,
    },
    /// Answer the turn's harness's approval request `harness_ref`; the
    /// runtime words a message the model reads when `message` is none and
    /// the answer is a denial.
    AnswerApproval {
        /// The turn.
        seq: TurnSeq,
        /// The harness's own name for the request.
        harness_ref: String,
        /// The tool asked about (an allow for the session names it).
        tool: String,
        /// The answer.
        decision: Decision,
        /// Who decided.
        by: DecidedBy,
        /// The app's message, if it gave one.
        message: Option<String>,
    },
    /// Append this event to the session's journal.
    Emit(Event),
}

/// The session's named deadlines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timer {
    /// One of the launch's (poll, copy limit).
    Launch(launch::Timer),
    /// A launch's first turn must name its session by then.
    StartupTimeout,
    /// A turn that got SIGTERM gets SIGKILL then.
    KillGrace,
    /// A turn that got SIGKILL and is still there is given up then.
    KillWait,
    /// A turn asked in its protocol to stop gets SIGTERM then.
    InterruptGrace,
    /// A finished turn's process stops waiting for the next prompt.
    Linger,
    /// The record that could not be written is written again.
    PersistRetry,
    /// The next turn starts without the snapshot it waits for.
    SnapshotWait,
    /// A pending approval request is denied unanswered.
    Approval,
}

/// Why an app command is refused; nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// The session is closed (409 `session_finished`).
    Closed,
    /// The session failed; only a relaunch or close applies (409 `session_finished`).
    Failed,
    /// Its first launch has not started the harness yet, or a relaunch is
    /// under way (409 `session_starting`).
    Starting,
    /// The service is stopping (503).
    ServiceStopping,
    /// No approval request has that number (404 `approval_not_found`).
    NoApproval,
    /// The request was answered already (409 `approval_answered`).
    ApprovalAnswered,
    /// The session spent its budget (409 `budget_spent`).
    BudgetSpent,
    /// The queue holds `max_queued_prompts` prompts (429 `queue_full`).
    QueueFull,
    /// A turn runs, or is about to (409 `turn_running`).
    TurnRunning,
    /// The last turn's folder is being recorded (409 `diff_pending`).
    FolderRecording,
    /// Another rewind is under way (409 `rewind_running`).
    Rewinding,
    /// No turn of that number has ended (409 `no_such_turn`).
    NoSuchTurn,
}

/// What an input did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The input applied.
    Applied,
    /// The input does not apply now (late, duplicate, early, for another
    /// turn, or a command with nothing to do); nothing changed.
    Ignored,
    /// An app command that this state refuses; nothing changed.
    Refused(Refusal),
}
