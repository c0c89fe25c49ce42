//! codex's side of the talker (harness/talk.rs): the app server's
//! JSON-RPC needs remembering. Its thread must be opened (`initialize`,
//! then `thread/start` or `thread/resume`) before a prompt can go as
//! `turn/start`, and a steer or an interrupt names the running turn, whose
//! ID comes in `turn/start`'s answer. So a prompt waits here for its thread,
//! a steer or an interrupt for its turn's ID, and each request room-core
//! sends is remembered until codex answers it, to know what a refusal
//! means (a refused steer goes back to the queue).
//!
//! What codex writes is untrusted: an answer to nothing is ignored, a
//! request room-core does not serve is answered with an error, one it
//! cannot take (not read whole, params not an object, an ID too long) with
//! a decline or an error at once (harness/refusal.rs), and what is remembered is
//! bounded.

use room_machines::session::{
    ApprovalRequest, DecidedBy, Decision, ModelChoice, PromptId, FAILURE_TEXT_MAX,
};
use serde_json::json;

use super::protocol::{self as codex, ApprovalPolicy, ClientInfo, Incoming, RequestId};
use super::protocol::{Notification, SandboxMode, ServerRequest};
use super::protocol::{COMMAND_APPROVAL, FILE_CHANGE_APPROVAL};
use crate::harness::bounds::{REF_MAX, TEXT_MAX};
use crate::harness::jsonrpc::{self, Asked};
use crate::harness::refusal::{Named, Refused, Unreadable, Why};
use crate::harness::speech::{
    cut, denial_text, input_text, Answer, Carries, Heard, Hearing, Image, Out, Said,
};

/// The most steers and interrupts held for a turn whose ID is not known
/// yet; later ones go at once and codex refuses them (a refused steer goes
/// back to the queue).
const HELD_MAX: usize = 64;

/// How a process opens its thread: from the turn's command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opening {
    /// The session's folder.
    pub cwd: String,
    /// The thread to resume, if any.
    pub resume: Option<String>,
    /// A rewind's cut: the resumed thread's history is reverted to before
    /// this turn (`thread/revert`) before the prompt goes.
    pub revert_before: Option<String>,
    /// A fork's cut: the thread is not resumed but forked through this
    /// turn (`thread/forks` `lastTurnId`), a thread of its own.
    pub fork_through: Option<String>,
    /// When codex asks.
    pub approval_policy: ApprovalPolicy,
    /// Its sandbox.
    pub sandbox: SandboxMode,
    /// The model the app chose, if it did.
    pub model: Option<String>,
    /// The app's developer instructions, if any.
    pub instructions: Option<String>,
    /// The effort of every turn, if the app chose one.
    pub effort: Option<&'static str>,
    /// The session's MCP servers in the harness's own shape, if it has
    /// any: codex's thread config, an ACP agent's `mcpServers` list.
    pub config: Option<serde_json::Value>,
}

/// A request of room-core's that codex has not answered yet.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Waiting {
    Initialize,
    Thread,
    Revert,
    Turn,
    Steer { prompt: PromptId, text: String },
    Other,
}

/// One codex process's side of the app server's protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexTalk {
    opening: Opening,
    opened: bool,
    thread: Option<String>,
    /// The prompt, until the thread is open.
    prompt: Option<(String, Vec<Image>)>,
    /// The running turn, once `turn/start`'s answer names it.
    turn: Option<String>,
    /// `turn/start` is sent and not answered yet.
    starting: bool,
    /// Steers and an interrupt waiting for the turn's ID.
    held: Vec<Said>,
    /// room-core's requests not answered yet.
    requests: Asked<Waiting>,
    /// The latest file change announced (its item's ID and files): its
    /// approval request names it and holds nothing else.
    change: Option<(String, Vec<String>)>,
}

impl CodexTalk {
    /// A process that has said nothing yet.
    pub fn new(opening: Opening) -> CodexTalk {
        CodexTalk {
            opening,
            opened: false,
            thread: None,
            prompt: None,
            turn: None,
            starting: false,
            held: Vec::new(),
            requests: Asked::new(),
            change: None,
        }
    }

    /// The lines that say `said` now; what cannot go yet is held.
    pub fn say(&mut self, said: Said) -> Vec<Out> {
        match said {
            Said::Prompt {
                text,
                images,
                switch,
            } => self.prompt(text, images, switch),
            Said::Steer { prompt, text } => match self.turn.clone() {
                Some(turn) => vec![self.steer(&turn, prompt, text)],
                None if self.awaits_turn() && self.held.len() < HELD_MAX => {
                    self.held.push(Said::Steer { prompt, text });
                    Vec::new()
                }
                // No turn runs: codex refuses it, and it goes back to the queue.
                None => vec![self.steer("", prompt, text)],
            },
            Said::Interrupt => match self.turn.clone() {
                Some(turn) => vec![self.interrupt(&turn)],
                None if self.awaits_turn() => {
                    if !self.held.contains(&Said::Interrupt) {
                        self.held.push(Said::Interrupt);
                    }
                    Vec::new()
                }
                None => Vec::new(),
            },
            Said::Answer(answer) => self.answer(answer),
        }
    }

