//! What room-core says to a harness on its stdin and what it hears back
//! that the session must know, for both protocols: claude's stream-json
//! (claude/talk.rs) and codex's app server (codex/talk.rs). Pure: what the
//! session wants said goes in, lines to write come out; a stdout line goes
//! in, what it means (and any line it must be answered with) comes out.
//! A line not read whole, or not servable, goes in as its start: a request
//! it names is refused at once (refusal.rs). A turn's stdin holds
//! one [`Talker`] per process; the values it takes and gives are in
//! speech.rs.

use super::acp::protocol as acp;
use super::acp::talk::{self as acp_talk, AcpOpening, AcpTalk};
use super::claude::protocol as claude;
use super::claude::talk::{self as claude_talk, ClaudeTalk};
use super::codex::protocol as codex;
use super::codex::talk::{self as codex_talk, CodexTalk, Opening};
use super::jsonrpc;
use super::refusal::{Named, Unread, Unreadable};
use super::speech::{Hearing, Out, Said};
use super::Harness;

/// One harness process's side of its protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Talker {
    /// claude's stream-json: the inputs of the requests waiting for their
    /// answers.
    Claude(Box<ClaudeTalk>),
    /// codex's app server: the thread, the running turn, the requests
    /// waiting for codex's answers.
    Codex(Box<CodexTalk>),
    /// An ACP agent: its session, the running prompt, the requests waiting
    /// for its answers and its permission requests' options.
    Acp(Box<AcpTalk>),
}

impl Talker {
    /// The talker for a new process of `harness`; codex opens its thread
    /// as `opening` says, an ACP agent its session in the same folder,
    /// carrying on the same one.
    pub fn new(harness: Harness, opening: Opening) -> Talker {
        match harness {
            Harness::Claude => Talker::Claude(Box::default()),
            Harness::Codex => Talker::Codex(Box::new(CodexTalk::new(opening))),
            Harness::Acp => Talker::Acp(Box::new(AcpTalk::new(AcpOpening {
                cwd: opening.cwd,
                resume: opening.resume,
                mcp_servers: opening.config,
                fork: opening.fork_through.is_some(),
            }))),
        }
    }

    /// The lines that say `said`, now or as soon as the harness can take
    /// them (codex: a prompt before its thread is open, a steer or an
    /// interrupt before its turn's ID is known).
    pub fn say(&mut self, said: Said) -> Vec<Out> {
        match self {
            Talker::Claude(claude) => claude.say(said),
            Talker::Codex(codex) => codex.say(said),
            Talker::Acp(acp) => acp.say(said),
        }
    }

    /// What `line`, from the harness's stdout, means: [`Talker::read`],
    /// then [`Talker::heard`].
    pub fn hear(&mut self, line: &str) -> Hearing {
        let read = Talker::read(self.harness(), line);
        self.heard(read)
    }

    /// `line`, from a `harness` process's stdout, parsed as far as it can
    /// matter. Lines are looked at before they are parsed, so the bulk of
    /// a turn's output costs no parse; and the parse needs no talker, so
    /// it holds none.
    pub fn read(harness: Harness, line: &str) -> Read {
        let parsed = match harness {
            Harness::Claude => Parsed::Claude(claude_talk::read(line)),
            Harness::Codex => Parsed::Codex(codex_talk::read(line)),
            Harness::Acp => Parsed::Acp(acp_talk::read(line)),
        };
        Read {
            bytes: line.len() as u64,
            parsed,
        }
    }

    /// A line of a `harness` process's stdout that was not read whole, or
    /// cannot be served: the request its start names, if any, to be
    /// answered at once. Needs no talker either.
    pub fn read_unread(harness: Harness, unread: Unread) -> Read {
        let named = match harness {
            Harness::Claude => claude_talk::read_head(unread.head),
            // Both speak JSON-RPC.
            Harness::Codex | Harness::Acp => jsonrpc::read_head(unread.head),
        };
        Read {
            bytes: unread.bytes,
            parsed: Parsed::Unread(unread.why, named),
        }
    }

    /// What a line [`Talker::read`] (or [`Talker::read_unread`]) parsed
    /// means.
    pub fn heard(&mut self, read: Read) -> Hearing {
        let bytes = read.bytes;
        match (self, read.parsed) {
            (Talker::Claude(claude), Parsed::Claude(Some(incoming))) => {
                claude.heard(incoming, bytes)
            }
            (Talker::Codex(codex), Parsed::Codex(Some(incoming))) => codex.heard(incoming, bytes),
            (Talker::Claude(claude), Parsed::Unread(why, Some(named))) => {
                claude.unread(named, why, bytes)
            }
            (Talker::Codex(codex), Parsed::Unread(why, Some(named))) => {
                codex.unread(named, why, bytes)
            }
            (Talker::Acp(acp), Parsed::Acp(Some(incoming))) => acp.heard(incoming, bytes),
            (Talker::Acp(acp), Parsed::Unread(why, Some(named))) => acp.unread(named, why, bytes),
            _ => Hearing::default(),
        }
    }

    /// Whether its process takes a prompt into its running turn: claude
    /// and codex do; an ACP agent where it offers the steering extension.
    pub fn takes_steers(&self) -> bool {
        match self {
            Talker::Claude(_) | Talker::Codex(_) => true,
            Talker::Acp(acp) => acp.takes_steers(),
        }
    }

    /// The harness this talker speaks to.
    pub fn harness(&self) -> Harness {
        match self {
            Talker::Claude(_) => Harness::Claude,
            Talker::Codex(_) => Harness::Codex,
            Talker::Acp(_) => Harness::Acp,
        }
    }
}

/// A stdout line parsed by its harness's protocol, and its size.
#[derive(Debug)]
pub struct Read {
    bytes: u64,
    parsed: Parsed,
}

/// What [`Read`] holds; `None` when the line cannot matter to the session.
#[derive(Debug)]
enum Parsed {
    /// claude's.
    Claude(Option<claude::Incoming>),
    /// codex's.
    Codex(Option<codex::Incoming>),
    /// An ACP agent's.
    Acp(Option<acp::Incoming>),
    /// A line not read whole, and the request its start names.
    Unread(Unreadable, Option<Named>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    /// Every line the real CLIs printed that reports usage is heard with
    /// it: the look a talker takes before parsing a line lets it through.
    #[test]
    fn the_lines_that_report_usage_are_heard_with_it() {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let modes = Config::default().modes(false);
        for (harness, file, reports) in [
            (Harness::Claude, "oneshot/claude/resumed.jsonl", 1),
            (Harness::Codex, "protocols/codex/turn.jsonl", 2),
        ] {
            let opening = super::super::codex::opening("/w", None, &modes, Default::default());
            let mut talker = Talker::new(harness, opening);
            let text = std::fs::read_to_string(fixtures.join(file)).unwrap();
            let mut seen = 0;
            for line in text.lines() {
                let mut event: serde_json::Value = serde_json::from_str(line).unwrap();
                if harness == Harness::Codex {
                    event = event["msg"].take();
                }
                if talker.hear(&event.to_string()).usage.is_some() {
                    seen += 1;
                }
            }
            assert_eq!(seen, reports, "{file}");
        }
    }
}
