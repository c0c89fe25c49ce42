//! One turn's command: what to run, with which arguments, environment,
//! folder, protocol and account. `TurnSpec` is plain data;
//! `TurnSpec::into_spawn` hands it to the one spawner, `supervise::spawn`.
//!
//! The prompt is never an argument: both CLIs read it from stdin on their
//! protocol (claude a user message, codex `turn/start`), so no prompt,
//! however it begins, can be taken for an option.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use room_machines::session::ApprovalMode;

use super::account::{self, Account};
use super::codex;
use super::mcp::{self, McpServers};
use super::options::Options;
use super::talk::Talker;
use super::{program, Harness, Programs};
use crate::config::Config;
use crate::supervise::{self, SpawnSpec};

/// The variable that tells room-cli where Core's agent socket is.
pub const SOCKET_VAR: &str = "ROOM_CORE_SOCKET";

/// Everything needed to start one turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnSpec {
    /// The program, an absolute path when it was found on `PATH`.
    pub program: PathBuf,
    /// The arguments, without the program.
    pub args: Vec<String>,
    /// The whole environment (nothing else is inherited).
    pub env: Vec<(OsString, OsString)>,
    /// The working folder: the session's folder.
    pub cwd: PathBuf,
    /// What is said on its stdin (the prompt, then whatever the session
    /// says), in its protocol.
    pub talker: Talker,
    /// The account to run as; `None`: the service's own.
    pub account: Option<Account>,
}

/// What one turn is.
#[derive(Debug, Clone, Copy)]
pub struct Turn<'a> {
    /// Which CLI.
    pub harness: Harness,
    /// The ACP agent, by its name in the config's `acp_agents`, for an
    /// `acp` session.
    pub agent: Option<&'a str>,
    /// The native session to resume, if any.
    pub native_id: Option<&'a str>,
    /// Where a rewind or a fork cut its conversation (the harness's
    /// mark), if one did.
    pub cut: Option<&'a str>,
    /// A fork's: the resumed session is copied into one of its own.
    pub fork: bool,
    /// A read-only turn.
    pub plan_only: bool,
    /// Who answers the harness's approval requests.
    pub approvals: ApprovalMode,
    /// The session's folder.
    pub folder: &'a Path,
    /// What the app chose for the harness (model, effort, instructions).
    pub options: Options<'a>,
    /// The session's MCP servers, and (claude) the file they are written
    /// in for the process, which only the agent account reads.
    pub mcp: Option<(&'a McpServers, Option<&'a Path>)>,
}

