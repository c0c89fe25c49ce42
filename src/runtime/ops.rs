//! What the API asks of the runtime: start a session, look one up, and the
//! app's commands (message, stop, interrupt, resume, close, relaunch), each
//! one input to the session machine.

use std::sync::Arc;

use room_machines::session::{
    self as machine, retry_difference, Input, ModelChoice, NewPrompt, StartFields,
};
use serde_json::{json, Value};

use super::command_answer::CommandAnswer;
use super::Runtime;
use crate::attachments::check::Checked;
use crate::attachments::store::ImageStore;
use crate::clock::unix_ms;
use crate::error::Refusal;
use crate::files;
use crate::harness::mcp::McpServers;
use crate::harness::{approvals, Harness};
use crate::journal::Journal;
use crate::sessions::prompt_log::PromptLog;
use crate::sessions::recording::Recording;
use crate::sessions::{self, lock, new_id, view, Extras, Hosted, Kind, SessionRef, Start};
use room_machines::session::RelaunchMode;
use room_machines::timeline::Begin;

/// The fields a retry is compared on.
fn fields(s: &Start) -> StartFields<'_, Harness, Kind, McpServers> {
    StartFields {
        workspace: &s.workspace,
        folder: &s.folder,
        harness: &s.harness,
        kind: &s.kind,
        parent: s.parent.as_deref(),
        shared_sandbox: s.shared_sandbox,
        prompt: s.prompt.as_deref(),
        attachments: &s.attachments,
        model: s.model.as_deref(),
        effort: s.effort.map(|e| e.name()),
        instructions: s.instructions.as_deref(),
        mcp_servers: s.mcp_servers.as_ref(),
        project_copy: s.project_copy,
        plan_only: s.plan_only,
    }
}

impl Runtime {
    /// The session machine's limits, from the config.
    pub(super) fn machine_config(&self) -> machine::Config {
        machine::Config {
            launch: self.config.launch(),
            startup_timeout: self.config.startup_timeout_ms,
            kill_grace: self.config.kill_grace_ms,
            approval_timeout: self.config.approval_timeout_ms,
            linger: self.config.linger_ms,
            max_queued_prompts: self.config.max_queued_prompts,
            snapshots: self.snapshots.is_some(),
            // The snapshot's own deadline, and time to say why it failed.
            snapshot_wait: self.config.snapshot_deadline_ms.saturating_add(5_000),
        }
    }

    /// A session's journal: the one its readers (pages, streams) share.
    pub(super) fn journal_for(&self, id: &str) -> Arc<Journal> {
        self.follow.journals.get(id)
    }

    /// Begins recording a session's timeline, when `record_timelines` is set.
    pub(super) fn recording(&self, s: &Hosted, begin: Begin) -> Option<Box<Recording>> {
        let dir = self.config.record_timelines.as_ref()?;
        Some(Box::new(Recording::begin(
            dir,
            &s.id,
            self.machine_config(),
            sessions::options(&s.start),
            begin,
        )))
    }

    /// `POST /v1/sessions`: starts a session, or returns the one a retry
    /// with the same request ID started (`false` when it already existed).
    /// The answer shows what the machine knows at once: the launch's first
    /// read of the status file runs on the event pool and shows in the view
    /// a moment later.
    pub fn create(&self, start: Start, images: Vec<Checked>) -> Result<(Value, bool), Refusal> {
        self.create_seeded(start, images, None)
    }

