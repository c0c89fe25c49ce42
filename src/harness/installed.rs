//! Which harness CLIs are installed and the version each says it is, for
//! `GET /v1/capabilities`. Whether each configured program is there is
//! known at start (its `PATH` lookup is done then, [`Programs::resolve`]);
//! its version is asked once, on a thread of its own per CLI
//! ([`version::ask`]: a deadline, a read cap, a clean environment, the
//! account turns run as). A
//! request reads whatever is known so far and never waits for it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use super::account::Account;
use super::{program, version, Harness, Programs};

/// What a CLI's `--version` said: nothing yet, its version, or why not.
type Said = Option<Result<String, String>>;

/// One harness's program and what is known of it.
struct Entry {
    harness: Harness,
    program: PathBuf,
    /// Why it cannot run, when it is not there.
    missing: Option<String>,
    said: Arc<Mutex<Said>>,
}

/// One ACP agent of the config and what its `initialize` said.
struct AgentEntry {
    name: String,
    command: PathBuf,
    args: Vec<String>,
    /// Nothing yet, what it offers, or why that is not known.
    said: Arc<Mutex<Option<Result<Value, String>>>>,
}

/// An ACP agent to ask what it offers: its name, program, arguments and
/// environment (a turn's).
pub struct AgentToAsk {
    /// Its name in the config's `acp_agents`.
    pub name: String,
    /// Its program, as configured.
    pub command: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// The environment a turn of it gets.
    pub env: Vec<(OsString, OsString)>,
}

/// The harnesses' programs, installed or not, and their versions; and the
/// ACP agents and what each offers.
pub struct Installed {
    entries: Vec<Entry>,
    agents: Vec<AgentEntry>,
}

impl Installed {
    /// Looks at each of `programs` (each found one is logged, and each
    /// missing one with why its launches will fail) and starts asking each
    /// one that is there its version, with the environment `env`, as
    /// `account` (the account turns run as, `None`: the service's own; an
    /// error: the agent account could not be looked up, and nothing is
    /// asked).
    pub fn start(
        programs: &Programs,
        env: Vec<(OsString, OsString)>,
        account: Result<Option<Account>, String>,
        agents: Vec<AgentToAsk>,
    ) -> Installed {
        let mut env = env;
        if let Ok(Some(a)) = &account {
            // The account's own, as a turn's environment has them.
            env.retain(|(k, _)| !["HOME", "USER", "LOGNAME"].iter().any(|n| k == n));
            env.push(("HOME".into(), a.home.clone().into()));
            env.push(("USER".into(), a.name.clone().into()));
            env.push(("LOGNAME".into(), a.name.clone().into()));
        }
        let asker = Arc::new((env, account));
        // The CLIs with a program of their own: an ACP agent's is its entry's.
        let entries = [Harness::Claude, Harness::Codex]
            .into_iter()
            .filter_map(|harness| Some((harness, programs.of(harness)?.to_path_buf())))
            .map(|(harness, path)| {
                let cli = harness.name();
                let missing =
                    (!program::is_there(&path)).then(|| program::not_installed(cli, &path));
                let said = Arc::new(Mutex::new(None));
                match &missing {
                    Some(why) => log::warn!("{why}; {cli} sessions fail their launch"),
                    None => {
                        log::info!("{cli}: {}", path.display());
                        ask(harness, &path, &asker, &said);
                    }
                }
                Entry {
                    harness,
                    program: path,
                    missing,
                    said,
                }
            })
            .collect();
        let agents = agents
            .into_iter()
            .map(|a| probe_agent(a, &asker.1))
            .collect();
        Installed { entries, agents }
    }

