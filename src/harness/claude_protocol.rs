//! Claude Code's stream-json control protocol, the subset room-core speaks:
//! `claude -p --input-format stream-json --output-format stream-json
//! --verbose --permission-prompt-tool stdio`, one JSON object per line in
//! each direction (docs/protocols.md says what the real CLI does with each).
//!
//! To claude (stdin): a prompt or a steer is a `user` message; `initialize`
//! and `interrupt` are `control_request`s; the answer to a `can_use_tool`
//! request is a `control_response`. A line that is not JSON ends claude
//! (status 1), so everything written here is built by serde.
//!
//! From claude (stdout): `decode` reads one line into [`Incoming`]. What
//! claude writes is untrusted: a line that is not a JSON object is
//! `Malformed`, a well-formed message of a kind or shape not known here is
//! `Unknown`, and no input makes it panic. Field types are read leniently
//! (a count that is not a count reads as 0, a text that is not a string as
//! absent), so a known message is never lost over one odd field.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::lenient;
use super::refusal::Why;

/// The arguments, after the program, that put claude on this protocol;
/// the permission mode, allowed tools and `--resume <id>` follow them.
pub const PROTOCOL_ARGS: [&str; 8] = [
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    // stream-json output in print mode requires --verbose.
    "--verbose",
    // Hidden from `claude --help`, and what the Agent SDK passes: every
    // permission prompt becomes a `can_use_tool` control request.
    "--permission-prompt-tool",
    "stdio",
];

// ------------------------------------------------------------ to claude

/// A message room-core writes to claude's stdin.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Outgoing<'a> {
    /// A prompt; while a turn runs, a steer.
    User {
        /// The user's message.
        message: UserMessage<'a>,
    },
    /// A request to claude, answered by a `control_response` with the same
    /// id.
    ControlRequest {
        /// Chosen by room-core, unique within the process.
        request_id: &'a str,
        /// What is asked.
        request: ClientRequest,
    },
    /// The answer to a request claude sent.
    ControlResponse {
        /// The answer.
        response: ControlResponse<'a>,
    },
}

/// A user message's body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserMessage<'a> {
    /// Always `user`.
    pub role: &'static str,
    /// The text, as the user wrote it.
    pub content: &'a str,
}

/// A control request room-core sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum ClientRequest {
    /// The handshake: answered with the commands, models, account and pid.
    Initialize,
    /// Stop the running turn; claude answers, then ends the turn with an
    /// error result (`aborted_streaming` or `aborted_tools`).
    Interrupt,
}

/// A `control_response`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum ControlResponse<'a> {
    /// The request is answered.
    Success {
        /// The request answered.
        request_id: &'a str,
        /// The answer.
        response: PermissionResult<'a>,
    },
    /// The request failed: for `can_use_tool` the tool does not run and
    /// the model reads "Tool permission request failed: Error: <error>".
    Error {
        /// The request answered.
        request_id: &'a str,
        /// Why.
        error: &'a str,
    },
}

/// The answer to `can_use_tool`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "behavior", rename_all = "snake_case")]
pub enum PermissionResult<'a> {
    /// Run the tool with `updatedInput`, which claude runs instead of what
    /// it asked about: room-core sends back exactly the input it was asked
    /// about, as the Agent SDK does (claude 2.1.332 sometimes fails an allow
    /// without one: "ZodError … updatedInput … expected record").
    Allow {
        /// The input to run: the one asked about, as claude printed it.
        #[serde(rename = "updatedInput")]
        updated_input: &'a RawValue,
        /// Rules added for the rest of the process.
        #[serde(rename = "updatedPermissions", skip_serializing_if = "Vec::is_empty")]
        updated_permissions: Vec<PermissionUpdate<'a>>,
    },
    /// Do not run the tool.
    Deny {
        /// What the model reads as the tool's result (unless `interrupt`).
        message: &'a str,
        /// Also end the turn: the model then reads claude's own rejection
        /// text, not `message`.
        #[serde(skip_serializing_if = "is_false")]
        interrupt: bool,
    },
}

