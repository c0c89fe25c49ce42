//! `GET /v1/sessions/{id}/stream`: a session's events as Server-Sent
//! Events, from a seq on (`Last-Event-ID`, else `?after=`, else the
//! beginning), live, until the session closes.
//!
//! Each stream is a task on the front end's async thread that sends chunks
//! into the response body (a bounded channel, so a slow client holds back
//! only its own task). It reads the journal's recent lines from memory; a
//! reader further behind reads the file on the blocking pool. An append
//! wakes it through the journal's watch channel. It ends when the session
//! is closed and its last event sent (after an `end` event), when the
//! client goes, when the client takes nothing for [`STALL`], or at once
//! when the service stops. Streams have a cap of their own,
//! [`MAX_STREAMS`], under the connection cap, and neither the head nor the
//! body deadline applies to them (both are over before the answer starts).

use std::sync::Arc;
use std::time::Duration;

use hyper::body::Bytes;
use hyper::header::{HeaderMap, HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit};
use tokio::time::Instant;

use super::follow::unreadable;
use super::front::Front;
use super::limits::MAX_STREAMS;
use super::query::Query;
use super::reply::{respond, After, Body};
use crate::error::Refusal;
use crate::journal::{Journal, Line, Tail};

/// A comment is sent after this long without an event, so proxies and
/// clients see the stream is alive (and a gone client is noticed).
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A client that takes no bytes for this long (its socket buffer and the
/// stream's channel full) is dropped.
pub(crate) const STALL: Duration = Duration::from_secs(60);

/// Events per chunk.
const CHUNK: usize = 64;

/// Chunks the channel holds for the connection.
const BUFFERED: usize = 4;

/// Opens a stream of session `id`'s events.
pub(crate) async fn open(
    front: &Arc<Front>,
    id: String,
    query: &Query,
    headers: &HeaderMap,
) -> Response<Body> {
    match prepare(front, id, query, headers).await {
        Ok(response) => response,
        Err(r) => respond(r.into(), After::KeepAlive),
    }
}

/// Where the stream starts: after `Last-Event-ID` (what an EventSource
/// sends when it reconnects, so it wins), else after `?after=`, else from
/// the first event.
fn resume_after(query: &Query, headers: &HeaderMap) -> Result<u64, Refusal> {
    // A bad `after` is refused even when the header wins over it.
    let after = query.number("after")?.unwrap_or(0);
    let Some(last) = headers.get("last-event-id") else {
        return Ok(after);
    };
    let not_a_seq = |text: &str| {
        Refusal::new(
            422,
            "invalid_parameter",
            format!("Last-Event-ID must be an event's seq, not \"{text}\"."),
        )
    };
    // A value that is not visible ASCII is no seq: refused, never read as
    // empty (which would replay from the beginning).
    let text = last
        .to_str()
        .map_err(|_| not_a_seq(&String::from_utf8_lossy(last.as_bytes())))?
        .trim();
    if text.is_empty() {
        // An empty ID is the SSE way of saying "from the beginning".
        return Ok(0);
    }
    super::query::whole_number(text).ok_or_else(|| not_a_seq(text))
}

async fn prepare(
    front: &Arc<Front>,
    id: String,
    query: &Query,
    headers: &HeaderMap,
) -> Result<Response<Body>, Refusal> {
    let after = resume_after(query, headers)?;
    let slot = front.streams.clone().try_acquire_owned().map_err(|_| {
        Refusal::new(
            503,
            "too_many_streams",
            format!("{MAX_STREAMS} event streams are open; close one or try again later."),
        )
    })?;
    // The journal's first scan reads its file: on the blocking pool.
    let runtime = front.runtime.clone();
    let found = tokio::task::spawn_blocking(move || {
        let journal = runtime
            .journal(&id)
            .ok_or_else(|| Refusal::no_session(&id))?;
        let tail = journal.subscribe().map_err(|e| unreadable(&e))?;
        Ok::<_, Refusal>((journal, tail))
    })
    .await
    .map_err(|_| {
        Refusal::new(
            500,
            "internal",
            "The service failed to answer this request.",
        )
    })?;
    let (journal, tail) = found?;
    let (tx, rx) = mpsc::channel(BUFFERED);
    tokio::spawn(pump(journal, tail, after, tx, front.stop.clone(), slot));
    let mut response = Response::new(Body::Stream(rx));
    *response.status_mut() = StatusCode::OK;
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(response)
}

/// Sends every event after `after`, then each as it is appended, until the
/// session is over, the client goes or the service stops.
async fn pump(
    journal: Arc<Journal>,
    mut tail: watch::Receiver<Tail>,
    mut after: u64,
    tx: mpsc::Sender<Bytes>,
    mut stop: watch::Receiver<bool>,
    _slot: OwnedSemaphorePermit,
) {
    let mut quiet_since = Instant::now();
    loop {
        if *stop.borrow_and_update() {
            return;
        }
        let now = *tail.borrow_and_update();
        while after < now.last {
            let lines = match read(&journal, after).await {
                Some(lines) if !lines.is_empty() => lines,
                _ => return,
            };
            after = lines.last().map_or(after, |l| l.seq);
            if !send(&tx, encode(&lines), &mut stop).await {
                return;
            }
            quiet_since = Instant::now();
        }
        if now.closed {
            let end = format!(
                "event: end\ndata: {{\"reason\":\"session_closed\",\"last_seq\":{}}}\n\n",
                now.last
            );
            let _ = send(&tx, Bytes::from(end), &mut stop).await;
            return;
        }
        tokio::select! {
            changed = tail.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep_until(quiet_since + KEEP_ALIVE) => {
                if !send(&tx, Bytes::from_static(b": keep-alive\n\n"), &mut stop).await {
                    return;
                }
                quiet_since = Instant::now();
            }
            _ = stop.changed() => return,
            _ = tx.closed() => return,
        }
    }
}

/// The next lines after `after`: from memory when recent, else from the
/// file on the blocking pool. `None` when they cannot be read (logged).
async fn read(journal: &Arc<Journal>, after: u64) -> Option<Vec<Arc<Line>>> {
    if let Some(lines) = journal.recent(after, CHUNK) {
        return Some(lines);
    }
    let j = journal.clone();
    match tokio::task::spawn_blocking(move || j.lines(after, CHUNK)).await {
        Ok(Ok(lines)) => Some(lines),
        Ok(Err(e)) => {
            log::error!("a stream ends: {e}");
            None
        }
        Err(_) => None,
    }
}

/// Sends a chunk unless the service stops or the client takes nothing for
/// [`STALL`]; `false` when the stream must end.
async fn send(tx: &mpsc::Sender<Bytes>, chunk: Bytes, stop: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        sent = tokio::time::timeout(STALL, tx.send(chunk)) => matches!(sent, Ok(Ok(()))),
        _ = stop.changed() => false,
    }
}

