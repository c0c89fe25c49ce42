//! An ACP agent's side of the talker (harness/talk.rs). The agent's session
//! must be opened (`initialize`, then `session/new`, `session/load` or
//! `session/resume`, as the agent offers) before a prompt can go as
//! `session/prompt`, whose answer ends the turn. So a prompt waits here
//! for its session, an interrupt (`session/cancel`) for the prompt it
//! cancels, and each request room-core sends is remembered until the
//! agent answers it. A permission request's options are remembered until
//! it is answered, to answer with the option that means the decision.
//!
//! What the agent writes is untrusted: an answer to nothing is ignored, a
//! request room-core does not serve is answered with an error at once,
//! and what is remembered is bounded.

use room_machines::session::{
    ApprovalRequest, DecidedBy, Decision, PromptId, Usage, UsageReport, Usd, FAILURE_TEXT_MAX,
};
use rustc_hash::FxHashMap;
use serde_json::json;

use super::protocol::{self as acp, Choice, Incoming, Offers, Open, Permission};
use crate::harness::bounds::{REF_MAX, TEXT_MAX};
use crate::harness::jsonrpc::{self, error_answer, Asked, RequestId};
use crate::harness::refusal::{Named, Refused, Unreadable, Why};
use crate::harness::speech::{cut, input_text, Answer, Carries, Heard, Hearing, Image, Out, Said};

/// The most permission requests whose options are remembered while they
/// wait for the app; more are refused at once.
const ASKING_MAX: usize = 64;

/// The most options of one permission request remembered.
const CHOICES_MAX: usize = 16;

/// How a process opens its session: from the turn's command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcpOpening {
    /// The session's folder.
    pub cwd: String,
    /// The agent's session to carry on, if any.
    pub resume: Option<String>,
    /// The session's MCP servers, as ACP's `mcpServers` list, if it has
    /// any.
    pub mcp_servers: Option<serde_json::Value>,
    /// A fork's first process: the session to carry on is forked into a
    /// new one (`session/fork`), not resumed.
    pub fork: bool,
}

/// A request of room-core's that the agent has not answered yet.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Waiting {
    Initialize,
    Session,
    Prompt,
    /// A steer, handed back unless the agent says it joined the prompt.
    Steer {
        prompt: PromptId,
        text: String,
    },
}

/// One ACP agent process's side of the protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcpTalk {
    opening: AcpOpening,
    opened: bool,
    offers: Offers,
    session: Option<String>,
    /// The prompt, until the session is open.
    prompt: Option<(String, Vec<Image>)>,
    /// `session/prompt` is sent and not answered yet.
    prompting: bool,
    /// The running prompt's turn has been told its session: the agent has
    /// begun it.
    begun: bool,
    /// An interrupt came before the prompt went: it is cancelled as soon
    /// as it has.
    cancel_held: bool,
    /// room-core's requests not answered yet.
    requests: Asked<Waiting>,
    /// The options of the permission requests waiting, by their IDs.
    asking: FxHashMap<String, Vec<Choice>>,
    /// The session's cost so far, as the agent last said it.
    cost: Option<Usd>,
}

impl AcpTalk {
    /// A process that has said nothing yet.
    pub fn new(opening: AcpOpening) -> AcpTalk {
        AcpTalk {
            opening,
            opened: false,
            offers: Offers::default(),
            session: None,
            prompt: None,
            prompting: false,
            begun: false,
            cancel_held: false,
            requests: Asked::new(),
            asking: FxHashMap::default(),
            cost: None,
        }
    }

    /// The lines that say `said` now; what cannot go yet is held.
    pub fn say(&mut self, said: Said) -> Vec<Out> {
        match said {
            // An ACP agent chooses its model itself: the API takes no
            // model or effort for one, so a switch carries nothing.
            Said::Prompt { text, images, .. } => self.prompt(text, images),
            Said::Steer { prompt, text } => vec![self.steer(prompt, text)],
            Said::Interrupt => match &self.session {
                Some(session) if self.prompting => {
                    vec![Out::other(acp::cancel(session), "an interrupt")]
                }
                _ if self.prompt.is_some() => {
                    self.cancel_held = true;
                    Vec::new()
                }
                _ => Vec::new(),
            },
            Said::Answer(answer) => self.answer(answer),
        }
    }