    /// What `line` means, and what must be written for it.
    pub fn hear(&mut self, line: &str) -> Hearing {
        read(line).map_or_else(Hearing::default, |incoming| {
            self.heard(incoming, line.len() as u64)
        })
    }

    /// What a parsed line of `bytes` means, and what must be written for
    /// it.
    pub fn heard(&mut self, incoming: Incoming, bytes: u64) -> Hearing {
        let mut hearing = Hearing::default();
        match incoming {
            Incoming::Response { id, result } => match self.requests.answered(&id) {
                Some(Waiting::Thread) => match codex::thread_id(&result) {
                    Some(thread) => {
                        self.thread = Some(thread);
                        match self.opening.revert_before.clone() {
                            Some(turn) => hearing.writes.push(self.revert(&turn)),
                            None => self.prompt_now(&mut hearing),
                        }
                    }
                    None => {
                        hearing.heard = Some(Heard::PromptRefused(
                            "codex answered without a thread".into(),
                        ))
                    }
                },
                Some(Waiting::Revert) => {
                    self.opening.revert_before = None;
                    self.prompt_now(&mut hearing);
                }
                Some(Waiting::Turn) => {
                    self.starting = false;
                    if let Some(turn) = codex::turn_id(&result) {
                        self.turn_known(turn, &mut hearing);
                    }
                }
                _ => {}
            },
            Incoming::Error { id, message } => match self.requests.answered(&id) {
                Some(Waiting::Revert) => {
                    hearing.heard = Some(Heard::PromptRefused(format!(
                        "codex could not cut the conversation where the rewind asked: {}",
                        cut(&message, TEXT_MAX)
                    )));
                }
                Some(Waiting::Initialize | Waiting::Thread | Waiting::Turn) => {
                    self.starting = false;
                    hearing.heard = Some(Heard::PromptRefused(format!(
                        "codex refused the turn: {}",
                        cut(&message, TEXT_MAX)
                    )));
                }
                Some(Waiting::Steer { prompt, text }) => {
                    hearing.heard = Some(Heard::SteerRefused { prompt, text });
                }
                _ => {}
            },
            Incoming::Request { id, request } => self.asked(id, request, bytes, &mut hearing),
            Incoming::RequestWithoutId { method } => {
                // Nothing can answer it.
                let tool = approval_tool(&method);
                hearing.refused = Some(Refused::new(Some(&method), tool, bytes, Why::NoId, false));
            }
            Incoming::Notification(Notification::TurnStarted { turn_id })
                if self.turn.is_none() =>
            {
                self.turn_known(turn_id, &mut hearing);
            }
            Incoming::Notification(Notification::TurnCompleted {
                turn_id,
                failed,
                error,
            }) => {
                let ours = match &self.turn {
                    Some(turn) => *turn == turn_id,
                    None => self.starting,
                };
                if ours {
                    self.turn = None;
                    self.starting = false;
                    // Held for a turn that is over: codex refuses them, and
                    // a steer goes back to the queue.
                    for said in std::mem::take(&mut self.held) {
                        if let Said::Steer { prompt, text } = said {
                            hearing.writes.push(self.steer("", prompt, text));
                        }
                    }
                    let failed = failed.then(|| {
                        let why = error.unwrap_or_else(|| "codex said so".into());
                        cut(&why, FAILURE_TEXT_MAX)
                    });
                    hearing.heard = Some(Heard::Finished { failed });
                }
            }
            Incoming::Notification(Notification::FileChangeStarted { id, paths }) => {
                self.change = Some((id, paths));
            }
            Incoming::Notification(Notification::TokenUsage(report)) => {
                hearing.usage = Some(report);
            }
            Incoming::Notification(Notification::TurnStarted { .. }) | Incoming::Other => {}
        }
        hearing
    }

    /// Whether a turn is on its way whose ID is not known yet.
    fn awaits_turn(&self) -> bool {
        self.starting || self.prompt.is_some()
    }