/// Lines as SSE events: `id:` the seq, `event:` the kind, `data:` the
/// event's JSON as journalled. A raw CR or LF can only be whitespace
/// between JSON tokens (inside a string it is escaped), so splitting the
/// data there into several `data:` lines (which the client joins with LF)
/// keeps it the same JSON.
fn encode(lines: &[Arc<Line>]) -> Bytes {
    let mut out = String::new();
    for l in lines {
        out.push_str(&format!("id: {}\nevent: {}\n", l.seq, l.kind));
        for part in l.json.split(['\r', '\n']) {
            out.push_str("data: ");
            out.push_str(part);
            out.push('\n');
        }
        out.push('\n');
    }
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_id_kind_and_data_and_raw_line_breaks_split_data() {
        let line = |seq, kind: &str, json: &str| {
            Arc::new(Line {
                seq,
                at_ms: 1,
                kind: kind.into(),
                json: json.into(),
            })
        };
        let bytes = encode(&[line(3, "harness", "{\"a\":\r1}"), line(4, "stopped", "{}")]);
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            "id: 3\nevent: harness\ndata: {\"a\":\ndata: 1}\n\nid: 4\nevent: stopped\ndata: {}\n\n"
        );
    }

    #[test]
    fn last_event_id_wins_over_after() {
        let q = Query::parse(Some("after=5"), &["after"]).unwrap();
        let mut h = HeaderMap::new();
        assert_eq!(resume_after(&q, &h).unwrap(), 5);
        h.insert("last-event-id", HeaderValue::from_static("9"));
        assert_eq!(resume_after(&q, &h).unwrap(), 9);
        h.insert("last-event-id", HeaderValue::from_static(""));
        assert_eq!(resume_after(&q, &h).unwrap(), 0);
        for bad in ["x", "+9", "-1"] {
            h.insert("last-event-id", HeaderValue::from_static(bad));
            assert_eq!(resume_after(&q, &h).unwrap_err().code, "invalid_parameter");
        }
        let bad_after = Query::parse(Some("after=y"), &["after"]).unwrap();
        h.insert("last-event-id", HeaderValue::from_static("9"));
        assert_eq!(
            resume_after(&bad_after, &h).unwrap_err().message,
            "The parameter after must be a whole number, not \"y\"."
        );
    }
}