    /// What agent `name`'s `initialize` said it offers, as
    /// [`Installed::agents_report`] shows it; `Null` until it answered, or
    /// when it could not be asked.
    pub fn agent_offers(&self, name: &str) -> Value {
        let Some(a) = self.agents.iter().find(|a| a.name == name) else {
            return Value::Null;
        };
        match &*a.said.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(Ok(offers)) => offers.clone(),
            _ => Value::Null,
        }
    }

    /// `acp_agents` of `GET /v1/capabilities`: each agent's program and
    /// arguments, and once it answered, what its `initialize` said it
    /// offers (`initialize`), or why that is not known (`error`).
    pub fn agents_report(&self) -> Value {
        let mut out = Map::new();
        for a in &self.agents {
            let mut v = json!({"command": a.command, "args": a.args});
            match a.said.lock().unwrap_or_else(|p| p.into_inner()).clone() {
                Some(Ok(offers)) => v["initialize"] = offers,
                Some(Err(why)) => v["error"] = json!(why),
                None => {}
            }
            out.insert(a.name.clone(), v);
        }
        Value::Object(out)
    }

    /// `harnesses` of `GET /v1/capabilities`: for each CLI whether its
    /// program is there (`installed`), the program (its path when found on
    /// `PATH`, else as configured), its `version` once it said one, and an
    /// `error` when it is not there or did not say.
    pub fn report(&self) -> Value {
        let mut out = Map::new();
        for e in &self.entries {
            let mut v = json!({"installed": e.missing.is_none(), "program": e.program});
            let said = e.said.lock().unwrap_or_else(|p| p.into_inner()).clone();
            match (&e.missing, said) {
                (Some(why), _) => v["error"] = json!(why),
                (None, Some(Ok(version))) => v["version"] = json!(version),
                (None, Some(Err(why))) => v["error"] = json!(why),
                (None, None) => {}
            }
            out.insert(e.harness.name().to_string(), v);
        }
        Value::Object(out)
    }
}

/// What a check is run with: its environment and its account.
type Asker = (Vec<(OsString, OsString)>, Result<Option<Account>, String>);

/// Asks `program` its version on a thread of its own, into `said`.
fn ask(harness: Harness, program: &Path, asker: &Arc<Asker>, said: &Arc<Mutex<Said>>) {
    let (program, asker, into) = (program.to_path_buf(), asker.clone(), said.clone());
    let cli = harness.name();
    let started = std::thread::Builder::new()
        .name(format!("{cli}-version"))
        .spawn(move || {
            let (env, account) = &*asker;
            let answer = match account {
                Ok(account) => version::ask(&program, env, account.as_ref(), version::DEADLINE),
                Err(e) => Err(format!("cannot ask its version: {e}")),
            };
            match &answer {
                Ok(v) => log::info!("{cli} says it is {v}"),
                Err(why) => log::warn!("{cli}'s version is unknown: {why}"),
            }
            *into.lock().unwrap_or_else(|p| p.into_inner()) = Some(answer);
        });
    if let Err(e) = started {
        let why = format!("cannot ask its version: {e}");
        log::warn!("{cli}: {why}");
        *said.lock().unwrap_or_else(|p| p.into_inner()) = Some(Err(why));
    }
}

/// Asks agent `a` what it offers on a thread of its own, as `account`.
fn probe_agent(a: AgentToAsk, account: &Result<Option<Account>, String>) -> AgentEntry {
    let said = Arc::new(Mutex::new(None));
    let (into, account) = (said.clone(), account.clone());
    let (name, command, args, env) = (a.name.clone(), a.command.clone(), a.args.clone(), a.env);
    let program = super::command::absolute(&command, &env);
    let started = std::thread::Builder::new()
        .name(format!("acp-{name}-initialize"))
        .spawn(move || {
            let answer = match &account {
                Ok(account) => {
                    let deadline = crate::harness::acp::probe::DEADLINE;
                    crate::harness::acp::probe::ask(
                        &program,
                        &args,
                        &env,
                        account.as_ref(),
                        deadline,
                    )
                }
                Err(e) => Err(format!("cannot ask it: {e}")),
            };
            if let Err(why) = &answer {
                log::warn!("the ACP agent {name}'s offers are unknown: {why}");
            }
            *into.lock().unwrap_or_else(|p| p.into_inner()) = Some(answer);
        });
    if let Err(e) = started {
        *said.lock().unwrap_or_else(|p| p.into_inner()) = Some(Err(format!("cannot ask it: {e}")));
    }
    AgentEntry {
        name: a.name,
        command: a.command,
        args: a.args,
        said,
    }
}
