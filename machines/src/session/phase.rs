//! The current turn as a typed phase: where its harness is with the turn
//! ([`Phase`]), and beside it whether the machine is ending it. The record
//! keeps it in today's flat shape ([`Wire`]), so records written before the
//! phase existed load, and the phase writes exactly what they held.

use serde::{Deserialize, Serialize};

use super::prompt::Prompt;
use super::usage::Usage;
use super::values::{EndWhy, Process, TurnSeq};

/// The current turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Wire", into = "Wire")]
pub struct Turn {
    /// Its number.
    pub seq: TurnSeq,
    /// The prompt it runs; it left the queue when the turn was asked for.
    pub prompt: Prompt,
    /// A launch's first turn: naming its session completes the launch.
    pub launch: bool,
    /// Its prompt went to the process that lingered after the turn before
    /// (`ContinueTurn`): everything its harness prints comes after the
    /// prompt, so the journal says whether it began (record.rs,
    /// [`super::TurnTail`]).
    pub warm: bool,
    /// Where its harness is with it.
    pub phase: Phase,
    /// The machine is ending it, and why (persisted, so a restart reports
    /// the turn as what it was: stopped, closed, cut). Not a phase of its
    /// own: any phase can be ended, and an ending turn still moves on
    /// (its process comes back, names its session, finishes).
    pub ending: Option<EndWhy>,
}

/// Where a turn's harness is with it. Each phase carries only what it has:
/// no process before `TurnSpawned`, no usage or failure before a process,
/// none of either once the turn is over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// `SpawnTurn` is out and no process came back yet. It exists because
    /// the prompt is still the turn's alone: a restart puts it back in the
    /// queue, and a process that comes back to a turn ended meanwhile never
    /// gets it.
    Asked,
    /// The process runs without the prompt: it was ended before it was
    /// spawned, or its prompt did not reach it (`PromptUndelivered`). It
    /// exists because such a prompt was never run: however the turn ends,
    /// the prompt goes back to the queue (or fails, interrupted).
    Spawned(Run),
    /// The process has the prompt (`DeliverPrompt`, or `ContinueTurn` in a
    /// lingering process): the only phase in which the harness runs it, is
    /// steered, and says the turn is done.
    Prompted(Run),
    /// The harness said the turn is done (its `turn_ended` is journalled)
    /// and its process lingers for the next prompt. It exists because the
    /// turn is over (the session shows idle, the turn's usage is counted)
    /// while its process is still the session's to end.
    Lingering {
        /// The process that waits.
        process: Process,
    },
}

/// A spawned turn's process and what its harness said of the turn so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The process, as the supervisor started it.
    pub process: Process,
    /// The harness named its session during this turn (`NativeId`): it has
    /// begun the prompt, which is therefore never run again.
    pub named: bool,
    /// What the harness reported the turn used so far; none until it reports.
    pub usage: Option<Usage>,
    /// The harness said the turn failed, and why: the session's error once
    /// the turn has ended by itself.
    pub failed: Option<String>,
}

impl Run {
    /// A process that just came back: its harness said nothing yet.
    pub fn new(process: Process) -> Run {
        Run {
            process,
            named: false,
            usage: None,
            failed: None,
        }
    }
}

impl Turn {
    /// A turn just asked for (`SpawnTurn`).
    pub fn asked(seq: TurnSeq, prompt: Prompt, launch: bool) -> Turn {
        Turn {
            seq,
            prompt,
            launch,
            warm: false,
            phase: Phase::Asked,
            ending: None,
        }
    }

    /// Its process, once spawned.
    pub fn process(&self) -> Option<Process> {
        match &self.phase {
            Phase::Asked => None,
            Phase::Spawned(run) | Phase::Prompted(run) => Some(run.process),
            Phase::Lingering { process } => Some(*process),
        }
    }

    /// Its spawned process and what its harness said, unless the turn is
    /// not spawned yet or already over.
    pub fn run(&self) -> Option<&Run> {
        match &self.phase {
            Phase::Spawned(run) | Phase::Prompted(run) => Some(run),
            Phase::Asked | Phase::Lingering { .. } => None,
        }
    }

    /// [`Turn::run`], to change.
    pub fn run_mut(&mut self) -> Option<&mut Run> {
        match &mut self.phase {
            Phase::Spawned(run) | Phase::Prompted(run) => Some(run),
            Phase::Asked | Phase::Lingering { .. } => None,
        }
    }

    /// The process has the prompt (handed over after the process was
    /// persisted), or had it and finished it.
    pub fn delivered(&self) -> bool {
        matches!(self.phase, Phase::Prompted(_) | Phase::Lingering { .. })
    }

    /// The harness named its session during this turn (`NativeId`).
    pub fn reported(&self) -> bool {
        match &self.phase {
            Phase::Asked => false,
            Phase::Spawned(run) | Phase::Prompted(run) => run.named,
            Phase::Lingering { .. } => true,
        }
    }

    /// The harness said the turn is done and its process lingers.
    pub fn finished(&self) -> bool {
        matches!(self.phase, Phase::Lingering { .. })
    }

    /// What its harness reported it used so far; none until it reports,
    /// and none once the turn is over (it joined the session's totals).
    pub fn usage(&self) -> Option<Usage> {
        self.run().and_then(|run| run.usage)
    }

    /// Why its harness said the turn failed, if it did.
    pub fn failed(&self) -> Option<&str> {
        self.run().and_then(|run| run.failed.as_deref())
    }
}

/// A turn as the record writes it: flat, with today's fields and
/// defaults, so records written before [`Phase`] existed load unchanged.
#[derive(Serialize, Deserialize)]
struct Wire {
    seq: TurnSeq,
    prompt: Prompt,
    #[serde(default)]
    launch: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    warm: bool,
    /// None: asked for, not spawned yet (a restart requeues its prompt).
    #[serde(default)]
    process: Option<Process>,
    /// The prompt was handed over (`DeliverPrompt`).
    #[serde(default)]
    delivered: bool,
    /// The harness named its session during this turn.
    #[serde(default)]
    reported: bool,
    #[serde(default)]
    ending: Option<EndWhy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
    /// Its harness said the turn is done and its process lingers.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    finished: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    failed: Option<String>,
}

impl From<Wire> for Turn {
    /// The phase the flat fields describe. A shape the machine never writes
    /// reads as the nearest phase: without a process, asked for; finished,
    /// lingering (what else it says is over with the turn).
    fn from(w: Wire) -> Turn {
        let phase = match w.process {
            None => Phase::Asked,
            Some(process) if w.finished => Phase::Lingering { process },
            Some(process) => {
                let run = Run {
                    process,
                    named: w.reported,
                    usage: w.usage,
                    failed: w.failed,
                };
                if w.delivered {
                    Phase::Prompted(run)
                } else {
                    Phase::Spawned(run)
                }
            }
        };
        Turn {
            seq: w.seq,
            prompt: w.prompt,
            launch: w.launch,
            warm: w.warm,
            phase,
            ending: w.ending,
        }
    }
}

impl From<Turn> for Wire {
    fn from(t: Turn) -> Wire {
        let delivered = t.delivered();
        let reported = t.reported();
        let finished = t.finished();
        let process = t.process();
        let (usage, failed) = match t.phase {
            Phase::Spawned(run) | Phase::Prompted(run) => (run.usage, run.failed),
            Phase::Asked | Phase::Lingering { .. } => (None, None),
        };
        Wire {
            seq: t.seq,
            prompt: t.prompt,
            launch: t.launch,
            warm: t.warm,
            process,
            delivered,
            reported,
            ending: t.ending,
            usage,
            finished,
            failed,
        }
    }
}
