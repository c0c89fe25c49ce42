//! What room-core says to a harness on its stdin and what it hears back
//! that the session must know, for both protocols: claude's stream-json
//! (claude_talk.rs) and codex's app server (codex_talk.rs). Pure: what the
//! session wants said goes in, lines to write come out; a stdout line goes
//! in, what it means (and any line it must be answered with) comes out.
//! A turn's stdin writer holds one [`Talker`] per process; the values it
//! takes and gives are in speech.rs.

use super::claude_talk;
use super::codex_talk::{CodexTalk, Opening};
use super::speech::{Hearing, Out, Said};
use super::Harness;

/// One harness process's side of its protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Talker {
    /// claude's stream-json: nothing to remember between lines.
    Claude,
    /// codex's app server: the thread, the running turn, the requests
    /// waiting for codex's answers.
    Codex(Box<CodexTalk>),
}

impl Talker {
    /// The talker for a new process of `harness`; codex opens its thread
    /// as `opening` says.
    pub fn new(harness: Harness, opening: Opening) -> Talker {
        match harness {
            Harness::Claude => Talker::Claude,
            Harness::Codex => Talker::Codex(Box::new(CodexTalk::new(opening))),
        }
    }

    /// The lines that say `said`, now or as soon as the harness can take
    /// them (codex: a prompt before its thread is open, a steer or an
    /// interrupt before its turn's ID is known).
    pub fn say(&mut self, said: Said) -> Vec<Out> {
        match self {
            Talker::Claude => claude_talk::say(said),
            Talker::Codex(codex) => codex.say(said),
        }
    }

    /// What `line`, from the harness's stdout, means. Lines are looked at
    /// before they are parsed, so the bulk of a turn's output costs no
    /// parse.
    pub fn hear(&mut self, line: &str) -> Hearing {
        match self {
            Talker::Claude => claude_talk::hear(line),
            Talker::Codex(codex) => codex.hear(line),
        }
    }
}
