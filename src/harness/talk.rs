//! What room-core says to a harness that talks a protocol on its stdin
//! (claude's stream-json), and what it hears back that the session must
//! know: an approval request and the end of a turn. Pure: lines in,
//! lines out; the runtime's turn threads carry them.
//!
//! A harness that does not talk (codex's one-shot `exec`) reads its prompt
//! and the end of stdin, and nothing else is said to it.

use room_machines::session::{ApprovalRequest, DecidedBy, Decision, EndWhy};
use serde_json::Value;

use super::claude_protocol::{self as claude, CliRequest, Incoming};
use super::Harness;

/// The longest tool input kept in an approval request, as JSON text: the
/// request is recorded and journalled, so a harness asking about a huge
/// input cannot fill either.
pub const INPUT_MAX: usize = 256 << 10;

/// The longest tool name or reason kept.
const TEXT_MAX: usize = 1024;

/// The longest request ID answered: claude's are UUIDs.
const REF_MAX: usize = 256;

/// What a stdout line says that the session must hear.
#[derive(Debug, Clone, PartialEq)]
pub enum Heard {
    /// The harness asks before it runs a tool.
    Asked(ApprovalRequest),
    /// Its turn is done (claude's `result`); it waits for more input.
    Finished,
    /// A request room-core does not serve: answer it with this line, so
    /// the harness does not wait for it.
    Unserved(String),
}

impl Harness {
    /// Whether this harness talks a protocol on its stdin.
    pub fn talks(self) -> bool {
        matches!(self, Harness::Claude)
    }

    /// What a turn's stdin gets first: claude a user message (stdin stays
    /// open), codex the prompt itself (then stdin closes).
    pub fn prompt_bytes(self, prompt: &str) -> Vec<u8> {
        match self {
            Harness::Claude => claude::user_message(prompt).into_bytes(),
            Harness::Codex => prompt.as_bytes().to_vec(),
        }
    }

    /// A prompt for the running turn, if this harness takes one.
    pub fn steer_line(self, text: &str) -> Option<String> {
        self.talks().then(|| claude::user_message(text))
    }

    /// The request that stops the running turn, if this harness takes one.
    pub fn interrupt_line(self) -> Option<String> {
        self.talks()
            .then(|| claude::interrupt("room-core-interrupt"))
    }

    /// The answer to approval request `harness_ref` about `tool`.
    pub fn answer_line(
        self,
        harness_ref: &str,
        tool: &str,
        decision: Decision,
        by: DecidedBy,
        message: Option<&str>,
    ) -> Option<String> {
        if !self.talks() {
            return None;
        }
        let denial;
        let decision = match decision {
            Decision::Allow => claude::Decision::Allow,
            Decision::AllowForSession => claude::Decision::AllowForSession,
            Decision::Deny => {
                denial = message.map_or_else(|| denial_text(by), str::to_string);
                claude::Decision::Deny { message: &denial }
            }
        };
        Some(claude::permission_response(harness_ref, tool, decision))
    }

    /// What `line`, from this harness's stdout, says that the session must
    /// hear, if anything. Lines are looked at before they are parsed, so
    /// the bulk of a turn's output costs no parse.
    pub fn hear(self, line: &str) -> Option<Heard> {
        if !self.talks() || !(line.contains("\"control_request\"") || line.contains("\"result\"")) {
            return None;
        }
        match claude::decode(line) {
            Incoming::Result(_) => Some(Heard::Finished),
            Incoming::ControlRequest {
                request_id,
                request,
            } if request_id.len() <= REF_MAX => Some(match request {
                CliRequest::CanUseTool(req) => Heard::Asked(ApprovalRequest {
                    harness_ref: request_id,
                    tool: cut(&req.tool_name, TEXT_MAX),
                    input: input_text(&req.input),
                    reason: req
                        .decision_reason
                        .or(req.description)
                        .map(|r| cut(&r, TEXT_MAX)),
                }),
                CliRequest::Other { subtype } => Heard::Unserved(claude::error_response(
                    &request_id,
                    &format!(
                        "room-core does not serve {} requests",
                        cut(subtype.as_deref().unwrap_or("these"), 64)
                    ),
                )),
            }),
            _ => None,
        }
    }
}

