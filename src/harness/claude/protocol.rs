//! Claude Code's stream-json control protocol, the subset room-core speaks:
//! `claude -p --input-format stream-json --output-format stream-json
//! --verbose --permission-prompt-tool stdio`, one JSON object per line in
//! each direction (docs/protocols.md says what the real CLI does with each).
//!
//! To claude (stdin): a prompt or a steer is a `user` message; an
//! `interrupt` is a `control_request`; the answer to a `can_use_tool`
//! request is a `control_response`. A line that is not JSON ends claude
//! (status 1), so everything written here is built by serde.
//!
//! From claude (stdout): `decode` reads one line into [`Incoming`], as far
//! as the talker reads it: what names the session, asks, withdraws a
//! request or ends the turn (with what the turn used); everything else is
//! `Other`. What claude writes is untrusted: no input makes it panic, and
//! fields are read leniently (a count that is not a count reads as 0, a
//! text that is not a string as absent), so a known message is never lost
//! over one odd field.

use room_machines::session::{Usage, UsageReport};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::harness::figures::{cost, count};
use crate::harness::refusal::Why;
use crate::harness::speech::Image;

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
        request: ClientRequest<'a>,
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
    /// What the user wrote, with the images they gave.
    pub content: Content<'a>,
}

/// A user message's content: its text alone, or content blocks when it
/// carries images (the images first, then the text, as the Agent SDK
/// sends them).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Content<'a> {
    /// The text, as the user wrote it.
    Text(&'a str),
    /// Image blocks, then a text block.
    Blocks(Vec<Block<'a>>),
}

/// One content block of a user message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block<'a> {
    /// An image, inline.
    Image {
        /// Its bytes, in base64.
        source: ImageSource<'a>,
    },
    /// Text.
    Text {
        /// The text.
        text: &'a str,
    },
}

/// An inline image's bytes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImageSource<'a> {
    /// Always `base64`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: &'a str,
    /// The bytes in standard base64.
    pub data: String,
}

/// A control request room-core sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum ClientRequest<'a> {
    /// Stop the running turn; claude answers, then ends the turn with an
    /// error result (`aborted_streaming` or `aborted_tools`).
    Interrupt,
    /// Run the next turns on `model`; claude answers success (with the
    /// model now in force) or an error.
    SetModel {
        /// The model, in claude's naming.
        model: &'a str,
    },
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
        /// What the model reads as the tool's result.
        message: &'a str,
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

/// One rule: every use of a tool (claude's `ruleContent`, which narrows a
/// rule to one command, is never sent: an allow for the session is for the
/// whole tool).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PermissionRule<'a> {
    /// The tool's name.
    #[serde(rename = "toolName")]
    pub tool_name: &'a str,
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
    user_message_with(text, &[])
}

