//! How a turn's process is started, seen from the harness: it leads a
//! session of its own without a controlling terminal (even when room-core
//! runs on one), nothing but stdio of room-core's descriptors reaches it,
//! it runs with no_new_privs and, as the agent account, without any
//! capability (unless `agent_may_escalate`); process groups with an agent
//! account are refused at start; the orphans of a turn are reaped.
//!
//! Each case runs the real room-core with the fake harnesses; a turn's
//! tool (`run: …`) reports what it sees. Every wait has a deadline.

use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// The longest a turn's tool output is awaited.
const TURN: Duration = Duration::from_secs(20);

/// `/proc/PID/stat`'s fields after the command name (field 3 on).
fn stat_fields(line: &str) -> Vec<String> {
    let after = &line[line.rfind(')').expect("a stat line") + 2..];
    after.split_whitespace().map(str::to_owned).collect()
}

/// `(sid, tty_nr)` of a `/proc/PID/stat` line.
fn session_and_tty(line: &str) -> (u32, i64) {
    let f = stat_fields(line);
    (f[3].parse().unwrap(), f[4].parse().unwrap())
}

/// The tool's output of the first turn in `folder`.
fn tool_of(svc_records: impl Fn() -> Vec<Value>) -> Value {
    wait_until("the tool's output", TURN, || {
        svc_records()
            .into_iter()
            .find(|r| !r["tool"].is_null())
            .map(|r| r["tool"].clone())
    })
}

/// room-core run by `script` on a pseudo-terminal, which it gets as its
/// controlling terminal (`script` makes the pty's slave the controlling
/// terminal of the session it starts).
struct OnPty {
    script: Child,
    svc: Service,
}

impl OnPty {
    fn start() -> OnPty {
        let mut svc = Service::builder(ROOM_CORE).prepare();
        // `exec`: room-core is the process `script` starts on the pty.
        let command = format!(
            "exec {} >>{} 2>&1",
            svc.shell_command(),
            quote(&svc.log_path().to_string_lossy())
        );
        let script = Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run script");
        svc.await_listen();
        OnPty { script, svc }
    }

    /// room-core's pid: the one child of `script`.
    fn service_pid(&self) -> u32 {
        let pid = self.script.id();
        let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap();
        children.split_whitespace().next().unwrap().parse().unwrap()
    }
}

impl Drop for OnPty {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.service_pid() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(15);
        while self.script.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.script.kill();
        let _ = self.script.wait();
    }
}

#[test]
fn a_turn_has_no_controlling_terminal_even_when_room_core_has_one() {
    let test = "a_turn_has_no_controlling_terminal_even_when_room_core_has_one";
    if Command::new("script").arg("--version").output().is_err() {
        return skip(test, "no script (util-linux) to make a pty with");
    }
    let pty = OnPty::start();
    let service = std::fs::read_to_string(format!("/proc/{}/stat", pty.service_pid())).unwrap();
    let (_, service_tty) = session_and_tty(&service);
    assert_ne!(service_tty, 0, "room-core runs on the pty: {service}");

    let svc = &pty.svc;
    let folder = svc.folder("tty");
    std::fs::create_dir_all(&folder).unwrap();
    // The tool's parent is the harness (the turn's process).
    let body = start_body(
        &folder,
        "claude",
        json!({"prompt": "run: cat /proc/$PPID/stat; head -c0 /dev/tty && echo opened"}),
    );
    svc.start_session(body);
    let tool = tool_of(|| svc.records());
    let stdout = tool["stdout"].as_str().unwrap();
    assert!(!stdout.contains("opened"), "{tool}");
    let stat = stdout.lines().next().unwrap();
    let harness: u32 = stat.split_whitespace().next().unwrap().parse().unwrap();
    assert_eq!(
        session_and_tty(stat),
        (harness, 0),
        "the harness leads its session, with no terminal: {stat}"
    );
    let stderr = tool["stderr"].as_str().unwrap();
    assert!(
        stderr.contains("/dev/tty") && stderr.contains("No such device or address"),
        "ENXIO: {tool}"
    );
}

