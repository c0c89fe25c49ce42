//! claude's side of the talker (talk.rs): every message is a line of its
//! own. A prompt and a steer are user messages; an interrupt and an
//! approval's answer are control messages; `system/init` names the
//! session, `result` ends the turn, `can_use_tool` asks, and any other
//! control request is answered with an error so claude does not wait for
//! it.
//!
//! What it remembers: the input of each `can_use_tool` waiting for its
//! answer, as claude printed it, because an allow sends it back whole as
//! `updatedInput` (the app was shown it cut to 256 KiB). Bounded by count
//! (the session's 64 pending requests) and bytes ([`INPUTS_MAX`]); a request
//! past either, or one room-core cannot take, is denied at once
//! (refusal.rs).

use room_machines::session::{ApprovalRequest, Decision, FAILURE_TEXT_MAX, MAX_PENDING};
use rustc_hash::FxHashMap;
use serde_json::value::RawValue;

use super::bounds::{REF_MAX, TEXT_MAX};
use super::claude_protocol::{self as claude, CliRequest, Incoming};
use super::head::{fields, Scalar};
use super::refusal::{Named, Refused, Unreadable, Why, INPUTS_MAX};
use super::speech::{cut, denial_text, input_text, Carries, Heard, Hearing, Out, Said};

/// What an answer to a refused request carries, for the log.
const REFUSAL: &str = "an answer to a request room-core refused";

/// One claude process's side of its protocol.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaudeTalk {
    /// The input of each `can_use_tool` waiting for its answer, by request
    /// ID, as claude printed it.
    waiting: FxHashMap<String, claude::RawInput>,
    /// Their bytes.
    bytes: usize,
}

