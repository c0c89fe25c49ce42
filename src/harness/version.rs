//! Asking a CLI its version (`<program> --version`) with a clean
//! environment, stdin closed, a deadline and a cap on what is read, as the
//! account its turns run as: the service's own, or the agent account when
//! `agent_uid` names another, so a root service never runs a program that
//! account may have replaced with more rights than a turn has. It is
//! started as turns are ([`crate::supervise::spawn`]: no lock held while an
//! agent could stop it before its exec, `no_new_privs`, no descriptor but
//! stdio), in a process group of its own that is killed once its answer is
//! read or the deadline passes, and that dies with the thread that waits
//! for it: nothing of it outlives the check or the service.

use std::ffi::OsString;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::account::Account;
use crate::supervise::{spawn, Child, SpawnSpec};

/// How long the check may take, from spawn to exit.
pub(crate) const DEADLINE: Duration = Duration::from_secs(5);
/// The most bytes read of each of its stdout and stderr.
pub(crate) const MAX_READ: usize = 4096;
/// The most characters of the version kept.
pub(crate) const MAX_VERSION: usize = 200;

/// What `program --version` printed first (its first line that is not
/// blank, trimmed), or why there is nothing: it could not run, did not
/// finish within `deadline`, failed, or printed nothing.
pub(crate) fn ask(
    program: &Path,
    env: &[(OsString, OsString)],
    account: Option<&Account>,
    deadline: Duration,
) -> Result<String, String> {
    let asked = format!("`{} --version`", program.display());
    let spec = check_spec(program, &["--version".to_string()], env, account);
    let mut child = spawn(&spec).map_err(|e| e.to_string())?;
    // Its stdin closed: a CLI that reads it sees its end at once.
    drop(child.stdin.take());
    let end = Instant::now() + deadline;
    let (out, err, cut) = read_both(&mut child, end);
    // A flood cut at the cap has said its first line: it is not waited for.
    let exited = !cut && exited_by(&child, end);
    // Unreaped, the leader keeps its group's number: this reaches only
    // what the check started, whatever is still running of it.
    let _ = killpg(Pid::from_raw(child.pgid() as i32), Signal::SIGKILL);
    let status = child.wait();
    let said = |bytes: &[u8]| first_line(&String::from_utf8_lossy(bytes));
    if cut {
        return said(&out).ok_or_else(|| format!("{asked} printed nothing"));
    }
    let Some(status) = exited.then_some(status).and_then(Result::ok) else {
        return Err(format!(
            "{asked} did not finish within {} s",
            deadline.as_secs_f64()
        ));
    };
    if !status.success() {
        use std::os::unix::process::ExitStatusExt;
        let how = match (status.code(), status.signal()) {
            (Some(code), _) => format!("exited with code {code}"),
            (None, Some(sig)) => format!("was killed by signal {sig}"),
            (None, None) => "failed".to_string(),
        };
        return Err(match said(&err) {
            Some(why) => format!("{asked} {how}: {why}"),
            None => format!("{asked} {how}"),
        });
    }
    said(&out).ok_or_else(|| format!("{asked} printed nothing"))
}

/// The spec of a check the service runs of a harness's program (`--version`,
/// an ACP agent's `initialize`): in `/`, with `env` only, as `account`, in
/// a process group that dies with the thread that spawns it.
pub(crate) fn check_spec(
    program: &Path,
    args: &[String],
    env: &[(OsString, OsString)],
    account: Option<&Account>,
) -> SpawnSpec {
    let mut spec = SpawnSpec::new(program, "/");
    spec.args = args.iter().map(Into::into).collect();
    spec.env = env.to_vec();
    spec.account = account.map(|a| crate::supervise::Account {
        uid: a.uid,
        gid: a.gid,
        groups: a.groups.clone(),
    });
    spec.dies_with_spawner = true;
    spec
}

/// Up to [`MAX_READ`] bytes of each of the child's stdout and stderr, read
/// until both end or are full, or `end`; and whether stdout was cut full.
fn read_both(child: &mut Child, end: Instant) -> (Vec<u8>, Vec<u8>, bool) {
    let file = |fd: Option<OwnedFd>| fd.map(File::from);
    let mut pipes = [
        (file(child.stdout.take().map(OwnedFd::from)), Vec::new()),
        (file(child.stderr.take().map(OwnedFd::from)), Vec::new()),
    ];
    let mut chunk = [0u8; 1024];
    while pipes.iter().any(|(p, _)| p.is_some()) {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let ready: Vec<bool> = {
            let mut fds: Vec<PollFd> = pipes
                .iter()
                .filter_map(|(p, _)| p.as_ref())
                .map(|p| PollFd::new(p.as_fd(), PollFlags::POLLIN))
                .collect();
            let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
            match poll(&mut fds, timeout) {
                Ok(_) => fds.iter().map(|f| f.any().unwrap_or(true)).collect(),
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => break,
            }
        };
        let mut ready = ready.into_iter();
        for (pipe, buf) in pipes.iter_mut() {
            let Some(p) = pipe.as_mut() else { continue };
            if !ready.next().unwrap_or(false) {
                continue;
            }
            let want = (MAX_READ - buf.len()).min(chunk.len());
            match p.read(&mut chunk[..want]) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Ok(0) | Err(_) => *pipe = None,
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    if buf.len() >= MAX_READ {
                        // Full: the rest is not read, and the group is killed.
                        *pipe = None;
                    }
                }
            }
        }
    }
    let [(_, out), (_, err)] = pipes;
    let cut = out.len() >= MAX_READ;
    (out, err, cut)
}