/// Builds a turn's spec from the config. Fails when the agent account
/// cannot be looked up, the native ID could be read as an option, or the
/// CLI's program is not there (a bare name not on `PATH`, a path to
/// nothing): the error names the CLI and its config field.
pub fn build(
    config: &Config,
    programs: &Programs,
    secrets: &[String],
    turn: &Turn,
) -> Result<TurnSpec, String> {
    if let Some(id) = turn.native_id {
        // IDs come from the CLI's own first event (UUIDs); one that starts
        // with `-` would be parsed as an option, so it is not passed at all.
        if id.is_empty() || id.starts_with('-') {
            return Err(format!("the native session ID {id:?} cannot be resumed"));
        }
    }
    if let Some(at) = turn.cut {
        // Read from the harness's own lines in the journal: as the ID.
        if at.is_empty() || at.starts_with('-') || at.len() > 256 {
            return Err(format!("the conversation cannot be cut at {at:.80?}"));
        }
    }
    let account = account::for_agent(config.agent_uid)?;
    let agent = match (turn.harness, turn.agent) {
        (Harness::Acp, Some(name)) => Some((
            name,
            config
                .acp_agents
                .get(name)
                .ok_or_else(|| format!("the config's acp_agents names no agent {name:?}"))?,
        )),
        (Harness::Acp, None) => return Err("the session names no ACP agent".into()),
        _ => None,
    };
    let agent_env = agent.map_or(&[][..], |(_, a)| &a.env[..]);
    let env = turn_environment(config, secrets, account.as_ref(), agent_env);
    let (configured, cli, field) = match (programs.of(turn.harness), agent) {
        (Some(path), _) => {
            let cli = turn.harness.name();
            (path, cli.to_string(), format!("{cli}_program"))
        }
        (None, Some((name, a))) => (
            a.command.as_path(),
            format!("the ACP agent {name}"),
            format!("acp_agents.{name}.command"),
        ),
        (None, None) => return Err("no program runs this harness".into()),
    };
    let program = absolute(configured, &env);
    if !program::is_there(&program) {
        return Err(program::missing(&cli, &field, configured));
    }
    let mut modes = config.modes(turn.plan_only);
    if turn.approvals == ApprovalMode::App && !turn.plan_only {
        modes = modes.asking();
    }
    let folder = turn.folder.to_string_lossy();
    let mut opening = codex::opening(&folder, turn.native_id, &modes, turn.options);
    let cut = turn.native_id.and(turn.cut).map(str::to_string);
    match turn.fork {
        true => opening.fork_through = cut,
        false => opening.revert_before = cut,
    }
    let mut args = match agent {
        Some((_, a)) => a.args.clone(),
        None => turn.harness.argv(
            turn.native_id,
            turn.cut.map(|at| (at, turn.fork)),
            &modes,
            turn.options,
        ),
    };
    if let Some((servers, file)) = turn.mcp {
        match (turn.harness, file) {
            (Harness::Claude, Some(file)) => {
                // Before the variadic --allowedTools, which takes what follows.
                let allowed = args.iter().position(|a| a == "--allowedTools");
                let at = allowed.unwrap_or(args.len());
                let path = file.to_string_lossy().into_owned();
                args.splice(at..at, ["--mcp-config".to_string(), path]);
                // Where the modes allow tools without asking, the app's own
                // servers' tools are among them (`mcp__<server>`: each tool
                // of it); where they ask, so are these.
                if allowed.is_some() {
                    args.extend(servers.keys().map(|name| format!("mcp__{name}")));
                }
            }
            (Harness::Claude, None) => {
                return Err("its MCP servers' config file was not written".into())
            }
            (Harness::Codex, _) => {
                opening.config = Some(mcp::codex_config(servers, modes.tools_unasked()))
            }
            (Harness::Acp, _) => opening.config = Some(mcp::acp_servers(servers)),
        }
    }
    Ok(TurnSpec {
        program,
        args,
        env,
        cwd: turn.folder.to_path_buf(),
        talker: Talker::new(turn.harness, opening),
        account,
    })
}

/// The service's secrets: the API token (from the config or its token
/// file) and the website token. None of them may reach a harness. Read
/// once at start, not per turn (a file read on the wake path): a token the
/// service generates after this cannot be in its environment anyway.
pub fn secrets(config: &Config) -> Vec<String> {
    let file = std::fs::read_to_string(config.state_dir.join("token")).ok();
    [config.token.clone(), config.website_token.clone(), file]
        .into_iter()
        .flatten()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Variables a harness gets from the service's environment by name: what
/// any program needs to find its programs, home, account, locale, terminal,
/// time zone, temp folder and TLS roots, and `IS_SANDBOX` (claude's own
/// switch for running as root). Nothing here names a credential.
pub const ALLOWED: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "TMPDIR",
    "IS_SANDBOX",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
];

/// ...and by prefix: the locale's categories, and the CLIs' own model,
/// login and setting variables (claude: `ANTHROPIC_*`, `CLAUDE_*` which
/// holds `CLAUDE_CODE_*` and `CLAUDE_CONFIG_DIR`; codex: `OPENAI_*`,
/// `CODEX_*`).
pub const ALLOWED_PREFIXES: &[&str] = &["LC_", "ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_"];

