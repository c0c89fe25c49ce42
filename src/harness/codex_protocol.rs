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
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::figures::count;
use super::refusal::Why;

/// The arguments, after the program, that start the app server on stdio.
pub const PROTOCOL_ARGS: [&str; 1] = ["app-server"];

/// The method of a command's approval request.
pub const COMMAND_APPROVAL: &str = "item/commandExecution/requestApproval";

/// The method of a patch's approval request.
pub const FILE_CHANGE_APPROVAL: &str = "item/fileChange/requestApproval";

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
pub struct Request<'a, P: Serialize> {
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
pub struct Notify<'a> {
    /// Always "2.0".
    pub jsonrpc: &'static str,
    /// The method.
    pub method: &'a str,
}

/// An answer to a request of codex's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Response<'a, R: Serialize> {
    /// Always "2.0".
    pub jsonrpc: &'static str,
    /// The request answered.
    pub id: &'a RequestId,
    /// The answer.
    pub result: R,
}

/// An error answer to a request of codex's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorResponse<'a> {
    /// Always "2.0".
    pub jsonrpc: &'static str,
    /// The request answered.
    pub id: &'a RequestId,
    /// The error.
    pub error: RpcError<'a>,
}

/// A JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RpcError<'a> {
    /// Its code.
    pub code: i64,
    /// Its message.
    pub message: &'a str,
}

/// `initialize`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams<'a> {
    /// Who is asking (codex puts it in its user agent).
    pub client_info: ClientInfo<'a>,
}

/// The client's name and version.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClientInfo<'a> {
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
pub struct ThreadStartParams<'a> {
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
pub struct ThreadResumeParams<'a> {
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
pub enum UserInput<'a> {
    /// Text.
    Text {
        /// The text.
        text: &'a str,
    },
}

/// `turn/start`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnStartParams<'a> {
    /// The thread.
    pub thread_id: &'a str,
    /// The prompt.
    pub input: Vec<UserInput<'a>>,
}

/// `turn/steer`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnSteerParams<'a> {
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
pub struct TurnInterruptParams<'a> {
    /// The thread.
    pub thread_id: &'a str,
    /// The turn.
    pub turn_id: &'a str,
}

/// The answer to an approval request (command or file change).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ApprovalAnswer {
    /// The decision.
    pub decision: Decision,
}

