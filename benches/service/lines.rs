//! A child's output read line by line on a thread of its own, each line
//! with the moment it was read, so that every wait the paired warm
//! follow-ups make on a process is bounded (a side that hangs is skipped
//! with its reason, never hangs the bench) and the reader's own hop to the
//! bench is not in the figure.

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The lines of one pipe, as its reader thread read them.
pub(crate) struct Lines {
    /// Each line (without its newline) and when it was read.
    rx: Receiver<(Instant, String)>,
    /// Whose lines, for the reasons a wait gives.
    name: &'static str,
}

impl Lines {
    /// Starts reading `pipe` (the output of `name`) on a thread that ends
    /// at its end.
    pub(crate) fn new(name: &'static str, pipe: impl Read + Send + 'static) -> Lines {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if tx.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        Lines { rx, name }
    }

    /// Reads on to the first line holding `what` by `deadline`: that line
    /// and when it was read, or why not.
    pub(crate) fn until(&self, what: &str, deadline: Instant) -> Result<(Instant, String), String> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left.max(Duration::from_millis(1))) {
                Ok((at, line)) if line.contains(what) => return Ok((at, line)),
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!("{} printed no {what} in time", self.name))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!("{} ended before {what}", self.name))
                }
            }
        }
    }
}
