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
//! From codex: `decode` reads one line into [`Incoming`]: a response to a
//! request of room-core's, a request of codex's (an approval), or a
//! notification. What codex writes is untrusted: a line that is not a JSON
//! object is `Malformed`, a well-formed message of a kind or shape not known
//! here is `Unknown` (a notification of another method is
//! `Notification::Other`), and no input makes it panic. Fields are read
//! leniently, as in claude_protocol.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::lenient;
use super::refusal::Why;

/// The arguments, after the program, that start the app server on stdio.
pub(crate) const PROTOCOL_ARGS: [&str; 1] = ["app-server"];

/// The method of a command's approval request.
pub(crate) const COMMAND_APPROVAL: &str = "item/commandExecution/requestApproval";

/// The method of a patch's approval request.
pub(crate) const FILE_CHANGE_APPROVAL: &str = "item/fileChange/requestApproval";

// ------------------------------------------------------------- to codex

/// A JSON-RPC request id: codex's own requests use numbers from 0; the
/// protocol allows strings too.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A number.
    Number(i64),
    /// A string.
    Text(String),
}

/// A request room-core sends.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Request<'a, P: Serialize> {
    /// Always "2.0" (codex omits it in what it writes, and accepts it).
    pub jsonrpc: &'static str,
    /// room-core's id for it.
    pub id: u64,
    /// The method.
    pub method: &'a str,
    /// Its parameters.
    pub params: P,
}

/// A notification room-core sends (`initialized`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Notify<'a> {
    /// Always "2.0".
    pub jsonrpc: &'static str,
    /// The method.
    pub method: &'a str,
}

/// An answer to a request of codex's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Response<'a, R: Serialize> {
    /// Always "2.0".
    pub jsonrpc: &'static str,
    /// The request answered.
    pub id: &'a RequestId,
    /// The answer.
    pub result: R,
}

/// An error answer to a request of codex's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ErrorResponse<'a> {
    /// Always "2.0".
    pub jsonrpc: &'static str,
    /// The request answered.
    pub id: &'a RequestId,
    /// The error.
    pub error: RpcError<'a>,
}

/// A JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RpcError<'a> {
    /// Its code.
    pub code: i64,
    /// Its message.
    pub message: &'a str,
}

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
}

/// `thread/resume`'s parameters (the subset used).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThreadResumeParams<'a> {
    /// The thread, from an earlier `thread/start`.
    pub thread_id: &'a str,
    /// The folder.
    pub cwd: &'a str,
    /// When to ask.
    pub approval_policy: ApprovalPolicy,
    /// The sandbox.
    pub sandbox: SandboxMode,
}

/// One piece of user input (only text is used).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub(crate) enum UserInput<'a> {
    /// Text.
    Text {
        /// The text.
        text: &'a str,
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
    line(&Notify {
        jsonrpc: "2.0",
        method: "initialized",
    })
}

/// `thread/start`.
pub(crate) fn thread_start(id: u64, params: &ThreadStartParams) -> String {
    request(id, "thread/start", params)
}

/// `thread/resume`.
pub(crate) fn thread_resume(id: u64, params: &ThreadResumeParams) -> String {
    request(id, "thread/resume", params)
}

