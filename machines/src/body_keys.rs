//! The website request body's keys as a caller's flags name them: the
//! command parser refuses the reserved ones, the request builder skips them.

/// Body keys a caller's `--flag` may not set: Core fills them itself, and a
/// caller must never choose who it acts for.
pub const RESERVED_KEYS: &[&str] = &["action", "session", "automation", "args"];

/// `--request-id` as a body key: `request-id` becomes `request_id`.
pub fn snake_case(flag: &str) -> String {
    flag.replace('-', "_")
}