/// A permission rule added by an allow.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PermissionUpdate<'a> {
    /// Always `addRules`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The rules.
    pub rules: Vec<PermissionRule<'a>>,
    /// Always `allow`.
    pub behavior: &'static str,
    /// Always `session`: the rule lives in the process's memory, written
    /// to no settings file.
    pub destination: &'static str,
}

/// One rule: a tool, and optionally what of it (a Bash command).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PermissionRule<'a> {
    /// The tool's name.
    #[serde(rename = "toolName")]
    pub tool_name: &'a str,
    /// The rule's content (for Bash, the command); none means every use.
    #[serde(rename = "ruleContent", skip_serializing_if = "Option::is_none")]
    pub rule_content: Option<&'a str>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// What the app decided about a `can_use_tool` request.
#[derive(Debug, Clone, Copy)]
pub enum Decision<'a> {
    /// Run it, with the input claude asked about.
    Allow {
        /// That input.
        input: &'a RawValue,
    },
    /// Run it, and every later use of the same tool in this process.
    AllowForSession {
        /// The input claude asked about.
        input: &'a RawValue,
    },
    /// Do not run it; the model reads `message` and the turn goes on.
    Deny {
        /// What the model reads.
        message: &'a str,
    },
}

impl Outgoing<'_> {
    /// This message as one line, newline included.
    pub fn line(&self) -> String {
        // Serialising these types cannot fail: every map key is a string
        // and nothing has a hand-written Serialize.
        let mut s = serde_json::to_string(self).unwrap_or_default();
        s.push('\n');
        s
    }
}

/// A prompt or a steer.
pub fn user_message(text: &str) -> String {
    Outgoing::User {
        message: UserMessage {
            role: "user",
            content: text,
        },
    }
    .line()
}

/// The `initialize` request.
pub fn initialize(request_id: &str) -> String {
    Outgoing::ControlRequest {
        request_id,
        request: ClientRequest::Initialize,
    }
    .line()
}

/// The `interrupt` request.
pub fn interrupt(request_id: &str) -> String {
    Outgoing::ControlRequest {
        request_id,
        request: ClientRequest::Interrupt,
    }
    .line()
}

/// The answer to the `can_use_tool` request `request_id` about `tool`.
pub fn permission_response(request_id: &str, tool: &str, decision: Decision) -> String {
    let response = match decision {
        Decision::Allow { input } => PermissionResult::Allow {
            updated_input: input,
            updated_permissions: Vec::new(),
        },
        Decision::AllowForSession { input } => PermissionResult::Allow {
            updated_input: input,
            updated_permissions: vec![PermissionUpdate {
                kind: "addRules",
                rules: vec![PermissionRule {
                    tool_name: tool,
                    rule_content: None,
                }],
                behavior: "allow",
                destination: "session",
            }],
        },
        Decision::Deny { message } => PermissionResult::Deny {
            message,
            interrupt: false,
        },
    };
    Outgoing::ControlResponse {
        response: ControlResponse::Success {
            request_id,
            response,
        },
    }
    .line()
}

/// An error answer to a request claude sent (one room-core does not serve).
pub fn error_response(request_id: &str, error: &str) -> String {
    Outgoing::ControlResponse {
        response: ControlResponse::Error { request_id, error },
    }
    .line()
}

// ---------------------------------------------------------- from claude

/// One line from claude's stdout.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// `system`/`init`: printed as each turn starts (each prompt, and each
    /// steer that claude runs as a turn of its own), naming the session.
    Init(Init),
    /// Another `system` event (`status`, `task_started`,
    /// `task_notification`, ...).
    System {
        /// Its subtype, if a string.
        subtype: Option<String>,
        /// The whole event.
        raw: Value,
    },
    /// An assistant message (text, tool calls), as the conversation has it.
    Assistant(Value),
    /// A user message: a tool's result, an interruption note, a replayed
    /// prompt.
    User(Value),
    /// `stream_event` (with `--include-partial-messages`).
    StreamEvent(Value),
    /// The end of a turn.
    Result(TurnResult),
    /// A request room-core must answer with a `control_response`.
    ControlRequest {
        /// Its id, to answer with.
        request_id: String,
        /// What is asked.
        request: CliRequest,
    },
    /// The answer to a request room-core sent.
    ControlResponse {
        /// The request answered.
        request_id: String,
        /// Its outcome.
        outcome: ControlOutcome,
    },
    /// claude withdraws a request it sent (an interrupt cancels the pending
    /// `can_use_tool`); an answer to it afterwards is ignored.
    ControlCancel {
        /// The request withdrawn.
        request_id: String,
    },
    /// A JSON object of a kind, or a shape, not known here.
    Unknown(Value),
    /// Not a JSON object: why.
    Malformed(String),
}

