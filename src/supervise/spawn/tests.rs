//! spawn's unit tests: what the child gets, how it fails, and that a
//! child stopped before its exec holds nothing of the service.

use super::*;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

use super::raw::CLONE3_WORKS;
use std::ffi::OsStr;

#[test]
fn bare_names_are_looked_up_in_the_given_path() {
    let sh = resolve_program(Path::new("sh"), Some(OsStr::new("/nonexistent:/bin"))).unwrap();
    assert_eq!(sh, Path::new("/bin/sh"));
    assert_eq!(
        resolve_program(Path::new("./x"), None).unwrap(),
        Path::new("./x"),
        "a path is used as it is"
    );
    let e = resolve_program(Path::new("no-such-program-here"), Some(OsStr::new("/bin")));
    assert_eq!(e.unwrap_err().kind(), io::ErrorKind::NotFound);
}

#[test]
fn a_child_gets_its_arguments_environment_folder_and_session() {
    let mut spec = SpawnSpec::new("sh", "/tmp");
    spec.args = vec![
        "-c".into(),
        "echo \"$0|$1|$ROOM_X|$(pwd)|$HOME\"; cat /proc/$$/stat".into(),
        "zero".into(),
        "a b".into(),
    ];
    spec.env = vec![
        ("ROOM_X".into(), "x=1".into()),
        ("PATH".into(), "/bin:/usr/bin".into()),
    ];
    let mut child = spawn(&spec).unwrap();
    assert!(child.stdout.as_ref().unwrap().as_raw_fd() >= 3);
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(child.wait().unwrap().success());
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some("zero|a b|x=1|/tmp|"),
        "no HOME: nothing inherited"
    );
    let stat = process::parse_stat(lines.next().unwrap()).unwrap();
    assert_eq!(stat.pgid, child.pid(), "a process group of its own");
    let own_sid = nix::unistd::getsid(None).unwrap().as_raw() as u32;
    assert_eq!(stat.sid, own_sid, "in the service's session");
    assert_eq!(stat.start_time, child.start_time());
    assert!(!reap::is_claimed(child.pid()), "reaped and released");
}

#[test]
fn a_session_leader_leads_its_session() {
    let mut spec = SpawnSpec::new("/bin/sh", "/");
    spec.args = vec!["-c".into(), "cat /proc/$$/stat".into()];
    spec.leader = Leader::Session;
    let mut child = spawn(&spec).unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child.wait().unwrap();
    let stat = process::parse_stat(&out).unwrap();
    assert_eq!((stat.sid, stat.pgid), (child.pid(), child.pid()));
}

#[test]
fn signals_start_at_their_defaults_and_unblocked() {
    let mut spec = SpawnSpec::new("/bin/sh", "/");
    spec.args = vec![
        "-c".into(),
        "grep -E '^Sig(Blk|Ign)' /proc/self/status".into(),
    ];
    let mut child = spawn(&spec).unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child.wait().unwrap();
    // The test harness ignores SIGPIPE (Rust's runtime does): the child
    // does not; grep's own status shows what it inherited.
    assert!(out.contains("SigBlk:\t0000000000000000"), "{out}");
    assert!(out.contains("SigIgn:\t0000000000000000"), "{out}");
}

#[test]
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn clone3_and_its_fallback_both_start_the_child_inside_the_cgroup() {
    let root = match crate::supervise::cgroup::CgroupRoot::find() {
        Ok(root) => root,
        Err(why) => return eprintln!("skipped: {why}"),
    };
    for clone3 in [true, false] {
        let key = format!("unit-{}-{clone3}", std::process::id());
        let dir = root.create(&key).unwrap();
        CLONE3_WORKS.store(clone3, Ordering::Relaxed);
        let mut spec = SpawnSpec::new("/bin/cat", "/");
        spec.args = vec!["/proc/self/cgroup".into()];
        spec.cgroup = Some(dir.clone());
        let spawned = spawn(&spec);
        CLONE3_WORKS.store(true, Ordering::Relaxed);
        let mut child = spawned.unwrap();
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert!(child.wait().unwrap().success());
        assert_eq!(
            process::parse_cgroup_v2(&out),
            root.path_of(&dir).as_deref()
        );
        std::fs::remove_dir(&dir).unwrap();
    }
}

#[test]
fn failures_name_the_program_and_the_step() {
    let e = spawn(&SpawnSpec::new("/nonexistent/prog", "/")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cannot run /nonexistent/prog: No such file or directory (os error 2)"
    );
    let e = spawn(&SpawnSpec::new("/bin/true", "/nonexistent/dir")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cannot run /bin/true: cannot enter /nonexistent/dir: No such file or directory (os error 2)"
    );
    let mut spec = SpawnSpec::new("/bin/true", "/");
    spec.args = vec!["a\0b".into()];
    let e = spawn(&spec).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cannot run /bin/true: an argument holds a NUL byte"
    );
}

