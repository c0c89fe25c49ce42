//! JSON-RPC 2.0 as the harnesses that speak it write it (codex's app
//! server, ACP agents): one JSON object per line each way. Lines for the
//! harness are built here; a line from it is sorted into [`Envelope`]
//! before its protocol reads what it carries. What a harness writes is
//! untrusted: no input makes the sort panic, and an `id` that is neither a
//! whole number nor a string is no ID.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::head::{fields, Scalar};
use super::refusal::{Named, Refused, Unreadable, Why};
use super::speech::Hearing;

/// A JSON-RPC request ID: the harnesses' own requests use numbers from 0;
/// the protocol allows strings too.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A number.
    Number(i64),
    /// A string.
    Text(String),
}

/// A request room-core sends.
#[derive(Serialize)]
struct Request<'a, P: Serialize> {
    jsonrpc: &'static str,
    id: u64,
    method: &'a str,
    params: P,
}

/// A notification room-core sends; `params` left out when there are none.
#[derive(Serialize)]
struct Notify<'a, P: Serialize> {
    jsonrpc: &'static str,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<P>,
}

/// An answer to a request of the harness's.
#[derive(Serialize)]
struct Response<'a, R: Serialize> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: R,
}

/// An error answer to a request of the harness's.
#[derive(Serialize)]
struct ErrorResponse<'a> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    error: RpcError<'a>,
}

#[derive(Serialize)]
struct RpcError<'a> {
    code: i64,
    message: &'a str,
}

/// The most of room-core's requests remembered while the harness has not
/// answered them: a harness that answers nothing cannot grow this.
pub(crate) const WAITING_MAX: usize = 1024;

/// room-core's requests to one harness process: the next ID, and what each
/// request not answered yet was (at most [`WAITING_MAX`]; past that a
/// request goes unremembered, and its answer means nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Asked<W> {
    next_id: u64,
    waiting: FxHashMap<u64, W>,
}

impl<W> Asked<W> {
    /// None asked yet; the first ID is 1.
    pub(crate) fn new() -> Asked<W> {
        Asked {
            next_id: 1,
            waiting: FxHashMap::default(),
        }
    }

    /// A new request's ID, remembered as `what` until it is answered.
    pub(crate) fn ask(&mut self, what: W) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        if self.waiting.len() < WAITING_MAX {
            self.waiting.insert(id, what);
        }
        id
    }

    /// How many are waiting for their answers.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.waiting.len()
    }

    /// What the answer with `id` answers, if it was waited for.
    pub(crate) fn answered(&mut self, id: &RequestId) -> Option<W> {
        match id {
            RequestId::Number(n) => self.waiting.remove(&u64::try_from(*n).ok()?),
            RequestId::Text(_) => None,
        }
    }
}

/// JSON-RPC's "method not found".
pub(crate) const NOT_SERVED: i64 = -32601;

/// JSON-RPC's "invalid request".
pub(crate) const INVALID: i64 = -32600;

/// Serialises a message as one line, newline included.
fn line<T: Serialize>(msg: &T) -> String {
    // Serialising these types cannot fail: every map key is a string and
    // nothing has a hand-written Serialize.
    let mut s = serde_json::to_string(msg).unwrap_or_default();
    s.push('\n');
    s
}

