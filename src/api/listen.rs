//! The accept loop and each connection's life: a slot under the connection
//! cap, hyper's HTTP/1 with the head limits and timeouts, and a graceful
//! close on stop. An accept that fails (out of descriptors, say) is logged
//! and retried after a pause; nothing ends the loop but a stop.

use std::sync::Arc;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use super::front::Front;
use super::limits::{HEAD_TIMEOUT, MAX_HEAD, READ_BUFFER, STOP_GRACE};
use super::request;
use crate::backoff::Failures;

/// Serves `listener` until `stop` changes (or its sender is dropped), with at
/// most `cap` connections at once; then gives the connections `STOP_GRACE`
/// to finish the answers in hand.
pub(super) async fn serve(
    listener: TcpListener,
    front: Arc<Front>,
    cap: usize,
    mut stop: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(cap));
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_header_size(MAX_HEAD)
        .max_buf_size(READ_BUFFER);
    let mut failures = Failures::new("HTTP API");
    loop {
        // A slot first: at the cap, new connections wait in the backlog
        // while the open ones are served.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            _ = stop.changed() => break,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.changed() => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => {
                failures.recovered();
                stream
            }
            Err(e) => {
                let pause = failures.failed(&e);
                tokio::select! {
                    _ = tokio::time::sleep(pause) => continue,
                    _ = stop.changed() => break,
                }
            }
        };
        // Answers are one write each; no Nagle delay between keep-alive requests.
        let _ = stream.set_nodelay(true);
        let front = front.clone();
        let service = service_fn(move |req| request::serve(front.clone(), req));
        let conn = http.serve_connection(TokioIo::new(stream), service);
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let _slot = slot;
            tokio::pin!(conn);
            tokio::select! {
                done = conn.as_mut() => {
                    if let Err(e) = done {
                        log::debug!("HTTP connection ended: {e}");
                    }
                }
                _ = stop.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(STOP_GRACE, conn).await;
                }
            }
        });
    }
    // Stopping: wait (bounded) until every connection has given its slot back.
    let all = u32::try_from(cap).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(STOP_GRACE, slots.acquire_many(all)).await;
}
