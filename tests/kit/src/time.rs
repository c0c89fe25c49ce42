//! Deadlines instead of sleeps, and the realtime clock.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Polls `f` every 20 ms until it gives a value; `None` once `limit` has
/// passed without one.
pub fn poll_until<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `f` every 20 ms until it gives a value; panics naming `what` at
/// the deadline.
pub fn wait_until<T>(what: &str, limit: Duration, f: impl FnMut() -> Option<T>) -> T {
    poll_until(limit, f).unwrap_or_else(|| panic!("timed out waiting for {what}"))
}

/// The Unix time in ms.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The realtime clock in ns.
pub fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}
