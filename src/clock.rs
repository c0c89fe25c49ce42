//! The runtime's clock: monotonic `Millis` for the machines, converted to
//! Unix milliseconds only for the wire.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use room_machines::Millis;

/// Milliseconds since the service started (monotonic), plus the Unix time of
/// that start so wire timestamps can be derived.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: Instant,
    unix_at_start: u64,
}

impl Default for Clock {
    fn default() -> Self {
        Clock {
            start: Instant::now(),
            unix_at_start: unix_ms(),
        }
    }
}

impl Clock {
    /// Now, on the machines' monotonic scale.
    pub fn now(&self) -> Millis {
        self.start.elapsed().as_millis() as Millis
    }

    /// The Unix time in ms of a monotonic instant.
    pub fn to_unix(&self, at: Millis) -> u64 {
        self.unix_at_start.saturating_add(at)
    }

    /// The `Instant` of a monotonic instant, for the timer thread.
    pub fn instant(&self, at: Millis) -> Instant {
        self.start + std::time::Duration::from_millis(at)
    }
}

/// The wall clock in Unix milliseconds.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
