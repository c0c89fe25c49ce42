//! An answer as the routes make it ([`Reply`]) and as hyper sends it
//! ([`respond`] into a [`Body`]): the types every part of the front end
//! answers with, below all of them.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use http_body_util::Full;
use hyper::body::{Bytes, Frame, SizeHint};
use hyper::header::{HeaderValue, CONNECTION, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::error::Refusal;

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

/// A response body: whole (every answer but one), or the event stream's
/// chunks as its task sends them (the body ends when the task drops its
/// sender).
#[derive(Debug)]
pub enum Body {
    /// A whole answer.
    Whole(Full<Bytes>),
    /// The event stream.
    Stream(mpsc::Receiver<Bytes>),
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Body::Whole(full) => Pin::new(full).poll_frame(cx),
            Body::Stream(rx) => rx
                .poll_recv(cx)
                .map(|chunk| chunk.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Body::Whole(full) => full.is_end_stream(),
            Body::Stream(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Whole(full) => full.size_hint(),
            Body::Stream(_) => SizeHint::default(),
        }
    }
}

/// Whether the connection closes after the answer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum After {
    /// It stays open for the next request.
    KeepAlive,
    /// It closes.
    Close,
}

/// A whole answer.
pub(super) fn respond(reply: Reply, after: After) -> Response<Body> {
    let mut response = Response::new(Body::Whole(Full::new(Bytes::from(reply.body))));
    *response.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(reply.content_type));
    if after == After::Close {
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}
