//! `POST /api/core/automation`: room-cli's `loop …` commands, acting as the
//! caller's owner in the caller's project (a thread's, or a loop script's
//! loop's). The body is what Core sends (`machines/src/request.rs`):
//! `{"action", "session"|"automation", <--flags as snake_case keys>, "args"}`.

use room_machines::request::Value as BodyValue;
use room_machines::{Body, Scope};
use serde_json::json;

use super::cron::{self, Cron, Date};
use super::http::Response;
use super::loops::{check, Loop, NewLoop};
use super::website::{Actor, Website};
use room_core::harness::Harness;

/// Seed 001, point 4: a create from a check script that would re-prompt
/// "this thread" (no `--new-thread`).
pub const NO_THREAD_TO_REPROMPT: &str =
    "A loop's check script has no thread to re-prompt. Add --new-thread.";
type Answer = Result<Response, Response>;

fn invalid(message: impl Into<String>) -> Response {
    Response::error(422, "invalid_option", message)
}

fn flag_name(key: &str) -> String {
    format!("--{}", key.replace('_', "-"))
}

/// A request body's options.
pub struct Opts<'a>(pub &'a Body);

impl Opts<'_> {
    /// Refuses any option the command (`loop list`) does not take.
    pub fn only(&self, command: &str, allowed: &[&str]) -> Result<(), Response> {
        const ALWAYS: [&str; 4] = ["action", "session", "automation", "args"];
        match self
            .0
             .0
            .iter()
            .find(|(k, _)| !ALWAYS.contains(&k.as_str()) && !allowed.contains(&k.as_str()))
        {
            Some((k, _)) => Err(invalid(format!(
                "room-cli {command} does not take {}.",
                flag_name(k)
            ))),
            None => Ok(()),
        }
    }

    /// Whether the option was given at all.
    pub fn has(&self, key: &str) -> bool {
        self.0.get(key).is_some()
    }

    /// `--key value`.
    pub fn text(&self, key: &str) -> Result<Option<String>, Response> {
        match self.0.get(key) {
            None => Ok(None),
            Some(BodyValue::Str(s)) => Ok(Some(s.clone())),
            Some(_) => Err(invalid(format!("{} needs a value.", flag_name(key)))),
        }
    }

    /// `--key` (or `--key=true|false`).
    pub fn flag(&self, key: &str) -> Result<bool, Response> {
        match self.0.get(key) {
            None => Ok(false),
            Some(BodyValue::Bool(b)) => Ok(*b),
            Some(BodyValue::Str(s)) if s == "true" => Ok(true),
            Some(BodyValue::Str(s)) if s == "false" => Ok(false),
            Some(_) => Err(invalid(format!("{} takes no value.", flag_name(key)))),
        }
    }

    /// The positional arguments.
    pub fn args(&self) -> Vec<String> {
        match self.0.get("args") {
            Some(BodyValue::List(a)) => a.clone(),
            _ => Vec::new(),
        }
    }

    /// `--agent claude|codex`.
    pub fn agent(&self) -> Result<Option<Harness>, Response> {
        self.text("agent")?
            .map(|a| parse_agent(&a).ok_or_else(|| invalid("--agent must be claude or codex.")))
            .transpose()
    }
}

/// `claude` or `codex`.
pub fn parse_agent(s: &str) -> Option<Harness> {
    serde_json::from_value(json!(s)).ok()
}

/// `--in 10m`: Unix ms that long after `now_ms` (`s`, `m`, `h`, `d`; at
/// most a year).
pub fn parse_in(s: &str, now_ms: u64) -> Result<u64, String> {
    let bad = || format!("--in {s:?} is not a delay such as 30s, 10m, 2h or 1d.");
    let (n, unit) = s.split_at(s.len().saturating_sub(1));
    let n: u64 = n.parse().map_err(|_| bad())?;
    let ms = match unit {
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(bad()),
    };
    if n == 0 || n * ms > 366 * 86_400_000 {
        return Err(bad());
    }
    Ok(now_ms + n * ms)
}

