//! Small values that the session's inputs, effects, events and record
//! share: how a turn's process ended, a cap on the journal, a relaunch's
//! mode, why a turn is ended.

use serde::{Deserialize, Serialize};

/// A prompt's number in its session: 1, 2, 3 … in the order they were accepted.
pub type PromptId = u64;

/// A turn's number in its session: 1, 2, 3 … never reused once recorded.
pub type TurnSeq = u64;

/// How `POST /v1/sessions/{id}/relaunch` brings a started session back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelaunchMode {
    /// Unpause the queue and run what is queued, resuming the native session.
    Resume,
    /// Run what is queued; the pause stays as it is.
    Wake,
    /// End the running turn first, then as `resume`.
    Restart,
}

/// How a turn's process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
}

impl Exit {
    /// Exit code 0.
    pub fn success(self) -> bool {
        self == Exit::Code(0)
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exit code {c}"),
            Exit::Signal(s) => write!(f, "signal {s}"),
        }
    }
}

/// A cap on a session's journal (the config's `journal_max_bytes` and
/// `journal_max_events`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JournalCap {
    /// Its size in bytes.
    Bytes(u64),
    /// Its number of events.
    Events(u64),
}

impl std::fmt::Display for JournalCap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            JournalCap::Bytes(n) if n >= 1 << 20 && n % (1 << 20) == 0 => {
                write!(f, "{} MiB", n >> 20)
            }
            JournalCap::Bytes(n) if n >= 1 << 10 && n % (1 << 10) == 0 => {
                write!(f, "{} KiB", n >> 10)
            }
            JournalCap::Bytes(n) => write!(f, "{n} bytes"),
            JournalCap::Events(n) => write!(f, "{n} events"),
        }
    }
}

/// Why the machine is ending a turn (or why it ended one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndWhy {
    /// The app stopped the session (the queue is paused).
    Stop,
    /// The app interrupted the turn (the queue goes on).
    Interrupt,
    /// The app closed the session.
    Close,
    /// A relaunch in `restart` mode.
    Restart,
    /// The service is stopping; the turn is cut.
    ServiceStop,
    /// A launch's first turn did not name its session in time.
    StartupTimeout,
    /// The prompt could not be handed to the harness (its record could not
    /// be written, or its stdin refused it).
    Undelivered,
    /// The session's journal reached its cap: the turn's further output
    /// could not be kept.
    OutputCapped,
    /// The service ended without ending the turn (kill -9, a crash); the
    /// restore killed what survived. Only ever reported, never persisted.
    Restore,
    /// The session spent its budget (`max_cost_usd`, `max_tokens`).
    Budget,
    /// A turn other than a launch's first showed no sign of life (did not
    /// name its session) within the startup timeout of getting its prompt.
    NoSignOfLife,
}

/// A turn's process as the supervisor started it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Process {
    /// The harness's pid.
    pub pid: u32,
    /// Its process group.
    pub pgid: u32,
    /// Field 22 of `/proc/PID/stat` (clock ticks since boot), so a restart
    /// never mistakes a recycled pid for the turn.
    pub start_time: u64,
}

/// Which side of a turn a snapshot records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Boundary {
    /// The folder as the turn finds it, taken before it starts.
    Before,
    /// The folder as the turn left it, taken once its end is journalled.
    After,
}

/// Where a rewind cut the harness's conversation: after turn
/// `after_turn`, at the harness's own mark (claude: the uuid of that
/// turn's last message; codex: the id of its first turn after it). The
/// next process resumes the native session cut there; once a turn that
/// carried it has run, the harness's conversation goes on from the cut
/// and the next resumes as usual.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cut {
    /// The turn the conversation ends with.
    pub after_turn: TurnSeq,
    /// The harness's mark (opaque to the machine).
    pub at: String,
    /// The turn whose process was started with it, until that turn ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried_by: Option<TurnSeq>,
    /// A fork's: the process starts a native session of its own from the
    /// cut, and the one it resumes (another session's) is left as it is.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fork: bool,
}

/// The snapshot before the next turn: asked for, and whether it came back
/// (or its wait ran out). Not in the record: a restart asks again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotGate {
    /// The turn whose `Before` snapshot is asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<TurnSeq>,
    /// The turn whose `Before` snapshot is done (or given up): it may start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<TurnSeq>,
    /// The turn whose `After` snapshot is asked for, until it is taken
    /// (or its wait runs out): the journal of a closed session is not over
    /// before its diff is in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<TurnSeq>,
    /// The launch's permit is held and its first turn waits for the
    /// snapshot: its answer starts the harness.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub holds_launch: bool,
}