/// `system`/`init`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Init {
    /// The native session ID (a UUID): `--resume` takes it.
    pub session_id: String,
    /// The folder.
    #[serde(default, deserialize_with = "lenient::text")]
    pub cwd: Option<String>,
    /// The model.
    #[serde(default, deserialize_with = "lenient::text")]
    pub model: Option<String>,
    /// The permission mode in force.
    #[serde(default, rename = "permissionMode", deserialize_with = "lenient::text")]
    pub permission_mode: Option<String>,
    /// The CLI's version.
    #[serde(default, deserialize_with = "lenient::text")]
    pub claude_code_version: Option<String>,
}

/// A request from claude.
#[derive(Debug, Clone, PartialEq)]
pub enum CliRequest {
    /// May this tool run?
    CanUseTool(CanUseTool),
    /// A `can_use_tool` room-core cannot take: answer it with a denial.
    BadCanUseTool {
        /// The tool, if it names one.
        tool_name: Option<String>,
        /// What is wrong with it.
        why: Why,
    },
    /// Any other request (`hook_callback`, `mcp_message`, ... — none is
    /// sent unless room-core registers hooks or SDK MCP servers): answer
    /// it with [`error_response`].
    Other {
        /// Its subtype, if a string.
        subtype: Option<String>,
    },
}

/// A JSON value as claude printed it, byte for byte.
#[derive(Debug, Clone)]
pub struct RawInput(pub Box<RawValue>);

impl RawInput {
    /// Its JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }
}

impl Default for RawInput {
    /// `{}`.
    fn default() -> RawInput {
        RawInput(RawValue::from_string("{}".into()).expect("{} is JSON"))
    }
}

impl PartialEq for RawInput {
    fn eq(&self, other: &RawInput) -> bool {
        self.get() == other.get()
    }
}

impl Eq for RawInput {}

/// `can_use_tool`: claude waits for the answer before running the tool.
/// (`tool_name` and `input` are checked and set by the decoder.)
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct CanUseTool {
    /// The tool (`Bash`, `Write`, `Edit`, ...).
    #[serde(skip)]
    pub tool_name: String,
    /// Its input (`command`, `file_path`, ...), a JSON object as claude
    /// printed it: an allow sends it back whole.
    #[serde(skip)]
    pub input: RawInput,
    /// The tool call's id in the conversation.
    #[serde(default, deserialize_with = "lenient::text")]
    pub tool_use_id: Option<String>,
    /// claude's short description of the call.
    #[serde(default, deserialize_with = "lenient::text")]
    pub description: Option<String>,
    /// Why it asks, when it says ("Path is outside allowed working
    /// directories").
    #[serde(default, deserialize_with = "lenient::text")]
    pub decision_reason: Option<String>,
    /// The reason's kind (`workingDir`, `mode`, ...).
    #[serde(default, deserialize_with = "lenient::text")]
    pub decision_reason_type: Option<String>,
    /// The path a command would write outside the allowed folders.
    #[serde(default, deserialize_with = "lenient::text")]
    pub blocked_path: Option<String>,
    /// The rules claude suggests for allowing it from now on (some name
    /// settings files as their destination).
    #[serde(default, deserialize_with = "lenient::list")]
    pub permission_suggestions: Vec<Value>,
}

