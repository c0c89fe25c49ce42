//! One run of a loop: its check script on the agent account, recorded as
//! `last_error` and `last_output`, then the run's thread.

use std::time::Duration;

use serde_json::Value;

use super::account::{self, AgentAccount};
use super::http::Response;
use super::launch::{LaunchKey, NewThread};
use super::loops::Loop;
use super::script::{self, Script};
use super::website::{Sandbox, Website};

impl Website {
    /// The script of loop `l`, ready to run in its sandbox.
    fn script_of(&self, l: &Loop, sandbox: &Sandbox, text: &str) -> Result<Script, String> {
        let account = match &sandbox.config.agent_account {
            Some(name) => Some(
                AgentAccount::lookup(name).ok_or_else(|| format!("there is no account {name}"))?,
            ),
            None => None,
        };
        let switch = account::switch_to(account.as_ref())?;
        let who = account.unwrap_or_else(AgentAccount::current);
        Ok(Script {
            text: text.to_string(),
            loop_id: l.id.clone(),
            switch,
            env: vec![
                ("PATH".into(), sandbox.config.script_path.clone()),
                ("HOME".into(), who.home.to_string_lossy().into_owned()),
                ("USER".into(), who.name.clone()),
                ("LOGNAME".into(), who.name.clone()),
                (
                    "ROOM_CORE_SOCKET".into(),
                    sandbox.config.agent_socket.to_string_lossy().into_owned(),
                ),
            ],
            cwd: sandbox.config.script_cwd.clone().unwrap_or(who.home),
            limit: Duration::from_millis(self.config.script_limit_ms),
            grace: Duration::from_millis(self.config.kill_grace_ms),
        })
    }

    /// One run of loop `id`: its script (if any), recorded as `last_error`
    /// and `last_output`; then, if the script succeeded and the loop has a
    /// prompt, the run's thread: a new top-level thread, or a message to the
    /// loop's thread, with the script's output added to the prompt. The
    /// output is never logged.
    pub fn run_loop(&self, id: &str) {
        let Some(l) = self.loops.get(id) else {
            return;
        };
        let limit = Duration::from_millis(self.config.script_limit_ms);
        let (last_error, last_output) = match (&l.script, self.sandbox(&l.sandbox)) {
            (_, None) => (
                Some(format!(
                    "The loop's sandbox {} is not configured.",
                    l.sandbox
                )),
                None,
            ),
            (None, Some(_)) => (None, None),
            (Some(text), Some(sandbox)) => {
                let outcome = match self.script_of(&l, sandbox, text) {
                    Ok(s) => script::run(&s),
                    Err(e) => script::Outcome {
                        ending: script::Ending::NotStarted(e),
                        output: String::new(),
                        pgid: None,
                        took: Duration::ZERO,
                    },
                };
                log::info!(
                    "loop {id}: script ended ({:?}) after {} ms",
                    outcome.ending,
                    outcome.took.as_millis()
                );
                (outcome.last_error(limit), Some(outcome.output))
            }
        };
        let ok = last_error.is_none();
        let ended = self.now_ms();
        let output = last_output.clone();
        let runs = match self.loops.update(id, |x| {
            x.last_error = last_error;
            x.last_output = output;
            x.last_run_ms = Some(ended);
            x.runs += 1;
            x.runs
        }) {
            Ok(Some(n)) => n,
            Ok(None) => return, // deleted during the run
            Err(e) => {
                log::error!("loop {id}: cannot record the run: {e}");
                return;
            }
        };
        let Some(prompt) = l.prompt.clone().filter(|_| ok) else {
            return;
        };
        let prompt = match last_output
            .as_deref()
            .map(str::trim)
            .filter(|o| !o.is_empty())
        {
            Some(out) => format!("{prompt}\n\nThe loop's check script printed:\n{out}"),
            None => prompt,
        };
        let failed = if l.new_thread {
            self.start_thread(NewThread {
                owner: l.owner.clone(),
                project: l.project.clone(),
                sandbox: l.sandbox.clone(),
                agent: l.agent,
                prompt: Some(prompt),
                model: None,
                effort: None,
                started_by_loop: Some(l.id.clone()),
                launch: Some(LaunchKey {
                    scope: l.id.clone(),
                    request_id: format!("run-{runs}"),
                }),
            })
            .err()
            .map(|r| format!("The run could not start its thread: {}", error_text(&r)))
        } else {
            let thread = l.thread.clone().unwrap_or_default();
            self.sandbox(&l.sandbox)
                .map(|s| s.core.message(&thread, &prompt))
                .and_then(Result::err)
                .map(|e| format!("The run could not prompt its thread: {e}"))
        };
        if let Some(message) = failed {
            let _ = self.loops.update(id, |x| x.last_error = Some(message));
        }
    }
}

/// The sentence of an error answer.
fn error_text(r: &Response) -> String {
    serde_json::from_slice::<Value>(&r.body)
        .ok()
        .and_then(|v| v["error"].as_str().map(String::from))
        .unwrap_or_else(|| format!("HTTP {}", r.status))
}
