//! Routing: one table, [`ROUTES`], lists every route the API serves (its
//! method, path and query parameters); `find` matches a request against it
//! and `answer` runs a matched JSON route. docs/openapi.json describes the
//! same routes, and a test holds the two together (tests/follow_openapi.rs).
//! Answers run on the front end's blocking pool (the runtime takes locks and
//! may fsync), with the body already read and bounded; the event stream is
//! the one route answered on the async thread (stream.rs), and the console's
//! files are the routes answered there without the token (console.rs). Stop, close,
//! interrupt and relaunch `restart` answer only once the turn they end is
//! gone: they route to [`Routed::AfterTurn`], which the front end awaits
//! without holding a worker of that pool.

use hyper::Method;
use room_machines::session::{ModelChoice, NewPrompt, TurnSeq};
use serde_json::{json, Value};

use super::bodies;
use super::follow;
use super::front::Ctx;
use super::limits;
use super::query::Query;
use super::reply::Reply;
use crate::error::Refusal;
use crate::harness::Harness;
use crate::runtime::{CommandAnswer, Runtime};

/// What answers a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `GET /v1/capabilities`.
    Capabilities,
    /// `GET /v1/health`.
    Health,
    /// `GET /v1/ready`.
    Ready,
    /// `GET /metrics`.
    Metrics,
    /// `GET /v1/sessions`.
    List,
    /// `POST /v1/sessions`.
    Create,
    /// `GET /v1/sessions/{id}`.
    Get,
    /// `GET /v1/sessions/{id}/events`.
    Events,
    /// `GET /v1/sessions/{id}/stream` (stream.rs).
    Stream,
    /// `POST /v1/sessions/{id}/messages`.
    Message,
    /// `POST /v1/sessions/{id}/stop`.
    Stop,
    /// `POST /v1/sessions/{id}/interrupt`.
    Interrupt,
    /// `POST /v1/sessions/{id}/resume`.
    Resume,
    /// `POST /v1/sessions/{id}/close`.
    Close,
    /// `POST /v1/sessions/{id}/relaunch`.
    Relaunch,
    /// `POST /v1/sessions/{id}/approvals/{approval}`.
    Approve,
    /// `POST /v1/sessions/{id}/budget`.
    Budget,
    /// `GET /v1/sessions/{id}/turns/{turn}/diff`.
    TurnDiff,
    /// `POST /v1/sessions/{id}/rewind`.
    Rewind,
    /// `POST /v1/sessions/{id}/fork`.
    Fork,
    /// `GET /v1/workspaces/{id}`.
    Workspace,
    /// `GET /`: the console's page (console.rs).
    Console,
    /// `GET /console/{file}`: one of the console's files (console.rs).
    ConsoleFile,
}

/// One route.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    /// `GET` or `POST`.
    pub method: &'static str,
    /// The path; a segment in braces (`{id}`, `{file}`) stands for any one.
    pub path: &'static str,
    /// The query parameters it takes; any other is refused.
    pub params: &'static [&'static str],
    /// What answers it.
    pub op: Op,
    /// Whether it is answered without the token: only the console's files,
    /// which hold no data (every data call of the console sends the token).
    pub public: bool,
}

const fn route(method: &'static str, path: &'static str, op: Op) -> Route {
    Route {
        method,
        path,
        params: &[],
        op,
        public: false,
    }
}

const fn public(path: &'static str, op: Op) -> Route {
    Route {
        method: "GET",
        path,
        params: &[],
        op,
        public: true,
    }
}

const fn with_params(
    method: &'static str,
    path: &'static str,
    params: &'static [&'static str],
    op: Op,
) -> Route {
    Route {
        method,
        path,
        params,
        op,
        public: false,
    }
}