/// A harness's environment: from the service's own only the variables on
/// the allowlist ([`ALLOWED`], [`ALLOWED_PREFIXES`]) and those the operator
/// names (`extra`, the config's `harness_env`), never one whose value holds
/// a secret; `ROOM_CORE_SOCKET` set to the agent socket; and, when the turn
/// runs as another account, that account's HOME, USER and LOGNAME.
pub fn environment(
    inherited: impl IntoIterator<Item = (OsString, OsString)>,
    socket: &Path,
    account: Option<&Account>,
    secrets: &[String],
    extra: &[String],
) -> Vec<(OsString, OsString)> {
    let mut set: Vec<(OsString, OsString)> = vec![(SOCKET_VAR.into(), socket.into())];
    if let Some(a) = account {
        set.push(("HOME".into(), a.home.clone().into()));
        set.push(("USER".into(), a.name.clone().into()));
        set.push(("LOGNAME".into(), a.name.clone().into()));
    }
    let allowed = |name: &OsStr| {
        let name = name.as_bytes();
        ALLOWED.iter().any(|a| a.as_bytes() == name)
            || ALLOWED_PREFIXES
                .iter()
                .any(|p| name.starts_with(p.as_bytes()))
            || extra.iter().any(|e| e.as_bytes() == name)
    };
    let mut env: Vec<(OsString, OsString)> = inherited
        .into_iter()
        .filter(|(k, _)| allowed(k))
        .filter(|(k, _)| !set.iter().any(|(s, _)| s == k))
        .filter(|(k, v)| {
            let leaks = secrets.iter().any(|s| holds(v, s));
            if leaks {
                log::warn!(
                    "{} holds one of the service's tokens; it is kept from the harness",
                    k.to_string_lossy()
                );
            }
            !leaks
        })
        .collect();
    env.extend(set);
    env
}

/// A turn's environment from the service's own ([`environment`]): the
/// config's `harness_env` and, for an ACP agent, its `env` names (`agent_env`)
/// on top of the allowlist. What an ACP agent's capabilities probe runs
/// with too, so it starts as its turns do.
pub fn turn_environment(
    config: &Config,
    secrets: &[String],
    account: Option<&Account>,
    agent_env: &[String],
) -> Vec<(OsString, OsString)> {
    let mut extra = config.harness_env.clone();
    extra.extend(agent_env.iter().cloned());
    environment(
        std::env::vars_os(),
        &config.agent_socket_path(),
        account,
        secrets,
        &extra,
    )
}

/// The basics of the service's environment and nothing more: the
/// [`ALLOWED`] names and the locale's `LC_*`, none whose value holds one of
/// `secrets`. What a program the service runs for itself gets (a CLI asked
/// its version): no credential, no socket, no operator extras.
pub fn basics(
    inherited: impl IntoIterator<Item = (OsString, OsString)>,
    secrets: &[String],
) -> Vec<(OsString, OsString)> {
    inherited
        .into_iter()
        .filter(|(k, _)| {
            let name = k.as_bytes();
            ALLOWED.iter().any(|a| a.as_bytes() == name) || name.starts_with(b"LC_")
        })
        .filter(|(_, v)| !secrets.iter().any(|s| holds(v, s)))
        .collect()
}

/// Whether `value` contains `secret`. A secret under 8 bytes only counts
/// when it is the whole value, so a short token cannot knock out every
/// variable that happens to contain its letters.
fn holds(value: &OsStr, secret: &str) -> bool {
    let (v, s) = (value.as_bytes(), secret.as_bytes());
    if s.len() < 8 {
        return v == s;
    }
    v.windows(s.len()).any(|w| w == s)
}

/// `program` as an absolute path when it is a bare name found on the
/// environment's `PATH` (the spec sets the whole environment, `PATH`
/// included), so the spec names the file that runs and the spawner has no
/// search to make.
pub(crate) fn absolute(program: &Path, env: &[(OsString, OsString)]) -> PathBuf {
    if !program::is_bare(program) {
        return program.to_path_buf();
    }
    env.iter()
        .find(|(k, _)| k == "PATH")
        .and_then(|(_, path)| program::on_path(program, path))
        .unwrap_or_else(|| program.to_path_buf())
}

