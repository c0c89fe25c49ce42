//! codex's app-server protocol, the subset room-core speaks: `codex
//! app-server`, JSON-RPC 2.0 over stdio, one JSON object per line in each
//! direction (docs/protocols.md says what the real CLI does with each; the
//! generated JSON Schema of what is used here is in
//! fixtures/protocols/codex/schema/).
//!
//! To codex: the requests `initialize` (then the notification
//! `initialized`), `thread/start` or `thread/resume`, `turn/start`,
//! `turn/steer` and `turn/interrupt`, and the answers to the approval
//! requests codex sends. Request ids are room-core's numbers.
//!
//! From codex: `decode` reads one line into [`Incoming`], as far as the
//! talker reads it: a response to a request of room-core's, a request of
//! codex's (an approval), or a notification the session must hear (a
//! turn's start and end, a patch an approval names, the thread's usage);
//! everything else is `Other`. What codex writes is untrusted: no input
//! makes it panic, and a field of another type reads as absent (a count
//! that is not a count as 0).

use room_machines::session::{Usage, UsageReport};
use serde::Serialize;
use serde_json::Value;

use crate::harness::figures::count;
use crate::harness::refusal::Why;
use crate::harness::speech::Image;

/// The arguments, after the program, that start the app server on stdio.
pub(crate) const PROTOCOL_ARGS: [&str; 1] = ["app-server"];

/// The method of a command's approval request.
pub(crate) const COMMAND_APPROVAL: &str = "item/commandExecution/requestApproval";

/// The method of a patch's approval request.
pub(crate) const FILE_CHANGE_APPROVAL: &str = "item/fileChange/requestApproval";

// ------------------------------------------------------------- to codex

pub(crate) use crate::harness::jsonrpc::RequestId;
use crate::harness::jsonrpc::{self, Envelope};
pub(crate) use crate::harness::jsonrpc::{error_answer, request};

/// `initialize`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InitializeParams<'a> {
    /// Who is asking (codex puts it in its user agent).
    pub client_info: ClientInfo<'a>,
}

/// The client's name and version.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ClientInfo<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its title, for display.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<&'a str>,
    /// Its version.
    pub version: &'a str,
}

/// When codex asks before it runs something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ApprovalPolicy {
    /// Asks before any command it does not know to be read-only.
    #[serde(rename = "untrusted")]
    Untrusted,
    /// Asks when the model asks to leave the sandbox, or a patch writes
    /// outside the writable folders.
    #[serde(rename = "on-request")]
    OnRequest,
    /// Never asks: what the sandbox refuses fails.
    #[serde(rename = "never")]
    Never,
}

/// codex's sandbox for commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SandboxMode {
    /// Reads anywhere, writes nowhere.
    #[serde(rename = "read-only")]
    ReadOnly,
    /// Writes in the folder (and temp folders).
    #[serde(rename = "workspace-write")]
    WorkspaceWrite,
    /// No sandbox.
    #[serde(rename = "danger-full-access")]
    DangerFullAccess,
}

/// `thread/start`'s parameters (the subset used).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThreadStartParams<'a> {
    /// The folder.
    pub cwd: &'a str,
    /// When to ask.
    pub approval_policy: ApprovalPolicy,
    /// The sandbox.
    pub sandbox: SandboxMode,
    /// The model, when the app chose one (else codex's configured one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<&'a str>,
    /// Instructions added for the thread, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub developer_instructions: Option<&'a str>,
    /// Config for the thread (the session's MCP servers), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<&'a serde_json::Value>,
}

/// `thread/resume`'s parameters (the subset used): the thread, opened as
/// `thread/start` opens a new one.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThreadResumeParams<'a> {
    /// The thread, from an earlier `thread/start`.
    pub thread_id: &'a str,
    /// The rest, as for `thread/start`.
    #[serde(flatten)]
    pub open: ThreadStartParams<'a>,
}