    /// What a parsed line of `bytes` means, and what must be written for
    /// it.
    pub fn heard(&mut self, incoming: Incoming, bytes: u64) -> Hearing {
        let mut hearing = Hearing::default();
        match incoming {
            Incoming::Response { id, result } => match self.requests.answered(&id) {
                Some(Waiting::Initialize) => {
                    self.offers = acp::offers(&result);
                    if let Some(why) = self.not_openable() {
                        hearing.heard = Some(Heard::PromptRefused(why));
                        return hearing;
                    }
                    let id = self.requests.ask(Waiting::Session);
                    let servers = self.opening.mcp_servers.clone().unwrap_or(json!([]));
                    let line = acp::open_session(id, self.open(), &self.opening.cwd, &servers);
                    hearing.writes.push(Out {
                        line,
                        carries: Carries::Prompt,
                    });
                }
                Some(Waiting::Session) => {
                    // `session/load` and `session/resume` answer with no ID:
                    // the session is the one asked for (`session/fork`'s
                    // answer names the new one).
                    let session = acp::session_id(&result).or_else(|| self.opening.resume.clone());
                    match session {
                        Some(session) if session.len() <= REF_MAX => {
                            self.session = Some(session);
                            self.prompt_now(&mut hearing);
                        }
                        _ => {
                            hearing.heard =
                                Some(Heard::PromptRefused("the agent opened no session".into()))
                        }
                    }
                }
                // Anything but `injected` leaves the text room-core's.
                Some(Waiting::Steer { prompt, text }) if !acp::injected(&result) => {
                    hearing.heard = Some(Heard::SteerRefused { prompt, text });
                }
                Some(Waiting::Steer { .. }) => {}
                Some(Waiting::Prompt) => {
                    self.begin(&mut hearing);
                    self.prompting = false;
                    let ended = acp::ended(&result);
                    hearing.usage = ended.tokens.map(UsageReport::Turn);
                    let failed = ended
                        .refused
                        .then(|| "the agent refused to go on (stopReason: refusal)".to_string());
                    hearing.heard = Some(Heard::Finished { failed });
                }
                None => {}
            },
            Incoming::Error { id, message } => match self.requests.answered(&id) {
                Some(Waiting::Initialize | Waiting::Session) => {
                    hearing.heard = Some(Heard::PromptRefused(format!(
                        "the agent refused the session: {}",
                        cut(&message, TEXT_MAX)
                    )));
                }
                Some(Waiting::Prompt) => {
                    self.prompting = false;
                    hearing.heard = Some(Heard::Finished {
                        failed: Some(cut(&message, FAILURE_TEXT_MAX)),
                    });
                }
                Some(Waiting::Steer { prompt, text }) => {
                    hearing.heard = Some(Heard::SteerRefused { prompt, text });
                }
                None => {}
            },
            Incoming::Permission { id, asks } => self.asked(id, asks, bytes, &mut hearing),
            Incoming::OtherRequest { id, method } => {
                self.refuse(&id, &method, Why::NotServed, bytes, &mut hearing)
            }
            Incoming::RequestWithoutId { method } => {
                let tool = approval_tool(&method);
                hearing.refused = Some(Refused::new(Some(&method), tool, bytes, Why::NoId, false));
            }
            Incoming::CostSoFar(Some(now)) => {
                let earlier = self.cost.replace(now);
                let cost = |usd| Usage {
                    cost_usd: Some(usd),
                    ..Usage::default()
                };
                // What the cost grew by is the turn's; a cost that went down
                // is a new count, and says nothing of this turn.
                let grew = match earlier {
                    Some(earlier) => cost(now).since(cost(earlier)),
                    None => Some(cost(now)),
                };
                hearing.usage = grew.map(UsageReport::Turn);
            }
            Incoming::Progress => self.begin(&mut hearing),
            Incoming::CostSoFar(None) | Incoming::Other => {}
        }
        hearing
    }

