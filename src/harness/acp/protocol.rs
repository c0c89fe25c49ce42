//! The Agent Client Protocol (ACP, protocol version 1), the subset
//! room-core speaks as a client: JSON-RPC 2.0 over the agent's stdio, one
//! JSON object per line (harness/jsonrpc.rs).
//!
//! To the agent: `initialize` (no `fs` and no `terminal` capability: the
//! agent uses its own tools in the sandbox, docs/protocols.md), then
//! `session/new`, `session/load`, `session/resume` or `session/fork`,
//! `session/prompt`,
//! the steering extension's `_session/steering` where the agent offers it,
//! the notification `session/cancel`, and the answers to its
//! `session/request_permission`.
//!
//! From the agent: [`decode`] reads one line into [`Incoming`], as far as
//! the talker reads it. What the agent writes is untrusted: no input makes
//! it panic, and a field of another type reads as absent.

use room_machines::session::{Usage, Usd};
use serde::Serialize;
use serde_json::{json, Value};

use crate::harness::figures::count;
use crate::harness::jsonrpc::{self, Envelope, RequestId};
use crate::harness::speech::Image;

/// The protocol version room-core speaks.
pub(crate) const PROTOCOL_VERSION: u64 = 1;

/// The method of the agent's approval request.
pub(crate) const REQUEST_PERMISSION: &str = "session/request_permission";

/// `initialize`: room-core offers neither file system nor terminal
/// methods, so the agent reads, writes and runs in the sandbox itself,
/// where the privilege boundary holds, not through room-core.
pub(crate) fn initialize(id: u64) -> String {
    jsonrpc::request(
        id,
        "initialize",
        json!({
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": {
                "fs": {"readTextFile": false, "writeTextFile": false},
                "terminal": false,
            },
            "clientInfo": {
                "name": "room-core",
                "title": "room-core",
                "version": env!("CARGO_PKG_VERSION"),
            },
        }),
    )
}

/// How a session is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Open<'a> {
    /// `session/new`.
    New,
    /// `session/load` of this session (the agent replays it).
    Load(&'a str),
    /// `session/resume` of this session (no replay).
    Resume(&'a str),
    /// `session/fork` of this session: a new one holding all of it.
    Fork(&'a str),
}

/// The request that opens the session in `cwd`, with `servers` (ACP's
/// `mcpServers` list, [`crate::harness::mcp::acp_servers`]).
pub(crate) fn open_session(id: u64, open: Open, cwd: &str, servers: &Value) -> String {
    match open {
        Open::New => jsonrpc::request(
            id,
            "session/new",
            json!({"cwd": cwd, "mcpServers": servers}),
        ),
        Open::Load(session) => jsonrpc::request(
            id,
            "session/load",
            json!({"sessionId": session, "cwd": cwd, "mcpServers": servers}),
        ),
        Open::Resume(session) => jsonrpc::request(
            id,
            "session/resume",
            json!({"sessionId": session, "cwd": cwd, "mcpServers": servers}),
        ),
        Open::Fork(session) => jsonrpc::request(
            id,
            "session/fork",
            json!({"sessionId": session, "cwd": cwd, "mcpServers": servers}),
        ),
    }
}

/// One block of a prompt.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    #[serde(rename_all = "camelCase")]
    Image {
        mime_type: &'a str,
        data: String,
    },
}

/// `session/prompt`: the text, then the images.
pub(crate) fn prompt(id: u64, session: &str, text: &str, images: &[Image]) -> String {
    let mut blocks = vec![Block::Text { text }];
    blocks.extend(images.iter().map(|i| Block::Image {
        mime_type: i.media_type,
        data: i.base64(),
    }));
    jsonrpc::request(
        id,
        "session/prompt",
        json!({"sessionId": session, "prompt": blocks}),
    )
}

/// The steering extension's request (`_session/steering`): `text` into
/// the running prompt. With `idleBehavior: promptRequired` an agent whose
/// prompt has ended says so rather than starting a turn of its own, so
/// the text stays room-core's to queue.
pub(crate) fn steer(id: u64, session: &str, text: &str) -> String {
    jsonrpc::request(
        id,
        STEERING,
        json!({
            "sessionId": session,
            "prompt": [Block::Text { text }],
            "_meta": {"steering": {"idleBehavior": "promptRequired"}},
        }),
    )
}

/// Whether the answer to `_session/steering` says the text joined the
/// running prompt; anything else (`promptRequired`, an answer of another
/// shape) says it did not.
pub(crate) fn injected(result: &Value) -> bool {
    result["outcome"] == "injected"
}

/// The steering extension's method.
pub(crate) const STEERING: &str = "_session/steering";

/// The notification `session/cancel`.
pub(crate) fn cancel(session: &str) -> String {
    jsonrpc::notification("session/cancel", Some(json!({"sessionId": session})))
}

/// The answer to a permission request: the option chosen, or, with none,
/// `cancelled` (the turn is being cancelled, or no option fits).
pub(crate) fn permission_answer(id: &RequestId, option: Option<&str>) -> String {
    let outcome = match option {
        Some(option) => json!({"outcome": "selected", "optionId": option}),
        None => json!({"outcome": "cancelled"}),
    };
    jsonrpc::answer(id, json!({ "outcome": outcome }))
}

/// What the agent said it can do, in `initialize`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Offers {
    /// `session/load`.
    pub load: bool,
    /// `session/resume` (`sessionCapabilities.resume`).
    pub resume: bool,
    /// Images in a prompt.
    pub images: bool,
    /// HTTP MCP servers (`mcpCapabilities.http`); every agent takes stdio
    /// ones.
    pub mcp_http: bool,
    /// The steering extension (`_session/steering`), which it advertises
    /// in the answer's own `_meta.steering.supported`.
    pub steering: bool,
    /// `session/fork` (`sessionCapabilities.fork`).
    pub fork: bool,
}

