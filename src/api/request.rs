//! One request, on the front end's async thread: the token, the declared
//! size, then the body (bounded in bytes and time), the route and its query,
//! and only then the hand-off to the blocking pool where the runtime answers
//! it (or, for the event stream, to stream.rs). Nothing here blocks and
//! nothing is allocated from a size the client declared.

use std::convert::Infallible;
use std::sync::Arc;

use http_body_util::BodyExt;
use hyper::body::{Body as _, Bytes, Incoming};
use hyper::header::{HeaderValue, ALLOW};
use hyper::{Request, Response};
use serde_json::json;

use super::auth;
use super::console;
use super::front::{Ctx, Front};
use super::limits::{BODY_TIMEOUT, LINGER_BYTES, LINGER_TIME, MAX_BODY};
use super::query::Query;
use super::reply::{respond, After, Body, Reply};
use super::routes::{self, Op, Routed};
use super::stream;
use crate::error::Refusal;

/// How a body read ended short.
enum Short {
    /// More than the route's cap arrived (a chunked body, counted as it
    /// came).
    TooLarge,
    /// The connection broke or the body was malformed.
    Broken(hyper::Error),
}

fn too_large(cap: usize) -> Reply {
    let sentence = format!("The body is larger than {} MiB.", cap >> 20);
    Refusal::new(413, "too_large", sentence).into()
}

/// Serves one request (hyper's service function).
pub(super) async fn serve(
    front: Arc<Front>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    // The console's files hold no data and need no token (console.rs).
    if let Some(response) = console::answer(&request) {
        return Ok(response);
    }
    if !auth::allowed(request.headers(), &front.token) {
        // The service reads none of the body: the request is dropped with
        // it (hyper discards what it had buffered) and the connection closes
        // after the answer.
        return Ok(respond(Reply::unauthorized(), After::Close));
    }
    let (parts, mut body) = request.into_parts();
    // The route is looked up once, before the body: it decides the cap.
    let routed = routes::find(&parts.method, parts.uri.path());
    let cap = routed
        .as_ref()
        .map_or(MAX_BODY, |(route, _)| routes::body_cap(route.op));
    // The declared length (Content-Length), before anything is read.
    let hint = body.size_hint();
    if hint.lower() > cap as u64 {
        tokio::spawn(linger(body));
        return Ok(respond(too_large(cap), After::Close));
    }
    let deadline = tokio::time::Instant::now() + BODY_TIMEOUT;
    // A body that may be large (declared so, or not declared) waits for a
    // place among the few read at once.
    let large = cap > MAX_BODY && hint.upper().map_or(true, |n| n > MAX_BODY as u64);
    let _place = match large {
        false => None,
        true => match tokio::time::timeout_at(deadline, front.large_bodies.clone().acquire_owned())
            .await
        {
            Ok(Ok(place)) => Some(place),
            _ => {
                let r = Refusal::new(
                    503,
                    "busy",
                    "Too many large bodies are arriving at once; send this one again in a moment.",
                );
                return Ok(respond(r.into(), After::Close));
            }
        },
    };
    let bytes = match tokio::time::timeout_at(deadline, read_body(&mut body, cap)).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(Short::TooLarge)) => {
            tokio::spawn(linger(body));
            return Ok(respond(too_large(cap), After::Close));
        }
        Ok(Err(Short::Broken(e))) => {
            let r = Refusal::new(400, "bad_body", format!("Cannot read the body: {e}."));
            return Ok(respond(r.into(), After::Close));
        }
        Err(_) => {
            let r = Refusal::new(
                408,
                "body_timeout",
                format!(
                    "The body did not arrive within {} s.",
                    BODY_TIMEOUT.as_secs()
                ),
            );
            return Ok(respond(r.into(), After::Close));
        }
    };
    drop(body);
    let found = routed.and_then(|(route, ids)| {
        let query = Query::parse(parts.uri.query(), route.params)?;
        Ok((route.op, ids, query))
    });
    let (op, ids, query) = match found {
        Ok(found) => found,
        Err(r) => {
            let not_allowed = r.status == 405;
            let mut response = respond(r.into(), After::KeepAlive);
            if not_allowed {
                // RFC 9110: a 405 names the methods the path takes.
                if let Ok(methods) = HeaderValue::from_str(&routes::allowed(parts.uri.path())) {
                    response.headers_mut().insert(ALLOW, methods);
                }
            }
            return Ok(response);
        }
    };
    if op == Op::Stream {
        let id = ids.into_iter().next().unwrap_or_default();
        return Ok(stream::open(&front, id, &query, &parts.headers).await);
    }
    let runtime = front.runtime.clone();
    let streams_open = front.streams_open();
    // Told when the turn a command ends is gone (see below).
    let (gone, turn_gone) = tokio::sync::oneshot::channel::<()>();
    // The runtime takes per-session locks and may fsync: it runs on the
    // blocking pool (`http_workers` threads), never on this thread. The
    // queue in front of the pool is bounded by the connection cap, since a
    // connection has at most one request in hand.
    let routed = tokio::task::spawn_blocking(move || {
        let ctx = Ctx {
            rt: &runtime,
            streams_open,
        };
        let routed = routes::answer(ctx, op, &ids, &query, &bytes);
        if let Routed::AfterTurn { id, turn } = &routed {
            let notify = Box::new(move || {
                let _ = gone.send(());
            });
            runtime.when_turn_gone(id, *turn, notify);
        }
        routed
    })
    .await;
    let reply = match routed {
        Ok(Routed::Now(reply)) => reply,
        Ok(Routed::AfterTurn { id, turn }) => {
            // Stop, close, interrupt and relaunch restart answer once
            // nothing of the turn runs. The wait (up to the kill grace and
            // SIGKILL's bound) is awaited here, holding no worker of the
            // blocking pool, so commands on turns that ignore SIGTERM
            // never hold up other requests.
            let runtime = front.runtime.clone();
            let ended = tokio::time::timeout(runtime.turn_bound(), turn_gone)
                .await
                .is_ok_and(|r| r.is_ok());
            tokio::task::spawn_blocking(move || routes::after_turn(&runtime, &id, turn, ended))
                .await
                .unwrap_or_else(failed)
        }
        Err(e) => failed(e),
    };
    Ok(respond(reply, After::KeepAlive))
}

/// A request that failed inside the service (a panic on the pool).
fn failed(e: tokio::task::JoinError) -> Reply {
    log::error!("a request failed inside the service: {e}");
    Reply::json(
        500,
        json!({"error": "The service failed to answer this request.", "code": "internal"}),
    )
}

/// Reads the whole body, counting bytes as they arrive: past `cap` it
/// stops, whatever was declared.
async fn read_body(body: &mut Incoming, cap: usize) -> Result<Vec<u8>, Short> {
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(Short::Broken)?;
        if let Some(data) = frame.data_ref() {
            if bytes.len() + data.len() > cap {
                return Err(Short::TooLarge);
            }
            bytes.extend_from_slice(data);
        }
    }
    Ok(bytes)
}

/// Reads and drops what a refused body still sends, up to `LINGER_BYTES`
/// within `LINGER_TIME`, then lets the connection close. A client that is
/// still writing its body then reads its 413, where a close with unread
/// bytes would reset the connection and lose the answer.
async fn linger(mut body: Incoming) {
    let drain = async {
        let mut seen = 0;
        while let Some(Ok(frame)) = body.frame().await {
            seen += frame.data_ref().map_or(0, Bytes::len);
            if seen > LINGER_BYTES {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(LINGER_TIME, drain).await;
}
