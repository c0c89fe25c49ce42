//! claude's side of the talker (talk.rs): every message is a
//! line of its own and nothing needs remembering between lines. A prompt
//! and a steer are user messages; an interrupt and an approval's answer
//! are control messages; `system/init` names the session, `result` ends
//! the turn, `can_use_tool` asks, and any other control request is
//! answered with an error so claude does not wait for it.

use room_machines::session::{ApprovalRequest, Decision, FAILURE_TEXT_MAX};

use super::claude_protocol::{self as claude, CliRequest, Incoming};
use super::speech::{cut, denial_text, input_text, Carries, Heard, Hearing, Out, Said};
use super::speech::{REF_MAX, TEXT_MAX};

/// The lines that say `said`.
pub fn say(said: Said) -> Vec<Out> {
    let out = match said {
        Said::Prompt(text) => Out {
            line: claude::user_message(&text),
            carries: Carries::Prompt,
        },
        Said::Steer { prompt, text } => Out {
            line: claude::user_message(&text),
            carries: Carries::Steer { prompt, text },
        },
        Said::Interrupt => Out::other(claude::interrupt("room-core-interrupt"), "an interrupt"),
        Said::Answer(a) => {
            let denial;
            let decision = match a.decision {
                Decision::Allow => claude::Decision::Allow,
                Decision::AllowForSession => claude::Decision::AllowForSession,
                Decision::Deny => {
                    denial = a.message.unwrap_or_else(|| denial_text(a.by));
                    claude::Decision::Deny { message: &denial }
                }
            };
            Out::other(
                claude::permission_response(&a.harness_ref, &a.tool, decision),
                "an approval's answer",
            )
        }
    };
    vec![out]
}

/// `line` parsed, when it can name the session, ask or end the turn.
pub fn read(line: &str) -> Option<Incoming> {
    let worth = line.contains("\"control_request\"")
        || line.contains("\"result\"")
        || line.contains("\"init\"");
    worth.then(|| claude::decode(line))
}

/// What a parsed line means.
pub fn heard(incoming: Incoming) -> Hearing {
    let mut hearing = Hearing::default();
    match incoming {
        Incoming::Init(init) => hearing.named = Some(init.session_id),
        Incoming::Result(result) => {
            let failed = result.is_error.then(|| {
                let why = result.result.or(result.subtype);
                cut(
                    &why.unwrap_or_else(|| "claude said so".into()),
                    FAILURE_TEXT_MAX,
                )
            });
            hearing.heard = Some(Heard::Finished { failed });
        }
        Incoming::ControlRequest {
            request_id,
            request,
        } if request_id.len() <= REF_MAX => match request {
            CliRequest::CanUseTool(req) => {
                hearing.heard = Some(Heard::Asked(ApprovalRequest {
                    harness_ref: request_id,
                    tool: cut(&req.tool_name, TEXT_MAX),
                    input: input_text(&req.input),
                    reason: req
                        .decision_reason
                        .or(req.description)
                        .map(|r| cut(&r, TEXT_MAX)),
                }))
            }
            CliRequest::Other { subtype } => hearing.writes.push(Out::other(
                claude::error_response(
                    &request_id,
                    &format!(
                        "room-core does not serve {} requests",
                        cut(subtype.as_deref().unwrap_or("these"), 64)
                    ),
                ),
                "an answer to a request that is not served",
            )),
        },
        _ => {}
    }
    hearing
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::speech::Answer;

    /// What `line` means to claude's talker.
    fn hear(line: &str) -> Hearing {
        read(line).map_or_else(Hearing::default, heard)
    }
    use room_machines::session::DecidedBy;
    use serde_json::Value;

    #[test]
    fn requests_results_and_inits_are_heard_and_the_rest_is_not_parsed() {
        let ask = r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"touch x"},"decision_reason":"Path is outside allowed working directories"}}"#;
        assert_eq!(
            hear(ask).heard,
            Some(Heard::Asked(ApprovalRequest {
                harness_ref: "r1".into(),
                tool: "Bash".into(),
                input: r#"{"command":"touch x"}"#.into(),
                reason: Some("Path is outside allowed working directories".into()),
            }))
        );
        let result = r#"{"type":"result","subtype":"success","is_error":false}"#;
        assert_eq!(hear(result).heard, Some(Heard::Finished { failed: None }));
        let failed = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"result":"API Error: 500"}"#;
        let why = Some("API Error: 500".to_string());
        assert_eq!(hear(failed).heard, Some(Heard::Finished { failed: why }));
        let init = r#"{"type":"system","subtype":"init","session_id":"s1"}"#;
        assert_eq!(hear(init).named.as_deref(), Some("s1"));
        let hook =
            r#"{"type":"control_request","request_id":"h1","request":{"subtype":"hook_callback"}}"#;
        let h = hear(hook);
        assert_eq!(h.heard, None);
        let v: Value = serde_json::from_str(&h.writes[0].line).unwrap();
        assert_eq!(v["response"]["request_id"], "h1");
        assert_eq!(v["response"]["subtype"], "error");
        for quiet in [
            r#"{"type":"assistant","message":{"content":"the word \"result\" in text"}}"#,
            "not json \"result\"",
        ] {
            assert_eq!(hear(quiet), Hearing::default(), "{quiet}");
        }
        // A request of no known kind is answered, not heard.
        let odd = hear(r#"{"type":"control_request","request_id":"r1"}"#);
        assert_eq!((odd.heard, odd.writes.len()), (None, 1));
    }

    fn answer(decision: Decision, by: DecidedBy, message: Option<&str>) -> String {
        let said = Said::Answer(Answer {
            harness_ref: "r1".into(),
            tool: "Bash".into(),
            decision,
            by,
            message: message.map(str::to_string),
        });
        say(said).remove(0).line
    }

    #[test]
    fn a_denial_without_a_message_says_why_and_an_allow_runs_what_was_asked() {
        let v: Value =
            serde_json::from_str(&answer(Decision::Deny, DecidedBy::Timeout, None)).unwrap();
        assert_eq!(
            v["response"]["response"],
            serde_json::json!({"behavior": "deny",
                "message": "Denied: nobody answered the approval request in time."})
        );
        let line = answer(Decision::Deny, DecidedBy::App, Some("use make"));
        assert!(line.contains("\"message\":\"use make\""), "{line}");
        let line = answer(Decision::Allow, DecidedBy::App, None);
        assert!(!line.contains("updatedInput"), "{line}");
    }
}
