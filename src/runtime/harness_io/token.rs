//! The poller's epoll tokens: which process, and which of its
//! descriptors, an event is for.

/// Which of a process's descriptors an event is for: the low two bits of
/// its epoll token, the process's ID (never reused) above them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Token {
    Stdout = 0,
    Stderr = 1,
    Stdin = 2,
    Exit = 3,
}

impl Token {
    /// The epoll token for this descriptor of process `id`.
    pub(super) fn of(self, id: u64) -> u64 {
        (id << 2) | self as u64
    }

    pub(super) fn split(token: u64) -> (u64, Token) {
        let kind = match token & 3 {
            0 => Token::Stdout,
            1 => Token::Stderr,
            2 => Token::Stdin,
            _ => Token::Exit,
        };
        (token >> 2, kind)
    }
}

/// The wake-up's token: no process has ID 0.
pub(super) const WAKE: u64 = 0;
