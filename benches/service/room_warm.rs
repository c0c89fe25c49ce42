//! room-core's side of the paired warm follow-ups (paired.rs): one session
//! on real claude, lingering between its turns, each follow-up a `POST
//! …/messages` timed on the session's stream.

use std::path::Path;
use std::time::Instant;

use serde_json::{json, Value};

use crate::follow_up::{first_event_reader, ASSISTANT};
use crate::paired::{Sample, LIMIT};
use crate::stats::realtime_us;

/// What claude's first event of a turn holds on the stream.
pub(crate) const INIT: &str = r#""subtype":"init""#;
/// How long the lingering process is kept: longer than the whole run of
/// rounds, so that every follow-up finds it warm.
const LINGER_MS: u64 = 600_000;

/// What an ACP agent's first message of a turn holds on the stream.
pub(crate) const ACP_FIRST: &str = r#""agent_message_chunk""#;

/// A service with one claude session whose process lingers.
pub(crate) struct RoomWarm {
    /// The service, stopped when this is dropped.
    svc: room_kit::Service,
    /// The session's ID.
    id: String,
    /// The turn's first event and its first assistant message as the
    /// stream shows them; an ACP agent's first event is its first message.
    marks: (&'static str, Option<&'static str>),
}

impl RoomWarm {
    /// Starts the service on `claude` with the section's CLI environment
    /// and a session whose first turn has ended, so that the next message
    /// goes to a warm process; or why not.
    pub(crate) fn start(claude: &Path, cli_env: &[(String, String)]) -> Result<RoomWarm, String> {
        let config = json!({"claude_program": claude, "linger_ms": LINGER_MS});
        let session = json!({"harness": "claude"});
        Self::start_with(config, cli_env.to_vec(), session, (INIT, Some(ASSISTANT)))
    }

    /// The same through the ACP agent `acp` (claude-agent-acp, which runs
    /// `claude`): a session of `"harness": "acp"`.
    pub(crate) fn start_acp(
        acp: &Path,
        claude: &Path,
        cli_env: &[(String, String)],
    ) -> Result<RoomWarm, String> {
        let config = json!({
            "linger_ms": LINGER_MS,
            "acp_agents": {"claude-acp": {"command": acp}},
        });
        let mut env = cli_env.to_vec();
        env.push((
            "CLAUDE_CODE_EXECUTABLE".into(),
            claude.display().to_string(),
        ));
        // claude-agent-acp asks claude to allow skipping permissions, which
        // claude refuses as root but in a sandbox it is told of.
        env.push(("IS_SANDBOX".into(), "1".into()));
        let session = json!({"harness": "acp", "agent": "claude-acp"});
        Self::start_with(config, env, session, (ACP_FIRST, None))
    }

    fn start_with(
        config: Value,
        env: Vec<(String, String)>,
        session: Value,
        marks: (&'static str, Option<&'static str>),
    ) -> Result<RoomWarm, String> {
        let svc = room_kit::Service::builder(env!("CARGO_BIN_EXE_room-core"))
            .config(config)
            .envs(env)
            .log_filter("warn")
            .start();
        let folder = svc.folder("paired-follow-ups");
        let mut body = json!({"workspace": "ws-paired", "folder": folder, "prompt": "first"});
        room_kit::merge(&mut body, session);
        let id = crate::service::start_session(&svc, body)?;
        let warm = RoomWarm { svc, id, marks };
        warm.idle()?;
        Ok(warm)
    }

    /// Follow-up `n`: POST of the message -> `system`/`init` and -> the
    /// first assistant message read on the stream (an ACP agent's: its
    /// first `agent_message_chunk`), then on to the session
    /// idle again, so the next side starts on a quiet claude.
    pub(crate) fn follow_up(&mut self, n: usize) -> Result<Sample, String> {
        let deadline = Instant::now() + LIMIT;
        let (svc, id) = (&self.svc, &self.id);
        let (_, page) = svc.get(&format!("/v1/sessions/{id}/events?limit=1"));
        let after = page["last_seq"].as_u64().ok_or("no last_seq")?;
        let (first, then) = self.marks;
        let reader = first_event_reader(&svc.base, &svc.token(), id, after, first, then)?;
        let began = realtime_us();
        let (status, v) = svc.post(
            &format!("/v1/sessions/{id}/messages"),
            json!({"prompt": format!("follow-up {n}")}),
        );
        if status != 200 {
            return Err(format!("POST a message: {status} {v}"));
        }
        // The reader's own read timeout is longer than the round's, so the
        // wait on it is bounded here, on a channel (no polling beside the
        // figure); a reader left behind ends with the service's stream.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(reader.join()));
        let (init, assistant) = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .map_err(|_| "no assistant message on the stream in time".to_string())?
            .map_err(|_| "the stream ended before the turn's first event".to_string())?;
        let ms = |at: u64| at.saturating_sub(began) as f64 / 1000.0;
        let sample = match then {
            None => Sample {
                first_event: None,
                assistant: ms(init),
            },
            Some(_) => Sample {
                first_event: Some(ms(init)),
                assistant: ms(assistant.ok_or("the turn ended without an assistant message")?),
            },
        };
        self.idle()?;
        Ok(sample)
    }

    /// Waits, bounded, for the session to be idle with nothing queued.
    fn idle(&self) -> Result<Value, String> {
        room_kit::poll_until(LIMIT, || {
            let (status, v) = self.svc.get(&format!("/v1/sessions/{}", self.id));
            (status == 200 && v["state"] == "idle" && v["queue"]["length"] == 0).then_some(v)
        })
        .ok_or_else(|| "the session was not idle in time".to_string())
    }
}