/// `turn/start` with a text prompt.
pub(crate) fn turn_start(id: u64, thread_id: &str, text: &str) -> String {
    request(
        id,
        "turn/start",
        TurnStartParams {
            thread_id,
            input: vec![UserInput::Text { text }],
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
pub(crate) fn turn_interrupt(id: u64, thread_id: &str, turn_id: &str) -> String {
    request(
        id,
        "turn/interrupt",
        TurnInterruptParams { thread_id, turn_id },
    )
}

/// The answer to an approval request.
pub(crate) fn approval_answer(id: &RequestId, decision: Decision) -> String {
    line(&Response {
        jsonrpc: "2.0",
        id,
        result: ApprovalAnswer { decision },
    })
}

/// An error answer to a request of codex's (one room-core does not serve;
/// for an approval codex then does not run the command, and the model
/// reads "approval request failed").
pub(crate) fn error_answer(id: &RequestId, code: i64, message: &str) -> String {
    line(&ErrorResponse {
        jsonrpc: "2.0",
        id,
        error: RpcError { code, message },
    })
}

// ----------------------------------------------------------- from codex

/// One line from codex's stdout.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The answer to a request of room-core's.
    Response {
        /// The request answered.
        id: RequestId,
        /// Its result ([`thread_id`] and [`turn_id`] read the ones used).
        result: Value,
    },
    /// An error answer to a request of room-core's (or, without an id, to
    /// a line codex could not read).
    Error {
        /// The request answered.
        id: Option<RequestId>,
        /// The error's code (-32600 for a refused steer or an unknown
        /// thread).
        code: i64,
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
    /// A notification.
    Notification(Notification),
    /// A JSON object of a kind, or a shape, not known here.
    Unknown(Value),
    /// Not a JSON object: why.
    Malformed(String),
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

/// May this command run? Its `commandExecution` item (same `item_id`,
/// `inProgress`) is announced just before.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandApproval {
    /// The thread.
    #[serde(default, deserialize_with = "lenient::text")]
    pub thread_id: Option<String>,
    /// The turn.
    #[serde(default, deserialize_with = "lenient::text")]
    pub turn_id: Option<String>,
    /// The command's item.
    #[serde(default, deserialize_with = "lenient::text")]
    pub item_id: Option<String>,
    /// The command line (`/bin/bash -lc "..."`).
    #[serde(default, deserialize_with = "lenient::text")]
    pub command: Option<String>,
    /// Its folder.
    #[serde(default, deserialize_with = "lenient::text")]
    pub cwd: Option<String>,
    /// Why it asks (the model's justification for leaving the sandbox).
    #[serde(default, deserialize_with = "lenient::text")]
    pub reason: Option<String>,
    /// The decisions offered (strings, or objects for policy amendments).
    #[serde(default, deserialize_with = "lenient::list")]
    pub available_decisions: Vec<Value>,
}

/// May this patch apply? The request holds no change: the `fileChange`
/// item with the same `item_id`, announced just before, does.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChangeApproval {
    /// The thread.
    #[serde(default, deserialize_with = "lenient::text")]
    pub thread_id: Option<String>,
    /// The turn.
    #[serde(default, deserialize_with = "lenient::text")]
    pub turn_id: Option<String>,
    /// The patch's item.
    #[serde(default, deserialize_with = "lenient::text")]
    pub item_id: Option<String>,
    /// Why it asks, when it says.
    #[serde(default, deserialize_with = "lenient::text")]
    pub reason: Option<String>,
    /// A folder the approval would make writable for the session.
    #[serde(default, deserialize_with = "lenient::text")]
    pub grant_root: Option<String>,
}

/// A notification from codex (the ones used; `Other` for the rest).
#[derive(Debug, Clone, PartialEq)]
pub enum Notification {
    /// `thread/started`.
    ThreadStarted {
        /// The thread (a UUID v7): `thread/resume` takes it.
        thread_id: String,
    },
    /// `turn/started`.
    TurnStarted {
        /// The thread.
        thread_id: Option<String>,
        /// The turn.
        turn_id: String,
    },
    /// `turn/completed`: the turn ended, whatever its status.
    TurnCompleted {
        /// The thread.
        thread_id: Option<String>,
        /// The turn.
        turn_id: String,
        /// How it ended.
        status: TurnStatus,
        /// Its error's message, for a failed turn.
        error: Option<String>,
    },
    /// `item/started`.
    ItemStarted(ItemEvent),
    /// `item/completed`.
    ItemCompleted(ItemEvent),
    /// `item/agentMessage/delta`: a piece of the answer being streamed.
    AgentMessageDelta {
        /// The turn.
        turn_id: Option<String>,
        /// The message's item.
        item_id: Option<String>,
        /// The text added.
        delta: String,
    },
    /// `thread/tokenUsage/updated`: after each model request (and again on
    /// an interrupt and a resume, with nothing new).
    TokenUsage {
        /// The turn.
        turn_id: Option<String>,
        /// The thread's running sum, across processes.
        total: TokenUsage,
        /// The latest model request's.
        last: TokenUsage,
    },
    /// `turn/diff/updated`: the turn's file changes so far, a unified diff.
    TurnDiff {
        /// The turn.
        turn_id: Option<String>,
        /// The diff.
        diff: String,
    },
    /// `serverRequest/resolved`: a request of codex's was answered, or
    /// withdrawn (an interrupt resolves a pending approval).
    ServerRequestResolved {
        /// The request.
        request_id: RequestId,
    },
    /// `error`: a turn's error (`will_retry` when codex tries again).
    Error {
        /// The turn.
        turn_id: Option<String>,
        /// The message.
        message: String,
        /// Whether codex retries.
        will_retry: bool,
    },
    /// Any other method, or a known one whose parameters do not fit.
    Other {
        /// Its method.
        method: String,
        /// Its parameters.
        params: Value,
    },
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnStatus {
    /// It finished.
    Completed,
    /// `turn/interrupt`, or an approval answered `cancel`.
    Interrupted,
    /// It failed.
    Failed,
    /// Still running (not sent in `turn/completed`).
    InProgress,
    /// Another status.
    Other(String),
}

/// `item/started` or `item/completed`.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemEvent {
    /// The turn.
    pub turn_id: Option<String>,
    /// The item.
    pub item: Item,
}

/// A thread item (the kinds room-core reads; the rest are `Other`).
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// The user's message (a prompt or a steer).
    UserMessage {
        /// The item's id.
        id: String,
    },
    /// The model's message.
    AgentMessage {
        /// The item's id.
        id: String,
        /// Its text.
        text: String,
    },
    /// A command.
    CommandExecution {
        /// The item's id (an approval request names it).
        id: String,
        /// The command line.
        command: Option<String>,
        /// `inProgress`, `completed`, `failed` or `declined`.
        status: Option<String>,
        /// Its exit code, once done.
        exit_code: Option<i64>,
    },
    /// A patch.
    FileChange {
        /// The item's id (an approval request names it).
        id: String,
        /// The files it changes.
        paths: Vec<String>,
        /// `inProgress`, `completed`, `failed` or `declined`.
        status: Option<String>,
    },
    /// Another kind of item.
    Other {
        /// Its type.
        kind: Option<String>,
        /// The item.
        raw: Value,
    },
}

/// Token counts as codex reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Input tokens, cached ones included.
    #[serde(default, deserialize_with = "lenient::count")]
    pub input_tokens: u64,
    /// Input tokens read from the cache.
    #[serde(default, deserialize_with = "lenient::count")]
    pub cached_input_tokens: u64,
    /// Input tokens written to the cache.
    #[serde(default, deserialize_with = "lenient::count")]
    pub cache_write_input_tokens: u64,
    /// Output tokens, reasoning ones included.
    #[serde(default, deserialize_with = "lenient::count")]
    pub output_tokens: u64,
    /// Output tokens spent reasoning.
    #[serde(default, deserialize_with = "lenient::count")]
    pub reasoning_output_tokens: u64,
    /// Input plus output.
    #[serde(default, deserialize_with = "lenient::count")]
    pub total_tokens: u64,
}