/// `--at`: Unix seconds, or `YYYY-MM-DDTHH:MM[:SS][Z]` in UTC.
pub fn parse_at(s: &str) -> Result<u64, String> {
    let bad =
        || format!("--at {s:?} is not a time such as 2026-11-01T09:00Z (UTC) or Unix seconds.");
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse::<u64>().map(|n| n * 1000).map_err(|_| bad());
    }
    let t = s.trim_end_matches('Z');
    let (date, time) = t.split_once(['T', ' ']).ok_or_else(bad)?;
    let num = |p: Option<&str>| p.and_then(|x| x.parse::<u32>().ok()).ok_or_else(bad);
    let mut d = date.splitn(3, '-');
    let year = d
        .next()
        .and_then(|y| y.parse::<i64>().ok())
        .ok_or_else(bad)?;
    let (month, day) = (num(d.next())?, num(d.next())?);
    let mut c = time.splitn(3, ':');
    let (hour, minute) = (num(c.next())?, num(c.next())?);
    let second = c.next().map_or(Ok(0), |x| num(Some(x)))?;
    let date = Date::new(year, month, day);
    if !date.is_valid() || hour > 23 || minute > 59 || second > 59 {
        return Err(bad());
    }
    Ok(cron::unix_ms(date, hour, minute, second))
}

/// Answers one `loop …` request.
pub fn act(w: &Website, actor: &Actor, body: &Body) -> Response {
    let opts = Opts(body);
    let action = match opts.text("action") {
        Ok(Some(a)) => a,
        _ => return Response::error(400, "no_action", "The request names no loop action."),
    };
    let answer = match action.as_str() {
        "list" => list(w, actor, &opts),
        "create" => create(w, actor, &opts),
        "update" => update(w, actor, &opts),
        "pause" | "resume" => pause(w, actor, &opts, &action),
        "run" => run(w, actor, &opts),
        "delete" => delete(w, actor, &opts),
        "hook" => hook(w, actor, &opts),
        "report" => report(w, actor, &opts),
        other => Err(invalid(format!("Unknown loop action {other}."))),
    };
    answer.unwrap_or_else(|e| e)
}

/// A failed write of the website's state: logged, and a 500 for the caller.
pub fn unwritable(e: std::io::Error) -> Response {
    log::error!("cannot write the website's state: {e}");
    Response::error(
        500,
        "state_unwritable",
        "The website could not save the change.",
    )
}

fn no_loop(id: &str) -> Response {
    Response::error(404, "loop_not_found", format!("No loop {id}."))
}

fn list(w: &Website, actor: &Actor, opts: &Opts) -> Answer {
    opts.only("loop list", &[])?;
    let now = w.now_ms();
    let mut loops: Vec<Loop> = w
        .loops
        .all()
        .into_iter()
        .filter(|l| l.project == actor.project)
        .collect();
    loops.sort_by_key(|l| l.created_ms);
    let views: Vec<_> = loops.iter().map(|l| l.view(&actor.owner, now)).collect();
    Ok(Response::json(200, &json!({ "loops": views })))
}

