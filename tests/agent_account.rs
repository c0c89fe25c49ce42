//! The agent account: a peer of another uid is refused before anything is
//! read, and where Core runs as its own account (uid 65534 here) it cannot
//! read the callers' environments and gives the protected-machine refusal.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::process::Command;

use room_kit::{is_root, temp_root, FakeWebsite, Service, LOOP_ID};
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

const NOBODY: u32 = 65534;

#[test]
fn a_peer_of_another_account_is_refused_before_anything_is_read() {
    let web = FakeWebsite::start();
    let me = nix::unistd::geteuid().as_raw();
    // Another account than ours: as root, nobody's (the socket is handed to
    // it); otherwise our uid + 1 (the socket is widened, the uid check stays).
    let agent = if me == 0 { NOBODY } else { me + 1 };
    // The socket outside the state folder (0700), where the agent reaches it.
    let root = temp_root();
    let core = Service::builder(ROOM_CORE)
        .root(&root)
        .config(json!({
            "website_url": web.url,
            "agent_uid": agent,
            "agent_socket": root.join("agent.sock"),
        }))
        .start();
    let meta = std::fs::metadata(core.socket()).unwrap();
    if me == 0 {
        assert_eq!(
            meta.uid(),
            NOBODY,
            "the socket belongs to the agent account"
        );
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    }

    // Connect and send nothing: the refusal comes without a request.
    let mut s = std::os::unix::net::UnixStream::connect(core.socket()).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let answer: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        answer,
        json!({"exit": 1, "stdout": "", "stderr": "room-cli: this socket serves the agent account only.\n"})
    );

    // Through room-cli, with a valid marker: refused all the same.
    let out = core.script(Some(LOOP_ID), &["loop", "list"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        "room-cli: this socket serves the agent account only.\n"
    );
    assert_eq!(web.calls(), vec![], "nothing reaches the website");
}

/// Whether uid 65534 can read `pid`'s stat but gets EACCES on its environ.
fn nobody_sees_stat_but_not_environ(pid: u32) -> (bool, bool) {
    let probe = |file: &str| {
        let mut cmd = Command::new("cat");
        cmd.arg(format!("/proc/{pid}/{file}"));
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                nix::unistd::setgroups(&[])?;
                nix::unistd::setgid(nix::unistd::Gid::from_raw(NOBODY))?;
                nix::unistd::setuid(nix::unistd::Uid::from_raw(NOBODY))?;
                Ok(())
            });
        }
        let out = cmd.output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (stat_ok, _) = probe("stat");
    let (environ_ok, err) = probe("environ");
    (stat_ok, !environ_ok && err.contains("Permission denied"))
}

#[test]
fn an_unreadable_environment_gets_the_protected_machine_refusal() {
    if !is_root() {
        println!(
            "SKIPPED an_unreadable_environment_gets_the_protected_machine_refusal: \
             it starts the service as uid 65534 and needs root (CI runs as root)"
        );
        return;
    }
    // The premise, for real: uid 65534 reads root's stat, not its environ.
    let (stat, hidden) = nobody_sees_stat_but_not_environ(std::process::id());
    assert!(stat, "uid 65534 can read /proc/PID/stat of a root process");
    assert!(hidden, "uid 65534 gets EACCES on a root process's environ");

    let web = FakeWebsite::start();
    // As uid 65534 the service gets no cgroup: process groups, which it
    // refuses with another agent account unless told to accept them.
    // The socket outside the state folder, in the service's own folder
    // (which it is handed).
    let root = temp_root();
    let core = Service::builder(ROOM_CORE)
        .root(&root)
        .config(json!({
            "website_url": web.url,
            "agent_uid": 0,
            "agent_socket": root.join("agent.sock"),
            "allow_process_group_with_agent_uid": true,
        }))
        .run_as(NOBODY)
        .start();
    let service_uid = std::fs::metadata(format!("/proc/{}", core.pid().unwrap()))
        .unwrap()
        .uid();
    assert_eq!(service_uid, NOBODY, "the service runs as its own account");

    let hidden = |x: &str| {
        format!("This machine's Core runs as its own account and can't read this command's environment, so it can't see a loop script's CLOUDROOM_LOOP. Run cloudroom {x} from a Cloudroom cloud thread here.\n")
    };
    let out = core.script(Some(LOOP_ID), &["loop", "list"]);
    assert_eq!(out.code, 1, "{out:?}\n{}", core.log());
    assert_eq!(out.stderr, hidden("loop"));
    assert_eq!(out.stdout, "");
    // loop report is no script's to run, seen or not: its own refusal.
    let out = core.script(Some(LOOP_ID), &["loop", "report", "x"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "Run cloudroom loop report from a Cloudroom cloud thread: it reports for the run's own thread, so a loop's check script can't run it.\n"
        )
    );
    let out = core.script(Some(LOOP_ID), &["thread", "spawn", "--top-level", "go"]);
    assert_eq!(
        (out.code, out.stderr),
        (1, hidden("thread spawn --top-level"))
    );
    // Not a command a script could run anyway: the usual refusal.
    let out = core.script(Some(LOOP_ID), &["thread", "list"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "Run cloudroom thread list from a Cloudroom cloud thread\n"
        )
    );
    // Without a marker it is the same: Core cannot tell.
    let out = core.script(None, &["loop", "list"]);
    assert_eq!((out.code, out.stderr), (1, hidden("loop")));
    assert_eq!(web.calls(), vec![], "nothing reaches the website");
    assert!(core.log().contains("Hidden"), "{}", core.log());
}