    fn prompt(&mut self, text: String, images: Vec<Image>, switch: ModelChoice) -> Vec<Out> {
        // codex keeps a turn's model and effort for the turns after it.
        if let Some(effort) = switch.effort {
            self.opening.effort = Some(effort.name());
        }
        if self.thread.is_some() {
            return vec![self.turn_start(text, &images, switch.model.as_deref())];
        }
        if switch.model.is_some() {
            self.opening.model = switch.model;
        }
        self.prompt = Some((text, images));
        if self.opened {
            return Vec::new();
        }
        self.opened = true;
        let client = ClientInfo {
            name: "room-core",
            title: Some("room-core"),
            version: env!("CARGO_PKG_VERSION"),
        };
        let init = self.requests.ask(Waiting::Initialize);
        let open = self.requests.ask(Waiting::Thread);
        let o = &self.opening;
        let params = codex::ThreadStartParams {
            cwd: &o.cwd,
            approval_policy: o.approval_policy,
            sandbox: o.sandbox,
            model: o.model.as_deref(),
            developer_instructions: o.instructions.as_deref(),
            config: o.config.as_ref(),
        };
        let thread = match (&o.resume, &o.fork_through) {
            (Some(thread_id), Some(last_turn_id)) => codex::thread_fork(
                open,
                &codex::ThreadForkParams {
                    thread_id,
                    last_turn_id,
                    open: params,
                },
            ),
            (Some(thread_id), None) => codex::thread_resume(
                open,
                &codex::ThreadResumeParams {
                    thread_id,
                    open: params,
                },
            ),
            (None, _) => codex::thread_start(open, &params),
        };
        // Each carries the prompt: if none can be written, neither can it.
        [
            codex::initialize(init, client),
            codex::initialized(),
            thread,
        ]
        .into_iter()
        .map(|line| Out {
            line,
            carries: Carries::Prompt,
        })
        .collect()
    }

    /// The prompt kept through the opening goes now.
    fn prompt_now(&mut self, hearing: &mut Hearing) {
        if let Some((text, images)) = self.prompt.take() {
            hearing.writes.push(self.turn_start(text, &images, None));
        }
    }

    /// `thread/revert` to before `turn`; it carries the prompt, which
    /// waits for its answer.
    fn revert(&mut self, turn: &str) -> Out {
        let id = self.requests.ask(Waiting::Revert);
        let thread = self.thread.as_deref().unwrap_or_default();
        Out {
            line: codex::thread_revert(id, thread, turn),
            carries: Carries::Prompt,
        }
    }

    fn turn_start(&mut self, text: String, images: &[Image], model: Option<&str>) -> Out {
        self.starting = true;
        let id = self.requests.ask(Waiting::Turn);
        Out {
            line: codex::turn_start(
                id,
                self.thread.as_deref().unwrap_or_default(),
                &text,
                images,
                model,
                self.opening.effort,
            ),
            carries: Carries::Prompt,
        }
    }

    fn steer(&mut self, turn: &str, prompt: PromptId, text: String) -> Out {
        let id = self.requests.ask(Waiting::Steer {
            prompt,
            text: text.clone(),
        });
        let thread = self.thread.as_deref().unwrap_or_default();
        Out {
            line: codex::turn_steer(id, thread, turn, &text),
            carries: Carries::Steer { prompt, text },
        }
    }

    fn interrupt(&mut self, turn: &str) -> Out {
        let id = self.requests.ask(Waiting::Other);
        let thread = self.thread.as_deref().unwrap_or_default();
        Out::other(codex::turn_interrupt(id, thread, turn), "an interrupt")
    }

    /// A decline has no room for a message: the model reads "rejected by
    /// user", and the message follows as a steer of the same turn (which
    /// codex gives the model right after the rejection). A turn being
    /// ended gets no message: nothing of it will run.
    fn answer(&mut self, a: Answer) -> Vec<Out> {
        let Ok(id) = serde_json::from_str::<RequestId>(&a.harness_ref) else {
            return Vec::new();
        };
        let explained = !matches!(a.by, DecidedBy::TurnEnding(_) | DecidedBy::TurnGone);
        let message = (a.decision == Decision::Deny && explained)
            .then(|| a.message.unwrap_or_else(|| denial_text(a.by)));
        self.decide(&id, a.decision, message)
    }

    /// The answer `decision` to approval request `id`, and `message` as a
    /// steer of the running turn, if one runs.
    fn decide(&mut self, id: &RequestId, decision: Decision, message: Option<String>) -> Vec<Out> {
        let decision = match decision {
            Decision::Allow => codex::Decision::Accept,
            Decision::AllowForSession => codex::Decision::AcceptForSession,
            Decision::Deny => codex::Decision::Decline,
        };
        let mut out = vec![Out::other(
            codex::approval_answer(id, decision),
            "an approval's answer",
        )];
        if let (Some(message), Some(turn)) = (message, self.turn.clone()) {
            let steer = self.requests.ask(Waiting::Other);
            let thread = self.thread.as_deref().unwrap_or_default();
            out.push(Out::other(
                codex::turn_steer(steer, thread, &turn, &message),
                "a denial's message",
            ));
        }
        out
    }