/// The offers in `initialize`'s result.
pub(crate) fn offers(result: &Value) -> Offers {
    let caps = &result["agentCapabilities"];
    Offers {
        load: caps["loadSession"] == true,
        resume: caps["sessionCapabilities"]["resume"].is_object(),
        images: caps["promptCapabilities"]["image"] == true,
        mcp_http: caps["mcpCapabilities"]["http"] == true,
        steering: result["_meta"]["steering"]["supported"] == true,
        fork: caps["sessionCapabilities"]["fork"].is_object(),
    }
}

/// One option of a permission request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// Its ID, to answer with.
    pub id: String,
    /// `allow_once`, `allow_always`, `reject_once` or `reject_always`.
    pub kind: String,
}

/// A permission request, as far as room-core reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permission {
    /// The tool call's kind (`edit`, `execute`, …; `other` when unsaid).
    pub kind: String,
    /// The tool call's title, and what it would run, as JSON text.
    pub input: String,
    /// The options offered.
    pub choices: Vec<Choice>,
}

/// One line from the agent, as far as the talker reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
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
    /// `session/request_permission`, or `None` when its parameters are
    /// not an object.
    Permission {
        /// Its ID.
        id: RequestId,
        /// What it asks.
        asks: Option<Permission>,
    },
    /// Another request (`fs/*`, `terminal/*`, an extension): answered with
    /// an error at once.
    OtherRequest {
        /// Its ID.
        id: RequestId,
        /// Its method.
        method: String,
    },
    /// A request with no ID room-core can answer with.
    RequestWithoutId {
        /// Its method.
        method: String,
    },
    /// A `session/update` of kind `usage_update`: the session's cost so
    /// far, where the agent says it (in USD).
    CostSoFar(Option<Usd>),
    /// Another `session/update` (a message's chunk, a tool call, a plan, …):
    /// journalled as it is, and a sign that the running prompt has begun.
    Progress,
    /// Anything else.
    Other,
}

/// Reads one line of the agent's stdout. Never panics.
pub(crate) fn decode(line: &str) -> Incoming {
    match jsonrpc::sort(line) {
        Envelope::Response { id, result } => Incoming::Response { id, result },
        Envelope::Error { id, message } => Incoming::Error { id, message },
        Envelope::Request { id, method, params } if method == REQUEST_PERMISSION => {
            Incoming::Permission {
                id,
                asks: params.is_object().then(|| permission(&params)),
            }
        }
        Envelope::Request { id, method, .. } => Incoming::OtherRequest { id, method },
        Envelope::RequestWithoutId { method } => Incoming::RequestWithoutId { method },
        Envelope::Notification { method, params } if method == "session/update" => {
            let update = &params["update"];
            if update["sessionUpdate"] != "usage_update" {
                return Incoming::Other;
            }
            let cost = &update["cost"];
            let usd = (cost["currency"] == "USD")
                .then(|| cost["amount"].as_f64())
                .flatten()
                .and_then(Usd::reported);
            Incoming::CostSoFar(usd)
        }
        Envelope::Notification { .. } | Envelope::Other => Incoming::Other,
    }
}

fn permission(params: &Value) -> Permission {
    let call = &params["toolCall"];
    let kind = call["kind"].as_str().unwrap_or("other").to_string();
    let input = json!({
        "title": call.get("title"),
        "rawInput": call.get("rawInput"),
    });
    let choices = params["options"]
        .as_array()
        .map(|options| {
            options
                .iter()
                .filter_map(|o| {
                    Some(Choice {
                        id: o["optionId"].as_str()?.to_string(),
                        kind: o["kind"].as_str()?.to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Permission {
        kind,
        input: input.to_string(),
        choices,
    }
}

/// How a prompt's turn ended, from `session/prompt`'s result.
#[derive(Debug, Clone, PartialEq)]
pub struct Ended {
    /// Why, where the agent says it refused (`refusal`): the turn failed.
    pub refused: bool,
    /// Its tokens, where the agent says them (`usage`).
    pub tokens: Option<Usage>,
}

/// The end in `session/prompt`'s result. ACP's `inputTokens` excludes the
/// cached ones, as room-core's does; its `thoughtTokens` are output.
pub(crate) fn ended(result: &Value) -> Ended {
    let u = &result["usage"];
    let tokens = u.is_object().then(|| Usage {
        input_tokens: count(&u["inputTokens"]),
        // Reasoning is output, as room-core counts it.
        output_tokens: count(&u["outputTokens"]).saturating_add(count(&u["thoughtTokens"])),
        cache_read_tokens: count(&u["cachedReadTokens"]),
        cache_write_tokens: count(&u["cachedWriteTokens"]),
        cost_usd: None,
    });
    Ended {
        refused: result["stopReason"] == "refusal",
        tokens,
    }
}

/// The session ID in `session/new`'s result.
pub(crate) fn session_id(result: &Value) -> Option<String> {
    result["sessionId"].as_str().map(str::to_string)
}