/// A control response's outcome.
#[derive(Debug, Clone, PartialEq)]
pub enum ControlOutcome {
    /// `success`, with its response (`initialize`: commands, models, pid,
    /// ...; `interrupt`: `still_queued`).
    Success(Value),
    /// `error`, with its message.
    Error(String),
}

/// Token counts and cost.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    /// Input tokens not read from or written to the cache.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the cache.
    pub cache_write_tokens: u64,
    /// Cost in USD, where claude reports one.
    pub cost_usd: Option<f64>,
}

/// `result`: a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    /// `success`, `error_during_execution` (an interrupt), `error_max_turns`, ...
    pub subtype: Option<String>,
    /// Whether the turn failed (an interrupted turn did). The process's
    /// exit status on stdin's end is 1 when its last turn failed.
    pub is_error: bool,
    /// The final answer's text (none after an interrupt).
    pub result: Option<String>,
    /// The session.
    pub session_id: Option<String>,
    /// Model requests in the turn.
    pub num_turns: Option<u64>,
    /// `completed`, `aborted_streaming`, `aborted_tools`, ...
    pub terminal_reason: Option<String>,
    /// The session's cost so far: cumulative over the process and over
    /// earlier processes of a resumed session, so not the turn's.
    pub total_cost_usd: Option<f64>,
    /// `usage`: the turn's tokens, without cost; all zero after an
    /// interrupt.
    pub usage: Usage,
    /// `model_usage_since_last_result` summed over models: the turn's
    /// tokens and cost, with an estimate for an answer cut by an interrupt.
    pub since_last_result: Option<Usage>,
    /// How many tool uses were denied in the turn.
    pub permission_denials: usize,
}

impl TurnResult {
    /// The turn's usage: `model_usage_since_last_result` where claude gives
    /// it (it carries the cost and counts an interrupted answer), else
    /// `usage`.
    pub fn turn_usage(&self) -> Usage {
        self.since_last_result.unwrap_or(self.usage)
    }
}

/// Reads one line of claude's stdout. Never panics.
pub fn decode(line: &str) -> Incoming {
    let value: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return Incoming::Malformed(e.to_string()),
    };
    if !value.is_object() {
        return Incoming::Malformed("not a JSON object".into());
    }
    let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "system" => decode_system(value),
        "assistant" => Incoming::Assistant(value),
        "user" => Incoming::User(value),
        "stream_event" => Incoming::StreamEvent(value),
        "result" => match serde_json::from_value::<wire::Result>(value.clone()) {
            Ok(r) => Incoming::Result(r.into()),
            Err(_) => Incoming::Unknown(value),
        },
        "control_request" => decode_control_request(value, line),
        "control_response" => decode_control_response(value),
        "control_cancel_request" => match text_at(&value, "request_id") {
            Some(request_id) => Incoming::ControlCancel { request_id },
            None => Incoming::Unknown(value),
        },
        _ => Incoming::Unknown(value),
    }
}

