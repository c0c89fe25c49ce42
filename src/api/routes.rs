//! Routing: one function per request, answering JSON (or Prometheus text).

use std::io::Read;

use serde_json::{json, Value};
use tiny_http::{Header, Method, Request, Response};

use super::auth;
use super::bodies::{self, MAX_BODY};
use crate::error::Refusal;
use crate::runtime::Runtime;

/// An answer: status and JSON, or status and plain text.
enum Answer {
    Json(u16, Value),
    Text(u16, String),
}

impl From<Refusal> for Answer {
    fn from(r: Refusal) -> Answer {
        Answer::Json(r.status, json!({"error": r.message, "code": r.code}))
    }
}

/// Serves one request.
pub fn serve(rt: &Runtime, token: &str, mut request: Request) {
    let answer = if !auth::allowed(&request, token) {
        Answer::Json(401, json!({"error": "unauthorized"}))
    } else {
        match read_body(&mut request) {
            Ok(body) => {
                route(rt, request.method(), request.url(), &body).unwrap_or_else(Answer::from)
            }
            Err(r) => r.into(),
        }
    };
    let (status, body, content_type) = match answer {
        Answer::Json(s, v) => (s, v.to_string(), "application/json"),
        Answer::Text(s, t) => (s, t, "text/plain; version=0.0.4"),
    };
    let header = Header::from_bytes("Content-Type", content_type).expect("valid header");
    let response = Response::from_string(body)
        .with_status_code(status)
        .with_header(header);
    if let Err(e) = request.respond(response) {
        log::debug!("cannot answer: {e}");
    }
}

/// Reads at most 1 MiB; a longer body (declared or sent) is 413.
fn read_body(request: &mut Request) -> Result<Vec<u8>, Refusal> {
    let too_large = || Refusal::new(413, "too_large", "The body is larger than 1 MiB.");
    if request.body_length().is_some_and(|n| n > MAX_BODY) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    request
        .as_reader()
        .take(MAX_BODY as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|e| Refusal::new(400, "bad_body", format!("Cannot read the body: {e}.")))?;
    if body.len() > MAX_BODY {
        return Err(too_large());
    }
    Ok(body)
}

fn route(rt: &Runtime, method: &Method, url: &str, body: &[u8]) -> Result<Answer, Refusal> {
    let path = url.split('?').next().unwrap_or_default();
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let ok = |v: Value| Ok(Answer::Json(200, v));
    match (method, parts.as_slice()) {
        (Method::Get, ["v1", "capabilities"]) => ok(json!({"capabilities": ["project_copy"]})),
        (Method::Get, ["metrics"]) => Ok(Answer::Text(200, rt.metrics_text())),
        (Method::Post, ["v1", "sessions"]) => {
            let (view, created) = rt.create(bodies::create(body)?)?;
            Ok(Answer::Json(if created { 201 } else { 200 }, view))
        }
        (Method::Get, ["v1", "sessions", id]) => ok(rt.get(id)?),
        (Method::Post, ["v1", "sessions", id, "messages"]) => {
            ok(rt.message(id, bodies::message(body)?.prompt)?)
        }
        (Method::Post, ["v1", "sessions", id, "stop"]) => ok(rt.stop(id)?),
        (Method::Post, ["v1", "sessions", id, "resume"]) => ok(rt.resume(id)?),
        (Method::Post, ["v1", "sessions", id, "close"]) => ok(rt.close(id)?),
        (Method::Post, ["v1", "sessions", id, "relaunch"]) => {
            ok(rt.relaunch(id, bodies::relaunch(body)?.mode)?)
        }
        (Method::Get, ["v1", "workspaces", id]) => ok(rt.workspace(id)?),
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
            Some(Method::Get)
        }
        ["v1", "sessions"]
        | ["v1", "sessions", _, "messages" | "stop" | "resume" | "close" | "relaunch"] => {
            Some(Method::Post)
        }
        _ => None,
    }
}
