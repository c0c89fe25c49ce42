//! A turn's stdin: one writer thread owns the pipe and writes, in order,
//! the lines the process's [`Talker`] words for what the session says and
//! for what the harness asked, through a bounded channel, so a harness
//! that stops reading blocks only its own writer, never a shared thread,
//! and what waits to be written is bounded. Lines are worded and queued
//! under one lock, so what the runtime says and what the stdout reader
//! answers reach the pipe in the order the talker worded them.
//!
//! What could not be written is reported where it matters: the prompt as
//! `PromptUndelivered`, a steered prompt as `SteerUndelivered` (it goes
//! back to the queue); anything else only in the log (the turn is ending
//! then, and the machine's grace ends it anyway).

use std::io::Write;
use std::process::ChildStdin;
use std::sync::{Arc, Mutex, PoisonError};

use crossbeam_channel::{Sender, TrySendError};
use room_machines::session::{Input, TurnSeq};

use super::turn_now::TurnNow;
use crate::harness::refusal::Unread;
use crate::harness::speech::{Carries, Hearing, Out, Said};
use crate::harness::talk::{Read, Talker};
use crate::harness::Harness;

/// The most lines waiting for the writer: more than a session has
/// approval requests pending, and the steers an app could send meanwhile.
const WAITING_MAX: usize = 256;

/// What the writer does next.
#[derive(Debug)]
enum Next {
    /// Writes a line.
    Line(Out),
    /// Closes stdin: the harness sees the end of its input.
    Close,
    /// Says that everything before it was written or reported.
    Flushed(crossbeam_channel::Sender<()>),
}

/// The sending end of a turn's stdin; cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct TurnInput {
    tx: Sender<Next>,
    harness: Harness,
    talker: Arc<Mutex<Talker>>,
}

impl TurnInput {
    /// Starts the writer of the `stdin` of a process serving `turn`, which
    /// talks as `talker` does; `report` gets the inputs for what could not
    /// be written.
    pub(crate) fn start(
        stdin: ChildStdin,
        talker: Talker,
        turn: TurnNow,
        report: impl Fn(Input) + Send + 'static,
    ) -> std::io::Result<TurnInput> {
        let (tx, rx) = crossbeam_channel::bounded::<Next>(WAITING_MAX);
        std::thread::Builder::new()
            .name(format!("turn-{}-in", turn.get()))
            .spawn(move || {
                let mut stdin = Some(stdin);
                for write in rx {
                    let seq = turn.get();
                    let out = match write {
                        Next::Line(out) => out,
                        Next::Close => {
                            // Dropping it closes it: the harness sees the end.
                            stdin = None;
                            continue;
                        }
                        Next::Flushed(done) => {
                            let _ = done.send(());
                            continue;
                        }
                    };
                    let Some(pipe) = stdin.as_mut() else {
                        undelivered(seq, out.carries, "its stdin is closed", &report);
                        continue;
                    };
                    let bytes = out.line.as_bytes();
                    if let Err(e) = pipe.write_all(bytes).and_then(|()| pipe.flush()) {
                        stdin = None;
                        undelivered(seq, out.carries, &why(&e), &report);
                    }
                }
            })?;
        Ok(TurnInput {
            tx,
            harness: talker.harness(),
            talker: Arc::new(Mutex::new(talker)),
        })
    }

    /// Words `said` and queues its lines for the writer. What cannot be
    /// queued (the writer is gone, or has [`WAITING_MAX`] lines waiting:
    /// the harness does not read) is given back, as what each line carried.
    pub(crate) fn say(&self, said: Said) -> Result<(), Vec<Carries>> {
        let mut talker = self.talker.lock().unwrap_or_else(PoisonError::into_inner);
        let lines = talker.say(said);
        self.queue(lines)
    }

    /// What a line of the harness's stdout means; the lines it must be
    /// answered with are queued here (one that cannot be is logged). The
    /// line is parsed before the talker is taken, so a long line never
    /// holds up what the runtime says meanwhile.
    pub(crate) fn hear(&self, line: &str) -> Hearing {
        self.heard(Talker::read(self.harness, line))
    }

    /// What a line of the harness's stdout that was not read whole, or
    /// cannot be served, means: a request its start names is answered at
    /// once, the answer queued here.
    pub(crate) fn hear_unread(&self, unread: Unread) -> Hearing {
        self.heard(Talker::read_unread(self.harness, unread))
    }

    fn heard(&self, read: Read) -> Hearing {
        let mut talker = self.talker.lock().unwrap_or_else(PoisonError::into_inner);
        let mut hearing = talker.heard(read);
        let writes = std::mem::take(&mut hearing.writes);
        if let Err(lost) = self.queue(writes) {
            log::warn!(
                "{} lines for the harness could not be queued: {lost:?}",
                lost.len()
            );
        }
        hearing
    }

    /// Closes stdin once what is queued before is written; whether that
    /// could be queued.
    pub(crate) fn close(&self) -> bool {
        self.tx.try_send(Next::Close).is_ok()
    }

    /// Waits until every line queued so far was written or reported as not
    /// written (`SteerUndelivered`, `PromptUndelivered`), at most until
    /// `until`; whether it got there. The process's end waits for this,
    /// so a steer its harness never got is back in the queue before the
    /// turn is over, and no later prompt can run ahead of it.
    pub(crate) fn flush(&self, until: std::time::Instant) -> bool {
        let (done, flushed) = crossbeam_channel::bounded(1);
        self.tx.send_deadline(Next::Flushed(done), until).is_ok()
            && flushed.recv_deadline(until).is_ok()
    }

    fn queue(&self, lines: Vec<Out>) -> Result<(), Vec<Carries>> {
        let mut lost = Vec::new();
        for out in lines {
            if let Err(e) = self.tx.try_send(Next::Line(out)) {
                let (TrySendError::Full(w) | TrySendError::Disconnected(w)) = e;
                if let Next::Line(out) = w {
                    lost.push(out.carries);
                }
            }
        }
        if lost.is_empty() {
            Ok(())
        } else {
            Err(lost)
        }
    }
}

/// Reports what a line that carried `carries` not being written means.
pub(crate) fn undelivered(
    seq: TurnSeq,
    carries: Carries,
    error: &str,
    mut report: impl FnMut(Input),
) {
    match carries {
        Carries::Prompt => report(Input::PromptUndelivered {
            seq,
            error: error.to_string(),
        }),
        Carries::Steer { prompt, text } => report(Input::SteerUndelivered { seq, prompt, text }),
        Carries::Other(what) => {
            log::warn!("turn {seq}: {what} for its harness was not written: {error}")
        }
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