/// The stopped children of this process.
fn stopped_children() -> Vec<u32> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        for pid in text.split_ascii_whitespace().filter_map(|p| p.parse().ok()) {
            if process::stat(pid).is_some_and(|s| s.state == b'T') {
                out.push(pid);
            }
        }
    }
    out
}

/// Runs `f` on a thread of its own and waits at most `bound` for it.
fn within<T: Send + 'static>(
    bound: std::time::Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(bound)
        .unwrap_or_else(|_| panic!("{what} did not finish within {bound:?}"))
}

/// What `spec`'s child prints on stdout; it must exit 0.
fn output_of(spec: &SpawnSpec) -> String {
    let mut child = spawn(spec).unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(child.wait().unwrap().success(), "{out}");
    out
}

#[test]
fn a_child_stopped_before_its_exec_is_killed_and_holds_up_no_one() {
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    let hold = Arc::new(AtomicBool::new(true));
    let mut spec = SpawnSpec::new("/bin/true", "/");
    spec.test.stop_before_exec = Some(hold.clone());
    let stopped = std::thread::spawn(move || {
        let started = Instant::now();
        (spawn(&spec), started.elapsed())
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    let pid = loop {
        if let Some(&pid) = stopped_children().first() {
            break pid;
        }
        assert!(Instant::now() < deadline, "no stopped child appeared");
        std::thread::sleep(Duration::from_millis(1));
    };
    // While it is stopped, another spawn goes through and the sweep (the
    // reap lock's writer) returns.
    let status = within(Duration::from_secs(2), "another spawn", || {
        spawn(&SpawnSpec::new("/bin/true", "/"))
            .unwrap()
            .wait()
            .unwrap()
    });
    assert!(status.success());
    within(Duration::from_secs(2), "the sweep", reap::sweep);
    assert_eq!(
        process::stat(pid).map(|s| s.state),
        Some(b'T'),
        "still stopped meanwhile"
    );

    hold.store(false, Ordering::SeqCst);
    let (result, took) = within(Duration::from_secs(3), "the stopped spawn", move || {
        stopped.join().unwrap()
    });
    assert_eq!(
        result.unwrap_err().to_string(),
        "cannot run /bin/true: its process was stopped (state T) before it could exec, and was killed"
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(process::stat(pid).is_none(), "pid {pid} is reaped");
    assert!(!reap::is_claimed(pid));
}

#[test]
fn only_stdin_stdout_and_stderr_reach_the_child() {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag};

    // A descriptor the service holds without close-on-exec.
    let held = std::fs::File::open("/dev/null").unwrap();
    fcntl(held.as_raw_fd(), FcntlArg::F_SETFD(FdFlag::empty())).unwrap();
    for by_listing in [false, true] {
        let mut spec = SpawnSpec::new("/bin/sh", "/");
        // ls runs as a child of the shell: what it lists is the shell's.
        spec.args = vec!["-c".into(), "ls /proc/$$/fd".into()];
        spec.env = vec![("PATH".into(), "/bin:/usr/bin".into())];
        spec.test.close_by_listing = by_listing;
        let out = output_of(&spec);
        let fds: Vec<&str> = out.lines().collect();
        assert_eq!(fds, ["0", "1", "2"], "by listing: {by_listing}");
    }
    let flags = fcntl(held.as_raw_fd(), FcntlArg::F_GETFD);
    assert!(flags.is_ok(), "the service's own descriptor stays open");
}

#[test]
fn no_new_privs_unless_escalation_is_allowed() {
    let own = std::fs::read_to_string("/proc/self/status").unwrap();
    let mut spec = SpawnSpec::new("/bin/cat", "/");
    spec.args = vec!["/proc/self/status".into()];
    assert!(output_of(&spec).contains("NoNewPrivs:\t1\n"));
    if own.contains("NoNewPrivs:\t1\n") {
        return eprintln!("skipped the other half: this test runs with no_new_privs");
    }
    spec.may_escalate = true;
    assert!(output_of(&spec).contains("NoNewPrivs:\t0\n"));
}

#[test]
fn a_child_that_dies_with_its_spawner_ends_when_the_thread_that_started_it_does() {
    let started = |dies: bool| {
        let mut spec = SpawnSpec::new("/bin/sleep", "/");
        spec.args = vec!["30".into()];
        spec.dies_with_spawner = dies;
        // Spawned on a thread that then ends; the child is reaped below.
        std::thread::spawn(move || {
            let child = spawn(&spec).unwrap();
            let pid = child.pid();
            std::mem::forget(child);
            pid
        })
        .join()
        .unwrap()
    };
    let (dies, lives) = (started(true), started(false));
    let dead = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| process::parse_stat(&s))
            .map_or(true, |st| st.state == b'Z')
    };
    let t = Instant::now();
    while !dead(dies) && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(dead(dies), "still running after its spawner ended");
    assert!(!dead(lives), "a child without it outlived its spawner");
    for pid in [dies, lives] {
        let pid = nix::unistd::Pid::from_raw(pid as i32);
        let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
        let _ = nix::sys::wait::waitpid(pid, None);
        reap::release(pid.as_raw() as u32);
    }
}