/// What the model reads when a tool use is denied and the app gave no
/// message: why, in a sentence.
pub fn denial_text(by: DecidedBy) -> String {
    match by {
        DecidedBy::App => "The user denied this tool use.".into(),
        DecidedBy::Modes => {
            "Denied: this session's permission settings do not allow it, and nobody is asked \
             (a plan_only session changes nothing)."
                .into()
        }
        DecidedBy::Timeout => "Denied: nobody answered the approval request in time.".into(),
        DecidedBy::TooMany => {
            "Denied: too many approval requests are waiting in this session.".into()
        }
        DecidedBy::TurnEnding(why) => format!("Denied: the turn is being ended ({}).", ending(why)),
        DecidedBy::TurnGone => "Denied: the turn is over.".into(),
    }
}

fn ending(why: EndWhy) -> &'static str {
    match why {
        EndWhy::Stop => "stopped",
        EndWhy::Interrupt => "interrupted",
        EndWhy::Close => "the session is closed",
        EndWhy::Restart => "the session restarts",
        EndWhy::ServiceStop => "the service is stopping",
        _ => "it ends",
    }
}

/// A tool's input as JSON text of at most [`INPUT_MAX`] bytes: a longer
/// one is kept as a JSON string holding its start, so the text is always
/// JSON. Escaping can make that string longer than the text it holds, so
/// the start is shortened until the whole fits.
fn input_text(input: &Value) -> String {
    let text = input.to_string();
    if text.len() <= INPUT_MAX {
        return text;
    }
    let mut keep = INPUT_MAX;
    loop {
        let held = format!("{}… (cut at {INPUT_MAX} bytes)", cut(&text, keep));
        let json = Value::String(held).to_string();
        if json.len() <= INPUT_MAX || keep == 0 {
            return json;
        }
        keep = keep.saturating_sub(json.len() - INPUT_MAX);
    }
}

/// `s`'s first `max` bytes, at a character boundary.
fn cut(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claudes_requests_and_results_are_heard_and_the_rest_is_not_parsed() {
        let ask = r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"touch x"},"decision_reason":"Path is outside allowed working directories"}}"#;
        assert_eq!(
            Harness::Claude.hear(ask),
            Some(Heard::Asked(ApprovalRequest {
                harness_ref: "r1".into(),
                tool: "Bash".into(),
                input: r#"{"command":"touch x"}"#.into(),
                reason: Some("Path is outside allowed working directories".into()),
            }))
        );
        let result = r#"{"type":"result","subtype":"success","is_error":false}"#;
        assert_eq!(Harness::Claude.hear(result), Some(Heard::Finished));
        let hook =
            r#"{"type":"control_request","request_id":"h1","request":{"subtype":"hook_callback"}}"#;
        let Some(Heard::Unserved(line)) = Harness::Claude.hear(hook) else {
            panic!("unserved");
        };
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["response"]["request_id"], "h1");
        assert_eq!(v["response"]["subtype"], "error");
        for quiet in [
            r#"{"type":"assistant","message":{"content":"the word \"result\" in text"}}"#,
            "not json \"result\"",
            r#"{"type":"control_request","request_id":"r1"}"#,
        ] {
            assert!(
                !matches!(Harness::Claude.hear(quiet), Some(Heard::Asked(_))),
                "{quiet}"
            );
        }
        // codex's one-shot output is never heard.
        assert_eq!(Harness::Codex.hear(result), None);
    }

    #[test]
    fn a_huge_input_is_kept_as_json_text_cut_to_the_cap() {
        // Quotes double in the string that holds them: still within the cap.
        for content in ["x", "\"", "\u{1}"] {
            let big = serde_json::json!({"content": content.repeat(INPUT_MAX * 2)});
            let text = input_text(&big);
            assert!(text.len() <= INPUT_MAX, "{}", text.len());
            let v: Value = serde_json::from_str(&text).expect("still JSON");
            assert!(v.as_str().unwrap().ends_with("(cut at 262144 bytes)"));
        }
    }

    #[test]
    fn a_denial_without_a_message_says_why_and_an_allow_runs_what_was_asked() {
        let line = Harness::Claude
            .answer_line("r1", "Bash", Decision::Deny, DecidedBy::Timeout, None)
            .unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            v["response"]["response"],
            serde_json::json!({"behavior": "deny",
                "message": "Denied: nobody answered the approval request in time."})
        );
        let line = Harness::Claude
            .answer_line(
                "r1",
                "Bash",
                Decision::Deny,
                DecidedBy::App,
                Some("use make"),
            )
            .unwrap();
        assert!(line.contains("\"message\":\"use make\""), "{line}");
        let line = Harness::Claude
            .answer_line("r1", "Bash", Decision::Allow, DecidedBy::App, None)
            .unwrap();
        assert!(!line.contains("updatedInput"), "{line}");
        assert_eq!(
            Harness::Codex.answer_line("r1", "Bash", Decision::Allow, DecidedBy::App, None),
            None
        );
    }
}
