//! A refusal the API turns into `{"error": "<sentence>", "code": "<snake_case>"}`.

/// An error with its HTTP status, a snake_case code and a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    /// The HTTP status.
    pub status: u16,
    /// Machine-readable code.
    pub code: &'static str,
    /// A full sentence.
    pub message: String,
}

impl Refusal {
    /// Builds a refusal.
    pub fn new(status: u16, code: &'static str, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            code,
            message: message.into(),
        }
    }

    /// 404 for an unknown session.
    pub fn no_session(id: &str) -> Refusal {
        Refusal::new(404, "session_not_found", format!("No session {id}."))
    }

    /// 409 for an action on a closed or failed session.
    pub fn finished(id: &str, state: &str) -> Refusal {
        Refusal::new(409, "session_finished", format!("Session {id} is {state}."))
    }
}
