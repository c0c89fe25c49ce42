//! Recorded timelines: a machine's inputs with the effects they produced,
//! as JSON (`fixtures/timelines/`), and their replay. The runtime records
//! whole sessions in this format (`record_timelines` in its config: one run
//! per service process, begun by `Session::new` or `Session::restore`); the
//! tests replay hand-written and recorded ones alike.

use serde::{Deserialize, Serialize};

use crate::caller::{classify, Caller, ProcView};
use crate::command::Command;
use crate::launch::{Config, Effect, Input, Launch, Outcome, Phase, Plan};
use crate::policy::{decide, Decision};
use crate::session::{self, Session};
use crate::time::Millis;

/// One timeline file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "machine", rename_all = "snake_case", deny_unknown_fields)]
pub enum Timeline {
    /// Launch runs: each begins with `Launch::new` (a core restart starts a new run).
    Launch {
        /// The test or session it stands for.
        test: String,
        /// What it shows.
        about: String,
        /// The launch limits (the defaults when absent).
        #[serde(default)]
        config: Option<Config>,
        /// The runs, in order.
        runs: Vec<Run>,
    },
    /// Session runs: each begins with `Session::new` (the start) or
    /// `Session::restore` (a service restart, from the record it read).
    Session {
        /// The test or session it stands for.
        test: String,
        /// What it shows.
        about: String,
        /// The session's limits (the defaults when absent).
        #[serde(default)]
        config: Option<session::Config>,
        /// What the start fixed.
        options: session::Options,
        /// The runs, one per service process, in order.
        runs: Vec<SessionRun>,
    },
    /// Caller classification and the policy's decision, case by case.
    Caller {
        /// The test it stands for.
        test: String,
        /// What it shows.
        about: String,
        /// The cases.
        cases: Vec<Case>,
    },
}

/// One launch, from `Launch::new` on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// The launch's plan.
    pub plan: Plan,
    /// When `Launch::new` was called.
    pub began: Millis,
    /// What `Launch::new` emitted.
    pub effects: Vec<Effect>,
    /// Every input after that, with what it produced.
    pub steps: Vec<Step>,
}

/// One input and what it produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// When it was handled.
    pub at: Millis,
    /// The input.
    pub input: Input,
    /// The effects it produced, in order.
    pub effects: Vec<Effect>,
    /// Whether it applied, when the record says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// The phase after it, when the record says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
}

/// How a session run began.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Begin {
    /// `Session::new(config, options, prompt, at)`: the start.
    New {
        /// When.
        at: Millis,
        /// The first prompt.
        prompt: Option<session::NewPrompt>,
    },
    /// `Session::restore(config, options, record, at)`: a restart.
    Restore {
        /// When.
        at: Millis,
        /// The record the service read (boxed: it is much larger than a
        /// start's prompt).
        record: Box<session::Record>,
    },
}

/// One service process's life of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionRun {
    /// How it began.
    pub begin: Begin,
    /// What `new` or `restore` emitted.
    pub effects: Vec<session::Effect>,
    /// Every input after that, with what it produced.
    pub steps: Vec<SessionStep>,
}

/// One input to a session and what it produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionStep {
    /// When it was handled.
    pub at: Millis,
    /// The input.
    pub input: session::Input,
    /// The effects it produced, in order.
    pub effects: Vec<session::Effect>,
    /// Whether it applied.
    pub outcome: session::Outcome,
}

/// One classification and decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The caller's ancestry, nearest first.
    pub ancestry: Vec<ProcView>,
    /// The session whose turn's cgroup holds the caller, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_cgroup: Option<String>,
    /// room-cli's argv.
    pub argv: Vec<String>,
    /// The expected classification.
    pub caller: Caller,
    /// The expected decision.
    pub decision: Decision,
}

impl Run {
    /// A run that began at `began`, with nothing recorded yet.
    pub fn new(plan: Plan, began: Millis) -> Run {
        Run {
            plan,
            began,
            effects: Vec::new(),
            steps: Vec::new(),
        }
    }

    /// Records that `input` was handled at `at` with `outcome`.
    pub fn record_input(&mut self, at: Millis, input: Input, outcome: Outcome) {
        self.steps.push(Step {
            at,
            input,
            effects: Vec::new(),
            outcome: Some(outcome),
            phase: None,
        });
    }

    /// Records an effect of the last input (or of `new`, before any input).
    pub fn record_effect(&mut self, effect: &Effect) {
        match self.steps.last_mut() {
            Some(step) => step.effects.push(effect.clone()),
            None => self.effects.push(effect.clone()),
        }
    }

