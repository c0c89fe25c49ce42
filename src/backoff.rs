//! Failed accepts in a row (`EMFILE`, `ENFILE`, ...): the pause before the
//! next try, doubling up to a ceiling, and a log that says when a run of
//! failures began and when it ended instead of one line per try. Both front
//! ends (the HTTP API and the agent socket) keep accepting through them.

use std::time::{Duration, Instant};

/// The first pause after a failed accept.
pub(crate) const MIN: Duration = Duration::from_millis(5);

/// The longest pause.
pub(crate) const MAX: Duration = Duration::from_millis(500);

/// A run of failed accepts on one listener.
#[derive(Debug)]
pub(crate) struct Failures {
    what: &'static str,
    count: u64,
    since: Option<Instant>,
    pause: Duration,
}

impl Failures {
    /// No failures yet on the listener named `what` (for the log).
    pub(crate) fn new(what: &'static str) -> Failures {
        Failures {
            what,
            count: 0,
            since: None,
            pause: MIN,
        }
    }

    /// Notes a failed accept; returns how long to pause before the next.
    pub(crate) fn failed(&mut self, e: &std::io::Error) -> Duration {
        if self.count == 0 {
            log::warn!("{}: accept failed: {e}; retrying with backoff", self.what);
            self.since = Some(Instant::now());
            self.pause = MIN;
        } else {
            self.pause = (self.pause * 2).min(MAX);
        }
        self.count += 1;
        self.pause
    }

    /// Notes a successful accept (and logs the end of a run of failures).
    pub(crate) fn recovered(&mut self) {
        if self.count > 0 {
            log::warn!(
                "{}: accepting again after {} failed accepts over {:?}",
                self.what,
                self.count,
                self.since.map(|s| s.elapsed()).unwrap_or_default()
            );
            *self = Failures::new(self.what);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_doubles_up_to_its_ceiling_and_resets_on_success() {
        let mut f = Failures::new("test");
        let e = std::io::Error::from_raw_os_error(24);
        let pauses: Vec<Duration> = (0..10).map(|_| f.failed(&e)).collect();
        assert_eq!(pauses[0], MIN);
        assert_eq!(pauses[1], MIN * 2);
        assert_eq!(*pauses.last().unwrap(), MAX);
        f.recovered();
        assert_eq!(f.failed(&e), MIN);
    }
}