/// Whether the child has exited by `end`, looked at without reaping it (so
/// its group's number stays its own until it is killed).
fn exited_by(child: &Child, end: Instant) -> bool {
    let pid = Pid::from_raw(child.pid() as i32);
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    loop {
        match waitid(Id::Pid(pid), flags) {
            Ok(WaitStatus::StillAlive) => {}
            Ok(_) => return true,
            Err(nix::errno::Errno::EINTR) => {}
            Err(_) => return false,
        }
        if Instant::now() >= end {
            return false;
        }
        // It closed its output, so it is about to exit: a short look again.
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The first line of `text` that is not blank, trimmed, without control
/// characters, at most [`MAX_VERSION`] characters.
fn first_line(text: &str) -> Option<String> {
    text.lines()
        .map(|l| l.chars().filter(|c| !c.is_control()).collect::<String>())
        .map(|l| l.trim().chars().take(MAX_VERSION).collect::<String>())
        .find(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A script in a temp folder of its own, and the folder.
    fn script(body: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!(
            "room-core-version-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cli");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        (path, dir)
    }

    fn run(body: &str, deadline: Duration) -> Result<String, String> {
        let (path, dir) = script(body);
        let env = [(OsString::from("PATH"), OsString::from("/usr/bin:/bin"))];
        let said = ask(&path, &env, None, deadline)
            .map_err(|e| e.replace(&path.display().to_string(), "cli"));
        let _ = std::fs::remove_dir_all(dir);
        said
    }

    #[test]
    fn the_first_line_printed_is_the_version() {
        let said = run(
            "echo; echo '  2.1.332 (Claude Code)  '; echo more",
            DEADLINE,
        );
        assert_eq!(said.unwrap(), "2.1.332 (Claude Code)");
        assert_eq!(run("echo \"$1\"", DEADLINE).unwrap(), "--version");
    }

    #[test]
    fn a_failure_says_how_it_ended_and_what_it_printed_on_stderr() {
        let said = run("echo 'error: unknown option' >&2; exit 3", DEADLINE);
        assert_eq!(
            said.unwrap_err(),
            "`cli --version` exited with code 3: error: unknown option"
        );
        assert_eq!(
            run("exit 0", DEADLINE).unwrap_err(),
            "`cli --version` printed nothing"
        );
        let e = ask(Path::new("/nonexistent/cli"), &[], None, DEADLINE).unwrap_err();
        assert!(e.starts_with("cannot run /nonexistent/cli: "), "{e}");
    }

    #[test]
    fn a_hang_ends_at_the_deadline_with_everything_it_started() {
        let (path, dir) =
            script("sleep 30 &\necho $! > \"$(dirname \"$0\")/child\"\nexec sleep 30");
        let t = Instant::now();
        let env = [(OsString::from("PATH"), OsString::from("/usr/bin:/bin"))];
        // Long enough for a busy machine to start the script.
        let e = ask(&path, &env, None, Duration::from_millis(1500)).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
        assert!(e.ends_with("--version` did not finish within 1.5 s"), "{e}");
        let child: i32 = std::fs::read_to_string(dir.join("child"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The background sleep was in the check's group: killed with it.
        let gone = (0..200).any(|_| {
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
            let alive = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']));
            if alive {
                std::thread::sleep(Duration::from_millis(10));
            }
            !alive
        });
        assert!(gone, "the check's background process still runs");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_flood_is_cut_at_the_cap_at_once() {
        let t = Instant::now();
        let said = run("while :; do echo 'v1 flood'; done", DEADLINE);
        assert_eq!(said.unwrap(), "v1 flood");
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        let long = run("printf '%0500d\\n' 7", DEADLINE).unwrap();
        assert_eq!(long.len(), MAX_VERSION);
        let bell = run("printf '\\a\\n v2\\a \\n'", DEADLINE).unwrap();
        assert_eq!(bell, "v2");
    }
}