/// A prompt with images: image blocks, then the text.
pub fn user_message_with(text: &str, images: &[Image]) -> String {
    let content = if images.is_empty() {
        Content::Text(text)
    } else {
        let mut blocks: Vec<Block> = images
            .iter()
            .map(|i| Block::Image {
                source: ImageSource {
                    kind: "base64",
                    media_type: i.media_type,
                    data: i.base64(),
                },
            })
            .collect();
        blocks.push(Block::Text { text });
        Content::Blocks(blocks)
    };
    Outgoing::User {
        message: UserMessage {
            role: "user",
            content,
        },
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

/// The `set_model` request.
pub fn set_model(request_id: &str, model: &str) -> String {
    Outgoing::ControlRequest {
        request_id,
        request: ClientRequest::SetModel { model },
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
                rules: vec![PermissionRule { tool_name: tool }],
                behavior: "allow",
                destination: "session",
            }],
        },
        Decision::Deny { message } => PermissionResult::Deny { message },
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

/// One line from claude's stdout, as far as the talker reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// `system`/`init`: printed as each turn starts (each prompt, and each
    /// steer that claude runs as a turn of its own), naming the session.
    Init {
        /// The native session ID (a UUID): `--resume` takes it.
        session_id: String,
    },
    /// The end of a turn.
    Result(TurnResult),
    /// A request room-core must answer with a `control_response`.
    ControlRequest {
        /// Its id, to answer with.
        request_id: String,
        /// What is asked.
        request: CliRequest,
    },
    /// A `control_request` without an id: nothing can answer it.
    RequestWithoutId {
        /// Its subtype, if a string.
        subtype: Option<String>,
        /// The tool it names, if a string.
        tool_name: Option<String>,
    },
    /// claude's answer to a request room-core sent.
    ControlResponse {
        /// The request answered.
        request_id: String,
        /// Why it failed, when it did.
        error: Option<String>,
    },
    /// claude withdraws a request it sent (an interrupt cancels the pending
    /// `can_use_tool`); an answer to it afterwards is ignored.
    ControlCancel {
        /// The request withdrawn.
        request_id: String,
    },
    /// Anything else: a message the session need not hear (assistant and
    /// user messages, other `system` events, an answer without a request
    /// ID), one of a kind or shape not known here, or not a JSON object.
    Other,
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

impl PartialEq for RawInput {
    fn eq(&self, other: &RawInput) -> bool {
        self.get() == other.get()
    }
}

impl Eq for RawInput {}

/// `can_use_tool`: claude waits for the answer before running the tool.
#[derive(Debug, Clone, PartialEq)]
pub struct CanUseTool {
    /// The tool (`Bash`, `Write`, `Edit`, ...).
    pub tool_name: String,
    /// Its input (`command`, `file_path`, ...), a JSON object as claude
    /// printed it: an allow sends it back whole.
    pub input: RawInput,
    /// claude's short description of the call.
    pub description: Option<String>,
    /// Why it asks, when it says ("Path is outside allowed working
    /// directories").
    pub decision_reason: Option<String>,
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
    /// What the turn used, when the result says ([`turn_usage`]).
    pub usage: Option<UsageReport>,
}

/// Reads one line of claude's stdout. Never panics.
pub fn decode(line: &str) -> Incoming {
    let Ok(value) = serde_json::from_str::<Value>(line) else {
        return Incoming::Other;
    };
    match value.get("type").and_then(Value::as_str).unwrap_or("") {
        "system" if value["subtype"] == "init" => match text_at(&value, "session_id") {
            Some(session_id) => Incoming::Init { session_id },
            None => Incoming::Other,
        },
        "result" => Incoming::Result(TurnResult {
            subtype: text_at(&value, "subtype"),
            is_error: value["is_error"].as_bool().unwrap_or(false),
            result: text_at(&value, "result"),
            usage: turn_usage(&value),
        }),
        "control_request" => decode_control_request(value, line),
        "control_response" => {
            let response = &value["response"];
            match text_at(response, "request_id") {
                Some(request_id) => Incoming::ControlResponse {
                    request_id,
                    error: (response["subtype"] != "success").then(|| {
                        text_at(response, "error").unwrap_or_else(|| "no reason given".into())
                    }),
                },
                None => Incoming::Other,
            }
        }
        "control_cancel_request" => match text_at(&value, "request_id") {
            Some(request_id) => Incoming::ControlCancel { request_id },
            None => Incoming::Other,
        },
        _ => Incoming::Other,
    }
}

fn text_at(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// The turn's usage from its `result` event: `model_usage_since_last_result`
/// summed over its models (tokens and `costUSD`), else `usage` (tokens
/// only). Never `total_cost_usd` nor `modelUsage`: they count the whole
/// session, over every resumed process.
fn turn_usage(event: &Value) -> Option<UsageReport> {
    if let Some(models) = event["model_usage_since_last_result"].as_object() {
        let used = models
            .values()
            .filter(|m| m.is_object())
            .map(|m| Usage {
                input_tokens: count(&m["inputTokens"]),
                output_tokens: count(&m["outputTokens"]),
                cache_read_tokens: count(&m["cacheReadInputTokens"]),
                cache_write_tokens: count(&m["cacheCreationInputTokens"]),
                cost_usd: cost(&m["costUSD"]),
            })
            .fold(Usage::default(), Usage::plus);
        return Some(UsageReport::Turn(used));
    }
    let u = &event["usage"];
    u.is_object().then(|| {
        UsageReport::Turn(Usage {
            input_tokens: count(&u["input_tokens"]),
            output_tokens: count(&u["output_tokens"]),
            cache_read_tokens: count(&u["cache_read_input_tokens"]),
            cache_write_tokens: count(&u["cache_creation_input_tokens"]),
            cost_usd: None,
        })
    })
}

fn decode_control_request(value: Value, line: &str) -> Incoming {
    let body = value.get("request").unwrap_or(&Value::Null);
    let subtype = text_at(body, "subtype");
    let Some(request_id) = text_at(&value, "request_id") else {
        let tool_name = text_at(body, "tool_name");
        return Incoming::RequestWithoutId { subtype, tool_name };
    };
    let request = match subtype.as_deref() {
        Some("can_use_tool") => can_use_tool(body, line),
        _ => CliRequest::Other { subtype },
    };
    Incoming::ControlRequest {
        request_id,
        request,
    }
}

/// A `can_use_tool` request's body with its input as printed in `line`,
/// or what is wrong with it.
fn can_use_tool(body: &Value, line: &str) -> CliRequest {
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
    let tool_name = text_at(body, "tool_name");
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
    CliRequest::CanUseTool(CanUseTool {
        tool_name: name.clone(),
        input: RawInput(input),
        description: text_at(body, "description"),
        decision_reason: text_at(body, "decision_reason"),
    })
}

#[cfg(test)]
#[path = "protocol_tests.rs"]
mod tests;
