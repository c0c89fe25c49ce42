//! The agent account the tests run harnesses and scripts as.

use crate::ci::absent;

/// The agent account's agreed name.
pub const AGENT: &str = "room-agent";

/// Whether the tests run as root (needed to start anything as another
/// account).
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// The agent account, when the tests run as root (to switch to it) and it
/// exists; otherwise `test` is skipped ([`crate::skip`]) and `None` given.
pub fn agent_account(test: &str) -> Option<nix::unistd::User> {
    if !is_root() {
        return absent(test, "switching to the agent account needs root");
    }
    match nix::unistd::User::from_name(AGENT) {
        Ok(Some(user)) => Some(user),
        _ => absent(
            test,
            "no room-agent account (.ci/run creates it: useradd --create-home --shell /bin/bash room-agent)",
        ),
    }
}
