//! Section 9's second half: an approval's round trip with real claude,
//! natively and through the ACP agent claude-agent-acp, in the same run:
//! from the stream showing `approval_requested` to the stream showing the
//! tool's result, the app allowing at once in between. Each side's session
//! runs as the agent account (which `approvals: app` needs) against the
//! loopback fake model; the rounds alternate between the sides.

use std::io::BufRead;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::stats::{ms, realtime_us, stats, Table};

/// Round trips timed per side.
const ROUNDS: usize = 15;
/// The longest one turn (asked, allowed, written) may take.
const LIMIT: Duration = Duration::from_secs(60);

/// One side: its service and session, and what on the stream shows the
/// allowed tool's result.
struct Side {
    svc: room_kit::Service,
    id: String,
    folder: std::path::PathBuf,
    result: &'static str,
    took: Vec<f64>,
}

impl Side {
    /// A service running real claude (`acp`: through claude-agent-acp) as
    /// `agent`, and its session's first turn asked and allowed.
    fn start(
        acp: Option<&Path>,
        claude: &Path,
        cli_env: &[(String, String)],
        agent: &nix::unistd::User,
        sockets: &Path,
    ) -> Result<Side, String> {
        let name = if acp.is_some() { "acp" } else { "native" };
        let mut config = json!({
            "agent_uid": agent.uid.as_raw(),
            "agent_socket": sockets.join(format!("{name}.sock")),
            "claude_program": claude,
            "linger_ms": 600_000,
        });
        let mut env = cli_env.to_vec();
        let (harness, result) = match acp {
            Some(acp) => {
                config["acp_agents"] = json!({"claude-acp": {"command": acp}});
                env.push((
                    "CLAUDE_CODE_EXECUTABLE".into(),
                    claude.display().to_string(),
                ));
                (
                    json!({"harness": "acp", "agent": "claude-acp"}),
                    "\"completed\"",
                )
            }
            None => (json!({"harness": "claude"}), "\"tool_result\""),
        };
        let svc = room_kit::Service::builder(env!("CARGO_BIN_EXE_room-core"))
            .config(config)
            .envs(env)
            .log_filter("warn")
            .start();
        let folder = svc.folder(&format!("approvals-{name}"));
        std::fs::create_dir_all(&folder).map_err(|e| e.to_string())?;
        room_kit::chown_tree(&folder, agent.uid.as_raw(), agent.gid.as_raw());
        let mut body = json!({"workspace": "ws-approvals", "folder": folder, "approvals": "app",
                              "prompt": format!("TOOL_WRITE {}/w-0.txt yes", folder.display())});
        room_kit::merge(&mut body, harness);
        let id = crate::service::start_session(&svc, body)?;
        let mut side = Side {
            svc,
            id,
            folder,
            result,
            took: Vec::new(),
        };
        // The first turn warms the process; it is not timed.
        side.round(0, false)?;
        Ok(side)
    }