#[test]
fn no_descriptor_of_room_core_but_stdio_reaches_a_turn() {
    // A file the test holds open without close-on-exec: room-core inherits
    // it (std's spawn passes it on), under the same number.
    let root = temp_root();
    let marker = root.join("held-open-by-room-core");
    std::fs::write(&marker, "secret").unwrap();
    let held = std::fs::File::open(&marker).unwrap();
    let fd = held.as_raw_fd();
    nix::fcntl::fcntl(
        fd,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
    )
    .unwrap();
    let svc = Service::start(ROOM_CORE, json!({}));
    drop(held);
    let pid = svc.pid().unwrap();
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).unwrap(),
        marker,
        "room-core holds it"
    );

    let folder = svc.folder("fds");
    std::fs::create_dir_all(&folder).unwrap();
    svc.start_session(start_body(
        &folder,
        "claude",
        json!({"prompt": "run: ls -l /proc/$PPID/fd"}),
    ));
    let tool = tool_of(|| svc.records_in(&folder));
    let listing = tool["stdout"].as_str().unwrap();
    assert!(!listing.contains("held-open-by-room-core"), "{tool}");
    assert!(
        listing.contains(" 0 -> ") && listing.contains(" 2 -> "),
        "{tool}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// The harness's `NoNewPrivs` and capability lines, from its tool.
fn privileges(svc: &Service, name: &str) -> String {
    let folder = svc.folder(name);
    let tool = {
        svc.start_session(start_body(
            &folder,
            "claude",
            json!({"prompt": "run: grep -E '^(NoNewPrivs|Cap(Inh|Prm|Eff|Bnd|Amb)):' /proc/$PPID/status"}),
        ));
        tool_of(|| svc.records_in(&folder))
    };
    tool["stdout"].as_str().unwrap().to_owned()
}

#[test]
fn a_turn_as_the_agent_account_has_no_new_privs_and_no_capability() {
    let test = "a_turn_as_the_agent_account_has_no_new_privs_and_no_capability";
    let Some(agent) = agent_account(test) else {
        return;
    };
    let root = temp_root();
    let config = |escalate: bool, n: usize| {
        json!({
            "agent_uid": agent.uid.as_raw(),
            "agent_socket": root.join(format!("agent-{n}.sock")),
            "agent_may_escalate": escalate,
        })
    };
    let svc = Service::start(ROOM_CORE, config(false, 0));
    std::fs::create_dir_all(svc.folder("")).unwrap();
    let status = privileges(&svc, "held");
    for line in [
        "NoNewPrivs:\t1",
        "CapInh:\t0000000000000000",
        "CapPrm:\t0000000000000000",
        "CapEff:\t0000000000000000",
        "CapBnd:\t0000000000000000",
        "CapAmb:\t0000000000000000",
    ] {
        assert!(status.lines().any(|l| l == line), "{line} in {status}");
    }
    drop(svc);

    let svc = Service::start(ROOM_CORE, config(true, 1));
    std::fs::create_dir_all(svc.folder("")).unwrap();
    let status = privileges(&svc, "sudo");
    assert!(status.contains("NoNewPrivs:\t0\n"), "{status}");
    assert!(!status.contains("CapBnd:\t0000000000000000"), "{status}");
    drop(svc);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_turn_as_the_service_keeps_its_capabilities_but_gains_no_privilege() {
    let svc = Service::start(ROOM_CORE, json!({}));
    std::fs::create_dir_all(svc.folder("")).unwrap();
    let status = privileges(&svc, "own");
    assert!(status.contains("NoNewPrivs:\t1\n"), "{status}");
    let own = std::fs::read_to_string("/proc/self/status").unwrap();
    let bounding = |s: &str| {
        s.lines()
            .find(|l| l.starts_with("CapBnd:"))
            .map(str::to_owned)
    };
    assert_eq!(
        bounding(&status),
        bounding(&own),
        "no account switch, no drop"
    );
}

#[test]
fn process_groups_with_another_agent_account_are_refused_at_start() {
    let root = temp_root();
    // Any account other than the service's: the refusal needs no switch.
    let other = if nix::unistd::geteuid().as_raw() == 65534 {
        65533
    } else {
        65534
    };
    let mut refused = Service::builder(ROOM_CORE)
        .config(json!({
            "agent_uid": other,
            "agent_socket": root.join("agent.sock"),
            "supervision": "process_group",
        }))
        .prepare();
    let (status, log) = refused.start_refused();
    assert_eq!(status.code(), Some(2), "{log}");
    assert!(
        log.contains(&format!(
            "agent_uid {other} is another account than the service's, but turns would be \
             supervised by process groups (supervision is \"process_group\" in the config)"
        )) && log.contains("allow_process_group_with_agent_uid"),
        "{log}"
    );
    assert!(!refused.state.join("listen").exists());

    // The operator accepts it: the service starts.
    let svc = Service::start(
        ROOM_CORE,
        json!({
            "agent_uid": other,
            "agent_socket": root.join("agent.sock"),
            "supervision": "process_group",
            "allow_process_group_with_agent_uid": true,
        }),
    );
    assert_eq!(svc.get("/v1/ready").0, 200);
    drop(svc);
    let _ = std::fs::remove_dir_all(&root);
}

/// Zombie children of `pid`.
fn zombie_children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for task in tasks.flatten() {
        let text = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for child in text.split_whitespace() {
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
            if !stat.is_empty() && stat_fields(&stat)[0] == "Z" {
                out.push(child.parse().unwrap());
            }
        }
    }
    out
}

#[test]
fn orphans_of_a_turn_cannot_join_room_cores_group_and_are_reaped() {
    let test = "orphans_of_a_turn_cannot_join_room_cores_group_and_are_reaped";
    if Command::new("perl").arg("-v").output().is_err() {
        return skip(test, "no perl to call setpgid with");
    }
    const ORPHANS: usize = 200;
    let svc = Service::start(ROOM_CORE, json!({"supervision": "process_group"}));
    let pid = svc.pid().unwrap();
    let folder = svc.folder("orphans");
    std::fs::create_dir_all(&folder).unwrap();
    let out = svc.root.join("orphans.txt");
    // Each orphan (its parent, a subshell, exits at once) tries to join
    // room-core's process group, says how that went, and exits: a zombie
    // of room-core, the subreaper.
    let script = format!(
        "svc=$(cut -d' ' -f4 /proc/$PPID/stat); pg=$(cut -d' ' -f5 /proc/$svc/stat); i=0; \
         while [ $i -lt {ORPHANS} ]; do \
           (perl -e 'print((setpgrp(0, $ARGV[0]) ? \"joined\" : \"refused\") . \"\\n\")' $pg >>{} &); \
           i=$((i+1)); \
         done",
        out.display()
    );
    svc.start_session(start_body(
        &folder,
        "claude",
        json!({ "prompt": format!("run: {script}") }),
    ));
    let lines = wait_until("every orphan's line", Duration::from_secs(30), || {
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        (text.lines().count() == ORPHANS).then_some(text)
    });
    assert!(lines.lines().all(|l| l == "refused"), "{lines}");
    // The sweep runs every second; every zombie goes within a few.
    let started = Instant::now();
    let left = loop {
        let left = zombie_children(pid);
        if left.is_empty() || started.elapsed() > Duration::from_secs(5) {
            break left;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(left.is_empty(), "zombies of room-core: {left:?}");
}