/// Every route the API serves.
pub const ROUTES: &[Route] = &[
    route("GET", "/v1/capabilities", Op::Capabilities),
    route("GET", "/v1/health", Op::Health),
    route("GET", "/v1/ready", Op::Ready),
    route("GET", "/metrics", Op::Metrics),
    with_params(
        "GET",
        "/v1/sessions",
        &["workspace", "state", "after", "limit"],
        Op::List,
    ),
    route("POST", "/v1/sessions", Op::Create),
    route("GET", "/v1/sessions/{id}", Op::Get),
    with_params(
        "GET",
        "/v1/sessions/{id}/events",
        &["after", "limit"],
        Op::Events,
    ),
    with_params("GET", "/v1/sessions/{id}/stream", &["after"], Op::Stream),
    route("POST", "/v1/sessions/{id}/messages", Op::Message),
    route("POST", "/v1/sessions/{id}/stop", Op::Stop),
    route("POST", "/v1/sessions/{id}/interrupt", Op::Interrupt),
    route("POST", "/v1/sessions/{id}/resume", Op::Resume),
    route("POST", "/v1/sessions/{id}/close", Op::Close),
    route("POST", "/v1/sessions/{id}/relaunch", Op::Relaunch),
    route(
        "POST",
        "/v1/sessions/{id}/approvals/{approval}",
        Op::Approve,
    ),
    route("POST", "/v1/sessions/{id}/budget", Op::Budget),
    route("GET", "/v1/sessions/{id}/turns/{turn}/diff", Op::TurnDiff),
    route("POST", "/v1/sessions/{id}/rewind", Op::Rewind),
    route("POST", "/v1/sessions/{id}/fork", Op::Fork),
    route("GET", "/v1/workspaces/{id}", Op::Workspace),
    public("/", Op::Console),
    public("/console/{file}", Op::ConsoleFile),
];

/// The segments of `path` that `pattern` matches as its `{…}` segments, if
/// it matches.
fn matches(pattern: &str, parts: &[&str]) -> Option<Vec<String>> {
    let want: Vec<&str> = pattern.trim_matches('/').split('/').collect();
    if want.len() != parts.len() {
        return None;
    }
    let mut ids = Vec::new();
    for (w, p) in want.iter().zip(parts) {
        if w.starts_with('{') && w.ends_with('}') {
            ids.push((*p).to_string());
        } else if w != p {
            return None;
        }
    }
    Some(ids)
}

/// The methods `path` takes, as an `Allow` header says them (empty for a
/// path no route has).
pub fn allowed(path: &str) -> String {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let methods: Vec<&str> = ROUTES
        .iter()
        .filter(|r| matches(r.path, &parts).is_some())
        .map(|r| r.method)
        .collect();
    methods.join(", ")
}

/// The route for `method` and `path`, with the segments its `{id}`s
/// matched; 405 naming the methods a known path takes, or 404.
pub fn find(method: &Method, path: &str) -> Result<(&'static Route, Vec<String>), Refusal> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let mut allowed = Vec::new();
    for r in ROUTES {
        if let Some(ids) = matches(r.path, &parts) {
            if r.method == method.as_str() {
                return Ok((r, ids));
            }
            allowed.push(r.method);
        }
    }
    Err(if allowed.is_empty() {
        Refusal::new(404, "not_found", format!("No route {method} {path}."))
    } else {
        Refusal::new(
            405,
            "method_not_allowed",
            format!("{path} takes {}, not {method}.", allowed.join(" or ")),
        )
    })
}

