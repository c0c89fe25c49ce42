//! The browser console: its files, embedded in the binary at build time from
//! `console/` (plain HTML, CSS and JavaScript modules; no build step), and
//! answered without the token. They hold no data: every data call the page
//! makes is the API with `Authorization: Bearer <token>`, which the page
//! takes from the URL's fragment (never sent here) or from the person.
//! Every answer of these routes carries [`CSP`] and `nosniff`.

use http_body_util::Full;
use hyper::body::{Body as _, Bytes, Incoming};
use hyper::header::{
    HeaderName, HeaderValue, CACHE_CONTROL, CONNECTION, CONTENT_SECURITY_POLICY, CONTENT_TYPE,
    REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
};
use hyper::{Request, Response, StatusCode};

use super::query::Query;
use super::reply::{Body, Reply};
use super::routes::{self, Op};
use crate::error::Refusal;

/// The console's Content-Security-Policy: scripts, styles and connections
/// from this origin only, no inline script or style, no frames, no forms.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// One file of the console.
#[derive(Debug, Clone, Copy)]
pub struct File {
    /// Its name under `/console/`.
    pub name: &'static str,
    /// Its content type.
    pub content_type: &'static str,
    /// Its bytes.
    pub body: &'static str,
}

const HTML: &str = "text/html; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";

macro_rules! file {
    ($name:literal, $type:expr) => {
        File {
            name: $name,
            content_type: $type,
            body: include_str!(concat!("../../console/", $name)),
        }
    };
}

/// The page `GET /` answers.
pub const INDEX: File = file!("index.html", HTML);

/// The files `GET /console/{file}` answers, by name.
pub const FILES: &[File] = &[
    file!("style.css", CSS),
    file!("app.js", JS),
    file!("api.js", JS),
    file!("dom.js", JS),
    file!("format.js", JS),
    file!("stream.js", JS),
    file!("list.js", JS),
    file!("new.js", JS),
    file!("session.js", JS),
    file!("controls.js", JS),
    file!("images.js", JS),
    file!("conversation.js", JS),
    file!("diff.js", JS),
    file!("harness.js", JS),
    file!("timeline.js", JS),
    file!("usage.js", JS),
];

/// The answer to a request for one of the console's routes, which need no
/// token; `None` for every other request (it goes on to the token check).
pub fn answer(request: &Request<Incoming>) -> Option<Response<Body>> {
    let (route, ids) = routes::find(request.method(), request.uri().path()).ok()?;
    if !route.public {
        return None;
    }
    let file = Query::parse(request.uri().query(), route.params).and_then(|_| match route.op {
        Op::Console => Ok(&INDEX),
        _ => {
            let name = ids.first().map_or("", String::as_str);
            FILES
                .iter()
                .find(|f| f.name == name)
                .ok_or_else(|| Refusal::new(404, "not_found", format!("No console file {name}.")))
        }
    });
    let mut response = match file {
        Ok(file) => {
            let mut r = Response::new(Body::Whole(Full::new(Bytes::from_static(
                file.body.as_bytes(),
            ))));
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(file.content_type));
            r
        }
        Err(refusal) => {
            let reply = Reply::from(refusal);
            let mut r = Response::new(Body::Whole(Full::new(Bytes::from(reply.body))));
            *r.status_mut() = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::NOT_FOUND);
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(reply.content_type));
            r
        }
    };
    let headers = response.headers_mut();
    let fixed: [(HeaderName, &'static str); 4] = [
        (CONTENT_SECURITY_POLICY, CSP),
        (X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (REFERRER_POLICY, "no-referrer"),
        // A new binary's files show at the next load.
        (CACHE_CONTROL, "no-cache"),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
    // A GET with a body is not read; the connection closes with it.
    if !request.body().is_end_stream() {
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
    }
    Some(response)
}