impl TurnSpec {
    /// The spawner's spec for this turn (`supervise::spawn` starts it with
    /// stdin, stdout and stderr as pipes) and the talker that writes its
    /// stdin. Every turn, and every tool that runs one, starts it through
    /// that one spawner, so the account switch has one implementation.
    pub fn into_spawn(self) -> (SpawnSpec, Talker) {
        let mut spec = SpawnSpec::new(self.program, self.cwd);
        spec.args = self.args.into_iter().map(Into::into).collect();
        spec.env = self.env;
        spec.account = self.account.map(|a| supervise::Account {
            uid: a.uid,
            gid: a.gid,
            groups: a.groups,
        });
        (spec, self.talker)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::speech::Said;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn agent() -> Account {
        Account {
            name: "room-agent".into(),
            uid: 1001,
            gid: 1001,
            groups: vec![1001, 27],
            home: "/home/room-agent".into(),
        }
    }

    #[test]
    fn the_environment_names_the_socket_and_keeps_secrets_out() {
        let inherited = vars(&[
            ("PATH", "/usr/bin"),
            ("ROOM_CORE_SOCKET", "/somewhere/else.sock"),
            ("COPY_OF_TOKEN", "the-api-token-123"),
            ("WITH_WEBSITE_TOKEN", "Bearer web-secret-456 trailing"),
            ("ANTHROPIC_API_KEY", "x the-api-token-123"),
            ("HOME", "/root"),
        ]);
        let secrets = ["the-api-token-123".to_string(), "web-secret-456".into()];
        let extra = ["COPY_OF_TOKEN".to_string(), "WITH_WEBSITE_TOKEN".into()];
        let env = environment(
            inherited,
            Path::new("/run/agent.sock"),
            None,
            &secrets,
            &extra,
        );
        assert_eq!(
            env,
            vars(&[
                ("PATH", "/usr/bin"),
                ("HOME", "/root"),
                ("ROOM_CORE_SOCKET", "/run/agent.sock"),
            ])
        );
    }

    #[test]
    fn another_account_gets_its_home_and_names() {
        let inherited = vars(&[("HOME", "/root"), ("USER", "root"), ("LANG", "C.UTF-8")]);
        let env = environment(inherited, Path::new("/s"), Some(&agent()), &[], &[]);
        assert_eq!(
            env,
            vars(&[
                ("LANG", "C.UTF-8"),
                ("ROOM_CORE_SOCKET", "/s"),
                ("HOME", "/home/room-agent"),
                ("USER", "room-agent"),
                ("LOGNAME", "room-agent"),
            ])
        );
    }

    #[test]
    fn a_short_secret_only_removes_a_variable_that_is_exactly_it() {
        let inherited = vars(&[("A", "abc"), ("B", "xabcx")]);
        let extra = ["A".to_string(), "B".into()];
        let env = environment(inherited, Path::new("/s"), None, &["abc".into()], &extra);
        assert_eq!(env, vars(&[("B", "xabcx"), ("ROOM_CORE_SOCKET", "/s")]));
    }

    #[test]
    fn only_the_allowlist_and_the_operators_names_pass() {
        let inherited = vars(&[
            ("PATH", "/usr/bin"),
            ("LC_ALL", "C.UTF-8"),
            ("TERM", "xterm"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("CLAUDE_CONFIG_DIR", "/c"),
            ("OPENAI_API_KEY", "sk-x"),
            ("CODEX_HOME", "/x"),
            ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI"),
            ("CLOUDROOM_API_URL", "http://user:pass@127.0.0.1:1"),
            ("CLOUDROOM_LOOP", "0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b"),
            ("SUDO_USER", "alice"),
            ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1"),
            ("RUST_LOG", "debug"),
            ("HTTPS_PROXY", "http://u:p@proxy:3128"),
            ("XDG_RUNTIME_DIR", "/run/user/0"),
            ("PATHX", "no"),
            ("XPATH", "no"),
            ("MY_PROXY_CA", "/etc/ca.pem"),
        ]);
        let extra = ["MY_PROXY_CA".to_string()];
        let env = environment(inherited, Path::new("/s"), None, &[], &extra);
        assert_eq!(
            env,
            vars(&[
                ("PATH", "/usr/bin"),
                ("LC_ALL", "C.UTF-8"),
                ("TERM", "xterm"),
                ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
                ("CLAUDE_CONFIG_DIR", "/c"),
                ("OPENAI_API_KEY", "sk-x"),
                ("CODEX_HOME", "/x"),
                ("MY_PROXY_CA", "/etc/ca.pem"),
                ("ROOM_CORE_SOCKET", "/s"),
            ])
        );
    }

    #[test]
    fn the_prompt_is_said_on_stdin_and_never_an_argument() {
        let config = Config {
            token: Some("tok-never-in-env".into()),
            ..Config::default()
        };
        // Programs that are there (a missing one fails the build).
        let programs = Programs {
            claude: "/bin/cat".into(),
            codex: "/bin/sh".into(),
        };
        for harness in [Harness::Claude, Harness::Codex] {
            for prompt in ["-x", "--help", "--", "two\nlines", ""] {
                let turn = Turn {
                    agent: None,
                    harness,
                    native_id: Some("abc"),
                    cut: None,
                    fork: false,
                    plan_only: false,
                    approvals: ApprovalMode::Auto,
                    folder: Path::new("/work/s1"),
                    options: Default::default(),
                    mcp: None,
                };
                let mut spec = build(&config, &programs, &secrets(&config), &turn).unwrap();
                let said = spec.talker.say(Said::prompt(prompt.into()));
                let mut heard = said.iter().map(|o| o.line.clone()).collect::<String>();
                if harness == Harness::Codex {
                    // codex takes the prompt once its thread is open.
                    let open = r#"{"id":2,"result":{"thread":{"id":"abc"}}}"#;
                    heard = spec.talker.hear(open).writes.remove(0).line;
                    assert!(said[2].line.contains(r#""threadId":"abc""#), "{said:?}");
                }
                let text = serde_json::to_string(prompt).unwrap();
                assert!(heard.contains(&text), "{heard}");
                assert!(!spec.args.iter().any(|a| a == prompt), "{:?}", spec.args);
                assert_eq!(spec.cwd, Path::new("/work/s1"));
                assert_eq!(Some(spec.program.as_path()), programs.of(harness));
                assert_eq!(spec.account, None);
                assert!(spec
                    .env
                    .contains(&(SOCKET_VAR.into(), config.agent_socket_path().into())));
            }
        }
    }

    #[test]
    fn a_programs_own_check_gets_the_basics_and_no_credential() {
        let inherited = vars(&[
            ("PATH", "/usr/bin"),
            ("LC_ALL", "C.UTF-8"),
            ("HOME", "/root"),
            ("ANTHROPIC_API_KEY", "sk-1"),
            ("ROOM_CORE_SOCKET", "/s"),
            ("TMPDIR", "/tmp/tok-never-in-env"),
        ]);
        let kept = basics(inherited, &["tok-never-in-env".into()]);
        assert_eq!(
            kept,
            vars(&[
                ("PATH", "/usr/bin"),
                ("LC_ALL", "C.UTF-8"),
                ("HOME", "/root")
            ])
        );
    }

    #[test]
    fn a_program_that_is_not_there_fails_the_build_naming_the_cli_and_its_field() {
        let programs = Programs {
            claude: "no-such-claude-here".into(),
            codex: "/nonexistent/codex".into(),
        };
        let turn = |harness| Turn {
            agent: None,
            harness,
            native_id: None,
            cut: None,
            fork: false,
            plan_only: false,
            approvals: ApprovalMode::Auto,
            folder: Path::new("/w"),
            options: Default::default(),
            mcp: None,
        };
        let config = Config::default();
        assert_eq!(
            build(&config, &programs, &[], &turn(Harness::Claude)).unwrap_err(),
            "claude is not installed: no `no-such-claude-here` on PATH (set claude_program in the config)"
        );
        assert_eq!(
            build(&config, &programs, &[], &turn(Harness::Codex)).unwrap_err(),
            "codex is not installed: codex_program in the config names /nonexistent/codex, which does not exist"
        );
    }

    #[test]
    fn a_native_id_that_looks_like_an_option_is_not_resumed() {
        let programs = Programs {
            claude: "claude".into(),
            codex: "codex".into(),
        };
        let turn = Turn {
            agent: None,
            harness: Harness::Codex,
            native_id: Some("--dangerously-bypass-approvals-and-sandbox"),
            cut: None,
            fork: false,
            plan_only: false,
            approvals: ApprovalMode::Auto,
            folder: Path::new("/w"),
            options: Default::default(),
            mcp: None,
        };
        let e = build(&Config::default(), &programs, &[], &turn).unwrap_err();
        assert!(e.contains("cannot be resumed"), "{e}");
    }

    #[test]
    fn a_bare_program_is_found_on_the_environments_path() {
        let env = vars(&[("PATH", "/nonexistent:/bin:/usr/bin")]);
        let sh = absolute(Path::new("sh"), &env);
        assert!(sh.is_absolute() && sh.ends_with("sh"), "{}", sh.display());
        assert_eq!(
            absolute(Path::new("no-such-program-x"), &env),
            Path::new("no-such-program-x")
        );
        assert_eq!(absolute(Path::new("./x"), &env), Path::new("./x"));
    }
}