/// An approval decision. codex takes `acceptForSession` and `decline`
/// even where a request's `availableDecisions` does not list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Decision {
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
pub fn request<P: Serialize>(id: u64, method: &str, params: P) -> String {
    line(&Request {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
}

/// `initialize`.
pub fn initialize(id: u64, client: ClientInfo) -> String {
    request(
        id,
        "initialize",
        InitializeParams {
            client_info: client,
        },
    )
}

/// The `initialized` notification, sent after `initialize`'s answer.
pub fn initialized() -> String {
    line(&Notify {
        jsonrpc: "2.0",
        method: "initialized",
    })
}

/// `thread/start`.
pub fn thread_start(id: u64, params: &ThreadStartParams) -> String {
    request(id, "thread/start", params)
}

/// `thread/resume`.
pub fn thread_resume(id: u64, params: &ThreadResumeParams) -> String {
    request(id, "thread/resume", params)
}

/// `turn/start` with a text prompt.
pub fn turn_start(id: u64, thread_id: &str, text: &str) -> String {
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
pub fn turn_steer(id: u64, thread_id: &str, expected_turn_id: &str, text: &str) -> String {
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
pub fn turn_interrupt(id: u64, thread_id: &str, turn_id: &str) -> String {
    request(
        id,
        "turn/interrupt",
        TurnInterruptParams { thread_id, turn_id },
    )
}

/// The answer to an approval request.
pub fn approval_answer(id: &RequestId, decision: Decision) -> String {
    line(&Response {
        jsonrpc: "2.0",
        id,
        result: ApprovalAnswer { decision },
    })
}

/// An error answer to a request of codex's (one room-core does not serve;
/// for an approval codex then does not run the command, and the model
/// reads "approval request failed").
pub fn error_answer(id: &RequestId, code: i64, message: &str) -> String {
    line(&ErrorResponse {
        jsonrpc: "2.0",
        id,
        error: RpcError { code, message },
    })
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
pub fn thread_id(result: &Value) -> Option<String> {
    result
        .get("thread")
        .and_then(|t| t.get("id"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The turn id in a `turn/start` result (`turn/steer`'s is `turnId`).
pub fn turn_id(result: &Value) -> Option<String> {
    result
        .get("turn")
        .and_then(|t| t.get("id"))
        .or_else(|| result.get("turnId"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Reads one line of codex's stdout. Never panics.
/// Reads one line of codex's stdout. Never panics.
pub fn decode(line: &str) -> Incoming {
    let Ok(value) = serde_json::from_str::<Value>(line) else {
        return Incoming::Other;
    };
    let id = value
        .get("id")
        .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
    let method = text(&value, "method");
    let params = value.get("params").unwrap_or(&Value::Null);
    match (method, id) {
        (Some(method), Some(id)) => Incoming::Request {
            id,
            request: server_request(method, params),
        },
        (Some(method), None) if value.get("id").is_none() => {
            notification(&method, params).map_or(Incoming::Other, Incoming::Notification)
        }
        (Some(method), None) => Incoming::RequestWithoutId { method },
        (None, Some(id)) if value.get("error").is_some() => Incoming::Error {
            id,
            message: value["error"]
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        },
        (None, Some(id)) if value.get("result").is_some() => Incoming::Response {
            id,
            result: value["result"].clone(),
        },
        _ => Incoming::Other,
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
    fn every_recorded_request_decodes_to_one_the_talker_reads() {
        for (name, lines) in transcripts("codex") {
            for e in lines.iter().filter(|e| e["dir"] == "from_cli") {
                let line = e["msg"].to_string();
                match decode(&line) {
                    Incoming::RequestWithoutId { method } => panic!("{name}: no id: {method}"),
                    Incoming::Request {
                        request: ServerRequest::Other { method },
                        ..
                    } => panic!("{name}: a request not read: {method}"),
                    Incoming::Other if e["msg"].get("id").is_some() => {
                        panic!("{name}: an answer not read: {line}")
                    }
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn a_turn_reads_as_started_usage_completed() {
        let got = from_cli("turn");
        let n = notes(&got);
        let thread = got
            .iter()
            .find_map(|m| match m {
                Incoming::Response { result, .. } => thread_id(result),
                _ => None,
            })
            .unwrap();
        assert!(!thread.is_empty());
        let started: Vec<_> = n
            .iter()
            .filter_map(|n| match n {
                Notification::TurnStarted { turn_id } => Some(turn_id.clone()),
                _ => None,
            })
            .collect();
        let completed: Vec<_> = n
            .iter()
            .filter_map(|n| match n {
                Notification::TurnCompleted {
                    turn_id, failed, ..
                } => Some((turn_id.clone(), *failed)),
                _ => None,
            })
            .collect();
        assert_eq!(started.len(), 2);
        assert_eq!(
            completed,
            started
                .iter()
                .map(|t| (t.clone(), false))
                .collect::<Vec<_>>()
        );
        let usage: Vec<_> = n
            .iter()
            .filter_map(|n| match n {
                Notification::TokenUsage(report) => Some(*report),
                _ => None,
            })
            .collect();
        // The fake model's 10 input hold 3 cached and 7 cache-write
        // (fixtures/fake_model_server.py); the total grows by each request.
        assert_eq!(usage, [total(0, 5, 3, 7), total(0, 10, 6, 14)]);
    }

    fn total(i: u64, o: u64, r: u64, w: u64) -> UsageReport {
        UsageReport::Total(Usage {
            input_tokens: i,
            output_tokens: o,
            cache_read_tokens: r,
            cache_write_tokens: w,
            cost_usd: None,
        })
    }

    #[test]
    fn token_usage_reports_the_threads_running_total_with_cached_input_split_out() {
        let usage = |e: Value| match decode(&e.to_string()) {
            Incoming::Notification(Notification::TokenUsage(report)) => Some(report),
            _ => None,
        };
        let odd = json!({"method": "thread/tokenUsage/updated", "params": {
            "tokenUsage": {"total": {"inputTokens": 100, "cachedInputTokens": -3,
                                     "outputTokens": "5"}}}});
        assert_eq!(usage(odd), Some(total(100, 0, 0, 0)));
        for none in [
            json!({"method": "thread/tokenUsage/updated"}),
            json!({"method": "thread/tokenUsage/updated",
                   "params": {"tokenUsage": {"total": [1, 2]}}}),
            json!({"method": "turn/completed",
                   "params": {"tokenUsage": {"total": {"inputTokens": 1}}}}),
        ] {
            assert_eq!(usage(none.clone()), None, "{none}");
        }
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
                Notification::FileChangeStarted { id, paths }
                    if Some(id) == req.item_id.as_ref() =>
                {
                    Some(paths.clone())
                }
                _ => None,
            })
            .unwrap();
        assert!(paths[0].starts_with("/nonexistent-room-proto/"));
    }

    #[test]
    fn an_interrupted_turn_completes_not_failed() {
        let got = from_cli("interrupt_pending_approval");
        assert!(got.iter().any(|m| matches!(m, Incoming::Request { .. })));
        assert!(notes(&got)
            .iter()
            .any(|n| matches!(n, Notification::TurnCompleted { failed: false, .. })));
    }

    #[test]
    fn refused_steers_and_resumes_are_errors_with_their_ids() {
        let errors: Vec<_> = from_cli("steer_refused")
            .into_iter()
            .filter_map(|m| match m {
                Incoming::Error { id, message } => Some((id, message)),
                _ => None,
            })
            .collect();
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[0].1, "no active turn to steer");
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
    fn odd_lines_are_other_never_a_panic() {
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
        for other in [
            "not json",
            "{}",
            "{\"id\":1.5,\"result\":{}}",
            "{\"method\":\"turn/completed\",\"params\":{\"turn\":{\"id\":1}}}",
            "{\"method\":\"thread/tokenUsage/updated\",\"params\":{\"tokenUsage\":{\"total\":[1,2],\"last\":{}}}}",
        ] {
            assert_eq!(decode(other), Incoming::Other, "{other}");
        }
        // A request whose id cannot be read cannot be answered.
        assert_eq!(
            decode("{\"method\":\"x\",\"id\":{\"x\":1}}"),
            Incoming::RequestWithoutId { method: "x".into() }
        );
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
        let Incoming::Notification(Notification::TokenUsage(UsageReport::Total(total))) = decode(
            "{\"method\":\"thread/tokenUsage/updated\",\"params\":{\"tokenUsage\":{\"total\":{\"inputTokens\":-3,\"outputTokens\":4},\"last\":{}}}}",
        ) else {
            panic!("odd counts still make a usage update")
        };
        assert_eq!((total.input_tokens, total.output_tokens), (0, 4));
        let deep = "{\"a\":".repeat(100_000);
        assert_eq!(decode(&deep), Incoming::Other);
    }

    transcripts::decode_never_panics!(super::decode, "codex");
}
