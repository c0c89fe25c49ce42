//! What both parts of the demo share: its error type and a bounded wait.

use std::time::Duration;

use room_kit::poll_until;

/// Any error the demo reports.
pub type Error = Box<dyn std::error::Error>;

/// `f`'s first value within `limit`, or an error that says it timed out.
pub fn wait_for<T>(limit: Duration, f: impl FnMut() -> Option<T>) -> Result<T, Error> {
    poll_until(limit, f).ok_or_else(|| "timed out".into())
}