fn text_at(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn decode_system(value: Value) -> Incoming {
    let subtype = text_at(&value, "subtype");
    if subtype.as_deref() == Some("init") {
        if let Ok(init) = serde_json::from_value::<Init>(value.clone()) {
            return Incoming::Init(init);
        }
    }
    Incoming::System {
        subtype,
        raw: value,
    }
}

fn decode_control_request(value: Value, line: &str) -> Incoming {
    let Some(request_id) = text_at(&value, "request_id") else {
        return Incoming::Unknown(value);
    };
    let body = value.get("request").cloned().unwrap_or(Value::Null);
    let subtype = text_at(&body, "subtype");
    let request = match subtype.as_deref() {
        // serde reads a struct from an array too; `subtype` makes it an
        // object here.
        Some("can_use_tool") => can_use_tool(body, line),
        _ => CliRequest::Other { subtype },
    };
    Incoming::ControlRequest {
        request_id,
        request,
    }
}

/// A `can_use_tool` request's body (its fields read leniently) with its
/// input as printed in `line`, or what is wrong with it.
fn can_use_tool(body: Value, line: &str) -> CliRequest {
    /// The line again, for the input's text.
    #[derive(Deserialize)]
    struct Line {
        request: Body,
    }
    #[derive(Deserialize)]
    struct Body {
        #[serde(default)]
        input: Option<Box<RawValue>>,
    }
    let tool_name = text_at(&body, "tool_name");
    let is_object = body.get("input").is_some_and(Value::is_object);
    let (Some(name), true) = (&tool_name, is_object) else {
        let why = if tool_name.is_none() {
            Why::NoTool
        } else {
            Why::InputNotObject
        };
        return CliRequest::BadCanUseTool { tool_name, why };
    };
    // A line serde cannot read as a struct (a repeated key) still has its
    // input, as parsed.
    let input = match serde_json::from_str::<Line>(line) {
        Ok(Line {
            request: Body { input: Some(raw) },
        }) if raw.get().starts_with('{') => raw,
        _ => match RawValue::from_string(body["input"].to_string()) {
            Ok(raw) => raw,
            Err(_) => {
                return CliRequest::BadCanUseTool {
                    tool_name,
                    why: Why::InputNotObject,
                }
            }
        },
    };
    let mut req = serde_json::from_value::<CanUseTool>(body).unwrap_or_default();
    req.tool_name = name.clone();
    req.input = RawInput(input);
    CliRequest::CanUseTool(req)
}

fn decode_control_response(value: Value) -> Incoming {
    let body = value.get("response").cloned().unwrap_or(Value::Null);
    let Some(request_id) = text_at(&body, "request_id") else {
        return Incoming::Unknown(value);
    };
    let outcome = match body.get("subtype").and_then(Value::as_str) {
        Some("success") => {
            ControlOutcome::Success(body.get("response").cloned().unwrap_or(Value::Null))
        }
        _ => ControlOutcome::Error(text_at(&body, "error").unwrap_or_default()),
    };
    Incoming::ControlResponse {
        request_id,
        outcome,
    }
}

/// The wire shapes that are read into the types above.
mod wire {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use super::lenient;

    #[derive(Deserialize)]
    pub struct Result {
        #[serde(default, deserialize_with = "lenient::text")]
        pub subtype: Option<String>,
        #[serde(default, deserialize_with = "lenient::flag")]
        pub is_error: bool,
        #[serde(default, deserialize_with = "lenient::text")]
        pub result: Option<String>,
        #[serde(default, deserialize_with = "lenient::text")]
        pub session_id: Option<String>,
        #[serde(default, deserialize_with = "lenient::count_opt")]
        pub num_turns: Option<u64>,
        #[serde(default, deserialize_with = "lenient::text")]
        pub terminal_reason: Option<String>,
        #[serde(default, deserialize_with = "lenient::number")]
        pub total_cost_usd: Option<f64>,
        #[serde(default, deserialize_with = "lenient::object")]
        pub usage: Option<Usage>,
        #[serde(default, deserialize_with = "lenient::object")]
        pub model_usage_since_last_result: Option<BTreeMap<String, ModelUsage>>,
        #[serde(default, deserialize_with = "lenient::list")]
        pub permission_denials: Vec<serde_json::Value>,
    }

    #[derive(Deserialize, Default)]
    pub struct Usage {
        #[serde(default, deserialize_with = "lenient::count")]
        pub input_tokens: u64,
        #[serde(default, deserialize_with = "lenient::count")]
        pub output_tokens: u64,
        #[serde(default, deserialize_with = "lenient::count")]
        pub cache_read_input_tokens: u64,
        #[serde(default, deserialize_with = "lenient::count")]
        pub cache_creation_input_tokens: u64,
    }

    #[derive(Deserialize, Default)]
    #[serde(rename_all = "camelCase")]
    pub struct ModelUsage {
        #[serde(default, deserialize_with = "lenient::count")]
        pub input_tokens: u64,
        #[serde(default, deserialize_with = "lenient::count")]
        pub output_tokens: u64,
        #[serde(default, deserialize_with = "lenient::count")]
        pub cache_read_input_tokens: u64,
        #[serde(default, deserialize_with = "lenient::count")]
        pub cache_creation_input_tokens: u64,
        #[serde(default, rename = "costUSD", deserialize_with = "lenient::number")]
        pub cost_usd: Option<f64>,
    }

    impl From<Result> for super::TurnResult {
        fn from(r: Result) -> Self {
            let u = r.usage.unwrap_or_default();
            let since_last_result = r.model_usage_since_last_result.map(|models| {
                models.values().fold(
                    super::Usage {
                        cost_usd: Some(0.0),
                        ..Default::default()
                    },
                    |sum, m| super::Usage {
                        input_tokens: sum.input_tokens.saturating_add(m.input_tokens),
                        output_tokens: sum.output_tokens.saturating_add(m.output_tokens),
                        cache_read_tokens: sum
                            .cache_read_tokens
                            .saturating_add(m.cache_read_input_tokens),
                        cache_write_tokens: sum
                            .cache_write_tokens
                            .saturating_add(m.cache_creation_input_tokens),
                        cost_usd: match (sum.cost_usd, m.cost_usd) {
                            (Some(a), Some(b)) => Some(a + b),
                            _ => None,
                        },
                    },
                )
            });
            super::TurnResult {
                subtype: r.subtype,
                is_error: r.is_error,
                result: r.result,
                session_id: r.session_id,
                num_turns: r.num_turns,
                terminal_reason: r.terminal_reason,
                total_cost_usd: r.total_cost_usd,
                usage: super::Usage {
                    input_tokens: u.input_tokens,
                    output_tokens: u.output_tokens,
                    cache_read_tokens: u.cache_read_input_tokens,
                    cache_write_tokens: u.cache_creation_input_tokens,
                    cost_usd: None,
                },
                since_last_result,
                permission_denials: r.permission_denials.len(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::transcripts::{self, transcripts};
    use serde_json::json;

    /// What claude printed in `name`, decoded.
    fn from_cli(name: &str) -> Vec<Incoming> {
        transcripts::printed("claude", name)
            .iter()
            .map(|l| decode(l))
            .collect()
    }

    #[test]
    fn every_recorded_line_decodes_to_a_known_kind() {
        for (name, lines) in transcripts("claude") {
            for e in lines.iter().filter(|e| e["dir"] == "from_cli") {
                let line = e["msg"].to_string();
                match decode(&line) {
                    Incoming::Malformed(why) => panic!("{name}: {why}: {line}"),
                    Incoming::Unknown(v) => panic!("{name}: unknown: {v}"),
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn a_turn_starts_with_init_and_ends_with_its_usage() {
        let got = from_cli("turn");
        let inits: Vec<_> = got
            .iter()
            .filter_map(|m| match m {
                Incoming::Init(i) => Some(i),
                _ => None,
            })
            .collect();
        assert_eq!(inits.len(), 2, "one init per turn");
        assert_eq!(inits[0].session_id, inits[1].session_id);
        assert_eq!(inits[0].claude_code_version.as_deref(), Some("2.1.332"));
        let results: Vec<_> = got
            .iter()
            .filter_map(|m| match m {
                Incoming::Result(r) => Some(r),
                _ => None,
            })
            .collect();
        assert_eq!(results.len(), 2);
        for r in &results {
            assert_eq!(r.subtype.as_deref(), Some("success"));
            assert!(!r.is_error);
            // The fake model's figures (fixtures/fake_model_server.py).
            let u = r.turn_usage();
            assert_eq!(
                (
                    u.input_tokens,
                    u.output_tokens,
                    u.cache_read_tokens,
                    u.cache_write_tokens
                ),
                (10, 5, 3, 7)
            );
            assert_eq!(r.usage.input_tokens, 10);
            assert!(u.cost_usd.unwrap() > 0.0);
        }
        // total_cost_usd is the session's running sum; the turn's cost is not.
        let (a, b) = (
            results[0].total_cost_usd.unwrap(),
            results[1].total_cost_usd.unwrap(),
        );
        assert!((b - 2.0 * a).abs() < 1e-12, "{a} {b}");
        assert!((results[1].turn_usage().cost_usd.unwrap() - a).abs() < 1e-12);
        let initialized = got.iter().any(|m| {
            matches!(m, Incoming::ControlResponse { request_id, outcome: ControlOutcome::Success(r) }
                if request_id == "init-1" && r["pid"].is_u64())
        });
        assert!(initialized);
    }

    #[test]
    fn can_use_tool_decodes_with_its_input_and_reason() {
        let got = from_cli("approval_allow");
        let (id, req) = got
            .iter()
            .find_map(|m| match m {
                Incoming::ControlRequest {
                    request_id,
                    request: CliRequest::CanUseTool(r),
                } => Some((request_id, r)),
                _ => None,
            })
            .unwrap();
        assert!(!id.is_empty());
        assert_eq!(req.tool_name, "Write");
        let input: Value = serde_json::from_str(req.input.get()).unwrap();
        assert_eq!(input["file_path"], "<work>/allowed.txt");
        assert!(req.tool_use_id.as_deref().unwrap().starts_with("toolu_"));
        let outside = from_cli("auto_modes")
            .into_iter()
            .find_map(|m| match m {
                Incoming::ControlRequest {
                    request: CliRequest::CanUseTool(r),
                    ..
                } => Some(r),
                _ => None,
            })
            .unwrap();
        assert_eq!(
            outside.decision_reason.as_deref(),
            Some("Path is outside allowed working directories")
        );
        assert_eq!(outside.decision_reason_type.as_deref(), Some("workingDir"));
    }

    #[test]
    fn an_interrupt_cancels_the_pending_request_and_ends_the_turn_in_error() {
        let got = from_cli("interrupt_pending_approval");
        let asked = got
            .iter()
            .find_map(|m| match m {
                Incoming::ControlRequest {
                    request_id,
                    request: CliRequest::CanUseTool(_),
                } => Some(request_id.clone()),
                _ => None,
            })
            .unwrap();
        assert!(got
            .iter()
            .any(|m| matches!(m, Incoming::ControlCancel { request_id } if *request_id == asked)));
        let r = got
            .iter()
            .find_map(|m| match m {
                Incoming::Result(r) => Some(r),
                _ => None,
            })
            .unwrap();
        assert!(r.is_error);
        assert_eq!(r.terminal_reason.as_deref(), Some("aborted_tools"));
        let cut = from_cli("interrupt_mid_answer")
            .into_iter()
            .find_map(|m| match m {
                Incoming::Result(r) if r.is_error => Some(r),
                _ => None,
            })
            .unwrap();
        assert_eq!(cut.terminal_reason.as_deref(), Some("aborted_streaming"));
        assert_eq!(cut.usage.output_tokens, 0);
        assert!(
            cut.turn_usage().output_tokens > 0,
            "an estimate of the cut answer"
        );
    }

    /// What room-core writes equals what the drivers wrote to the real CLI.
    #[test]
    fn encoders_write_what_the_real_cli_was_sent() {
        let sent: Vec<Value> = transcripts("claude")
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
        has(initialize("init-1"));
        has(interrupt("int-1"));
        has(user_message("hello"));
        let answers: Vec<&Value> = sent.iter().map(|s| &s["response"]["response"]).collect();
        let raw = |v: Value| RawValue::from_string(v.to_string()).unwrap();
        // An allow with the input to run, as the approval_error scenario
        // sent it (claude ran it).
        let input = raw(json!({"file_path": "<work>/rewritten.txt", "content": "rewritten\n"}));
        let line = permission_response("x", "Write", Decision::Allow { input: &input });
        let v: Value = serde_json::from_str(&line).unwrap();
        assert!(answers.contains(&&v["response"]["response"]), "{v}");
        let line = permission_response("x", "Write", Decision::Deny { message: "no" });
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            v["response"],
            json!({"subtype": "success", "request_id": "x",
                   "response": {"behavior": "deny", "message": "no"}})
        );
        // The input and the whole-tool session rule as the allow_session
        // scenario sent them.
        let input = raw(json!({"command": "sh -c 'echo y > <work>/whole.txt'",
                               "description": "Run what the test asked"}));
        let line = permission_response("x", "Bash", Decision::AllowForSession { input: &input });
        let v: Value = serde_json::from_str(&line).unwrap();
        assert!(answers.contains(&&v["response"]["response"]), "{v}");
        let line = error_response("x", "APP_ERROR_TEXT");
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["response"]["subtype"], "error");
        assert!(sent
            .iter()
            .any(|s| s["response"]["error"] == v["response"]["error"]));
    }

    #[test]
    fn odd_lines_are_malformed_or_unknown_never_a_panic() {
        for line in [
            "",
            "not json",
            "[]",
            "null",
            "\"result\"",
            "{",
            "{}",
            "{\"type\":\"control_request\"}",
            "{\"type\":\"control_request\",\"request_id\":7}",
            "{\"type\":\"control_response\",\"response\":[]}",
            "{\"type\":\"system\",\"subtype\":\"init\"}",
            "{\"type\":\"result\",\"usage\":{\"input_tokens\":-1,\"output_tokens\":1e300},\"total_cost_usd\":\"x\"}",
            "{\"type\":\"control_request\",\"request_id\":\"r\",\"request\":{\"subtype\":\"can_use_tool\"}}",
        ] {
            let _ = decode(line);
        }
        assert!(matches!(decode("not json"), Incoming::Malformed(_)));
        assert!(matches!(decode("[1]"), Incoming::Malformed(_)));
        assert!(matches!(decode("{}"), Incoming::Unknown(_)));
        assert!(matches!(
            decode("{\"type\":\"system\",\"subtype\":\"init\"}"),
            Incoming::System { .. }
        ));
        // A can_use_tool without a tool name, or whose input is not an
        // object, is still a request to answer (with a denial).
        assert_eq!(
            decode("{\"type\":\"control_request\",\"request_id\":\"r\",\"request\":{\"subtype\":\"can_use_tool\"}}"),
            Incoming::ControlRequest {
                request_id: "r".into(),
                request: CliRequest::BadCanUseTool {
                    tool_name: None,
                    why: Why::NoTool
                }
            }
        );
        assert_eq!(
            decode("{\"type\":\"control_request\",\"request_id\":\"r\",\"request\":{\"subtype\":\"can_use_tool\",\"tool_name\":\"Bash\",\"input\":[1]}}"),
            Incoming::ControlRequest {
                request_id: "r".into(),
                request: CliRequest::BadCanUseTool {
                    tool_name: Some("Bash".into()),
                    why: Why::InputNotObject
                }
            }
        );
        // The input is kept as printed, even where serde cannot read the
        // line as a struct (a repeated key).
        let Incoming::ControlRequest {
            request: CliRequest::CanUseTool(req),
            ..
        } = decode(
            r#"{"type":"control_request","request_id":"r","request":{"subtype":"can_use_tool","tool_name":"W","input":{"b": 1.0, "a":[ ]}}}"#,
        )
        else {
            panic!("a request")
        };
        assert_eq!(req.input.get(), r#"{"b": 1.0, "a":[ ]}"#);
        let Incoming::ControlRequest {
            request: CliRequest::CanUseTool(req),
            ..
        } = decode(
            r#"{"type":"control_request","request_id":"r","request":{"subtype":"can_use_tool","tool_name":"W","input":{"a":1},"input":{"b":2}}}"#,
        )
        else {
            panic!("a request")
        };
        assert_eq!(req.input.get(), r#"{"b":2}"#);
        let Incoming::Result(r) = decode(
            "{\"type\":\"result\",\"usage\":{\"input_tokens\":-1,\"output_tokens\":7},\"total_cost_usd\":\"x\"}",
        ) else {
            panic!("a result with odd fields is still a result")
        };
        assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (0, 7));
        assert_eq!(r.total_cost_usd, None);
        let deep = "[".repeat(100_000);
        assert!(matches!(decode(&deep), Incoming::Malformed(_)));
    }

    transcripts::decode_never_panics!(super::decode, "claude");
}