impl ClaudeTalk {
    /// The lines that say `said`.
    pub fn say(&mut self, said: Said) -> Vec<Out> {
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
                let input = self.answered(&a.harness_ref);
                let denial;
                let decision = match (a.decision, &input) {
                    (Decision::Allow, Some(input)) => claude::Decision::Allow { input },
                    (Decision::AllowForSession, Some(input)) => {
                        claude::Decision::AllowForSession { input }
                    }
                    (Decision::Allow | Decision::AllowForSession, None) => {
                        // Withdrawn (claude cancelled it, or its turn
                        // ended): claude ignores any answer; one that could
                        // run something else is never sent.
                        log::warn!(
                            "claude's request {:.64} is no longer held: its allow is sent as \
                             an error",
                            a.harness_ref
                        );
                        let error = "room-core no longer holds this request";
                        return vec![Out::other(
                            claude::error_response(&a.harness_ref, error),
                            "an approval's answer",
                        )];
                    }
                    (Decision::Deny, _) => {
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

    /// What a parsed line of `bytes` means.
    pub fn heard(&mut self, incoming: Incoming, bytes: u64) -> Hearing {
        let mut hearing = Hearing::default();
        match incoming {
            Incoming::Init(init) => hearing.named = Some(init.session_id),
            Incoming::Result(result) => {
                // The turn is over: nothing of it waits for an answer.
                self.waiting.clear();
                self.bytes = 0;
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
            } => self.asked(request_id, request, bytes, &mut hearing),
            Incoming::ControlCancel { request_id } => {
                self.answered(&request_id);
            }
            Incoming::Unknown(v) if v["type"] == "control_request" => {
                // No ID to answer with: claude waits, and the app is told.
                let text = |key: &str| v["request"][key].as_str();
                hearing.refused = Some(Refused::new(
                    text("subtype"),
                    text("tool_name"),
                    bytes,
                    Why::NoId,
                    false,
                ));
            }
            _ => {}
        }
        hearing
    }

    /// A line of `bytes` not read whole (for `why`) whose start names
    /// request `named`: denied at once where it can be answered.
    pub fn unread(&mut self, named: Named, why: Unreadable, bytes: u64) -> Hearing {
        let mut hearing = Hearing::default();
        let (kind, tool) = (named.kind.as_deref(), named.tool.as_deref());
        match named.id {
            Some(Scalar::Text(id)) => {
                refuse(&id, kind, tool, bytes, Why::Unreadable(why), &mut hearing)
            }
            _ => {
                let why = Why::Unreadable(why);
                hearing.refused = Some(Refused::new(kind, tool, bytes, why, false));
            }
        }
        hearing
    }

    /// A request: `can_use_tool` is heard (its input kept for the answer)
    /// unless room-core cannot take it; anything else is refused.
    fn asked(&mut self, id: String, request: CliRequest, bytes: u64, hearing: &mut Hearing) {
        let kind = match &request {
            CliRequest::CanUseTool(_) | CliRequest::BadCanUseTool { .. } => Some("can_use_tool"),
            CliRequest::Other { subtype } => subtype.as_deref(),
        };
        let tool = match &request {
            CliRequest::CanUseTool(req) => Some(req.tool_name.as_str()),
            CliRequest::BadCanUseTool { tool_name, .. } => tool_name.as_deref(),
            CliRequest::Other { .. } => None,
        };
        let refusal = match &request {
            _ if id.len() > REF_MAX => Some(Why::IdTooLong),
            CliRequest::BadCanUseTool { why, .. } => Some(*why),
            CliRequest::Other { .. } => Some(Why::NotServed),
            CliRequest::CanUseTool(_) if self.waiting.len() >= MAX_PENDING => {
                Some(Why::TooManyWaiting)
            }
            CliRequest::CanUseTool(req)
                if self.bytes.saturating_add(req.input.get().len()) > INPUTS_MAX =>
            {
                Some(Why::InputsOverBudget)
            }
            CliRequest::CanUseTool(_) => None,
        };
        if let Some(why) = refusal {
            return refuse(&id, kind, tool, bytes, why, hearing);
        }
        let CliRequest::CanUseTool(req) = request else {
            return;
        };
        hearing.heard = Some(Heard::Asked(ApprovalRequest {
            harness_ref: id.clone(),
            tool: cut(&req.tool_name, TEXT_MAX),
            input: input_text(req.input.get()),
            reason: req
                .decision_reason
                .or(req.description)
                .map(|r| cut(&r, TEXT_MAX)),
        }));
        self.bytes += req.input.get().len();
        if let Some(old) = self.waiting.insert(id, req.input) {
            self.bytes -= old.get().len();
        }
    }

    /// The input of request `id`, which is answered or withdrawn now.
    fn answered(&mut self, id: &str) -> Option<Box<RawValue>> {
        let input = self.waiting.remove(id)?;
        self.bytes -= input.get().len();
        Some(input.0)
    }
}

/// Answers request `id` (of `kind`, about `tool`, `bytes` long) at once,
/// refused for `why`: a `can_use_tool` with a denial the model reads,
/// anything else with an error.
fn refuse(
    id: &str,
    kind: Option<&str>,
    tool: Option<&str>,
    bytes: u64,
    why: Why,
    hearing: &mut Hearing,
) {
    let refused = Refused::new(kind, tool, bytes, why, true);
    let line = match kind {
        Some("can_use_tool") => {
            let message = &refused.message;
            claude::permission_response(id, tool.unwrap_or(""), claude::Decision::Deny { message })
        }
        _ => claude::error_response(id, &refused.message),
    };
    hearing.writes.push(Out::other(line, REFUSAL));
    hearing.refused = Some(refused);
}

/// `line` parsed, when it can name the session, ask or end the turn.
pub(crate) fn read(line: &str) -> Option<Incoming> {
    let worth = line.contains("\"control_request\"")
        || line.contains("\"control_cancel_request\"")
        || line.contains("\"result\"")
        || line.contains("\"init\"");
    worth.then(|| claude::decode(line))
}

/// The request the start of a line not read whole names, if it names one.
pub(crate) fn read_head(head: &[u8]) -> Option<Named> {
    let [kind, id, subtype, tool] = fields(
        head,
        [
            &["type"],
            &["request_id"],
            &["request", "subtype"],
            &["request", "tool_name"],
        ],
    );
    let text = |s: Option<Scalar>| s.and_then(|s| s.text().map(str::to_string));
    (text(kind).as_deref() == Some("control_request")).then(|| Named {
        id,
        kind: text(subtype),
        tool: text(tool),
    })
}

#[cfg(test)]
mod tests {
    use room_machines::session::DecidedBy;
    use serde_json::{json, Value};

    use super::*;
    use crate::harness::speech::{Answer, INPUT_MAX};

    /// What `line` means to `talk`.
    fn hear(talk: &mut ClaudeTalk, line: &str) -> Hearing {
        read(line).map_or_else(Hearing::default, |i| talk.heard(i, line.len() as u64))
    }

    fn ask(id: &str, input: &str) -> String {
        format!(
            r#"{{"type":"control_request","request_id":"{id}","request":{{"subtype":"can_use_tool","tool_name":"Write","input":{input}}}}}"#
        )
    }

    fn json(out: &Out) -> Value {
        serde_json::from_str(&out.line).unwrap()
    }

    #[test]
    fn requests_results_and_inits_are_heard_and_the_rest_is_not_parsed() {
        let talk = &mut ClaudeTalk::default();
        let ask = r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"touch x"},"decision_reason":"Path is outside allowed working directories"}}"#;
        assert_eq!(
            hear(talk, ask).heard,
            Some(Heard::Asked(ApprovalRequest {
                harness_ref: "r1".into(),
                tool: "Bash".into(),
                input: r#"{"command":"touch x"}"#.into(),
                reason: Some("Path is outside allowed working directories".into()),
            }))
        );
        let result = r#"{"type":"result","subtype":"success","is_error":false}"#;
        assert_eq!(
            hear(talk, result).heard,
            Some(Heard::Finished { failed: None })
        );
        let failed = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"result":"API Error: 500"}"#;
        let why = Some("API Error: 500".to_string());
        assert_eq!(
            hear(talk, failed).heard,
            Some(Heard::Finished { failed: why })
        );
        let init = r#"{"type":"system","subtype":"init","session_id":"s1"}"#;
        assert_eq!(hear(talk, init).named.as_deref(), Some("s1"));
        let hook =
            r#"{"type":"control_request","request_id":"h1","request":{"subtype":"hook_callback"}}"#;
        let h = hear(talk, hook);
        assert_eq!(h.heard, None);
        let v = json(&h.writes[0]);
        assert_eq!(v["response"]["request_id"], "h1");
        assert_eq!(v["response"]["subtype"], "error");
        assert_eq!(
            v["response"]["error"],
            "room-core does not serve hook_callback requests"
        );
        let refused = h.refused.unwrap();
        assert_eq!((refused.why, refused.answered), (Why::NotServed, true));
        for quiet in [
            r#"{"type":"assistant","message":{"content":"the word \"result\" in text"}}"#,
            "not json \"result\"",
        ] {
            assert_eq!(hear(talk, quiet), Hearing::default(), "{quiet}");
        }
        // A request of no known kind is answered, not heard.
        let odd = hear(talk, r#"{"type":"control_request","request_id":"r1"}"#);
        assert_eq!((odd.heard, odd.writes.len()), (None, 1));
    }

