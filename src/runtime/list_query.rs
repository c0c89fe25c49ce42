//! `GET /v1/sessions`'s query and its bounds.

use room_machines::session::Shown;

/// The most sessions one page of the list returns, and the default.
pub(crate) const MAX_LIST: usize = 1024;
/// The default page of the session list.
pub(crate) const DEFAULT_LIST: usize = 256;

/// `GET /v1/sessions`'s query.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    /// Only this workspace's sessions.
    pub workspace: Option<String>,
    /// Only sessions in this state.
    pub state: Option<Shown>,
    /// Start after this session (the previous page's `next_after`).
    pub after: Option<String>,
    /// At most this many (1..=[`MAX_LIST`]).
    pub limit: usize,
}