/// `thread/fork`'s parameters: a thread of its own, with the history of
/// `thread_id` through turn `last_turn_id`, and the rest as for
/// `thread/start`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThreadForkParams<'a> {
    /// The thread forked.
    pub thread_id: &'a str,
    /// Its last turn the fork holds.
    pub last_turn_id: &'a str,
    /// The rest, as for `thread/start`.
    #[serde(flatten)]
    pub open: ThreadStartParams<'a>,
}

/// One piece of user input.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub(crate) enum UserInput<'a> {
    /// Text.
    Text {
        /// The text.
        text: &'a str,
    },
    /// An image, inline as a `data:` URL (codex passes it to the model as
    /// it is; no file to write or remove).
    Image {
        /// `data:<media type>;base64,<bytes>`.
        url: String,
    },
}

/// `turn/start`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TurnStartParams<'a> {
    /// The thread.
    pub thread_id: &'a str,
    /// The prompt.
    pub input: Vec<UserInput<'a>>,
    /// The model from this turn on, when a message switched it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<&'a str>,
    /// How hard the model reasons, when the app chose it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<&'a str>,
}

/// `turn/steer`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TurnSteerParams<'a> {
    /// The thread.
    pub thread_id: &'a str,
    /// The running turn: codex refuses the steer (-32600) when it is not
    /// the one running, or none runs.
    pub expected_turn_id: &'a str,
    /// The message.
    pub input: Vec<UserInput<'a>>,
}

/// `turn/interrupt`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TurnInterruptParams<'a> {
    /// The thread.
    pub thread_id: &'a str,
    /// The turn.
    pub turn_id: &'a str,
}

/// `thread/revert`'s parameters: the thread's history cut before a turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThreadRevertParams<'a> {
    /// The thread.
    pub thread_id: &'a str,
    /// The first turn dropped, with every turn after it.
    pub before_turn_id: &'a str,
}

/// The answer to an approval request (command or file change).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct ApprovalAnswer {
    /// The decision.
    pub decision: Decision,
}

/// An approval decision. codex takes `acceptForSession` and `decline`
/// even where a request's `availableDecisions` does not list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Decision {
    /// Run it.
    Accept,
    /// Run it, and the same command (the same files) again in this thread
    /// without asking.
    AcceptForSession,
    /// Do not run it; the turn goes on and the model reads "rejected by
    /// user" (nothing else: a message for the model goes as a steer).
    Decline,
}

/// `initialize`.
pub(crate) fn initialize(id: u64, client: ClientInfo) -> String {
    request(
        id,
        "initialize",
        InitializeParams {
            client_info: client,
        },
    )
}

/// The `initialized` notification, sent after `initialize`'s answer.
pub(crate) fn initialized() -> String {
    jsonrpc::notification::<()>("initialized", None)
}

/// `thread/start`.
pub(crate) fn thread_start(id: u64, params: &ThreadStartParams) -> String {
    request(id, "thread/start", params)
}

/// `thread/resume`.
pub(crate) fn thread_resume(id: u64, params: &ThreadResumeParams) -> String {
    request(id, "thread/resume", params)
}

/// `thread/fork`.
pub(crate) fn thread_fork(id: u64, params: &ThreadForkParams) -> String {
    request(id, "thread/fork", params)
}

/// `turn/start` with a text prompt (and a model the turn switches to,
/// and the app's effort).
pub(crate) fn turn_start(
    id: u64,
    thread_id: &str,
    text: &str,
    images: &[Image],
    model: Option<&str>,
    effort: Option<&str>,
) -> String {
    // The images first, then the text, as codex's own clients send them.
    let mut input: Vec<UserInput> = images
        .iter()
        .map(|i| UserInput::Image {
            url: format!("data:{};base64,{}", i.media_type, i.base64()),
        })
        .collect();
    input.push(UserInput::Text { text });
    request(
        id,
        "turn/start",
        TurnStartParams {
            thread_id,
            input,
            model,
            effort,
        },
    )
}

/// `turn/steer` with a text message.
pub(crate) fn turn_steer(id: u64, thread_id: &str, expected_turn_id: &str, text: &str) -> String {
    request(
        id,
        "turn/steer",
        TurnSteerParams {
            thread_id,
            expected_turn_id,
            input: vec![UserInput::Text { text }],
        },
    )
}

