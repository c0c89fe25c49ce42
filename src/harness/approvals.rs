//! Whether a session may have its app answer approvals (`approvals: app`).
//! An approval means something only if the agent cannot give it itself: a
//! tool running as the service's own account can read the API token and
//! answer its own request, so the harness must run as another account
//! (`agent_uid`).

use room_machines::session::ApprovalMode;

use super::account;

/// Why `approvals` cannot be `mode` for a `harness` session under this
/// `agent_uid`, in a sentence; `None` when it can.
pub(crate) fn refusal(mode: ApprovalMode, agent_uid: Option<u32>) -> Option<String> {
    if mode == ApprovalMode::Auto {
        return None;
    }
    match account::for_agent(agent_uid) {
        Ok(Some(_)) => None,
        Ok(None) => Some(
            "approvals \"app\" needs harnesses to run as another account than the service's \
             (agent_uid): a tool running as the service's own account could read the API token \
             and answer its own approval requests."
                .into(),
        ),
        Err(e) => Some(format!(
            "approvals \"app\" needs the agent account, which cannot be used: {e}."
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_app_answers_only_a_harness_under_another_account() {
        let me = nix::unistd::geteuid().as_raw();
        assert_eq!(refusal(ApprovalMode::Auto, None), None);
        for own in [None, Some(me)] {
            let why = refusal(ApprovalMode::App, own).unwrap();
            assert!(why.contains("could read the API token"), "{why}");
        }
    }
}