    /// Whether the agent takes a prompt into its running one: it offers the
    /// steering extension.
    pub fn takes_steers(&self) -> bool {
        self.offers.steering
    }

    /// `_session/steering` for a steer. The session steers only a prompt
    /// this process has begun, after its session opened; one that has
    /// ended meanwhile is answered `promptRequired` (an agent without the
    /// extension answers with an error), and the steer is handed back.
    fn steer(&mut self, prompt: PromptId, text: String) -> Out {
        let session = self.session.clone().unwrap_or_default();
        let id = self.requests.ask(Waiting::Steer {
            prompt,
            text: text.clone(),
        });
        Out {
            line: acp::steer(id, &session, &text),
            carries: Carries::Steer { prompt, text },
        }
    }

    /// The agent said something of the running prompt: its turn has begun,
    /// in the session (said once a prompt, as claude's init is).
    fn begin(&mut self, hearing: &mut Hearing) {
        if self.prompting && !self.begun {
            self.begun = true;
            hearing.named = self.session.clone();
        }
    }

    /// Why the session cannot be opened as asked: a fork where the agent
    /// forks none, or an HTTP MCP server where it takes none (it could
    /// drop it unsaid).
    fn not_openable(&self) -> Option<String> {
        if self.opening.fork && !self.offers.fork {
            return Some(
                "the agent cannot fork a session (its initialize offered no sessionCapabilities.fork)".into(),
            );
        }
        self.servers_not_taken()
    }

    /// Why the session's MCP servers cannot go to this agent: an HTTP one
    /// where it said it takes none.
    fn servers_not_taken(&self) -> Option<String> {
        if self.offers.mcp_http {
            return None;
        }
        let servers = self.opening.mcp_servers.as_ref()?.as_array()?;
        let http: Vec<&str> = servers
            .iter()
            .filter(|s| s["type"] == "http")
            .filter_map(|s| s["name"].as_str())
            .collect();
        (!http.is_empty()).then(|| {
            format!(
                "the agent takes no HTTP MCP servers (its initialize said no mcpCapabilities.http), and the session gives it {}",
                http.join(", ")
            )
        })
    }

