//! What is said to a harness and heard from it, as values both protocols'
//! talkers share (talk.rs holds the talker): what the session wants said,
//! the lines that say it and what each carries, what a stdout line means,
//! and how an approval request's fields are kept within their caps.

use room_machines::session::{
    ApprovalRequest, DecidedBy, Decision, EndWhy, ModelChoice, PromptId, UsageReport,
};
use serde_json::Value;

pub(super) use super::bounds::cut;
use super::refusal::{Refused, TOO_MANY};

/// The longest tool input kept in an approval request, as JSON text: the
/// request is recorded and journalled, so a harness asking about a huge
/// input cannot fill either.
pub const INPUT_MAX: usize = 256 << 10;

/// What the session wants said to the harness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// A turn's prompt: the first of the process, or a warm follow-up,
    /// with what the process must change first to run it as chosen.
    Prompt {
        /// The prompt.
        text: String,
        /// The images it carries, in the order the app gave them.
        images: Vec<Image>,
        /// The model and effort it switches to (none for a new process,
        /// which starts with them).
        switch: ModelChoice,
    },
    /// A prompt for the running turn.
    Steer {
        /// Its number.
        prompt: PromptId,
        /// Its text.
        text: String,
    },
    /// Stop the running turn.
    Interrupt,
    /// The answer to an approval request.
    Answer(Answer),
}

impl Said {
    /// A prompt that changes nothing first.
    pub fn prompt(text: String) -> Said {
        Said::Prompt {
            text,
            images: Vec::new(),
            switch: ModelChoice::default(),
        }
    }

    /// What the lines that say it carry, as one: for reporting it unsaid.
    pub fn carries(self) -> Carries {
        match self {
            Said::Prompt { .. } => Carries::Prompt,
            Said::Steer { prompt, text } => Carries::Steer { prompt, text },
            Said::Interrupt => Carries::Other("an interrupt"),
            Said::Answer(_) => Carries::Other("an approval's answer"),
        }
    }
}

/// An image a prompt carries, as the harness gets it.
#[derive(Clone, PartialEq, Eq)]
pub struct Image {
    /// Its media type (`image/png`, …), as its bytes say.
    pub media_type: &'static str,
    /// Its bytes.
    pub data: Vec<u8>,
}

impl Image {
    /// Its bytes in standard base64, as both CLIs take them.
    pub fn base64(&self) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(&self.data)
    }
}

impl std::fmt::Debug for Image {
    /// Its type and size: its bytes would flood a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Image({}, {} bytes)", self.media_type, self.data.len())
    }
}

/// The answer to the approval request `harness_ref` about `tool`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The harness's own ID of the request.
    pub harness_ref: String,
    /// The tool asked about.
    pub tool: String,
    /// What was decided.
    pub decision: Decision,
    /// By whom.
    pub by: DecidedBy,
    /// What the model reads with a denial.
    pub message: Option<String>,
}

/// What a line written to the harness carries, so that one that cannot be
/// written is reported as what it meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Carries {
    /// The turn's prompt.
    Prompt,
    /// A steered prompt, handed back to the queue if it is not written.
    Steer {
        /// Its number.
        prompt: PromptId,
        /// Its text.
        text: String,
    },
    /// Anything else (a handshake, an answer, an interrupt), named for the log.
    Other(&'static str),
}

/// One line for the harness's stdin, newline included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Out {
    /// The line.
    pub line: String,
    /// What it carries.
    pub carries: Carries,
}

impl Out {
    pub(super) fn other(line: String, what: &'static str) -> Out {
        Out {
            line,
            carries: Carries::Other(what),
        }
    }
}

/// What a stdout line says that the session must hear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// The harness asks before it runs a tool.
    Asked(ApprovalRequest),
    /// Its turn is done; it waits for more input.
    Finished {
        /// Why, in the harness's words, when it says the turn failed.
        failed: Option<String>,
    },
    /// A steered prompt did not reach the turn (it had ended): it goes
    /// back to the queue.
    SteerRefused {
        /// Its number.
        prompt: PromptId,
        /// Its text.
        text: String,
    },
    /// The harness refused to take the turn's prompt, and why (codex: an
    /// unknown thread, a refused `turn/start`).
    PromptRefused(String),
}

/// What one stdout line means.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Hearing {
    /// The native session the turn runs in, when this line names it.
    pub named: Option<String>,
    /// What the session must hear.
    pub heard: Option<Heard>,
    /// What the turn used, when this line says (claude's `result`: the
    /// turn's own figures; codex's `thread/tokenUsage/updated`: the
    /// thread's running total).
    pub usage: Option<UsageReport>,
    /// Lines to write in answer (a request room-core refuses, a prompt
    /// held until the harness could take it).
    pub writes: Vec<Out>,
    /// A request room-core refused itself, for the app to see.
    pub refused: Option<Refused>,
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
        DecidedBy::TooMany => TOO_MANY.into(),
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

/// A tool's input (JSON text) as JSON text of at most [`INPUT_MAX`] bytes
/// for the app: a longer one is kept as a JSON string holding its start,
/// so the text is always JSON. Escaping can make that string longer than
/// the text it holds, so the start is shortened until the whole fits.
pub(super) fn input_text(text: &str) -> String {
    if text.len() <= INPUT_MAX {
        return text.to_string();
    }
    let mut keep = INPUT_MAX;
    loop {
        let held = format!("{}… (cut at {INPUT_MAX} bytes)", cut(text, keep));
        let json = Value::String(held).to_string();
        if json.len() <= INPUT_MAX || keep == 0 {
            return json;
        }
        keep = keep.saturating_sub(json.len() - INPUT_MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_input_is_kept_as_json_text_cut_to_the_cap() {
        // Quotes double in the string that holds them: still within the cap.
        for content in ["x", "\"", "\u{1}"] {
            let big = serde_json::json!({"content": content.repeat(INPUT_MAX * 2)});
            let text = input_text(&big.to_string());
            assert!(text.len() <= INPUT_MAX, "{}", text.len());
            let v: Value = serde_json::from_str(&text).expect("still JSON");
            assert!(v.as_str().unwrap().ends_with("(cut at 262144 bytes)"));
        }
    }
}