    fn answer(talk: &mut ClaudeTalk, decision: Decision, message: Option<&str>) -> Value {
        let said = Said::Answer(Answer {
            harness_ref: "r1".into(),
            tool: "Write".into(),
            decision,
            by: DecidedBy::App,
            message: message.map(str::to_string),
        });
        json(&talk.say(said).remove(0))
    }

    #[test]
    fn an_allow_sends_back_exactly_the_input_claude_asked_about() {
        // As printed: spaces, key order, escapes, digits kept.
        let input = r#"{"z": 1.50, "a":"\u00e9\n", "n": [1e2, {}]}"#;
        for (decision, rule) in [(Decision::Allow, false), (Decision::AllowForSession, true)] {
            let talk = &mut ClaudeTalk::default();
            assert!(hear(talk, &ask("r1", input)).heard.is_some());
            let said = talk.say(Said::Answer(Answer {
                harness_ref: "r1".into(),
                tool: "Write".into(),
                decision,
                by: DecidedBy::App,
                message: None,
            }));
            let line = &said[0].line;
            assert!(
                line.contains(&format!(r#""behavior":"allow","updatedInput":{input}"#)),
                "{line}"
            );
            assert_eq!(line.contains("updatedPermissions"), rule, "{line}");
            // Answered: nothing is held for it any more, and a second
            // allow is an error, never an allow of something else.
            assert_eq!((talk.waiting.len(), talk.bytes), (0, 0));
            let v = answer(talk, Decision::Allow, None);
            assert_eq!(v["response"]["subtype"], "error", "{v}");
        }
    }

    #[test]
    fn an_input_the_app_sees_cut_is_allowed_whole() {
        let talk = &mut ClaudeTalk::default();
        let input =
            json!({"file_path": "/w/big", "content": "x".repeat(INPUT_MAX * 2)}).to_string();
        let Some(Heard::Asked(req)) = hear(talk, &ask("r1", &input)).heard else {
            panic!("heard")
        };
        assert!(req.input.len() <= INPUT_MAX);
        let v = answer(talk, Decision::Allow, None);
        assert_eq!(v["response"]["response"]["updatedInput"].to_string(), input);
    }

    #[test]
    fn a_denial_without_a_message_says_why() {
        let talk = &mut ClaudeTalk::default();
        let said = talk.say(Said::Answer(Answer {
            harness_ref: "r1".into(),
            tool: "Bash".into(),
            decision: Decision::Deny,
            by: DecidedBy::Timeout,
            message: None,
        }));
        assert_eq!(
            json(&said[0])["response"]["response"],
            json!({"behavior": "deny",
                "message": "Denied: nobody answered the approval request in time."})
        );
        assert_eq!(
            answer(talk, Decision::Deny, Some("use make"))["response"]["response"]["message"],
            "use make"
        );
    }

    /// The denial `h` wrote for request `id`, and its refusal's reason.
    fn denied(h: &Hearing, id: &str) -> (String, &'static str) {
        assert_eq!(h.heard, None);
        let v = json(&h.writes[0]);
        assert_eq!(v["response"]["request_id"], id, "{v}");
        assert_eq!(v["response"]["response"]["behavior"], "deny", "{v}");
        let refused = h.refused.as_ref().unwrap();
        assert!(refused.answered);
        let message = v["response"]["response"]["message"].as_str().unwrap();
        assert_eq!(message, refused.message);
        (message.to_string(), refused.why.code())
    }

    #[test]
    fn what_is_held_is_bounded_and_past_it_a_request_is_denied_at_once() {
        let talk = &mut ClaudeTalk::default();
        for i in 0..MAX_PENDING {
            assert!(hear(talk, &ask(&format!("q{i}"), "{}")).heard.is_some());
        }
        let h = hear(talk, &ask("q64", "{}"));
        assert_eq!(
            denied(&h, "q64"),
            (
                "Denied: too many approval requests are waiting in this session.".into(),
                "too_many_waiting"
            )
        );
        // The turn's end lets go of all of them.
        hear(talk, r#"{"type":"result","subtype":"success"}"#);
        assert_eq!((talk.waiting.len(), talk.bytes), (0, 0));
        // 8 MiB of inputs: the ninth of 1000 KiB does not fit.
        let big = json!({"content": "x".repeat(1000 << 10)}).to_string();
        for i in 0..8 {
            assert!(hear(talk, &ask(&format!("b{i}"), &big)).heard.is_some());
        }
        let h = hear(talk, &ask("b8", &big));
        assert_eq!(denied(&h, "b8").1, "inputs_over_budget");
        // An answer frees its room; claude's cancel too.
        answer(talk, Decision::Deny, None);
        hear(
            talk,
            r#"{"type":"control_cancel_request","request_id":"b0"}"#,
        );
        assert_eq!(talk.waiting.len(), 7);
        assert_eq!(talk.bytes, 7 * big.len());
        assert!(hear(talk, &ask("b9", &big)).heard.is_some());
    }

    #[test]
    fn a_request_room_core_cannot_take_is_denied_at_once_saying_why() {
        let talk = &mut ClaudeTalk::default();
        let no_tool = r#"{"type":"control_request","request_id":"t","request":{"subtype":"can_use_tool","input":{}}}"#;
        assert_eq!(
            denied(&hear(talk, no_tool), "t"),
            ("Denied: the request names no tool.".into(), "no_tool")
        );
        let not_object = r#"{"type":"control_request","request_id":"o","request":{"subtype":"can_use_tool","tool_name":"Bash","input":"ls"}}"#;
        assert_eq!(denied(&hear(talk, not_object), "o").1, "input_not_object");
        let long_id = "i".repeat(REF_MAX + 1);
        let h = hear(talk, &ask(&long_id, "{}"));
        assert_eq!(denied(&h, &long_id).1, "id_too_long");
        // No ID: nothing can be answered; the app is told.
        let h = hear(
            talk,
            r#"{"type":"control_request","request":{"subtype":"can_use_tool","tool_name":"Write"}}"#,
        );
        assert_eq!(h.writes, vec![]);
        let refused = h.refused.unwrap();
        assert_eq!(
            (refused.why, refused.answered, refused.tool.as_deref()),
            (Why::NoId, false, Some("Write"))
        );
        assert_eq!(talk.waiting.len(), 0);
    }

    #[test]
    fn a_request_not_read_whole_is_answered_from_its_start() {
        let talk = &mut ClaudeTalk::default();
        let head = br#"{"type":"control_request","request_id":"big","request":{"subtype":"can_use_tool","tool_name":"Write","input":{"content":"xxx"#;
        let over = Unreadable::OverCap { cap: 1 << 20 };
        let h = talk.unread(read_head(head).unwrap(), over, 10 << 20);
        let (message, code) = denied(&h, "big");
        assert_eq!(code, "over_cap");
        assert_eq!(
            message,
            "Denied: room-core cannot read this request: its line is 10485760 bytes, over \
             the 1048576 bytes a line of a harness's output may take."
        );
        assert_eq!(h.refused.unwrap().tool.as_deref(), Some("Write"));
        // Another kind: an error. No ID, or cut inside it: not answered.
        let head =
            br#"{"type":"control_request","request_id":"h","request":{"subtype":"mcp_message","#;
        let h = talk.unread(read_head(head).unwrap(), Unreadable::NotUtf8, 5);
        assert_eq!(json(&h.writes[0])["response"]["subtype"], "error");
        for head in [
            &br#"{"type":"control_request","request":{"#[..],
            br#"{"type":"control_request","request_id":"cut-her"#,
        ] {
            let h = talk.unread(read_head(head).unwrap(), Unreadable::NotUtf8, 5);
            assert_eq!(
                (h.writes.len(), h.refused.map(|r| r.answered)),
                (0, Some(false))
            );
        }
        // Not a request: nothing to refuse.
        assert_eq!(read_head(br#"{"type":"user","message":{"#), None);
        assert_eq!(read_head(b"xxxxxxxx"), None);
    }
}