    /// Replays the run; the first step that differs is the error.
    pub fn replay(&self, config: Config) -> Result<(), String> {
        let mut l = Launch::new(config, self.plan, self.began);
        let got: Vec<Effect> = std::iter::from_fn(|| l.poll_effect()).collect();
        if got != self.effects {
            return Err(format!(
                "at new(): expected {:?}, got {got:?}",
                self.effects
            ));
        }
        for (i, step) in self.steps.iter().enumerate() {
            let outcome = l.handle(step.at, step.input.clone());
            let got: Vec<Effect> = std::iter::from_fn(|| l.poll_effect()).collect();
            let at = format!("step {i} (at {} ms, {:?})", step.at, step.input);
            if got != step.effects {
                return Err(format!(
                    "{at}: expected effects {:?}, got {got:?}",
                    step.effects
                ));
            }
            if step.outcome.is_some_and(|want| want != outcome) {
                return Err(format!(
                    "{at}: expected {:?}, got {outcome:?}",
                    step.outcome
                ));
            }
            if step
                .phase
                .as_ref()
                .is_some_and(|want| *want != l.state().phase)
            {
                return Err(format!(
                    "{at}: expected phase {:?}, got {:?}",
                    step.phase,
                    l.state().phase
                ));
            }
        }
        Ok(())
    }
}

impl SessionRun {
    /// A run that began with `begin`, nothing recorded yet.
    pub fn new(begin: Begin) -> SessionRun {
        SessionRun {
            begin,
            effects: Vec::new(),
            steps: Vec::new(),
        }
    }

    /// Records that `input` was handled at `at` with `outcome`.
    pub fn record_input(&mut self, at: Millis, input: session::Input, outcome: session::Outcome) {
        self.steps.push(SessionStep {
            at,
            input,
            effects: Vec::new(),
            outcome,
        });
    }

    /// Records an effect of the last input (or of the beginning).
    pub fn record_effect(&mut self, effect: &session::Effect) {
        match self.steps.last_mut() {
            Some(step) => step.effects.push(effect.clone()),
            None => self.effects.push(effect.clone()),
        }
    }

    /// Replays the run; the first step that differs is the error.
    pub fn replay(
        &self,
        config: session::Config,
        options: &session::Options,
    ) -> Result<(), String> {
        let mut s = match &self.begin {
            Begin::New { at, prompt } => Session::new(config, options.clone(), prompt.clone(), *at),
            Begin::Restore { at, record } => {
                Session::restore(config, options.clone(), (**record).clone(), *at)
            }
        };
        let got: Vec<session::Effect> = std::iter::from_fn(|| s.poll_effect()).collect();
        if got != self.effects {
            return Err(format!(
                "at the beginning: expected {:?}, got {got:?}",
                self.effects
            ));
        }
        for (i, step) in self.steps.iter().enumerate() {
            let outcome = s.handle(step.at, step.input.clone());
            let got: Vec<session::Effect> = std::iter::from_fn(|| s.poll_effect()).collect();
            let at = format!("step {i} (at {} ms, {:?})", step.at, step.input);
            if got != step.effects {
                return Err(format!(
                    "{at}: expected effects {:?}, got {got:?}",
                    step.effects
                ));
            }
            if outcome != step.outcome {
                return Err(format!(
                    "{at}: expected {:?}, got {outcome:?}",
                    step.outcome
                ));
            }
        }
        Ok(())
    }
}

impl Case {
    /// Classifies and decides; a difference is the error.
    pub fn replay(&self) -> Result<(), String> {
        let caller = classify(self.turn_cgroup.as_deref(), &self.ancestry);
        if caller != self.caller {
            return Err(format!("expected {:?}, got {caller:?}", self.caller));
        }
        let cmd = Command::parse(&self.argv)
            .map_err(|e| e.to_string())?
            .command()
            .ok_or_else(|| format!("{:?} is a help request", self.argv))?;
        let decision = decide(&caller, &cmd);
        if decision != self.decision {
            return Err(format!(
                "{:?}: expected {:?}, got {decision:?}",
                self.argv, self.decision
            ));
        }
        Ok(())
    }
}

impl Timeline {
    /// The test (or session) it stands for.
    pub fn test(&self) -> &str {
        match self {
            Timeline::Launch { test, .. }
            | Timeline::Session { test, .. }
            | Timeline::Caller { test, .. } => test,
        }
    }

    /// Replays every run or case; the first difference is the error.
    pub fn replay(&self) -> Result<(), String> {
        match self {
            Timeline::Launch { config, runs, .. } => {
                runs.iter().enumerate().try_for_each(|(r, run)| {
                    run.replay(config.unwrap_or_default())
                        .map_err(|e| format!("run {r} {e}"))
                })
            }
            Timeline::Session {
                config,
                options,
                runs,
                ..
            } => runs.iter().enumerate().try_for_each(|(r, run)| {
                run.replay(config.unwrap_or_default(), options)
                    .map_err(|e| format!("run {r} {e}"))
            }),
            Timeline::Caller { cases, .. } => cases
                .iter()
                .enumerate()
                .try_for_each(|(i, c)| c.replay().map_err(|e| format!("case {i}: {e}"))),
        }
    }
}
