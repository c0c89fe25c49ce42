//! The routes that follow sessions, besides the stream (stream.rs): a page
//! of a session's events, the session list's query, health and readiness.

use serde_json::{json, Value};

use super::front::Ctx;
use super::limits::MAX_STREAMS;
use super::query::Query;
use super::reply::Reply;
use crate::error::Refusal;
use crate::journal::{JournalError, MAX_PAGE};
use crate::runtime::{ListQuery, Runtime, DEFAULT_LIST, MAX_LIST};
use room_machines::session::Shown;

/// The default page of events.
pub(super) const DEFAULT_PAGE: usize = 256;

/// 500 for a journal that cannot be read.
pub(super) fn unreadable(e: &JournalError) -> Refusal {
    log::error!("{e}");
    Refusal::new(
        500,
        "journal_unreadable",
        format!("Cannot read the session's events: {e}."),
    )
}

/// `GET /v1/sessions/{id}/events?after=N&limit=M`: the events after seq
/// `after`, each as journalled, and where to ask from next. The body is
/// put together from the journal's lines, never re-serialised, so a
/// harness's event is served byte for byte as it printed it.
pub(super) fn events(rt: &Runtime, id: &str, query: &Query) -> Result<Reply, Refusal> {
    let after = query.number("after")?.unwrap_or(0);
    let limit = query.limit("limit", DEFAULT_PAGE, MAX_PAGE)?;
    let journal = rt.journal(id).ok_or_else(|| Refusal::no_session(id))?;
    let closed = journal.is_closed();
    let lines = journal.lines(after, limit).map_err(|e| unreadable(&e))?;
    let last = journal.last_seq().map_err(|e| unreadable(&e))?;
    let next = lines.last().map_or(after, |l| l.seq);
    let mut body = String::from("{\"events\":[");
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&line.json);
    }
    body.push_str(&format!(
        "],\"next_after\":{next},\"last_seq\":{last},\"closed\":{closed}}}"
    ));
    Ok(Reply {
        status: 200,
        body,
        content_type: "application/json",
    })
}

/// `GET /v1/sessions`: a page of the sessions. An `after` no session has is
/// `404 session_not_found`, as on every route that names a session: no
/// schema can say which IDs exist, so a request the spec allows may name a
/// missing one, and "not found" is the answer such a request is owed.
pub(super) fn list(rt: &Runtime, query: &Query) -> Result<Value, Refusal> {
    let q = list_query(query)?;
    if let Some(after) = q.after.as_deref() {
        if rt.journal(after).is_none() {
            return Err(Refusal::new(
                404,
                "session_not_found",
                format!("No session {after} to list after."),
            ));
        }
    }
    rt.list(&q)
}

/// The session list's query: `workspace`, `state`, `after` (empty: from the
/// first, as no `after`), `limit`.
pub(super) fn list_query(query: &Query) -> Result<ListQuery, Refusal> {
    let state = query
        .get("state")
        .map(|s| {
            serde_json::from_value::<Shown>(json!(s)).map_err(|_| {
                Refusal::new(
                    422,
                    "invalid_parameter",
                    format!(
                        "The parameter state must be pending, running, idle, closed or failed, not \"{s}\"."
                    ),
                )
            })
        })
        .transpose()?;
    Ok(ListQuery {
        workspace: query.get("workspace").map(str::to_string),
        state,
        after: query
            .get("after")
            .filter(|a| !a.is_empty())
            .map(str::to_string),
        limit: query.limit("limit", DEFAULT_LIST, MAX_LIST)?,
    })
}

/// `GET /v1/health`.
pub(super) fn health(ctx: Ctx) -> Value {
    let mut v = ctx.rt.health();
    v["streams"] = json!({"open": ctx.streams_open, "max": MAX_STREAMS});
    v
}

/// `GET /v1/ready`: 200 once the restore is done and both sockets serve,
/// 503 before and once a stop has begun.
pub(super) fn ready(rt: &Runtime) -> Reply {
    match rt.readiness() {
        Ok(()) => match rt.degraded() {
            None => Reply::json(200, json!({"ready": true})),
            Some(why) => Reply::json(200, json!({"ready": true, "degraded": why})),
        },
        Err(why) => Refusal::new(
            503,
            "not_ready",
            format!("The service is not ready: {why}."),
        )
        .into(),
    }
}
