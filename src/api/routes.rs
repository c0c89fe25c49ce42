//! Routing: one function per request, answering JSON (or Prometheus text).
//! It runs on the front end's blocking pool (the runtime takes locks and may
//! fsync), with the body already read and bounded. Stop, close, interrupt
//! and relaunch `restart` answer only once the turn they end is gone: they
//! route to [`Routed::AfterTurn`], which the front end awaits without
//! holding a worker of that pool.

use hyper::Method;
use room_machines::session::TurnSeq;
use serde_json::{json, Value};

use super::bodies;
use crate::error::Refusal;
use crate::runtime::{Answer, Runtime};

/// An answer: its status, its body and the body's content type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: String,
    /// The body's content type.
    pub content_type: &'static str,
}

impl Reply {
    /// A JSON answer.
    pub fn json(status: u16, value: Value) -> Reply {
        Reply {
            status,
            body: value.to_string(),
            content_type: "application/json",
        }
    }

    /// `401 {"error": "unauthorized"}`.
    pub fn unauthorized() -> Reply {
        Reply::json(401, json!({"error": "unauthorized"}))
    }
}

impl From<Refusal> for Reply {
    fn from(r: Refusal) -> Reply {
        Reply::json(r.status, json!({"error": r.message, "code": r.code}))
    }
}

/// An answer now, or one due once a session's turn is gone.
#[derive(Debug)]
pub enum Routed {
    /// The answer.
    Now(Reply),
    /// Session `id`'s view, once its turn `turn` is gone
    /// ([`Runtime::when_turn_gone`]); see [`after_turn`].
    AfterTurn {
        /// The session.
        id: String,
        /// The turn the command ends.
        turn: TurnSeq,
    },
}

/// Answers one authorised request whose whole body is `body`.
pub fn answer(rt: &Runtime, method: &Method, path: &str, body: &[u8]) -> Routed {
    route(rt, method, path, body).unwrap_or_else(|r| Routed::Now(r.into()))
}

/// The answer of a command that ended a turn, once the turn is gone
/// (`gone`) or the wait for it is over: the view as it is then, or, if a
/// process of the turn outlived SIGKILL's bound, `500 turn_not_ended`.
pub fn after_turn(rt: &Runtime, id: &str, turn: TurnSeq, gone: bool) -> Reply {
    if !gone {
        return Refusal::new(
            500,
            "turn_not_ended",
            format!(
                "Session {id} took the command, but its turn {turn} had not ended {} s later: a process of it does not die. Its state says what it is now.",
                rt.turn_bound().as_secs()
            ),
        )
        .into();
    }
    match rt.get(id) {
        Ok(v) => Reply::json(200, v),
        Err(r) => r.into(),
    }
}

fn route(rt: &Runtime, method: &Method, path: &str, body: &[u8]) -> Result<Routed, Refusal> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let ok = |v: Value| Ok(Routed::Now(Reply::json(200, v)));
    let command = |id: &str, a: Answer| {
        Ok(match a.turn {
            Some(turn) => Routed::AfterTurn {
                id: id.to_string(),
                turn,
            },
            None => Routed::Now(Reply::json(200, a.view)),
        })
    };
    match (method, parts.as_slice()) {
        (&Method::GET, ["v1", "capabilities"]) => ok(json!({"capabilities": ["project_copy"]})),
        (&Method::GET, ["metrics"]) => Ok(Routed::Now(Reply {
            status: 200,
            body: rt.metrics_text(),
            content_type: "text/plain; version=0.0.4",
        })),
        (&Method::POST, ["v1", "sessions"]) => {
            let (view, created) = rt.create(bodies::create(body)?)?;
            Ok(Routed::Now(Reply::json(
                if created { 201 } else { 200 },
                view,
            )))
        }
        (&Method::GET, ["v1", "sessions", id]) => ok(rt.get(id)?),
        (&Method::POST, ["v1", "sessions", id, "messages"]) => {
            command(id, rt.message(id, bodies::message(body)?.prompt)?)
        }
        (&Method::POST, ["v1", "sessions", id, "stop"]) => command(id, rt.stop(id)?),
        (&Method::POST, ["v1", "sessions", id, "interrupt"]) => command(id, rt.interrupt(id)?),
        (&Method::POST, ["v1", "sessions", id, "resume"]) => command(id, rt.resume(id)?),
        (&Method::POST, ["v1", "sessions", id, "close"]) => command(id, rt.close(id)?),
        (&Method::POST, ["v1", "sessions", id, "relaunch"]) => {
            command(id, rt.relaunch(id, bodies::relaunch(body)?.mode)?)
        }
        (&Method::GET, ["v1", "workspaces", id]) => ok(rt.workspace(id)?),
        _ => Err(match route_method(&parts) {
            Some(allowed) => Refusal::new(
                405,
                "method_not_allowed",
                format!("{path} takes {allowed}, not {method}."),
            ),
            None => Refusal::new(404, "not_found", format!("No route {method} {path}.")),
        }),
    }
}

/// The one method a known route takes, for a 405 that names it.
fn route_method(parts: &[&str]) -> Option<Method> {
    match parts {
        ["v1", "capabilities"] | ["metrics"] | ["v1", "sessions", _] | ["v1", "workspaces", _] => {
            Some(Method::GET)
        }
        ["v1", "sessions"]
        | ["v1", "sessions", _, "messages" | "stop" | "interrupt" | "resume" | "close" | "relaunch"] => {
            Some(Method::POST)
        }
        _ => None,
    }
}
