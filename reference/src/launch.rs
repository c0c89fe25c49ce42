//! Starting threads through a sandbox's Core (`POST /v1/sessions`):
//! `POST /api/core/launch` (`room-cli thread spawn --top-level` from a
//! thread or a loop's check script), a loop run's new thread, and the app's
//! own starts.
//!
//! A launch is idempotent on (scope, `request_id`), the scope being the
//! calling loop or thread: the first launch records the session it started,
//! and a later one with the same pair answers that session (200,
//! `"created": false`) and starts nothing. Launches with the same pair are
//! serialised, so two at once also start one thread. Core gets
//! `"request_id": "<scope>/<request_id>"`, so even a retry the website lost
//! track of returns Core's first session.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use room_machines::{Body, Scope};
use serde_json::json;

use super::automation::{unwritable, Opts};
use super::http::Response;
use super::threads::Thread;
use super::website::{Actor, Website, STRIPES};
use room_core::harness::Harness;

/// A launch's idempotency key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LaunchKey {
    /// The loop or thread that asked.
    pub scope: String,
    /// Its `request_id`.
    pub request_id: String,
}

/// A thread to start.
#[derive(Debug, Clone)]
pub struct NewThread {
    /// Its owner.
    pub owner: String,
    /// Its project: the workspace, and the folder `<work_root>/<project>`.
    pub project: String,
    /// The sandbox whose Core runs it.
    pub sandbox: String,
    /// Its agent.
    pub agent: Harness,
    /// Its first prompt.
    pub prompt: Option<String>,
    /// The model and effort its agent runs with, if the caller chose them
    /// (Core checks them: a refusal comes back as the launch's error).
    pub model: Option<String>,
    /// See `model`.
    pub effort: Option<String>,
    /// The loop that started it, if one did.
    pub started_by_loop: Option<String>,
    /// The idempotency key, for a launch.
    pub launch: Option<LaunchKey>,
}

/// The stripe of `key`.
pub fn stripe(key: &LaunchKey) -> usize {
    let mut h = DefaultHasher::new();
    key.hash(&mut h);
    (h.finish() % STRIPES as u64) as usize
}

impl Website {
    /// Starts the thread (or finds the one an earlier launch with the same
    /// key started): the thread, and whether it is new.
    pub fn start_thread(&self, t: NewThread) -> Result<(Thread, bool), Response> {
        let sandbox = self.sandbox(&t.sandbox).ok_or_else(|| {
            Response::error(
                500,
                "no_sandbox",
                format!("Sandbox {} is not configured.", t.sandbox),
            )
        })?;
        let _serial = t.launch.as_ref().map(|k| {
            self.stripes[stripe(k)]
                .lock()
                .unwrap_or_else(|e| e.into_inner())
        });
        if let Some(k) = &t.launch {
            let earlier = self
                .launches
                .get(&k.scope)
                .and_then(|l| l.find(&k.request_id).map(String::from))
                .and_then(|id| self.threads.get(&id));
            if let Some(thread) = earlier {
                return Ok((thread, false));
            }
        }
        if sandbox.config.launch_delay_ms > 0 {
            std::thread::sleep(Duration::from_millis(sandbox.config.launch_delay_ms));
        }
        let mut body = json!({
            "workspace": t.project,
            "folder": sandbox.config.work_root.join(&t.project),
            "harness": t.agent,
            "prompt": t.prompt,
        });
        for (key, value) in [("model", &t.model), ("effort", &t.effort)] {
            if let Some(v) = value {
                body[key] = json!(v);
            }
        }
        if let Some(k) = &t.launch {
            body["request_id"] = json!(format!("{}/{}", k.scope, k.request_id));
        }
        let (view, _) = sandbox.core.start(&body).map_err(|e| {
            Response::error(
                502,
                "core_failed",
                format!("The thread could not start: {e}"),
            )
        })?;
        let Some(id) = view["id"]
            .as_str()
            .filter(|id| super::records::valid_key(id))
        else {
            return Err(Response::error(
                502,
                "core_failed",
                "Core's answer to the start names no session.",
            ));
        };
        let thread = Thread {
            id: id.to_string(),
            owner: t.owner,
            project: t.project,
            sandbox: t.sandbox,
            agent: t.agent,
            started_by_loop: t.started_by_loop,
            request_id: t.launch.as_ref().map(|k| k.request_id.clone()),
            created_ms: self.now_ms(),
        };
        self.threads.put(id, thread.clone()).map_err(unwritable)?;
        if let Some(k) = &t.launch {
            self.launches
                .upsert(&k.scope, |l| l.add(&k.request_id, id))
                .map_err(unwritable)?;
        }
        log::info!(
            "thread {id} started in project {} on sandbox {}",
            thread.project,
            thread.sandbox
        );
        Ok((thread, true))
    }
}

/// Answers `POST /api/core/launch`: a top-level thread in the caller's
/// project, through the caller's sandbox's Core, with the caller's agent
/// (a loop's, or a thread's) unless the request names one.
pub fn launch(w: &Website, actor: &Actor, body: &Body) -> Response {
    answer(w, actor, body).unwrap_or_else(|e| e)
}

fn answer(w: &Website, actor: &Actor, body: &Body) -> Result<Response, Response> {
    let opts = Opts(body);
    let invalid = |m: &str| Response::error(422, "invalid_option", m);
    opts.only(
        "thread spawn --top-level",
        &["request_id", "agent", "prompt", "model", "effort"],
    )?;
    if !matches!(opts.text("action")?.as_deref(), None | Some("spawn")) {
        return Err(invalid("A launch is a thread spawn."));
    }
    let request_id = opts
        .text("request_id")?
        .filter(|r| !r.is_empty() && r.len() <= 200)
        .ok_or_else(|| invalid("A launch needs a request_id of 1 to 200 characters."))?;
    let args = opts.args();
    let prompt = opts
        .text("prompt")?
        .or_else(|| (!args.is_empty()).then(|| args.join(" ")));
    let (scope, started_by_loop) = match &actor.scope {
        Scope::Automation(id) => (id.clone(), Some(id.clone())),
        Scope::Session(id) => (id.clone(), None),
    };
    let (thread, created) = w.start_thread(NewThread {
        owner: actor.owner.clone(),
        project: actor.project.clone(),
        sandbox: actor.sandbox.clone(),
        agent: opts.agent()?.unwrap_or(actor.agent),
        prompt,
        model: opts.text("model")?,
        effort: opts.text("effort")?,
        started_by_loop,
        launch: Some(LaunchKey { scope, request_id }),
    })?;
    let mut view = thread.view();
    view["created"] = json!(created);
    Ok(Response::json(
        if created { 201 } else { 200 },
        &json!({ "thread": view }),
    ))
}