    /// Round `n`: its message (none for the first), the approval allowed
    /// as soon as the stream shows it, and (`timed`) the time from that
    /// moment to the tool's result on the stream.
    fn round(&mut self, n: usize, timed: bool) -> Result<(), String> {
        let (svc, id) = (&self.svc, &self.id);
        let (_, page) = svc.get(&format!("/v1/sessions/{id}/events?limit=1"));
        let after = page["last_seq"].as_u64().unwrap_or(0);
        let http = ureq::AgentBuilder::new().timeout(LIMIT).build();
        let token = format!("Bearer {}", svc.token());
        let stream = http
            .get(&format!(
                "{}/v1/sessions/{id}/stream?after={after}",
                svc.base
            ))
            .set("Authorization", &token)
            .call()
            .map_err(|e| format!("open the stream: {e}"))?;
        if n > 0 {
            let prompt = format!("TOOL_WRITE {}/w-{n}.txt yes", self.folder.display());
            let (status, v) = svc.post(
                &format!("/v1/sessions/{id}/messages"),
                json!({"prompt": prompt}),
            );
            if status != 200 {
                return Err(format!("POST a message: {status} {v}"));
            }
        }
        let mut reader = std::io::BufReader::new(stream.into_reader());
        let (mut asked_at, mut line) = (None, String::new());
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return Err("the stream ended before the tool's result".into());
            }
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            if asked_at.is_none() && data.contains(r#""kind":"approval_requested""#) {
                let at = realtime_us();
                let v: Value = serde_json::from_str(data.trim_end()).map_err(|e| e.to_string())?;
                let approval = &v["data"]["id"];
                http.post(&format!(
                    "{}/v1/sessions/{id}/approvals/{approval}",
                    svc.base
                ))
                .set("Authorization", &token)
                .send_json(json!({"decision": "allow"}))
                .map_err(|e| format!("answer the approval: {e}"))?;
                asked_at = Some(at);
            } else if let Some(at) = asked_at.filter(|_| data.contains(self.result)) {
                if timed {
                    self.took
                        .push(realtime_us().saturating_sub(at) as f64 / 1000.0);
                }
                break;
            }
        }
        let written = self.folder.join(format!("w-{n}.txt"));
        room_kit::poll_until(LIMIT, || {
            let (_, v) = svc.get(&format!("/v1/sessions/{id}"));
            (v["state"] == "idle" && v["queue"]["length"] == 0).then_some(())
        })
        .ok_or("the session was not idle in time")?;
        match std::fs::read_to_string(&written) {
            Ok(text) if text == "yes\n" => Ok(()),
            other => Err(format!("the allowed write {n} did not run: {other:?}")),
        }
    }
}

/// Real claude's approval round trip natively and through
/// claude-agent-acp, alternating rounds; `claude` on PATH, `acp` if there.
pub(crate) fn real_round_trips(table: &mut Table, agent: &nix::unistd::User, sockets: &Path) {
    let what = "approval round trip, real claude";
    let Some(claude) = crate::startup::on_path("claude") else {
        table.row(
            what,
            "-",
            "skipped".into(),
            "-".into(),
            "skipped: no claude on PATH".into(),
        );
        return;
    };
    let root = std::env::temp_dir().join(format!("room-core-bench-asks-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let model = room_kit::Model::start(&root);
    let cli_env = model.cli_env(&root);
    room_kit::chown_tree(&root, agent.uid.as_raw(), agent.gid.as_raw());
    let acp = crate::startup::on_path("claude-agent-acp")
        .ok_or_else(|| "no claude-agent-acp on PATH".to_string());
    let mut sides = [
        (
            "native claude",
            Side::start(None, &claude, &cli_env, agent, sockets),
        ),
        (
            "through claude-agent-acp (ACP)",
            acp.and_then(|acp| Side::start(Some(&acp), &claude, &cli_env, agent, sockets)),
        ),
    ];
    for n in 1..=ROUNDS {
        for i in 0..sides.len() {
            let (_, side) = &mut sides[(n + i) % sides.len()];
            if let Ok(s) = side {
                if let Err(why) = s.round(n, true) {
                    *side = Err(format!("{why} (at round {n} of {ROUNDS})"));
                }
            }
        }
    }
    for (name, side) in &sides {
        let setup = format!("{name} as {}, app answers at once", agent.name);
        match side {
            Ok(s) => {
                let (p50, p99) = stats(&s.took);
                let note = format!(
                    "{} rounds: approval_requested on the stream -> the allow POSTed -> the tool's result on the stream (claude's tool_result, the agent's completed tool call), the write included",
                    s.took.len()
                );
                table.row(what, &setup, ms(p50), ms(p99), note);
            }
            Err(why) => table.row(
                what,
                &setup,
                "skipped".into(),
                "-".into(),
                format!("skipped: {why}"),
            ),
        }
    }
    drop(sides);
    drop(model);
    let _ = std::fs::remove_dir_all(&root);
}