impl TokenUsage {
    /// What `self` (a later running total) adds to `earlier`: a turn's
    /// usage is its last total less the total before it began.
    pub fn since(&self, earlier: &TokenUsage) -> TokenUsage {
        TokenUsage {
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            cached_input_tokens: self
                .cached_input_tokens
                .saturating_sub(earlier.cached_input_tokens),
            cache_write_input_tokens: self
                .cache_write_input_tokens
                .saturating_sub(earlier.cache_write_input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
            reasoning_output_tokens: self
                .reasoning_output_tokens
                .saturating_sub(earlier.reasoning_output_tokens),
            total_tokens: self.total_tokens.saturating_sub(earlier.total_tokens),
        }
    }
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
    let value: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return Incoming::Malformed(e.to_string()),
    };
    if !value.is_object() {
        return Incoming::Malformed("not a JSON object".into());
    }
    let id = value
        .get("id")
        .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
    let method = value
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string);
    match (method, id) {
        (Some(method), Some(id)) => {
            let params = value.get("params").cloned().unwrap_or(Value::Null);
            Incoming::Request {
                id,
                request: server_request(method, params),
            }
        }
        (Some(method), None) if value.get("id").is_none() => {
            let params = value.get("params").cloned().unwrap_or(Value::Null);
            Incoming::Notification(notification(method, params))
        }
        (None, id) if value.get("error").is_some() => {
            let e = &value["error"];
            Incoming::Error {
                id,
                code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: e
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            }
        }
        (None, Some(id)) if value.get("result").is_some() => Incoming::Response {
            id,
            result: value["result"].clone(),
        },
        _ => Incoming::Unknown(value),
    }
}

