//! The agent socket's file where the agent account is another account
//! (`agent_uid`, the service as root): bound only in a folder no other
//! account can write, handed to the agent account with mode 0600 before it
//! is in place, never widened, and refused at start, with the reason, where
//! the agent account could not reach it (the default, in the 0700 state
//! folder, among them).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use nix::unistd::User;
use room_kit::{agent_account, Service, TempDir};
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// room-cli, built beside the service.
const ROOM_CLI: &str = env!("CARGO_BIN_EXE_room-cli");

/// Starts a service whose agent account is `agent` with `config` on top,
/// and expects it to refuse: its log.
fn refused_start(agent: &User, config: serde_json::Value) -> String {
    let mut svc = Service::builder(ROOM_CORE)
        .config(json!({ "agent_uid": agent.uid.as_raw() }))
        .config(config)
        .prepare();
    let (status, log) = svc.start_refused();
    assert!(!status.success(), "{log}");
    log
}

#[test]
fn a_socket_folder_another_account_can_write_is_refused_at_start() {
    let Some(agent) =
        agent_account("a_socket_folder_another_account_can_write_is_refused_at_start")
    else {
        return;
    };
    let dir = TempDir::new("socket-refused");
    // World-writable, owned by the agent, and a symlink the agent planted
    // in a folder of its own that points at a folder only root may write.
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let owned = dir.path().join("owned");
    std::fs::create_dir(&owned).unwrap();
    nix::unistd::chown(&owned, Some(agent.uid), Some(agent.gid)).unwrap();
    let rootonly = dir.path().join("rootonly");
    std::fs::create_dir(&rootonly).unwrap();
    std::os::unix::fs::symlink(&rootonly, owned.join("link")).unwrap();
    let cases = [
        (
            open.join("agent.sock"),
            format!(
                "{} is writable by other accounts (mode 777)",
                open.display()
            ),
        ),
        (
            owned.join("agent.sock"),
            format!("{} belongs to uid {}", owned.display(), agent.uid),
        ),
        (
            owned.join("link/agent.sock"),
            format!("{} belongs to uid {}", owned.display(), agent.uid),
        ),
    ];
    for (socket, why) in cases {
        let log = refused_start(&agent, json!({ "agent_socket": socket }));
        let want = format!(
            "agent socket {}: {why}; Core binds it only where no other account can write a folder on its path",
            socket.display()
        );
        assert!(log.contains(&want), "want {want:?} in:\n{log}");
        assert!(!socket.exists(), "{}", socket.display());
    }
    assert_eq!(
        std::fs::read_dir(&rootonly).unwrap().count(),
        0,
        "nothing made there"
    );
}

#[test]
fn the_socket_belongs_to_the_agent_account_with_mode_0600_and_room_cli_reaches_it_as_that_account()
{
    let Some(agent) = agent_account(
        "the_socket_belongs_to_the_agent_account_with_mode_0600_and_room_cli_reaches_it_as_that_account",
    ) else {
        return;
    };
    let run = TempDir::new("socket-run");
    let socket = run.path().join("agent.sock");
    // A stale socket from an earlier run is replaced.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let core = Service::start(
        ROOM_CORE,
        json!({"agent_uid": agent.uid.as_raw(), "agent_socket": socket}),
    );
    let meta = std::fs::symlink_metadata(&socket).unwrap();
    assert_eq!(meta.uid(), agent.uid.as_raw());
    assert_eq!(meta.mode() & 0o7777, 0o600);
    let names: Vec<String> = std::fs::read_dir(run.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["agent.sock"], "no private folder is left");

    // room-cli as room-agent reaches Core (a copy: the build folder may sit
    // where the agent cannot enter).
    let cli = run.path().join("room-cli");
    std::fs::copy(ROOM_CLI, &cli).unwrap();
    let (uid, gid) = (agent.uid, agent.gid);
    let mut cmd = Command::new(&cli);
    cmd.args(["thread", "list"])
        .env_clear()
        .env("ROOM_CORE_SOCKET", &socket)
        .stdin(Stdio::null());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            nix::unistd::setgroups(&[])?;
            nix::unistd::setgid(gid)?;
            nix::unistd::setuid(uid)?;
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned()
        ),
        (
            Some(1),
            "Run cloudroom thread list from a Cloudroom cloud thread\n".to_string()
        ),
        "{}",
        core.log()
    );
    drop(core);
    assert!(!socket.exists(), "the socket goes away on stop");
}

#[test]
fn a_socket_the_agent_account_could_not_reach_is_refused_at_start_with_the_reason() {
    let Some(agent) = agent_account(
        "a_socket_the_agent_account_could_not_reach_is_refused_at_start_with_the_reason",
    ) else {
        return;
    };
    // The default: <state_dir>/agent.sock, in the service's own folder.
    let mut svc = Service::builder(ROOM_CORE)
        .config(json!({"agent_uid": agent.uid.as_raw(), "agent_socket": null}))
        .prepare();
    let (status, log) = svc.start_refused();
    assert!(!status.success(), "{log}");
    let want = format!(
        "agent socket {}: agent_uid is {}, another account, and the socket is in the state folder {}, which is the service's own (0700), so the agent account could never reach it; set agent_socket to a path outside it",
        svc.state.join("agent.sock").display(),
        agent.uid,
        svc.state.display()
    );
    assert!(log.contains(&want), "want {want:?} in:\n{log}");

    // A folder of root's the agent may not enter.
    let dir = TempDir::new("socket-unreachable");
    let closed = dir.path().join("closed");
    std::fs::create_dir(&closed).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
    let socket = closed.join("agent.sock");
    let log = refused_start(&agent, json!({ "agent_socket": socket }));
    let want = format!(
        "agent socket {}: the agent account (uid {}) cannot reach it: it may not enter {} (mode 700, uid 0)",
        socket.display(),
        agent.uid,
        closed.display()
    );
    assert!(log.contains(&want), "want {want:?} in:\n{log}");
    assert!(!socket.exists());
}