    /// How the session opens: forked for a fork's first process; carried
    /// on the way the agent offers, else anew.
    fn open(&self) -> Open<'_> {
        match self.opening.resume.as_deref() {
            Some(session) if self.opening.fork => Open::Fork(session),
            Some(session) if self.offers.resume => Open::Resume(session),
            Some(session) if self.offers.load => Open::Load(session),
            _ => Open::New,
        }
    }

    fn prompt(&mut self, text: String, images: Vec<Image>) -> Vec<Out> {
        if self.session.is_some() {
            return self.prompt_line(text, &images).into_iter().collect();
        }
        self.prompt = Some((text, images));
        if self.opened {
            return Vec::new();
        }
        self.opened = true;
        let id = self.requests.ask(Waiting::Initialize);
        vec![Out {
            line: acp::initialize(id),
            carries: Carries::Prompt,
        }]
    }

    /// The prompt kept through the opening goes now, and a cancel held
    /// for it after it.
    fn prompt_now(&mut self, hearing: &mut Hearing) {
        hearing.named = self.session.clone();
        if let Some((text, images)) = self.prompt.take() {
            hearing.writes.extend(self.prompt_line(text, &images));
        }
        if std::mem::take(&mut self.cancel_held) {
            if let Some(session) = &self.session {
                hearing
                    .writes
                    .push(Out::other(acp::cancel(session), "an interrupt"));
            }
        }
    }

    /// `session/prompt`, images and all: where the agent takes none, its
    /// error ends the turn (the API refuses them first where the agent's
    /// probe said so).
    fn prompt_line(&mut self, text: String, images: &[Image]) -> Option<Out> {
        let session = self.session.clone()?;
        self.prompting = true;
        self.begun = false;
        let id = self.requests.ask(Waiting::Prompt);
        Some(Out {
            line: acp::prompt(id, &session, &text, images),
            carries: Carries::Prompt,
        })
    }

    /// The option that says `decision` to request `harness_ref`: the kind
    /// that means it, else the nearest one (an allow for the session may
    /// be an allow once, never the reverse); none when nothing fits or the
    /// turn is being ended (answered `cancelled`, as ACP asks of a client
    /// that cancels).
    fn answer(&mut self, a: Answer) -> Vec<Out> {
        let Ok(id) = serde_json::from_str::<RequestId>(&a.harness_ref) else {
            return Vec::new();
        };
        let choices = self.asking.remove(&a.harness_ref).unwrap_or_default();
        let ending = matches!(a.by, DecidedBy::TurnEnding(_) | DecidedBy::TurnGone);
        let kinds: &[&str] = match a.decision {
            Decision::Allow => &["allow_once"],
            Decision::AllowForSession => &["allow_always", "allow_once"],
            Decision::Deny => &["reject_once", "reject_always"],
        };
        let option = (!ending)
            .then(|| {
                kinds
                    .iter()
                    .find_map(|k| choices.iter().find(|c| c.kind == *k))
            })
            .flatten();
        vec![Out::other(
            acp::permission_answer(&id, option.map(|c| c.id.as_str())),
            "an approval's answer",
        )]
    }

    /// A permission request: heard as an approval, unless it cannot be
    /// taken, then answered at once.
    fn asked(
        &mut self,
        id: RequestId,
        asks: Option<Permission>,
        bytes: u64,
        hearing: &mut Hearing,
    ) {
        let method = acp::REQUEST_PERMISSION;
        let harness_ref = serde_json::to_string(&id).unwrap_or_default();
        let Some(asks) = asks else {
            return self.refuse(&id, method, Why::ParamsNotObject, bytes, hearing);
        };
        if harness_ref.len() > REF_MAX {
            return self.refuse(&id, method, Why::IdTooLong, bytes, hearing);
        }
        if self.asking.len() >= ASKING_MAX {
            return self.refuse(&id, method, Why::TooManyWaiting, bytes, hearing);
        }
        let mut choices = asks.choices;
        choices.truncate(CHOICES_MAX);
        choices.retain(|c| c.id.len() <= REF_MAX);
        self.asking.insert(harness_ref.clone(), choices);
        hearing.heard = Some(Heard::Asked(ApprovalRequest {
            harness_ref,
            tool: cut(&asks.kind, TEXT_MAX),
            input: input_text(&asks.input),
            reason: None,
        }));
    }

    /// Answers request `id` of `method` (`bytes` long) at once, refused for
    /// `why`: a permission request with `cancelled` (so the tool does not
    /// run), anything else with an error.
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
        let line = if tool.is_some() {
            acp::permission_answer(id, None)
        } else {
            let code = jsonrpc::refusal_code(why);
            error_answer(id, code, &refused.message)
        };
        hearing
            .writes
            .push(Out::other(line, "an answer to a request room-core refused"));
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
}

/// The tool a request of `method` asks about; `None` for a request that is
/// not a permission request.
fn approval_tool(method: &str) -> Option<&'static str> {
    (method == acp::REQUEST_PERMISSION).then_some("tool")
}

/// `line` parsed: the parse needs no talker, so it is done before the
/// talker is taken. A `session/update`, the bulk of a turn's output, is
/// parsed only when it can report the cost; any other is progress.
pub(crate) fn read(line: &str) -> Option<Incoming> {
    if line.contains("\"session/update\"") && !line.contains("\"usage_update\"") {
        return Some(Incoming::Progress);
    }
    Some(acp::decode(line))
}

#[cfg(test)]
#[path = "talk_tests.rs"]
mod tests;