fn create(w: &Website, actor: &Actor, opts: &Opts) -> Answer {
    opts.only(
        "loop create",
        &[
            "cron",
            "at",
            "in",
            "new_thread",
            "script",
            "script_file",
            "agent",
            "prompt",
            "name",
            "paused",
        ],
    )?;
    let new_thread = opts.flag("new_thread")?;
    // Seed 001, point 4, before anything else: a script has no thread.
    if matches!(actor.scope, Scope::Automation(_)) && !new_thread {
        return Err(invalid(NO_THREAD_TO_REPROMPT));
    }
    if opts.has("script_file") {
        return Err(invalid(
            "The website cannot read files in the sandbox: pass the script's text with --script \"$(cat FILE)\".",
        ));
    }
    let (schedule, at_ms) = when(w, opts)?;
    let args = opts.args();
    let prompt = opts
        .text("prompt")?
        .or_else(|| (!args.is_empty()).then(|| args.join(" ")));
    let new = NewLoop {
        owner: actor.owner.clone(),
        project: actor.project.clone(),
        sandbox: actor.sandbox.clone(),
        agent: opts.agent()?.unwrap_or(actor.agent),
        name: opts.text("name")?,
        schedule,
        at_ms,
        new_thread,
        thread: match &actor.scope {
            Scope::Session(s) => Some(s.clone()),
            Scope::Automation(_) => None,
        },
        script: opts.text("script")?,
        prompt,
        paused: opts.flag("paused")?,
    };
    let l = new.make(w.now_ms()).map_err(invalid)?;
    w.loops.put(&l.id, l.clone()).map_err(unwritable)?;
    log::info!(
        "loop {} created in project {} by {:?}",
        l.id,
        l.project,
        actor.scope
    );
    Ok(Response::json(
        201,
        &json!({ "loop": l.view(&actor.owner, w.now_ms()) }),
    ))
}

/// `--cron`, `--at`, `--in`: at most one.
fn when(w: &Website, opts: &Opts) -> Result<(Option<String>, Option<u64>), Response> {
    let at = match (opts.text("at")?, opts.text("in")?) {
        (Some(_), Some(_)) => return Err(invalid("Give --at or --in, not both.")),
        (Some(a), None) => Some(parse_at(&a).map_err(invalid)?),
        (None, Some(i)) => Some(parse_in(&i, w.now_ms()).map_err(invalid)?),
        (None, None) => None,
    };
    Ok((opts.text("cron")?, at))
}

/// The loop an action is about: the first argument, or a script's own loop.
fn target(w: &Website, actor: &Actor, opts: &Opts, action: &str) -> Result<Loop, Response> {
    let args = opts.args();
    if args.len() > 1 {
        return Err(invalid(format!(
            "room-cli loop {action} takes one loop ID."
        )));
    }
    let id = match (args.first(), &actor.scope) {
        (Some(id), _) => id.clone(),
        (None, Scope::Automation(own)) => own.clone(),
        (None, Scope::Session(_)) => {
            return Err(invalid(format!(
                "room-cli loop {action} needs the loop's ID."
            )))
        }
    };
    let Some(l) = w.loops.get(&id).filter(|l| l.project == actor.project) else {
        return Err(Response::error(
            404,
            "loop_not_found",
            format!("No loop {id} in project {}.", actor.project),
        ));
    };
    if l.owner != actor.owner {
        return Err(Response::error(
            403,
            "not_owner",
            format!("Only the loop's owner can {action} it."),
        ));
    }
    Ok(l)
}

fn changed(w: &Website, actor: &Actor, id: &str, f: impl FnOnce(&mut Loop)) -> Answer {
    w.loops
        .update(id, f)
        .map_err(unwritable)?
        .ok_or_else(|| no_loop(id))?;
    let l = w.loops.get(id).ok_or_else(|| no_loop(id))?;
    Ok(Response::json(
        200,
        &json!({ "loop": l.view(&actor.owner, w.now_ms()) }),
    ))
}

fn update(w: &Website, actor: &Actor, opts: &Opts) -> Answer {
    const FIELDS: [&str; 7] = ["cron", "at", "in", "script", "agent", "prompt", "name"];
    opts.only("loop update", &FIELDS)?;
    let l = target(w, actor, opts, "update")?;
    if !FIELDS.iter().any(|f| opts.has(f)) {
        return Err(invalid(
            "room-cli loop update needs something to change: --cron, --at, --in, --script, --agent, --prompt or --name.",
        ));
    }
    let (cron, at) = when(w, opts)?;
    let (mut schedule, mut at_ms) = (l.schedule.clone(), l.at_ms);
    if cron.is_some() || at.is_some() {
        (schedule, at_ms) = (cron, at);
    }
    let script = opts.text("script")?.or(l.script.clone());
    check(&schedule, at_ms, &script).map_err(invalid)?;
    let (agent, prompt, name) = (opts.agent()?, opts.text("prompt")?, opts.text("name")?);
    changed(w, actor, &l.id, |x| {
        x.schedule = schedule.map(|s| Cron::parse(&s).map_or(s, |c| c.text().into()));
        x.at_ms = at_ms;
        x.script = script;
        x.agent = agent.unwrap_or(x.agent);
        x.prompt = prompt.or(x.prompt.take());
        x.name = name.or(x.name.take());
    })
}