    /// [`Runtime::create`], with `seed` fed to the new session's machine
    /// before its start is recorded (a fork's `Fork`), so the record
    /// written first holds it.
    pub(super) fn create_seeded(
        &self,
        start: Start,
        images: Vec<Checked>,
        seed: Option<Input>,
    ) -> Result<(Value, bool), Refusal> {
        if let Some(why) = approvals::refusal(start.approvals, self.config.agent_uid) {
            return Err(Refusal::new(422, "approvals_refused", why));
        }
        if let Some(name) = start.agent.as_deref() {
            if !self.config.acp_agents.contains_key(name) {
                let known: Vec<&str> = self.config.acp_agents.keys().map(String::as_str).collect();
                let has = match known.is_empty() {
                    true => "it names none".to_string(),
                    false => format!("it names {}", known.join(", ")),
                };
                return Err(Refusal::new(
                    409,
                    "unknown_agent",
                    format!("The config's acp_agents has no agent {name:?} ({has})."),
                ));
            }
            self.agent_takes(name, !images.is_empty(), start.mcp_servers.as_ref())?;
        }
        loop {
            let mut reg = self.registry();
            if self.is_stopping() {
                // The stop began (it fed every registered session `ServiceStop`).
                return Err(Refusal::new(
                    503,
                    "service_stopping",
                    "room-core is stopping; start the session once it is back.",
                ));
            }
            let existing = start
                .request_id
                .as_ref()
                .and_then(|r| reg.by_request.get(r))
                .and_then(|id| reg.by_id.get(id))
                .cloned();
            if let Some(existing) = existing {
                drop(reg);
                // Its lock is held until its start is recorded or refused.
                let s = lock(&existing);
                if !self.registry().by_id.contains_key(&s.id) {
                    // Refused (its record could not be written): look again.
                    continue;
                }
                if let Some(field) = retry_difference(&fields(&s.start), &fields(&start)) {
                    return Err(Refusal::new(
                        409,
                        "request_conflict",
                        format!(
                            "Request ID {} already started session {} with a different {field}.",
                            start.request_id.as_deref().unwrap_or_default(),
                            s.id
                        ),
                    ));
                }
                return Ok((self.render(&s), false));
            }
            let id = new_id();
            let now = self.clock.now();
            let prompt = start.prompt.clone().map(|text| NewPrompt {
                text,
                choice: ModelChoice::default(),
                attachments: start.attachments.clone(),
            });
            let m = machine::Session::new(
                self.machine_config(),
                sessions::options(&start),
                prompt.clone(),
                now,
            );
            let extras = Extras {
                created_ms: unix_ms(),
                ..Extras::default()
            };
            let prompts = PromptLog::open(self.store.dir(), &id);
            let journal = self.journal_for(&id);
            let shared = Hosted::shared(id.clone(), start, m, extras, journal, prompts);
            let mut s = lock(&shared);
            // Known (to a retry with the same request ID, which waits for
            // this lock) before its record is written; the write runs
            // without the registry's lock, so starts write side by side.
            reg.reserve(&id, &s.start, shared.clone());
            drop(reg);
            s.recording = self.recording(&s, Begin::New { at: now, prompt });
            if let Some(seed) = seed.clone() {
                self.step(&mut s, seed);
            }
            // Its images are kept before the record that names them.
            let kept = ImageStore::of(self.store.dir(), &id).put(&images);
            // The machine's first effect is `Persist`: a kill -9 from here on
            // restores the start and it waits again. A start that cannot be
            // recorded is refused rather than run unrecorded.
            let pass = match kept.and_then(|()| self.persist_first(&mut s)) {
                Ok(pass) => pass,
                Err(e) => {
                    log::error!("{id}: cannot persist the start: {e}");
                    s.prompts.remove();
                    ImageStore::of(self.store.dir(), &id).prune([]);
                    self.registry().forget(&id, &s.start);
                    return Err(Refusal::new(
                        500,
                        "state_unwritable",
                        format!(
                            "Cannot record the session in {}: {e}. It was not started.",
                            self.config.state_dir.display()
                        ),
                    ));
                }
            };
            self.registry().register_workspace(&s.start);
            log::info!(
                "{id}: start in {} (project_copy: {})",
                s.start.folder.display(),
                s.start.project_copy
            );
            self.pass(&mut s, pass);
            return Ok((self.render(&s), true));
        }
    }

    pub(super) fn render(&self, s: &Hosted) -> Value {
        view::render(s, &self.clock)
    }

    /// `GET /v1/sessions/{id}`.
    pub fn get(&self, id: &str) -> Result<Value, Refusal> {
        let s = self.session(id).ok_or_else(|| Refusal::no_session(id))?;
        let s = lock(&s);
        Ok(self.render(&s))
    }

    /// An app command: the input to the session machine under its lock,
    /// the record written before anything else is done (or nothing
    /// changed), and the turn to wait for when the machine says the answer
    /// waits for it.
    fn apply(&self, id: &str, input: Input) -> Result<CommandAnswer, Refusal> {
        let s = self.session(id).ok_or_else(|| Refusal::no_session(id))?;
        let mut s = lock(&s);
        let turn = s.machine.record().turn.as_ref().map(|t| t.seq);
        let ends_turn = input.answers_after_turn();
        self.command(&mut s, input)?;
        let still = s.machine.turn_to_await();
        Ok(CommandAnswer {
            view: self.render(&s),
            turn: turn.filter(|t| ends_turn && still == Some(*t)),
        })
    }

