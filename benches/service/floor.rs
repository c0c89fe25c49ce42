//! claude's own floor under a warm follow-up, one side of the paired warm
//! follow-ups (paired.rs): claude on stream-json run with the service's own
//! turn spec and driven straight from the bench, one user message after
//! another. What room-core's warm figure adds to this is its own.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::lines::Lines;
use crate::paired::{Sample, LIMIT};

/// What claude's first event of a turn holds.
const INIT: &str = r#""subtype":"init""#;
/// What claude's assistant messages hold.
const ASSISTANT: &str = r#""type":"assistant""#;
/// What ends claude's turn.
const RESULT: &str = r#""type":"result""#;

/// A warm claude the bench writes to itself.
pub(crate) struct Floor {
    /// The claude process, ended when the floor is dropped.
    child: room_core::supervise::Child,
    /// Its stdin, where each follow-up is written; none once closed.
    stdin: Option<std::process::ChildStdin>,
    /// Its stdout, read on a thread.
    stdout: Lines,
}

impl Floor {
    /// Starts claude in a folder of its own under `root` with the
    /// section's CLI environment and runs its first turn to its result, so
    /// that the next message is a warm one; or why not.
    pub(crate) fn start(
        claude: &Path,
        cli_env: &[(String, String)],
        root: &Path,
    ) -> Result<Floor, String> {
        use room_core::harness::speech::Said;
        let folder = root.join("work").join("warm-floor");
        std::fs::create_dir_all(&folder).map_err(|e| e.to_string())?;
        let mut spec = crate::service::claude_turn_spec(root, claude, &folder)?;
        spec.env
            .extend(cli_env.iter().map(|(k, v)| (k.into(), v.into())));
        let (mut child, mut talker) = crate::service::spawn_turn(spec);
        let mut stdin = child.stdin.take().ok_or("claude has no stdin")?;
        let stdout = Lines::new("claude", child.stdout.take().ok_or("claude has no stdout")?);
        for out in talker.say(Said::prompt("first".into())) {
            stdin
                .write_all(out.line.as_bytes())
                .map_err(|e| e.to_string())?;
        }
        let floor = Floor {
            child,
            stdin: Some(stdin),
            stdout,
        };
        floor.stdout.until(RESULT, Instant::now() + LIMIT)?;
        Ok(floor)
    }

    /// Follow-up `n`: the user message written to claude's stdin, timed to
    /// `system`/`init` and to the first assistant message on its stdout,
    /// and read on to the turn's result so the next side starts on a
    /// quiet claude.
    pub(crate) fn follow_up(&mut self, n: usize) -> Result<Sample, String> {
        let line = room_core::harness::claude::protocol::user_message(&format!("follow-up {n}"));
        let deadline = Instant::now() + LIMIT;
        let began = Instant::now();
        self.stdin
            .as_mut()
            .ok_or("claude's stdin is closed")?
            .write_all(line.as_bytes())
            .map_err(|e| format!("write to claude: {e}"))?;
        let (init, _) = self.stdout.until(INIT, deadline)?;
        let (assistant, _) = self.stdout.until(ASSISTANT, deadline)?;
        self.stdout.until(RESULT, deadline)?;
        let ms = |at: Instant| at.duration_since(began).as_secs_f64() * 1000.0;
        Ok(Sample {
            first_event: Some(ms(init)),
            assistant: ms(assistant),
        })
    }
}

impl Drop for Floor {
    /// Ends claude: the end of its stdin is how a turn is meant to end; a
    /// claude that has not gone within a few seconds is killed.
    fn drop(&mut self) {
        self.stdin = None;
        if room_kit::procs::exited_within(self.child.pid(), Duration::from_secs(3)).is_none() {
            let _ = self.child.signal(Signal::SIGKILL);
        }
        let _ = self.child.wait();
    }
}
