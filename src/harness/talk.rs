//! What room-core says to a harness on its stdin and what it hears back
//! that the session must know, for both protocols: claude's stream-json
//! (claude_talk.rs) and codex's app server (codex_talk.rs). Pure: what the
//! session wants said goes in, lines to write come out; a stdout line goes
//! in, what it means (and any line it must be answered with) comes out.
//! A turn's stdin writer holds one [`Talker`] per process; the values it
//! takes and gives are in speech.rs.

use super::claude_protocol as claude;
use super::claude_talk;
use super::codex_protocol as codex;
use super::codex_talk::{self, CodexTalk, Opening};
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
        match harness {
            Harness::Claude => Read::Claude(claude_talk::read(line)),
            Harness::Codex => Read::Codex(codex_talk::read(line)),
        }
    }

    /// What a line [`Talker::read`] parsed means.
    pub fn heard(&mut self, read: Read) -> Hearing {
        match (self, read) {
            (Talker::Claude, Read::Claude(Some(incoming))) => claude_talk::heard(incoming),
            (Talker::Codex(codex), Read::Codex(Some(incoming))) => codex.heard(incoming),
            _ => Hearing::default(),
        }
    }

    /// The harness this talker speaks to.
    pub fn harness(&self) -> Harness {
        match self {
            Talker::Claude => Harness::Claude,
            Talker::Codex(_) => Harness::Codex,
        }
    }
}

/// A stdout line parsed by its harness's protocol; `None` when it cannot
/// matter to the session.
#[derive(Debug)]
pub enum Read {
    /// claude's.
    Claude(Option<claude::Incoming>),
    /// codex's.
    Codex(Option<codex::Incoming>),
}