fn server_request(method: String, params: Value) -> ServerRequest {
    // serde reads a struct from an array too (by position): only an
    // object is read as parameters.
    let approval = [COMMAND_APPROVAL, FILE_CHANGE_APPROVAL].contains(&method.as_str());
    let bad = || ServerRequest::BadApproval {
        method: method.clone(),
        why: Why::ParamsNotObject,
    };
    match method.as_str() {
        _ if approval && !params.is_object() => bad(),
        COMMAND_APPROVAL => serde_json::from_value(params)
            .map(ServerRequest::CommandApproval)
            .unwrap_or_else(|_| bad()),
        FILE_CHANGE_APPROVAL => serde_json::from_value(params)
            .map(ServerRequest::FileChangeApproval)
            .unwrap_or_else(|_| bad()),
        _ => ServerRequest::Other { method },
    }
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn notification(method: String, params: Value) -> Notification {
    let known = match method.as_str() {
        "thread/started" => params
            .get("thread")
            .and_then(|t| text(t, "id"))
            .map(|thread_id| Notification::ThreadStarted { thread_id }),
        "turn/started" => params
            .get("turn")
            .and_then(|t| text(t, "id"))
            .map(|turn_id| Notification::TurnStarted {
                thread_id: text(&params, "threadId"),
                turn_id,
            }),
        "turn/completed" => params.get("turn").and_then(|t| {
            let turn_id = text(t, "id")?;
            let status = match t.get("status").and_then(Value::as_str) {
                Some("completed") => TurnStatus::Completed,
                Some("interrupted") => TurnStatus::Interrupted,
                Some("failed") => TurnStatus::Failed,
                Some("inProgress") => TurnStatus::InProgress,
                other => TurnStatus::Other(other.unwrap_or_default().to_string()),
            };
            Some(Notification::TurnCompleted {
                thread_id: text(&params, "threadId"),
                turn_id,
                status,
                error: t.get("error").and_then(|e| text(e, "message")),
            })
        }),
        "item/started" | "item/completed" => params.get("item").and_then(item).map(|item| {
            let event = ItemEvent {
                turn_id: text(&params, "turnId"),
                item,
            };
            if method == "item/started" {
                Notification::ItemStarted(event)
            } else {
                Notification::ItemCompleted(event)
            }
        }),
        "item/agentMessage/delta" => {
            text(&params, "delta").map(|delta| Notification::AgentMessageDelta {
                turn_id: text(&params, "turnId"),
                item_id: text(&params, "itemId"),
                delta,
            })
        }
        "thread/tokenUsage/updated" => params.get("tokenUsage").and_then(|u| {
            Some(Notification::TokenUsage {
                turn_id: text(&params, "turnId"),
                total: token_usage(u.get("total")?)?,
                last: token_usage(u.get("last")?)?,
            })
        }),
        "turn/diff/updated" => text(&params, "diff").map(|diff| Notification::TurnDiff {
            turn_id: text(&params, "turnId"),
            diff,
        }),
        "serverRequest/resolved" => params
            .get("requestId")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .map(|request_id| Notification::ServerRequestResolved { request_id }),
        "error" => params
            .get("error")
            .and_then(|e| text(e, "message"))
            .map(|message| Notification::Error {
                turn_id: text(&params, "turnId"),
                message,
                will_retry: params
                    .get("willRetry")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            }),
        _ => None,
    };
    known.unwrap_or(Notification::Other { method, params })
}

/// Token counts from an object (serde would read an array by position).
fn token_usage(v: &Value) -> Option<TokenUsage> {
    v.is_object()
        .then(|| serde_json::from_value(v.clone()).ok())
        .flatten()
}

fn item(v: &Value) -> Option<Item> {
    let id = text(v, "id");
    let kind = text(v, "type");
    Some(match (kind.as_deref(), id) {
        (Some("userMessage"), Some(id)) => Item::UserMessage { id },
        (Some("agentMessage"), Some(id)) => Item::AgentMessage {
            id,
            text: text(v, "text").unwrap_or_default(),
        },
        (Some("commandExecution"), Some(id)) => Item::CommandExecution {
            id,
            command: text(v, "command"),
            status: text(v, "status"),
            exit_code: v.get("exitCode").and_then(Value::as_i64),
        },
        (Some("fileChange"), Some(id)) => Item::FileChange {
            id,
            paths: v
                .get("changes")
                .and_then(Value::as_array)
                .map(|changes| changes.iter().filter_map(|c| text(c, "path")).collect())
                .unwrap_or_default(),
            status: text(v, "status"),
        },
        _ if v.is_object() => Item::Other {
            kind,
            raw: v.clone(),
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::transcripts::{self, transcripts};
    use serde_json::json;

    /// What codex printed in `name`, decoded.
    fn from_cli(name: &str) -> Vec<Incoming> {
        transcripts::printed("codex", name)
            .iter()
            .map(|l| decode(l))
            .collect()
    }

    fn notes(got: &[Incoming]) -> Vec<&Notification> {
        got.iter()
            .filter_map(|m| match m {
                Incoming::Notification(n) => Some(n),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn every_recorded_line_decodes_to_a_known_kind() {
        for (name, lines) in transcripts("codex") {
            for e in lines.iter().filter(|e| e["dir"] == "from_cli") {
                let line = e["msg"].to_string();
                match decode(&line) {
                    Incoming::Malformed(why) => panic!("{name}: {why}: {line}"),
                    Incoming::Unknown(v) => panic!("{name}: unknown: {v}"),
                    Incoming::Request {
                        request: ServerRequest::Other { method },
                        ..
                    } => panic!("{name}: a request not read: {method}"),
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn a_turn_reads_as_started_items_usage_completed() {
        let got = from_cli("turn");
        let n = notes(&got);
        let thread = n
            .iter()
            .find_map(|n| match n {
                Notification::ThreadStarted { thread_id } => Some(thread_id.clone()),
                _ => None,
            })
            .unwrap();
        let thread_result = got
            .iter()
            .find_map(|m| match m {
                Incoming::Response { result, .. } => thread_id(result),
                _ => None,
            })
            .unwrap();
        assert_eq!(thread, thread_result);
        let started: Vec<_> = n
            .iter()
            .filter_map(|n| match n {
                Notification::TurnStarted { turn_id, .. } => Some(turn_id.clone()),
                _ => None,
            })
            .collect();
        let completed: Vec<_> = n
            .iter()
            .filter_map(|n| match n {
                Notification::TurnCompleted {
                    turn_id, status, ..
                } => Some((turn_id.clone(), status.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(started.len(), 2);
        assert_eq!(
            completed,
            started
                .iter()
                .map(|t| (t.clone(), TurnStatus::Completed))
                .collect::<Vec<_>>()
        );
        assert!(n.iter().any(|n| matches!(n,
            Notification::ItemCompleted(ItemEvent { item: Item::AgentMessage { text, .. }, .. })
                if text == "FAKE_MODEL_REPLY")));
        let usage: Vec<_> = n
            .iter()
            .filter_map(|n| match n {
                Notification::TokenUsage { total, last, .. } => Some((*total, *last)),
                _ => None,
            })
            .collect();
        // The fake model's figures (fixtures/fake_model_server.py).
        let one = TokenUsage {
            input_tokens: 10,
            cached_input_tokens: 3,
            cache_write_input_tokens: 7,
            output_tokens: 5,
            reasoning_output_tokens: 2,
            total_tokens: 15,
        };
        assert_eq!(usage.len(), 2);
        assert_eq!(usage[0], (one, one));
        assert_eq!(usage[1].1, one);
        assert_eq!(usage[1].0.since(&usage[0].0), one);
    }

    #[test]
    fn approval_requests_decode_with_their_item() {
        let got = from_cli("approval_session");
        let (id, req) = got
            .iter()
            .find_map(|m| match m {
                Incoming::Request {
                    id,
                    request: ServerRequest::CommandApproval(r),
                } => Some((id, r)),
                _ => None,
            })
            .unwrap();
        assert_eq!(*id, RequestId::Number(0));
        assert!(req
            .reason
            .as_deref()
            .unwrap()
            .starts_with("FAKE_MODEL_ESCALATE"));
        assert!(req.command.as_deref().unwrap().contains("session.txt"));
        assert_eq!(req.cwd.as_deref(), Some("<work>"));
        let got = from_cli("file_change_approval");
        let req = got
            .iter()
            .find_map(|m| match m {
                Incoming::Request {
                    request: ServerRequest::FileChangeApproval(r),
                    ..
                } => Some(r),
                _ => None,
            })
            .unwrap();
        let paths = notes(&got)
            .into_iter()
            .find_map(|n| match n {
                Notification::ItemStarted(ItemEvent {
                    item: Item::FileChange { id, paths, .. },
                    ..
                }) if Some(id) == req.item_id.as_ref() => Some(paths.clone()),
                _ => None,
            })
            .unwrap();
        assert!(paths[0].starts_with("/nonexistent-room-proto/"));
        assert!(notes(&got).iter().any(
            |n| matches!(n, Notification::TurnDiff { diff, .. } if diff.contains("inside.txt"))
        ));
    }

    #[test]
    fn an_interrupt_resolves_the_pending_request_and_completes_interrupted() {
        let got = from_cli("interrupt_pending_approval");
        let asked = got
            .iter()
            .find_map(|m| match m {
                Incoming::Request { id, .. } => Some(id.clone()),
                _ => None,
            })
            .unwrap();
        let n = notes(&got);
        assert!(n.iter().any(|n| matches!(n,
            Notification::ServerRequestResolved { request_id } if *request_id == asked)));
        assert!(n.iter().any(|n| matches!(
            n,
            Notification::TurnCompleted {
                status: TurnStatus::Interrupted,
                ..
            }
        )));
    }

    #[test]
    fn refused_steers_and_resumes_are_errors_with_their_ids() {
        let errors: Vec<_> = from_cli("steer_refused")
            .into_iter()
            .filter_map(|m| match m {
                Incoming::Error { id, code, message } => Some((id, code, message)),
                _ => None,
            })
            .collect();
        assert_eq!(errors.len(), 2);
        assert!(errors
            .iter()
            .all(|(id, code, _)| id.is_some() && *code == -32600));
        assert_eq!(errors[0].2, "no active turn to steer");
    }

    /// What room-core writes equals what the drivers wrote to the real CLI.
    #[test]
    fn encoders_write_what_the_real_cli_was_sent() {
        let sent: Vec<Value> = transcripts("codex")
            .into_iter()
            .flat_map(|(_, lines)| lines)
            .filter(|e| e["dir"] == "to_cli")
            .map(|e| e["msg"].clone())
            .collect();
        let has = |line: String| {
            let v: Value = serde_json::from_str(&line).unwrap();
            assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
            assert!(sent.contains(&v), "never sent: {v}");
        };
        has(initialize(
            1,
            ClientInfo {
                name: "room-core-probe",
                title: Some("room-core protocol probe"),
                version: "0.0.0",
            },
        ));
        has(initialized());
        has(thread_start(
            2,
            &ThreadStartParams {
                cwd: "<work>",
                approval_policy: ApprovalPolicy::Never,
                sandbox: SandboxMode::WorkspaceWrite,
            },
        ));
        has(thread_start(
            2,
            &ThreadStartParams {
                cwd: "<work>",
                approval_policy: ApprovalPolicy::OnRequest,
                sandbox: SandboxMode::WorkspaceWrite,
            },
        ));
        has(thread_start(
            2,
            &ThreadStartParams {
                cwd: "<work>",
                approval_policy: ApprovalPolicy::Untrusted,
                sandbox: SandboxMode::WorkspaceWrite,
            },
        ));
        // The ids in the transcripts are per process; find the ones used.
        let find = |method: &str| {
            sent.iter()
                .find(|s| s["method"] == method)
                .unwrap_or_else(|| panic!("no {method} sent"))
                .clone()
        };
        let s = find("thread/resume");
        let p = &s["params"];
        has(thread_resume(
            s["id"].as_u64().unwrap(),
            &ThreadResumeParams {
                thread_id: p["threadId"].as_str().unwrap(),
                cwd: "<work>",
                approval_policy: ApprovalPolicy::Never,
                sandbox: SandboxMode::WorkspaceWrite,
            },
        ));
        let s = find("turn/start");
        has(turn_start(
            s["id"].as_u64().unwrap(),
            s["params"]["threadId"].as_str().unwrap(),
            s["params"]["input"][0]["text"].as_str().unwrap(),
        ));
        let s = find("turn/steer");
        let p = &s["params"];
        has(turn_steer(
            s["id"].as_u64().unwrap(),
            p["threadId"].as_str().unwrap(),
            p["expectedTurnId"].as_str().unwrap(),
            p["input"][0]["text"].as_str().unwrap(),
        ));
        let s = find("turn/interrupt");
        has(turn_interrupt(
            s["id"].as_u64().unwrap(),
            s["params"]["threadId"].as_str().unwrap(),
            s["params"]["turnId"].as_str().unwrap(),
        ));
        for d in [
            Decision::Accept,
            Decision::AcceptForSession,
            Decision::Decline,
        ] {
            let v: Value =
                serde_json::from_str(&approval_answer(&RequestId::Number(0), d)).unwrap();
            assert!(
                sent.iter().any(|s| s.get("result") == v.get("result")),
                "never sent: {v}"
            );
        }
        let v: Value =
            serde_json::from_str(&error_answer(&RequestId::Text("a".into()), -32000, "m")).unwrap();
        assert_eq!(
            v,
            json!({"jsonrpc": "2.0", "id": "a", "error": {"code": -32000, "message": "m"}})
        );
    }

    #[test]
    fn odd_lines_are_malformed_or_unknown_never_a_panic() {
        for line in [
            "",
            "not json",
            "[]",
            "{}",
            "{\"id\":null}",
            "{\"id\":1.5,\"result\":{}}",
            "{\"method\":7}",
            "{\"method\":\"turn/completed\",\"params\":{\"turn\":{\"id\":1}}}",
            "{\"method\":\"thread/tokenUsage/updated\",\"params\":{\"tokenUsage\":{\"total\":{\"inputTokens\":-3},\"last\":[]}}}",
            "{\"method\":\"item/commandExecution/requestApproval\",\"id\":{\"x\":1},\"params\":null}",
            "{\"method\":\"item/commandExecution/requestApproval\",\"id\":3,\"params\":[1]}",
        ] {
            let _ = decode(line);
        }
        assert!(matches!(decode("not json"), Incoming::Malformed(_)));
        assert!(matches!(decode("{}"), Incoming::Unknown(_)));
        assert!(matches!(
            decode("{\"id\":1.5,\"result\":{}}"),
            Incoming::Unknown(_)
        ));
        // A request whose id cannot be read cannot be answered.
        assert!(matches!(
            decode("{\"method\":\"x\",\"id\":{\"x\":1}}"),
            Incoming::Unknown(_)
        ));
        // A known request whose parameters do not fit is still a request,
        // to be declined.
        assert_eq!(
            decode(
                "{\"method\":\"item/commandExecution/requestApproval\",\"id\":3,\"params\":[1]}"
            ),
            Incoming::Request {
                id: RequestId::Number(3),
                request: ServerRequest::BadApproval {
                    method: COMMAND_APPROVAL.into(),
                    why: Why::ParamsNotObject,
                }
            }
        );
        assert!(matches!(
            decode("{\"method\":\"turn/completed\",\"params\":{\"turn\":{\"id\":1}}}"),
            Incoming::Notification(Notification::Other { .. })
        ));
        let Incoming::Notification(Notification::TokenUsage { total, .. }) = decode(
            "{\"method\":\"thread/tokenUsage/updated\",\"params\":{\"tokenUsage\":{\"total\":{\"inputTokens\":-3,\"outputTokens\":4},\"last\":{}}}}",
        ) else {
            panic!("odd counts still make a usage update")
        };
        assert_eq!((total.input_tokens, total.output_tokens), (0, 4));
        assert!(matches!(
            decode("{\"method\":\"thread/tokenUsage/updated\",\"params\":{\"tokenUsage\":{\"total\":[1,2],\"last\":{}}}}"),
            Incoming::Notification(Notification::Other { .. })
        ));
        let deep = "{\"a\":".repeat(100_000);
        assert!(matches!(decode(&deep), Incoming::Malformed(_)));
    }

    transcripts::decode_never_panics!(super::decode, "codex");
}
