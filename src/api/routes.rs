//! Routing: one function per request, answering JSON (or Prometheus text).
//! It runs on the front end's blocking pool (the runtime takes locks and may
//! fsync), with the body already read and bounded.

use hyper::Method;
use serde_json::{json, Value};

use super::bodies;
use crate::error::Refusal;
use crate::runtime::Runtime;

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

/// Answers one authorised request whose whole body is `body`.
pub fn answer(rt: &Runtime, method: &Method, path: &str, body: &[u8]) -> Reply {
    route(rt, method, path, body).unwrap_or_else(Reply::from)
}

fn route(rt: &Runtime, method: &Method, path: &str, body: &[u8]) -> Result<Reply, Refusal> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let ok = |v: Value| Ok(Reply::json(200, v));
    match (method, parts.as_slice()) {
        (&Method::GET, ["v1", "capabilities"]) => ok(json!({"capabilities": ["project_copy"]})),
        (&Method::GET, ["metrics"]) => Ok(Reply {
            status: 200,
            body: rt.metrics_text(),
            content_type: "text/plain; version=0.0.4",
        }),
        (&Method::POST, ["v1", "sessions"]) => {
            let (view, created) = rt.create(bodies::create(body)?)?;
            Ok(Reply::json(if created { 201 } else { 200 }, view))
        }
        (&Method::GET, ["v1", "sessions", id]) => ok(rt.get(id)?),
        (&Method::POST, ["v1", "sessions", id, "messages"]) => {
            ok(rt.message(id, bodies::message(body)?.prompt)?)
        }
        (&Method::POST, ["v1", "sessions", id, "stop"]) => ok(rt.stop(id)?),
        (&Method::POST, ["v1", "sessions", id, "resume"]) => ok(rt.resume(id)?),
        (&Method::POST, ["v1", "sessions", id, "close"]) => ok(rt.close(id)?),
        (&Method::POST, ["v1", "sessions", id, "relaunch"]) => {
            ok(rt.relaunch(id, bodies::relaunch(body)?.mode)?)
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
        | ["v1", "sessions", _, "messages" | "stop" | "resume" | "close" | "relaunch"] => {
            Some(Method::POST)
        }
        _ => None,
    }
}
