//! The website's app routes (`/api/app/…`, the `admin_token`): what the
//! signed-in user's own pages do. The reference has no accounts, so the
//! body or the query names the owner.

use serde::Deserialize;
use serde_json::{json, Value};

use super::automation::{parse_agent, unwritable};
use super::http::{Request, Response};
use super::launch::NewThread;
use super::loops::{Loop, NewLoop};
use super::records::valid_key;
use super::threads::Thread;
use super::website::{same, Website};
use room_core::harness::Harness;

impl Website {
    /// Answers `/api/app/<rest>`.
    pub fn app_call(&self, req: &Request, rest: &[&str]) -> Response {
        if !req.bearer().is_some_and(|t| same(t, &self.admin_token)) {
            return Response::error(401, "unauthorized", "unauthorized");
        }
        let owner = req.query_param("owner").unwrap_or_default();
        let now = self.now_ms();
        match (req.method.as_str(), rest) {
            ("POST", ["threads"]) => self.app_thread(&req.body).unwrap_or_else(|e| e),
            ("GET", ["threads"]) => {
                let threads: Vec<Value> = self
                    .threads
                    .all()
                    .iter()
                    .filter(|t| t.owner == owner)
                    .map(Thread::view)
                    .collect();
                Response::json(200, &json!({ "threads": threads }))
            }
            ("POST", ["loops"]) => self.app_loop(&req.body).unwrap_or_else(|e| e),
            ("GET", ["loops"]) => {
                let mut loops: Vec<Loop> = self
                    .loops
                    .all()
                    .into_iter()
                    .filter(|l| l.owner == owner)
                    .collect();
                loops.sort_by_key(|l| l.created_ms);
                let views: Vec<Value> = loops.iter().map(|l| l.view(&owner, now)).collect();
                Response::json(200, &json!({ "loops": views }))
            }
            ("POST", ["loops", id, "run"]) if self.loops.get(id).is_some() => {
                Response::json(202, &self.trigger_view(id))
            }
            _ => Response::error(
                404,
                "not_found",
                format!("No route {} {}.", req.method, req.path),
            ),
        }
    }

    fn app_thread(&self, body: &[u8]) -> Result<Response, Response> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Body {
            owner: String,
            project: String,
            sandbox: String,
            agent: Harness,
            #[serde(default)]
            prompt: Option<String>,
            #[serde(default)]
            model: Option<String>,
            #[serde(default)]
            effort: Option<String>,
        }
        let b: Body = parse(body)?;
        if !valid_key(&b.project) || self.sandbox(&b.sandbox).is_none() {
            return Err(Response::error(
                422,
                "invalid_field",
                "Unknown sandbox or invalid project name.",
            ));
        }
        let (t, _) = self.start_thread(NewThread {
            owner: b.owner,
            project: b.project,
            sandbox: b.sandbox,
            agent: b.agent,
            prompt: b.prompt,
            model: b.model,
            effort: b.effort,
            started_by_loop: None,
            launch: None,
        })?;
        Ok(Response::json(201, &json!({ "thread": t.view() })))
    }

    fn app_loop(&self, body: &[u8]) -> Result<Response, Response> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Body {
            owner: String,
            project: String,
            sandbox: String,
            #[serde(default)]
            agent: Option<String>,
            #[serde(default)]
            name: Option<String>,
            #[serde(default)]
            schedule: Option<String>,
            #[serde(default)]
            at_ms: Option<u64>,
            #[serde(default = "yes")]
            new_thread: bool,
            #[serde(default)]
            thread: Option<String>,
            #[serde(default)]
            script: Option<String>,
            #[serde(default)]
            prompt: Option<String>,
            #[serde(default)]
            paused: bool,
        }
        fn yes() -> bool {
            true
        }
        let invalid = |m: String| Response::error(422, "invalid_field", m);
        let b: Body = parse(body)?;
        if self.sandbox(&b.sandbox).is_none() {
            return Err(invalid(format!("No sandbox {}.", b.sandbox)));
        }
        let agent = match b.agent.as_deref().map(parse_agent) {
            None => Harness::Claude,
            Some(Some(a)) => a,
            Some(None) => return Err(invalid("agent must be claude or codex.".into())),
        };
        let new = NewLoop {
            owner: b.owner.clone(),
            project: b.project,
            sandbox: b.sandbox,
            agent,
            name: b.name,
            schedule: b.schedule,
            at_ms: b.at_ms,
            new_thread: b.new_thread,
            thread: b.thread,
            script: b.script,
            prompt: b.prompt,
            paused: b.paused,
        };
        let l = new.make(self.now_ms()).map_err(invalid)?;
        self.loops.put(&l.id, l.clone()).map_err(unwritable)?;
        Ok(Response::json(
            201,
            &json!({ "loop": l.view(&b.owner, self.now_ms()) }),
        ))
    }
}

/// A JSON body, or 422 naming what is wrong.
fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Response> {
    serde_json::from_slice(body)
        .map_err(|e| Response::error(422, "invalid_body", format!("Invalid body: {e}.")))
}
