//! The session machine's failures in words, as the app reads them in the
//! session's `error` and in the journal's `error` and `prompt_failed`
//! events.

use room_machines::session::{CutBy, Failure};
use room_machines::Millis;

/// `failure` as a sentence about a session whose harness is `harness`.
pub(crate) fn describe(failure: &Failure, harness: &str) -> String {
    match failure {
        Failure::NotStarted { within_ms } => format!(
            "{harness} did not start within {}: it never named its session; its prompt stays queued for a relaunch",
            secs(*within_ms)
        ),
        Failure::NotSpawned { reason } => format!(
            "{harness} could not be started: {reason}; its prompt stays queued for a relaunch"
        ),
        Failure::ExitedBeforePrompt { exit, detail } => format!(
            "{harness} exited ({exit}) before it read its prompt: {detail}; its prompt stays queued for a relaunch"
        ),
        Failure::LaunchPromptUndelivered { prompt, error } => match error {
            Some(error) => format!(
                "prompt {prompt} could not be handed to {harness}: {error}; it stays queued for a relaunch"
            ),
            None => format!(
                "prompt {prompt} could not be handed to {harness}; it stays queued for a relaunch"
            ),
        },
        Failure::NotCarriedOver { turn, resumed, began } => format!(
            "turn {turn} could not carry the conversation on: {harness} began session {began} instead of resuming {resumed}, so it does not hold the earlier turns"
        ),
        Failure::ExitedBeforeNamed { exit, detail } => {
            format!("{harness} exited ({exit}) before it named its session: {detail}")
        }
        Failure::PromptUndelivered { prompt, error } => format!(
            "prompt {prompt} could not be handed to {harness}: {error}; the queue is paused with it first (resume to try again)"
        ),
        Failure::PromptNotRun { prompt, reason } => {
            format!("prompt {prompt} could not be run: {reason}")
        }
        Failure::InterruptedBeforeDelivery { prompt } => {
            format!("prompt {prompt} was interrupted before it reached {harness}")
        }
        Failure::Cut {
            turn,
            prompt,
            by,
            reported,
        } => {
            let by = match by {
                CutBy::ServiceStop => "a service stop",
                CutBy::ServiceEnd => "room-core ending without stopping it",
            };
            if *reported {
                format!(
                    "turn {turn} was cut by {by}; {harness} had begun prompt {prompt}, which is not run again"
                )
            } else {
                format!(
                    "turn {turn} was cut by {by} before {harness} reported in; prompt {prompt} is queued again"
                )
            }
        }
        Failure::Unresponsive {
            turn,
            prompt,
            within_ms,
        } => format!(
            "{harness} showed no sign of life within {} of getting prompt {prompt}, twice (the second time in turn {turn}, a new process): the prompt was not run",
            secs(*within_ms)
        ),
        Failure::HarnessSaidFailed { why } => format!("the last turn failed: {why}"),
        Failure::TurnFailed { exit, detail } => {
            format!("the last turn failed ({exit}): {detail}")
        }
        Failure::JournalFull { cap, turn, launch } => {
            let full = format!(
                "the session's event journal is full (its cap is {cap}): {harness}'s further output in turn {turn} was dropped and the turn ended"
            );
            if *launch {
                format!("{full}; every turn of this session ends this way now, so start a new session")
            } else {
                format!("{full}; the queue is paused, and every later turn of this session ends this way at its first output, so start a new session")
            }
        }
        Failure::Recorded(text) => text.clone(),
    }
}

/// `ms` as seconds: "120 s", "1.5 s".
fn secs(ms: Millis) -> String {
    format!("{} s", ms as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use room_machines::session::{Exit, JournalCap};

    #[test]
    fn each_failure_reads_as_the_app_has_always_read_it() {
        let cases = [
            (
                Failure::NotStarted { within_ms: 120_000 },
                "claude did not start within 120 s: it never named its session; its prompt stays queued for a relaunch",
            ),
            (
                Failure::ExitedBeforePrompt {
                    exit: Exit::Code(1),
                    detail: "error: unknown option '--bad'".into(),
                },
                "claude exited (exit code 1) before it read its prompt: error: unknown option '--bad'; its prompt stays queued for a relaunch",
            ),
            (
                Failure::JournalFull {
                    cap: JournalCap::Bytes(256 << 20),
                    turn: 2,
                    launch: false,
                },
                "the session's event journal is full (its cap is 256 MiB): claude's further output in turn 2 was dropped and the turn ended; the queue is paused, and every later turn of this session ends this way at its first output, so start a new session",
            ),
            (
                Failure::Cut {
                    turn: 1,
                    prompt: 1,
                    by: CutBy::ServiceEnd,
                    reported: true,
                },
                "turn 1 was cut by room-core ending without stopping it; claude had begun prompt 1, which is not run again",
            ),
            (Failure::Recorded("claude exited".into()), "claude exited"),
        ];
        for (failure, text) in cases {
            assert_eq!(describe(&failure, "claude"), text);
        }
    }
}