/// A request of `method` with `params`, as one line.
pub(crate) fn request<P: Serialize>(id: u64, method: &str, params: P) -> String {
    line(&Request {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
}

/// A notification of `method`, with `params` if there are any, as one line.
pub(crate) fn notification<P: Serialize>(method: &str, params: Option<P>) -> String {
    line(&Notify {
        jsonrpc: "2.0",
        method,
        params,
    })
}

/// The answer `result` to request `id`, as one line.
pub(crate) fn answer<R: Serialize>(id: &RequestId, result: R) -> String {
    line(&Response {
        jsonrpc: "2.0",
        id,
        result,
    })
}

/// An error answer to request `id`, as one line.
pub(crate) fn error_answer(id: &RequestId, code: i64, message: &str) -> String {
    line(&ErrorResponse {
        jsonrpc: "2.0",
        id,
        error: RpcError { code, message },
    })
}

/// The request the start of a line not read whole names, if it names one
/// (a method and an ID: without an ID it is a notification).
pub(crate) fn read_head(head: &[u8]) -> Option<Named> {
    let [method, id] = fields(head, [&["method"], &["id"]]);
    let method = method?.text()?.to_string();
    Some(Named {
        id: Some(id?),
        kind: Some(method),
        tool: None,
    })
}

/// The request ID a line's start named, if it is one: a whole number or
/// a string.
pub(crate) fn named_id(id: Option<Scalar>) -> Option<RequestId> {
    match id {
        Some(Scalar::Number(n)) => n.parse().ok().map(RequestId::Number),
        Some(Scalar::Text(s)) => Some(RequestId::Text(s)),
        _ => None,
    }
}

/// The JSON-RPC error code that answers a request refused for `why`:
/// "method not found" for one room-core does not serve, "invalid request"
/// for one it cannot take.
pub(crate) fn refusal_code(why: Why) -> i64 {
    if why == Why::NotServed {
        NOT_SERVED
    } else {
        INVALID
    }
}

/// What a line of `bytes` not read whole (for `why`) means, its start
/// naming request `named`: refused at once with `refuse` where its ID can
/// be answered, else only reported (`approval_tool` names the tool a
/// request of a method asks about).
pub(crate) fn unread(
    named: Named,
    why: Unreadable,
    bytes: u64,
    approval_tool: fn(&str) -> Option<&'static str>,
    refuse: impl FnOnce(&RequestId, &str, Why, &mut Hearing),
) -> Hearing {
    let mut hearing = Hearing::default();
    let method = named.kind.unwrap_or_default();
    let why = Why::Unreadable(why);
    match named_id(named.id) {
        Some(id) => refuse(&id, &method, why, &mut hearing),
        None => {
            let tool = approval_tool(&method);
            hearing.refused = Some(Refused::new(Some(&method), tool, bytes, why, false));
        }
    }
    hearing
}

/// One line from the harness, sorted by what kind of message it is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Envelope {
    /// The answer to a request of room-core's.
    Response {
        /// The request answered.
        id: RequestId,
        /// Its result.
        result: Value,
    },
    /// An error answer to a request of room-core's.
    Error {
        /// The request answered.
        id: RequestId,
        /// Its message.
        message: String,
    },
    /// A request room-core must answer.
    Request {
        /// Its ID, to answer with.
        id: RequestId,
        /// Its method.
        method: String,
        /// Its parameters (`null` when it has none).
        params: Value,
    },
    /// A request whose `id` is not a JSON-RPC ID: nothing can answer it.
    RequestWithoutId {
        /// Its method.
        method: String,
    },
    /// A notification.
    Notification {
        /// Its method.
        method: String,
        /// Its parameters (`null` when it has none).
        params: Value,
    },
    /// Not a JSON object, or no message JSON-RPC knows.
    Other,
}

/// Sorts one line. Never panics.
pub(crate) fn sort(line: &str) -> Envelope {
    let Ok(mut value) = serde_json::from_str::<Value>(line) else {
        return Envelope::Other;
    };
    let id = value
        .get("id")
        .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
    let method = value
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string);
    let params = value.get_mut("params").map(Value::take);
    match (method, id) {
        (Some(method), Some(id)) => Envelope::Request {
            id,
            method,
            params: params.unwrap_or_default(),
        },
        (Some(method), None) if value.get("id").is_none() => Envelope::Notification {
            method,
            params: params.unwrap_or_default(),
        },
        (Some(method), None) => Envelope::RequestWithoutId { method },
        (None, Some(id)) if value.get("error").is_some() => Envelope::Error {
            id,
            message: value["error"]
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        },
        (None, Some(id)) if value.get("result").is_some() => Envelope::Response {
            id,
            result: value["result"].take(),
        },
        _ => Envelope::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_message_is_sorted_and_a_bad_id_is_no_id() {
        assert_eq!(
            sort(r#"{"id":3,"result":{"a":1}}"#),
            Envelope::Response {
                id: RequestId::Number(3),
                result: serde_json::json!({"a": 1})
            }
        );
        assert_eq!(
            sort(r#"{"id":"x","error":{"code":1,"message":"no"}}"#),
            Envelope::Error {
                id: RequestId::Text("x".into()),
                message: "no".into()
            }
        );
        assert!(matches!(
            sort(r#"{"id":0,"method":"m","params":{"p":1}}"#),
            Envelope::Request { id: RequestId::Number(0), ref method, .. } if method == "m"
        ));
        assert_eq!(
            sort(r#"{"id":[1],"method":"m"}"#),
            Envelope::RequestWithoutId { method: "m".into() }
        );
        assert!(matches!(
            sort(r#"{"method":"n"}"#),
            Envelope::Notification { ref params, .. } if params.is_null()
        ));
        for other in ["[1]", "nope", r#"{"id":1}"#, "{}"] {
            assert_eq!(sort(other), Envelope::Other, "{other}");
        }
    }

    #[test]
    fn lines_are_json_objects_ending_in_a_newline() {
        let id = RequestId::Number(7);
        assert_eq!(
            request(1, "m", serde_json::json!({})),
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{}}\n"
        );
        assert_eq!(
            notification::<()>("n", None),
            "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n"
        );
        assert_eq!(
            answer(&id, 5),
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":5}\n"
        );
        assert_eq!(
            error_answer(&id, NOT_SERVED, "no"),
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32601,\"message\":\"no\"}}\n"
        );
    }
}