    /// Answers request `id` of `method` (`bytes` long) at once, refused for
    /// `why`: an approval with a decline and the reason as a steer, anything
    /// else with an error.
    fn refuse(
        &mut self,
        id: &RequestId,
        method: &str,
        why: Why,
        bytes: u64,
        hearing: &mut Hearing,
    ) {
        let tool = approval_tool(method);
        let refused = Refused::new(Some(method), tool, bytes, why, true);
        if tool.is_some() {
            let message = Some(refused.message.clone());
            hearing
                .writes
                .extend(self.decide(id, Decision::Deny, message));
        } else {
            let code = jsonrpc::refusal_code(why);
            hearing.writes.push(Out::other(
                codex::error_answer(id, code, &refused.message),
                "an answer to a request room-core refused",
            ));
        }
        hearing.refused = Some(refused);
    }

    /// A line of `bytes` not read whole (for `why`) whose start names
    /// request `named`: refused at once where it can be answered.
    pub fn unread(&mut self, named: Named, why: Unreadable, bytes: u64) -> Hearing {
        jsonrpc::unread(
            named,
            why,
            bytes,
            approval_tool,
            |id, method, why, hearing| self.refuse(id, method, why, bytes, hearing),
        )
    }

    /// A request of codex's: an approval is heard, anything else is
    /// answered at once so codex does not wait for it.
    fn asked(&mut self, id: RequestId, request: ServerRequest, bytes: u64, hearing: &mut Hearing) {
        let harness_ref = serde_json::to_string(&id).unwrap_or_default();
        let method = match &request {
            ServerRequest::CommandApproval(_) => COMMAND_APPROVAL,
            ServerRequest::FileChangeApproval(_) => FILE_CHANGE_APPROVAL,
            ServerRequest::BadApproval { method, .. } | ServerRequest::Other { method } => method,
        }
        .to_string();
        let (tool, input, reason) = match request {
            ServerRequest::CommandApproval(c) => (
                "command",
                json!({"command": c.command, "cwd": c.cwd}),
                c.reason,
            ),
            ServerRequest::FileChangeApproval(f) => {
                let files = self
                    .change
                    .as_ref()
                    .filter(|(item, _)| f.item_id.as_deref() == Some(item.as_str()))
                    .map(|(_, paths)| paths.clone());
                (
                    "fileChange",
                    json!({"files": files, "grantRoot": f.grant_root}),
                    f.reason,
                )
            }
            ServerRequest::BadApproval { why, .. } => {
                return self.refuse(&id, &method, why, bytes, hearing)
            }
            ServerRequest::Other { .. } => {
                return self.refuse(&id, &method, Why::NotServed, bytes, hearing)
            }
        };
        if harness_ref.len() > REF_MAX {
            return self.refuse(&id, &method, Why::IdTooLong, bytes, hearing);
        }
        hearing.heard = Some(Heard::Asked(ApprovalRequest {
            harness_ref,
            tool: tool.into(),
            input: input_text(&input.to_string()),
            reason: reason.map(|r| cut(&r, TEXT_MAX)),
        }));
    }

    /// The running turn's ID is known: it names the session's turn, and
    /// what was held for it goes.
    fn turn_known(&mut self, turn: String, hearing: &mut Hearing) {
        self.turn = Some(turn.clone());
        hearing.named = self.thread.clone();
        for said in std::mem::take(&mut self.held) {
            hearing.writes.push(match said {
                Said::Steer { prompt, text } => self.steer(&turn, prompt, text),
                _ => self.interrupt(&turn),
            });
        }
    }
}

/// The tool an approval request of `method` asks about; `None` for
/// another request.
fn approval_tool(method: &str) -> Option<&'static str> {
    match method {
        COMMAND_APPROVAL => Some("command"),
        FILE_CHANGE_APPROVAL => Some("fileChange"),
        _ => None,
    }
}

/// `line` parsed, unless it is chatter: the parse needs no talker, so it
/// is done before the talker is taken. A line that can report usage is
/// always parsed, whatever else it holds.
pub(crate) fn read(line: &str) -> Option<Incoming> {
    let worth = line.contains("\"thread/tokenUsage/updated\"") || !is_chatter(line);
    worth.then(|| codex::decode(line))
}

/// Whether `line` is one of the notifications that make up the bulk of a
/// turn's output and mean nothing to the session (a streamed answer's
/// pieces, a finished item): not parsed.
fn is_chatter(line: &str) -> bool {
    [
        "\"item/agentMessage/delta\"",
        "\"item/completed\"",
        "\"item/commandExecution/outputDelta\"",
        "\"item/reasoning/",
        "\"turn/diff/updated\"",
    ]
    .iter()
    .any(|m| line.contains(m))
}

#[cfg(test)]
#[path = "talk_tests.rs"]
mod tests;
