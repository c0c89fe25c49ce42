//! A loop (an automation) as the website keeps it, what its owner and
//! others see of it, and what a new one is made of.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::cron::Cron;
use room_core::harness::Harness;

/// One loop: `<state_dir>/loops/<id>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Loop {
    /// A UUID v4 (36 characters): what `CLOUDROOM_LOOP` carries.
    pub id: String,
    /// Who made it; the website acts as this user for its script.
    pub owner: String,
    /// The project its runs belong to.
    pub project: String,
    /// The agent its runs' threads (and its script's top-level spawns) use.
    pub agent: Harness,
    /// A name for people.
    #[serde(default)]
    pub name: Option<String>,
    /// A standard 5-field cron schedule (UTC), for a repeating loop.
    #[serde(default)]
    pub schedule: Option<String>,
    /// Unix ms of a one-time loop's run (`--at`, `--in`).
    #[serde(default)]
    pub at_ms: Option<u64>,
    /// Each run starts a new top-level thread (else it re-prompts `thread`).
    pub new_thread: bool,
    /// The thread a re-prompting loop prompts.
    #[serde(default)]
    pub thread: Option<String>,
    /// The check script (bash), run before the prompt.
    #[serde(default)]
    pub script: Option<String>,
    /// What a run tells its thread; the script's output is added to it.
    #[serde(default)]
    pub prompt: Option<String>,
    /// The sandbox whose Core the script runs beside.
    pub sandbox: String,
    /// Paused: the schedule does not run it (`run` still does).
    #[serde(default)]
    pub paused: bool,
    /// Why the last run failed; null when it succeeded.
    #[serde(default)]
    pub last_error: Option<String>,
    /// The last run's script output (stdout and stderr combined, the last
    /// 4 KB). Shown to the owner only; never logged.
    #[serde(default)]
    pub last_output: Option<String>,
    /// Unix ms the last run ended.
    #[serde(default)]
    pub last_run_ms: Option<u64>,
    /// How many runs have ended.
    #[serde(default)]
    pub runs: u64,
    /// What the last run's thread reported (`room-cli loop report`).
    #[serde(default)]
    pub last_report: Option<String>,
    /// The secret in the loop's hook URL; never listed.
    #[serde(default)]
    pub hook_secret: Option<String>,
    /// Unix ms it was made.
    pub created_ms: u64,
}

impl Loop {
    /// The next scheduled run after `now_ms`, if any (none while paused).
    pub fn next_run_ms(&self, now_ms: u64) -> Option<u64> {
        if self.paused {
            return None;
        }
        if let Some(at) = self.at_ms {
            return self.last_run_ms.map_or(true, |r| r < at).then_some(at);
        }
        Cron::parse(self.schedule.as_deref()?)
            .ok()?
            .next_after(now_ms)
    }

    /// The loop as `viewer` sees it in `loop list`: its owner sees
    /// everything (last_error, last_output, script, prompt); anyone else in
    /// the project sees only what it is and when it runs. The hook secret is
    /// never shown here.
    pub fn view(&self, viewer: &str, now_ms: u64) -> Value {
        let mut v = json!({
            "id": self.id,
            "name": self.name,
            "owner": self.owner,
            "project": self.project,
            "agent": self.agent,
            "schedule": self.schedule,
            "at_ms": self.at_ms,
            "new_thread": self.new_thread,
            "paused": self.paused,
            "next_run_ms": self.next_run_ms(now_ms),
            "runs": self.runs,
            "last_run_ms": self.last_run_ms,
        });
        if viewer == self.owner {
            let m = v.as_object_mut().expect("an object");
            m.insert("thread".into(), json!(self.thread));
            m.insert("script".into(), json!(self.script));
            m.insert("prompt".into(), json!(self.prompt));
            m.insert("last_error".into(), json!(self.last_error));
            m.insert("last_output".into(), json!(self.last_output));
            m.insert("last_report".into(), json!(self.last_report));
        }
        v
    }
}

/// The largest script a loop keeps.
pub const MAX_SCRIPT: usize = 64 * 1024;

/// What a new loop is made of, from room-cli or the app.
#[derive(Debug, Clone)]
pub struct NewLoop {
    /// Its owner.
    pub owner: String,
    /// Its project.
    pub project: String,
    /// Where its script runs.
    pub sandbox: String,
    /// Its agent.
    pub agent: Harness,
    /// A name.
    pub name: Option<String>,
    /// A cron schedule.
    pub schedule: Option<String>,
    /// A one-time run.
    pub at_ms: Option<u64>,
    /// A new thread per run.
    pub new_thread: bool,
    /// The thread a re-prompting loop prompts.
    pub thread: Option<String>,
    /// The check script.
    pub script: Option<String>,
    /// The run's prompt.
    pub prompt: Option<String>,
    /// Made paused.
    pub paused: bool,
}

/// Checks the schedule (exactly one of a cron schedule and a time) and
/// the script's size.
pub fn check(
    schedule: &Option<String>,
    at_ms: Option<u64>,
    script: &Option<String>,
) -> Result<(), String> {
    match (schedule, at_ms) {
        (Some(_), Some(_)) | (None, None) => {
            return Err("A loop needs exactly one of --cron, --at or --in.".into())
        }
        (Some(s), None) => {
            Cron::parse(s).map_err(|e| format!("The schedule {s:?} is invalid: {e}"))?;
        }
        (None, Some(_)) => {}
    }
    if script.as_ref().is_some_and(|s| s.len() > MAX_SCRIPT) {
        return Err("The script is larger than 64 KiB.".into());
    }
    Ok(())
}