fn pause(w: &Website, actor: &Actor, opts: &Opts, action: &str) -> Answer {
    opts.only(&format!("loop {action}"), &[])?;
    let l = target(w, actor, opts, action)?;
    let paused = action == "pause";
    changed(w, actor, &l.id, |x| x.paused = paused)
}

fn run(w: &Website, actor: &Actor, opts: &Opts) -> Answer {
    opts.only("loop run", &[])?;
    let l = target(w, actor, opts, "run")?;
    Ok(Response::json(202, &w.trigger_view(&l.id)))
}

fn delete(w: &Website, actor: &Actor, opts: &Opts) -> Answer {
    opts.only("loop delete", &[])?;
    let l = target(w, actor, opts, "delete")?;
    w.loops.remove(&l.id).map_err(unwritable)?;
    log::info!("loop {} deleted", l.id);
    Ok(Response::json(200, &json!({ "deleted": l.id })))
}

fn hook(w: &Website, actor: &Actor, opts: &Opts) -> Answer {
    opts.only("loop hook", &["reset"])?;
    let l = target(w, actor, opts, "hook")?;
    let reset = opts.flag("reset")?;
    let fresh = uuid::Uuid::new_v4().simple().to_string();
    let secret = w
        .loops
        .update(&l.id, |x| {
            if reset || x.hook_secret.is_none() {
                x.hook_secret = Some(fresh);
            }
            x.hook_secret.clone().unwrap_or_default()
        })
        .map_err(unwritable)?
        .ok_or_else(|| no_loop(&l.id))?;
    let url = format!("{}/api/hooks/{}/{secret}", w.public_url(), l.id);
    Ok(Response::json(
        200,
        &json!({ "hook": { "loop": l.id, "url": url } }),
    ))
}

fn report(w: &Website, actor: &Actor, opts: &Opts) -> Answer {
    // Core refuses this before it gets here; the website refuses it too.
    let Scope::Session(session) = &actor.scope else {
        return Err(Response::error(
            403,
            "report_refused",
            room_machines::policy::LOOP_REPORT,
        ));
    };
    opts.only("loop report", &[])?;
    let Some(loop_id) = w.threads.get(session).and_then(|t| t.started_by_loop) else {
        return Err(Response::error(
            409,
            "no_run",
            "This thread was not started by a loop's run, so it has no run to report to.",
        ));
    };
    let text = opts.args().join(" ");
    w.loops
        .update(&loop_id, |x| x.last_report = Some(text))
        .map_err(unwritable)?
        .ok_or_else(|| no_loop(&loop_id))?;
    Ok(Response::json(
        200,
        &json!({ "reported": { "loop": loop_id } }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_time_runs_take_a_delay_or_a_utc_time() {
        assert_eq!(parse_in("10m", 1_000), Ok(601_000));
        assert_eq!(parse_in("30s", 0), Ok(30_000));
        assert!(parse_in("0m", 0).is_err());
        assert!(parse_in("5x", 0).is_err());
        assert!(parse_in("400d", 0).is_err());
        assert_eq!(parse_at("1800000000"), Ok(1_800_000_000_000));
        assert_eq!(
            parse_at("2026-11-01T09:00Z"),
            Ok(cron::unix_ms(Date::new(2026, 11, 1), 9, 0, 0))
        );
        assert_eq!(
            parse_at("2026-11-01 09:00:30"),
            Ok(cron::unix_ms(Date::new(2026, 11, 1), 9, 0, 30))
        );
        assert!(parse_at("2026-02-30T09:00Z").is_err());
        assert!(parse_at("tomorrow").is_err());
    }
}