/// `turn/interrupt`.
pub(crate) fn thread_revert(id: u64, thread_id: &str, before_turn_id: &str) -> String {
    request(
        id,
        "thread/revert",
        ThreadRevertParams {
            thread_id,
            before_turn_id,
        },
    )
}

/// `turn/interrupt`.
pub(crate) fn turn_interrupt(id: u64, thread_id: &str, turn_id: &str) -> String {
    request(
        id,
        "turn/interrupt",
        TurnInterruptParams { thread_id, turn_id },
    )
}

/// The answer to an approval request.
pub(crate) fn approval_answer(id: &RequestId, decision: Decision) -> String {
    jsonrpc::answer(id, ApprovalAnswer { decision })
}

// ----------------------------------------------------------- from codex

/// One line from codex's stdout, as far as the talker reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The answer to a request of room-core's.
    Response {
        /// The request answered.
        id: RequestId,
        /// Its result ([`thread_id`] and [`turn_id`] read the ones used).
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
        /// Its id, to answer with.
        id: RequestId,
        /// What is asked.
        request: ServerRequest,
    },
    /// A request whose id is not a JSON-RPC id: nothing can answer it.
    RequestWithoutId {
        /// Its method.
        method: String,
    },
    /// A notification the session must hear.
    Notification(Notification),
    /// Anything else: another notification, a message of a kind or shape
    /// not known here, or not a JSON object.
    Other,
}

/// A request from codex.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerRequest {
    /// `item/commandExecution/requestApproval`.
    CommandApproval(CommandApproval),
    /// `item/fileChange/requestApproval`.
    FileChangeApproval(FileChangeApproval),
    /// An approval request room-core cannot take: answer it with a
    /// decline.
    BadApproval {
        /// Its method.
        method: String,
        /// What is wrong with it.
        why: Why,
    },
    /// Any other request (user input, MCP elicitation, permissions, ...):
    /// answer it with [`error_answer`].
    Other {
        /// Its method.
        method: String,
    },
}

/// May this command run? Its `commandExecution` item is announced just
/// before.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandApproval {
    /// The command line (`/bin/bash -lc "..."`).
    pub command: Option<String>,
    /// Its folder.
    pub cwd: Option<String>,
    /// Why it asks (the model's justification for leaving the sandbox).
    pub reason: Option<String>,
}

/// May this patch apply? The request holds no change: the `fileChange`
/// item with the same `item_id`, announced just before, does.
#[derive(Debug, Clone, PartialEq)]
pub struct FileChangeApproval {
    /// The patch's item.
    pub item_id: Option<String>,
    /// Why it asks, when it says.
    pub reason: Option<String>,
    /// A folder the approval would make writable for the session.
    pub grant_root: Option<String>,
}

/// A notification from codex that the session must hear.
#[derive(Debug, Clone, PartialEq)]
pub enum Notification {
    /// `turn/started`.
    TurnStarted {
        /// The turn.
        turn_id: String,
    },
    /// `turn/completed`: the turn ended, whatever its status.
    TurnCompleted {
        /// The turn.
        turn_id: String,
        /// Whether its status is `failed` (not `completed` nor
        /// `interrupted`).
        failed: bool,
        /// Its error's message, for a failed turn.
        error: Option<String>,
    },
    /// `item/started` of a `fileChange` item: the patch an approval
    /// request names by its item.
    FileChangeStarted {
        /// The item's id.
        id: String,
        /// The files it changes.
        paths: Vec<String>,
    },
    /// `thread/tokenUsage/updated`, after each model request (and again on
    /// an interrupt and a resume, with nothing new): the thread's running
    /// total ([`thread_usage`]).
    TokenUsage(UsageReport),
}