impl NewLoop {
    /// The loop, or why it cannot be made.
    pub fn make(self, now_ms: u64) -> Result<Loop, String> {
        check(&self.schedule, self.at_ms, &self.script)?;
        if !super::records::valid_key(&self.project) {
            return Err(format!("The project name {:?} is not valid.", self.project));
        }
        if !self.new_thread && self.thread.is_none() {
            return Err("A loop that re-prompts a thread needs that thread.".into());
        }
        Ok(Loop {
            id: uuid::Uuid::new_v4().to_string(),
            owner: self.owner,
            project: self.project,
            agent: self.agent,
            name: self.name,
            schedule: self
                .schedule
                .map(|s| Cron::parse(&s).map_or(s, |c| c.text().into())),
            at_ms: self.at_ms,
            new_thread: self.new_thread,
            thread: if self.new_thread { None } else { self.thread },
            script: self.script,
            prompt: self.prompt,
            sandbox: self.sandbox,
            paused: self.paused,
            last_error: None,
            last_output: None,
            last_run_ms: None,
            runs: 0,
            last_report: None,
            hook_secret: None,
            created_ms: now_ms,
        })
    }
}

/// A loop for the crate's tests: ana's, in project shop, sandbox a, codex.
#[cfg(test)]
pub(crate) fn example(id: &str, schedule: &str) -> Loop {
    let new = NewLoop {
        owner: "ana".into(),
        project: "shop".into(),
        sandbox: "a".into(),
        agent: Harness::Codex,
        name: None,
        schedule: Some(schedule.into()),
        at_ms: None,
        new_thread: true,
        thread: None,
        script: None,
        prompt: None,
        paused: false,
    };
    Loop {
        id: id.into(),
        ..new.make(0).expect("a valid loop")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Loop {
        Loop {
            script: Some("exit 3".into()),
            last_error: Some("The script failed (exit 3).".into()),
            last_output: Some("secret-ish output".into()),
            last_run_ms: Some(1),
            runs: 1,
            hook_secret: Some("hook-secret".into()),
            ..example("0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b", "*/5 * * * *")
        }
    }

    #[test]
    fn only_the_owner_sees_the_output_and_nobody_sees_the_hook_secret() {
        let l = sample();
        let mine = l.view("ana", 0);
        assert_eq!(mine["last_error"], "The script failed (exit 3).");
        assert_eq!(mine["last_output"], "secret-ish output");
        assert_eq!(mine["next_run_ms"], 300_000);
        let theirs = l.view("bo", 0);
        for hidden in ["last_error", "last_output", "script", "prompt", "thread"] {
            assert!(
                theirs.get(hidden).is_none(),
                "{hidden} shown to another user"
            );
        }
        for v in [mine, theirs] {
            assert!(!v.to_string().contains("hook-secret"));
            assert!(v.get("error").is_none());
        }
    }

    #[test]
    fn a_paused_or_spent_loop_has_no_next_run() {
        let mut l = sample();
        l.paused = true;
        assert_eq!(l.next_run_ms(0), None);
        l.paused = false;
        l.schedule = None;
        l.at_ms = Some(5_000);
        l.last_run_ms = None;
        assert_eq!(l.next_run_ms(0), Some(5_000));
        l.last_run_ms = Some(6_000);
        assert_eq!(l.next_run_ms(0), None);
    }

    #[test]
    fn a_new_loop_needs_one_schedule_a_valid_one_and_a_thread_to_re_prompt() {
        let base = NewLoop {
            owner: "ana".into(),
            project: "shop".into(),
            sandbox: "a".into(),
            agent: Harness::Codex,
            name: None,
            schedule: Some("*  * * * *".into()),
            at_ms: None,
            new_thread: true,
            thread: None,
            script: Some("true".into()),
            prompt: None,
            paused: false,
        };
        let l = base.clone().make(7).unwrap();
        assert!(room_machines::valid_id(&l.id), "{}", l.id);
        assert_eq!(l.schedule.as_deref(), Some("* * * * *"));
        let err = |n: NewLoop| n.make(0).unwrap_err();
        assert!(err(NewLoop {
            at_ms: Some(1),
            ..base.clone()
        })
        .contains("exactly one"));
        assert!(err(NewLoop {
            schedule: None,
            ..base.clone()
        })
        .contains("exactly one"));
        assert!(err(NewLoop {
            schedule: Some("61 * * * *".into()),
            ..base.clone()
        })
        .contains("invalid"));
        assert!(err(NewLoop {
            new_thread: false,
            ..base.clone()
        })
        .contains("needs that thread"));
        assert!(err(NewLoop {
            project: "../x".into(),
            ..base.clone()
        })
        .contains("project"));
        assert!(err(NewLoop {
            script: Some("x".repeat(MAX_SCRIPT + 1)),
            ..base
        })
        .contains("64 KiB"));
    }
}
