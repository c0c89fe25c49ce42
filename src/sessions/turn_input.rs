//! A turn's stdin: one writer thread owns the pipe and writes what the
//! turn's effects say, in order, through a bounded channel, so a harness
//! that stops reading blocks only its own writer, never a shared thread,
//! and what waits to be written is bounded.
//!
//! What could not be written is reported where it matters: the prompt as
//! `PromptUndelivered`, a steered prompt as `SteerUndelivered` (it goes
//! back to the queue); an approval's answer or an interrupt only in the
//! log (the turn is ending then, and the machine's grace ends it anyway).

use std::io::Write;
use std::process::ChildStdin;

use crossbeam_channel::{Sender, TrySendError};
use room_machines::session::{Input, PromptId, TurnSeq};

use super::turn_now::TurnNow;

/// The most messages waiting for the writer: more than a session has
/// approval requests pending, and the steers an app could send meanwhile.
const WAITING_MAX: usize = 256;

/// Something to write to a turn's stdin.
#[derive(Debug)]
pub enum Say {
    /// The turn's prompt.
    Prompt(Vec<u8>),
    /// A prompt for the running turn.
    Steer {
        /// Its number.
        prompt: PromptId,
        /// Its text, handed back to the queue if it cannot be written.
        text: String,
        /// What is written.
        line: String,
    },
    /// An approval's answer, an interrupt, an answer to a request that is
    /// not served.
    Line(String),
    /// The end of stdin.
    Close,
}

/// The sending end of a turn's stdin; cheap to clone.
#[derive(Debug, Clone)]
pub struct TurnInput {
    tx: Sender<Say>,
}

impl TurnInput {
    /// Starts the writer of the `stdin` of a process serving `turn`;
    /// `report` gets the inputs for what could not be written.
    pub fn start(
        stdin: ChildStdin,
        turn: TurnNow,
        report: impl Fn(Input) + Send + 'static,
    ) -> std::io::Result<TurnInput> {
        let (tx, rx) = crossbeam_channel::bounded::<Say>(WAITING_MAX);
        std::thread::Builder::new()
            .name(format!("turn-{}-in", turn.get()))
            .spawn(move || {
                let mut stdin = Some(stdin);
                for say in rx {
                    let seq = turn.get();
                    let Some(pipe) = stdin.as_mut() else {
                        undelivered(seq, say, "its stdin is closed", &report);
                        continue;
                    };
                    let bytes: &[u8] = match &say {
                        Say::Prompt(b) => b,
                        Say::Steer { line, .. } | Say::Line(line) => line.as_bytes(),
                        Say::Close => {
                            // Dropping it closes it: the harness sees the end.
                            stdin = None;
                            continue;
                        }
                    };
                    if let Err(e) = pipe.write_all(bytes).and_then(|()| pipe.flush()) {
                        stdin = None;
                        undelivered(seq, say, &why(&e), &report);
                    }
                }
            })?;
        Ok(TurnInput { tx })
    }

    /// Queues `say` for the writer; gives it back when the writer is gone
    /// or has [`WAITING_MAX`] messages waiting (the harness does not read).
    pub fn say(&self, say: Say) -> Result<(), Say> {
        self.tx.try_send(say).map_err(|e| match e {
            TrySendError::Full(s) | TrySendError::Disconnected(s) => s,
        })
    }
}

/// Reports what `say` not being written means.
pub fn undelivered(seq: TurnSeq, say: Say, error: &str, mut report: impl FnMut(Input)) {
    match say {
        Say::Prompt(_) => report(Input::PromptUndelivered {
            seq,
            error: error.to_string(),
        }),
        Say::Steer { prompt, text, .. } => report(Input::SteerUndelivered { seq, prompt, text }),
        Say::Line(line) => log::warn!(
            "turn {seq}: a message of {} bytes for its harness was not written: {error}",
            line.len()
        ),
        Say::Close => {}
    }
}

/// Why a write to stdin failed, in a sentence.
fn why(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::BrokenPipe => {
            "its stdin was closed before it read the prompt (the harness exited or stopped reading)"
                .to_string()
        }
        _ => format!("writing its stdin failed: {e}"),
    }
}