    /// `POST /v1/sessions/{id}/messages`: queues a prompt, or with
    /// `steer` hands it to the running turn when the session can take it
    /// there (else queues it). The answer's `delivered` says which, as the
    /// machine has it once the steer's line was handed to the harness's
    /// stdin or given back: `steered` only for a line that was. A queued
    /// message may choose the model and effort from its turn on (an
    /// effort the session's CLI does not take is a 409) and carry images,
    /// kept before the prompt is accepted.
    pub fn message(
        &self,
        id: &str,
        steer: bool,
        prompt: NewPrompt,
        images: &[Checked],
    ) -> Result<CommandAnswer, Refusal> {
        let s = self.session(id).ok_or_else(|| Refusal::no_session(id))?;
        // The session's CLI (fixed at its start) is its state, not the
        // request's: 409, as for a closed session.
        let harness = lock(&s).start.harness;
        if harness == crate::harness::Harness::Acp && prompt.choice.model.is_some() {
            return Err(Refusal::new(
                409,
                "model_not_taken",
                "This session runs an ACP agent, which takes no model from room-core: its own config chooses it.",
            ));
        }
        if let (Some(agent), false) = (lock(&s).start.agent.clone(), images.is_empty()) {
            self.agent_takes(&agent, true, None)?;
        }
        if let Some(Err(takes)) = prompt.choice.effort.map(|e| harness.takes_effort(e)) {
            let name = harness.name();
            return Err(Refusal::new(
                409,
                "effort_not_taken",
                format!("This session runs {name}, which {takes}"),
            ));
        }
        let kept = (!images.is_empty()).then(|| self.keep_images(&s, id, images));
        let mut s = lock(&s);
        // Its images may be pruned again once its prompt is on the record,
        // which it is (or is refused) before this lock is let go.
        if let Some(kept) = kept {
            s.images_arriving -= 1;
            kept?;
        }
        let number = s.machine.record().next_prompt;
        let input = if steer {
            Input::Steer(prompt.text)
        } else {
            Input::Message(prompt)
        };
        self.command(&mut s, input)?;
        let steered = s.machine.steered(number);
        let mut view = self.render(&s);
        view["delivered"] = json!(if steered { "steered" } else { "queued" });
        view["prompt"] = json!(number);
        Ok(CommandAnswer { view, turn: None })
    }

    /// A 409 for what ACP agent `name` said at start it cannot take: a
    /// prompt's images (`images`), HTTP MCP servers among `servers`.
    fn agent_takes(
        &self,
        name: &str,
        images: bool,
        servers: Option<&crate::harness::mcp::McpServers>,
    ) -> Result<(), Refusal> {
        let offers = self.installed.agent_offers(name);
        match crate::harness::acp::takes::not_taken(name, &offers, images, servers) {
            Some((code, why)) => Err(Refusal::new(409, code, why)),
            None => Ok(()),
        }
    }

    /// Keeps a message's images before its prompt is accepted, outside the
    /// session's lock (a large image's write holds up no other command of
    /// the session). No image of the session is pruned from here until the
    /// caller, holding the lock again, counts the message as arrived.
    fn keep_images(&self, s: &SessionRef, id: &str, images: &[Checked]) -> Result<(), Refusal> {
        lock(s).images_arriving += 1;
        ImageStore::of(self.store.dir(), id)
            .put(images)
            .map_err(|e| {
                self.store.failed("a message's images", &e);
                Refusal::new(
                    500,
                    "state_unwritable",
                    format!(
                        "Cannot keep the message's images in {}: {e}. It was not queued.",
                        self.config.state_dir.display()
                    ),
                )
            })
    }

    /// `POST /v1/sessions/{id}/budget`: the session's new budget.
    pub fn set_budget(
        &self,
        id: &str,
        max_cost_usd: Option<f64>,
        max_tokens: Option<u64>,
    ) -> Result<CommandAnswer, Refusal> {
        let budget = sessions::budget(max_cost_usd, max_tokens);
        self.apply(id, Input::SetBudget(budget))
    }

    /// `POST /v1/sessions/{id}/approvals/{approval}`: the app's answer to
    /// an approval request.
    pub fn decide(
        &self,
        id: &str,
        approval: machine::ApprovalId,
        decision: machine::Decision,
        message: Option<String>,
    ) -> Result<CommandAnswer, Refusal> {
        self.apply(
            id,
            Input::ApprovalDecided {
                id: approval,
                decision,
                message,
            },
        )
    }

    /// `POST /v1/sessions/{id}/stop`: ends the running turn and pauses the
    /// queue; due once the turn is gone.
    pub fn stop(&self, id: &str) -> Result<CommandAnswer, Refusal> {
        self.apply(id, Input::Stop)
    }

    /// `POST /v1/sessions/{id}/interrupt`: ends the running turn; the queue
    /// goes on. Due once the turn is gone.
    pub fn interrupt(&self, id: &str) -> Result<CommandAnswer, Refusal> {
        self.apply(id, Input::Interrupt)
    }

    /// `POST /v1/sessions/{id}/resume`: unpauses the queue.
    pub fn resume(&self, id: &str) -> Result<CommandAnswer, Refusal> {
        self.apply(id, Input::Resume)
    }

    /// `POST /v1/sessions/{id}/close`: ends the launch or the turn; nothing
    /// starts again. Due once the turn is gone.
    pub fn close(&self, id: &str) -> Result<CommandAnswer, Refusal> {
        self.apply(id, Input::Close)
    }

    /// `POST /v1/sessions/{id}/relaunch`: brings a started session back
    /// through a relaunch (never a copy wait); `restart` is due once the
    /// turn it ends is gone.
    pub fn relaunch(&self, id: &str, mode: RelaunchMode) -> Result<CommandAnswer, Refusal> {
        self.apply(id, Input::Relaunch(mode))
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