/// The largest body `op` takes: a start's and a message's may carry a
/// prompt's images.
pub fn body_cap(op: Op) -> usize {
    match op {
        Op::Create | Op::Message => limits::MAX_IMAGES_BODY,
        _ => limits::MAX_BODY,
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

/// Answers a matched JSON route whose whole body is `body`.
pub fn answer(ctx: Ctx, op: Op, ids: &[String], query: &Query, body: &[u8]) -> Routed {
    match run(ctx, op, ids, query, body) {
        Ok(Done::Reply(reply)) => Routed::Now(reply),
        Ok(Done::Command(id, a)) => match a.turn {
            Some(turn) => Routed::AfterTurn { id, turn },
            None => Routed::Now(Reply::json(200, a.view)),
        },
        Err(r) => Routed::Now(r.into()),
    }
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

/// What a route did: an answer, or an app command's (which may be due later).
enum Done {
    Reply(Reply),
    Command(String, CommandAnswer),
}

fn run(ctx: Ctx, op: Op, ids: &[String], query: &Query, body: &[u8]) -> Result<Done, Refusal> {
    let rt = ctx.rt;
    let id = ids.first().map_or("", String::as_str);
    let ok = |v: Value| Ok(Done::Reply(Reply::json(200, v)));
    let command = |a: CommandAnswer| Ok(Done::Command(id.to_string(), a));
    match op {
        Op::Capabilities => ok(json!({
            "capabilities": ["project_copy", "session_options"],
            "harnesses": rt.installed.report(),
            "options": {
                "claude": Harness::Claude.options_offered(),
                "codex": Harness::Codex.options_offered(),
                "acp": Harness::Acp.options_offered(),
            },
            "acp_agents": rt.installed.agents_report(),
        })),
        Op::Health => ok(follow::health(ctx)),
        Op::Ready => Ok(Done::Reply(follow::ready(rt))),
        Op::Metrics => Ok(Done::Reply(Reply {
            status: 200,
            body: rt.metrics_text(ctx.streams_open),
            content_type: "text/plain; version=0.0.4",
        })),
        Op::List => ok(follow::list(rt, query)?),
        Op::Create => {
            let (start, images) = bodies::create(body)?;
            let (view, created) = rt.create(start, images)?;
            Ok(Done::Reply(Reply::json(
                if created { 201 } else { 200 },
                view,
            )))
        }
        Op::Get => ok(rt.get(id)?),
        Op::Events => follow::events(rt, id, query).map(Done::Reply),
        Op::Message => {
            let (m, images) = bodies::message(body)?;
            let prompt = NewPrompt {
                text: m.prompt,
                choice: ModelChoice {
                    model: m.model,
                    effort: m.effort,
                },
                attachments: crate::attachments::check::named(&images),
            };
            let steer = m.deliver == bodies::Deliver::Steer;
            command(rt.message(id, steer, prompt, &images)?)
        }
        Op::Budget => {
            let (max_cost_usd, max_tokens) = bodies::budget(body)?;
            command(rt.set_budget(id, max_cost_usd, max_tokens)?)
        }
        Op::Approve => {
            let d = bodies::decide(body)?;
            // Approvals are numbered from 1; any other name is none of them.
            let approval = ids.get(1).and_then(|n| n.parse().ok()).unwrap_or(0);
            command(rt.decide(id, approval, d.decision, d.message)?)
        }
        Op::Stop => {
            bodies::none(body)?;
            command(rt.stop(id)?)
        }
        Op::Interrupt => {
            bodies::none(body)?;
            command(rt.interrupt(id)?)
        }
        Op::Resume => {
            bodies::none(body)?;
            command(rt.resume(id)?)
        }
        Op::Close => {
            bodies::none(body)?;
            command(rt.close(id)?)
        }
        Op::Relaunch => command(rt.relaunch(id, bodies::relaunch(body)?.mode)?),
        Op::Workspace => ok(rt.workspace(id)?),
        Op::TurnDiff => ok(rt.turn_diff(id, ids.get(1).map_or("", String::as_str))?),
        Op::Rewind => ok(rt.rewind(id, bodies::rewind(body)?)?),
        Op::Fork => {
            let (view, created) = rt.fork(id, bodies::fork(body)?)?;
            Ok(Done::Reply(Reply::json(
                if created { 201 } else { 200 },
                view,
            )))
        }
        // Answered on the async thread before it gets here.
        Op::Stream | Op::Console | Op::ConsoleFile => Err(Refusal::new(
            500,
            "internal",
            "The service failed to answer this request.",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_found_and_a_known_path_names_its_methods() {
        for r in ROUTES {
            let path = r.path.replace("{id}", "cr_1").replace("{approval}", "1");
            let method = Method::from_bytes(r.method.as_bytes()).unwrap();
            let (found, ids) = find(&method, &path).unwrap();
            assert_eq!((found.method, found.path), (r.method, r.path));
            assert_eq!(ids.len(), r.path.matches('{').count());
        }
        let e = find(&Method::DELETE, "/v1/sessions").unwrap_err();
        assert_eq!(e.message, "/v1/sessions takes GET or POST, not DELETE.");
        let e = find(&Method::GET, "/v1/sessions/x/interrupt").unwrap_err();
        assert_eq!(e.message, "/v1/sessions/x/interrupt takes POST, not GET.");
        assert_eq!(find(&Method::GET, "/v2").unwrap_err().status, 404);
        assert_eq!(allowed("/v1/sessions"), "GET, POST");
        assert_eq!(allowed("/v1/sessions/x/interrupt"), "POST");
        assert_eq!(allowed("/v2"), "");
        let (root, _) = find(&Method::GET, "/").unwrap();
        assert_eq!((root.op, root.public), (Op::Console, true));
        let (file, ids) = find(&Method::GET, "/console/app.js").unwrap();
        assert_eq!(
            (file.op, file.public, ids),
            (Op::ConsoleFile, true, vec!["app.js".into()])
        );
        assert_eq!(find(&Method::POST, "/").unwrap_err().status, 405);
        assert!(ROUTES
            .iter()
            .filter(|r| r.public)
            .all(|r| r.method == "GET"));
    }
}
