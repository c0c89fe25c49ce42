//! claude's side of the talker (harness/talk.rs): every message is a line of its
//! own. A prompt and a steer are user messages; an interrupt and an
//! approval's answer are control messages; `system/init` names the
//! session, `result` ends the turn, `can_use_tool` asks, and any other
//! control request is answered with an error so claude does not wait for
//! it.
//!
//! A prompt that switches the model goes after claude's answer to a
//! `set_model` request: claude runs each turn on the model in force when
//! it starts, and the answer says the switch is done (an error answer
//! refuses the prompt, which then never ran on a model it did not choose).
//! An effort cannot change in a running claude (`--effort` only): the
//! session machine runs such a prompt in a new process.
//!
//! What it remembers: the input of each `can_use_tool` waiting for its
//! answer, as claude printed it, because an allow sends it back whole as
//! `updatedInput` (the app was shown it cut to 256 KiB). Bounded by count
//! (the session's 64 pending requests) and bytes ([`INPUTS_MAX`]); a request
//! past either, or one room-core cannot take, is denied at once
//! (harness/refusal.rs).

use room_machines::session::{
    ApprovalRequest, Decision, ModelChoice, FAILURE_TEXT_MAX, MAX_PENDING,
};
use rustc_hash::FxHashMap;
use serde_json::value::RawValue;

use super::protocol::{self as claude, CliRequest, Incoming};
use crate::harness::bounds::{REF_MAX, TEXT_MAX};
use crate::harness::head::{fields, Scalar};
use crate::harness::refusal::{Named, Refused, Unreadable, Why, INPUTS_MAX};
use crate::harness::speech::{
    cut, denial_text, input_text, Carries, Heard, Hearing, Image, Out, Said,
};

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
    /// The prompt held until claude answers its `set_model`.
    switching: Option<Switching>,
    /// How many `set_model` requests the process was sent.
    switches: u64,
}

/// A prompt that waits for claude to switch its model.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Switching {
    /// The `set_model` request's ID.
    request_id: String,
    /// The model asked for.
    model: String,
    /// The prompt and its images; none once an interrupt withdrew it.
    prompt: Option<(String, Vec<Image>)>,
}

impl ClaudeTalk {
    /// The lines that say `said`.
    pub fn say(&mut self, said: Said) -> Vec<Out> {
        let out = match said {
            Said::Prompt {
                text,
                images,
                switch: ModelChoice {
                    model: Some(model), ..
                },
            } => {
                self.switches += 1;
                let request_id = format!("room-core-set-model-{}", self.switches);
                let line = claude::set_model(&request_id, &model);
                self.switching = Some(Switching {
                    request_id,
                    model,
                    prompt: Some((text, images)),
                });
                // Carries the prompt: if it cannot be written, neither can
                // the prompt.
                Out {
                    line,
                    carries: Carries::Prompt,
                }
            }
            Said::Prompt { text, images, .. } => Out {
                line: claude::user_message_with(&text, &images),
                carries: Carries::Prompt,
            },
            Said::Steer { prompt, text } => Out {
                line: claude::user_message(&text),
                carries: Carries::Steer { prompt, text },
            },
            Said::Interrupt => {
                // A prompt still waiting for its switch never goes.
                if let Some(switching) = &mut self.switching {
                    switching.prompt = None;
                }
                Out::other(claude::interrupt("room-core-interrupt"), "an interrupt")
            }
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
            Incoming::Init { session_id } => hearing.named = Some(session_id),
            Incoming::Result(result) => {
                hearing.usage = result.usage;
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
            Incoming::ControlResponse { request_id, error } => {
                self.switched(&request_id, error, &mut hearing);
            }
            Incoming::ControlCancel { request_id } => {
                self.answered(&request_id);
            }
            Incoming::RequestWithoutId { subtype, tool_name } => {
                // Nothing can answer it: claude waits, and the app is told.
                hearing.refused = Some(Refused::new(
                    subtype.as_deref(),
                    tool_name.as_deref(),
                    bytes,
                    Why::NoId,
                    false,
                ));
            }
            Incoming::Other => {}
        }
        hearing
    }

    /// claude answered request `request_id`: when it is the switch a
    /// prompt waits for, the prompt goes, or is refused with claude's reason.
    fn switched(&mut self, request_id: &str, error: Option<String>, hearing: &mut Hearing) {
        let Some(switching) = self.switching.take_if(|s| s.request_id == request_id) else {
            return;
        };
        let Some((text, images)) = switching.prompt else {
            return;
        };
        match error {
            None => hearing.writes.push(Out {
                line: claude::user_message_with(&text, &images),
                carries: Carries::Prompt,
            }),
            Some(why) => {
                let why = format!(
                    "claude did not switch to the model {:?}: {}",
                    cut(&switching.model, 128),
                    cut(&why, 512)
                );
                hearing.heard = Some(Heard::PromptRefused(why));
            }
        }
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
pub fn read(line: &str) -> Option<Incoming> {
    let worth = line.contains("\"control_request\"")
        || line.contains("\"control_cancel_request\"")
        || line.contains("\"control_response\"")
        || line.contains("\"result\"")
        || line.contains("\"init\"");
    worth.then(|| claude::decode(line))
}

/// The request the start of a line not read whole names, if it names one.
pub fn read_head(head: &[u8]) -> Option<Named> {
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
#[path = "talk_tests.rs"]
mod tests;