/// The thread id in a `thread/start` or `thread/resume` result.
pub(crate) fn thread_id(result: &Value) -> Option<String> {
    result
        .get("thread")
        .and_then(|t| t.get("id"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The turn id in a `turn/start` result (`turn/steer`'s is `turnId`).
pub(crate) fn turn_id(result: &Value) -> Option<String> {
    result
        .get("turn")
        .and_then(|t| t.get("id"))
        .or_else(|| result.get("turnId"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Reads one line of codex's stdout. Never panics.
pub(crate) fn decode(line: &str) -> Incoming {
    match jsonrpc::sort(line) {
        Envelope::Request { id, method, params } => Incoming::Request {
            id,
            request: server_request(method, &params),
        },
        Envelope::Notification { method, params } => {
            notification(&method, &params).map_or(Incoming::Other, Incoming::Notification)
        }
        Envelope::RequestWithoutId { method } => Incoming::RequestWithoutId { method },
        Envelope::Error { id, message } => Incoming::Error { id, message },
        Envelope::Response { id, result } => Incoming::Response { id, result },
        Envelope::Other => Incoming::Other,
    }
}

fn server_request(method: String, params: &Value) -> ServerRequest {
    // Only an object is read as parameters.
    let approval = [COMMAND_APPROVAL, FILE_CHANGE_APPROVAL].contains(&method.as_str());
    match method.as_str() {
        _ if approval && !params.is_object() => ServerRequest::BadApproval {
            method,
            why: Why::ParamsNotObject,
        },
        COMMAND_APPROVAL => ServerRequest::CommandApproval(CommandApproval {
            command: text(params, "command"),
            cwd: text(params, "cwd"),
            reason: text(params, "reason"),
        }),
        FILE_CHANGE_APPROVAL => ServerRequest::FileChangeApproval(FileChangeApproval {
            item_id: text(params, "itemId"),
            reason: text(params, "reason"),
            grant_root: text(params, "grantRoot"),
        }),
        _ => ServerRequest::Other { method },
    }
}

/// A string field, or none (a field of another type reads as absent).
fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// The notification of `method` the session must hear, if it is one and
/// its parameters fit.
fn notification(method: &str, params: &Value) -> Option<Notification> {
    match method {
        "turn/started" => params
            .get("turn")
            .and_then(|t| text(t, "id"))
            .map(|turn_id| Notification::TurnStarted { turn_id }),
        "turn/completed" => params.get("turn").and_then(|t| {
            Some(Notification::TurnCompleted {
                turn_id: text(t, "id")?,
                failed: t["status"] == "failed",
                error: t.get("error").and_then(|e| text(e, "message")),
            })
        }),
        "item/started" => params.get("item").and_then(|item| {
            (item["type"] == "fileChange").then_some(())?;
            Some(Notification::FileChangeStarted {
                id: text(item, "id")?,
                paths: item
                    .get("changes")
                    .and_then(Value::as_array)
                    .map(|changes| changes.iter().filter_map(|c| text(c, "path")).collect())
                    .unwrap_or_default(),
            })
        }),
        "thread/tokenUsage/updated" => thread_usage(params).map(Notification::TokenUsage),
        _ => None,
    }
}

/// The usage in a `thread/tokenUsage/updated` notification's parameters:
/// the thread's running total, over every turn and resumed process (not
/// the turn's own). codex's `inputTokens` holds its `cachedInputTokens`
/// and `cacheWriteInputTokens`; room-core's input is what is left. Its
/// output holds its reasoning. codex reports no cost.
fn thread_usage(params: &Value) -> Option<UsageReport> {
    let u = &params["tokenUsage"]["total"];
    if !u.is_object() {
        return None;
    }
    let read = count(&u["cachedInputTokens"]);
    let write = count(&u["cacheWriteInputTokens"]);
    Some(UsageReport::Total(Usage {
        input_tokens: count(&u["inputTokens"])
            .saturating_sub(read)
            .saturating_sub(write),
        output_tokens: count(&u["outputTokens"]),
        cache_read_tokens: read,
        cache_write_tokens: write,
        cost_usd: None,
    }))
}

#[cfg(test)]
#[path = "protocol_tests.rs"]
mod tests;
