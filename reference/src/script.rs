//! Runs one loop's check script: `bash -c <script>` on the agent account
//! with `CLOUDROOM_LOOP=<loop id>` set after the switch of account, in a
//! process group of its own, with a time limit.
//!
//! - The environment is built from nothing (`PATH`, `HOME`, `USER`,
//!   `LOGNAME`, `CLOUDROOM_LOOP`, `ROOM_CORE_SOCKET`), so none of the
//!   website's own settings or tokens reach the script.
//! - stdout and stderr share one pipe, so the output is combined in the
//!   order the script wrote it; only the last [`OUTPUT_LIMIT`] bytes are
//!   kept, cut at a UTF-8 boundary. The output is returned, never logged.
//! - At the limit the group gets SIGTERM (sudo relays it to the script),
//!   then SIGKILL after the grace. A room-cli call the script made dies with
//!   it, but the call Core is carrying out is Core's: Core finishes it even
//!   though room-cli is gone (a top-level spawn still starts its thread).
//! - When the script ends, what it left in its group is killed too: a run
//!   ends with its script. The leader is reaped only after that, so its
//!   process group ID cannot have been reused by then.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::account::{on_path, Switch};

/// The most output kept of one run (the last 4 KB).
pub const OUTPUT_LIMIT: usize = 4096;
/// How long the output pipe is read after the script ended (a process that
/// left the group may hold it open).
const DRAIN: Duration = Duration::from_secs(2);
/// How often the runner looks at the script while it runs.
const POLL: Duration = Duration::from_millis(20);

/// One script to run.
#[derive(Debug, Clone)]
pub struct Script {
    /// The script's text, run with `bash -c`.
    pub text: String,
    /// The loop's ID: `CLOUDROOM_LOOP`.
    pub loop_id: String,
    /// How to get onto the agent account.
    pub switch: Switch,
    /// The rest of the environment (`PATH`, `HOME`, `ROOM_CORE_SOCKET`, …).
    pub env: Vec<(String, String)>,
    /// Where it runs.
    pub cwd: PathBuf,
    /// The time limit.
    pub limit: Duration,
    /// From SIGTERM to SIGKILL at the limit.
    pub grace: Duration,
}

/// How a script ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this status.
    Exited(i32),
    /// A signal ended it (not the runner's).
    Signalled(i32),
    /// It ran past the limit and its group was killed.
    TimedOut,
    /// It could not be started.
    NotStarted(String),
}

/// What one run of a script left.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// How it ended.
    pub ending: Ending,
    /// stdout and stderr combined in order, the last 4 KB.
    pub output: String,
    /// Its process group (its leader's pid), once started.
    pub pgid: Option<i32>,
    /// How long it ran.
    pub took: Duration,
}

impl Outcome {
    /// The loop's `last_error` for this run: `None` on exit 0.
    pub fn last_error(&self, limit: Duration) -> Option<String> {
        match &self.ending {
            Ending::Exited(0) => None,
            Ending::Exited(n) => Some(format!("The script failed (exit {n}).")),
            Ending::Signalled(s) => Some(format!("The script was killed by signal {s}.")),
            Ending::TimedOut => Some(format!(
                "The script ran longer than its limit of {} and was stopped.",
                seconds(limit)
            )),
            Ending::NotStarted(e) => Some(format!("The script could not start: {e}.")),
        }
    }
}

/// `60 s`, `1.5 s`.
pub fn seconds(d: Duration) -> String {
    let ms = d.as_millis();
    if ms % 1000 == 0 {
        format!("{} s", ms / 1000)
    } else {
        format!("{} s", ms as f64 / 1000.0)
    }
}

/// The last [`OUTPUT_LIMIT`] bytes of `bytes`, starting at a UTF-8
/// boundary; invalid sequences inside become U+FFFD and the result is still
/// at most [`OUTPUT_LIMIT`] bytes.
pub fn tail(bytes: &[u8]) -> String {
    let mut start = bytes.len().saturating_sub(OUTPUT_LIMIT);
    // Skip continuation bytes (10xxxxxx): a character cut in half.
    while start < bytes.len() && start > 0 && bytes[start] & 0xC0 == 0x80 {
        start += 1;
    }
    let text = String::from_utf8_lossy(&bytes[start..]).into_owned();
    if text.len() <= OUTPUT_LIMIT {
        return text;
    }
    let mut cut = text.len() - OUTPUT_LIMIT;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    text[cut..].to_string()
}

/// The last bytes of the output, kept as they arrive.
#[derive(Default)]
struct Kept(Vec<u8>);

impl Kept {
    fn push(&mut self, chunk: &[u8]) {
        self.0.extend_from_slice(chunk);
        // Keep a little more than the limit so `tail` can find a boundary.
        if self.0.len() > 2 * OUTPUT_LIMIT {
            let drop = self.0.len() - OUTPUT_LIMIT - 4;
            self.0.drain(..drop);
        }
    }
}

fn command(script: &Script, out: &OwnedFd) -> std::io::Result<Command> {
    let marker = format!("CLOUDROOM_LOOP={}", script.loop_id);
    // Found on the website's own PATH: the script's PATH is the script's.
    let bash = on_path("bash").unwrap_or_else(|| "/bin/bash".into());
    let mut cmd = match &script.switch {
        Switch::Sudo(user) => {
            // sudo's env_reset drops what it is given, so the marker and the
            // rest of the environment are set after it, by env.
            let mut c = Command::new(on_path("sudo").unwrap_or_else(|| "sudo".into()));
            c.env_clear()
                .args(["-n", "-u", user, "--", "/usr/bin/env", "-i", &marker]);
            c.args(script.env.iter().map(|(k, v)| format!("{k}={v}")));
            c.arg(bash);
            c
        }
        Switch::None | Switch::Setuid { .. } => {
            let mut c = Command::new(bash);
            c.env_clear()
                .envs(script.env.iter().map(|(k, v)| (k, v)))
                .env("CLOUDROOM_LOOP", &script.loop_id);
            c
        }
    };
    if let Switch::Setuid { uid, gid } = script.switch {
        // std drops supplementary groups (setgroups), then setgid, then
        // setuid, in the child before exec: the environment above is set on
        // the agent-account process.
        cmd.uid(uid).gid(gid);
    }
    cmd.args(["-c", &script.text, "cloudroom-loop-script"])
        .current_dir(&script.cwd)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out.try_clone()?))
        .stderr(Stdio::from(out.try_clone()?));
    Ok(cmd)
}

/// Whether the leader has exited, without reaping it (its pid, and so the
/// group's ID, stays taken until `wait`).
fn exited(pid: Pid) -> bool {
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG;
    !matches!(waitid(Id::Pid(pid), flags), Ok(WaitStatus::StillAlive))
}

/// Waits up to `limit` for the leader to exit; whether it did.
fn wait_exit(pid: Pid, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if exited(pid) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL);
    }
}

/// Runs the script to its end or its limit.
pub fn run(script: &Script) -> Outcome {
    let started = Instant::now();
    let not_started = |e: String| Outcome {
        ending: Ending::NotStarted(e),
        output: String::new(),
        pgid: None,
        took: started.elapsed(),
    };
    let (read, write) = match nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC) {
        Ok(p) => p,
        Err(e) => return not_started(format!("no pipe for its output ({e})")),
    };
    let child = command(script, &write).and_then(|mut c| c.spawn());
    // Our copies of the write end must go, or the pipe never ends.
    drop(write);
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return not_started(e.to_string()),
    };
    let pid = Pid::from_raw(child.id() as i32);
    let kept = Arc::new(Mutex::new(Kept::default()));
    let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(1);
    {
        let kept = kept.clone();
        let mut read = std::fs::File::from(read);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            while let Ok(n) = read.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                kept.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(&chunk[..n]);
            }
            let _ = done_tx.send(());
        });
    }
    let timed_out = !wait_exit(pid, script.limit);
    if timed_out {
        let _ = killpg(pid, Signal::SIGTERM);
        wait_exit(pid, script.grace);
    }
    // Whatever is left of the group (all of it after a timeout, background
    // leftovers after a normal end) goes now, while the unreaped leader
    // still holds the group's ID.
    let _ = killpg(pid, Signal::SIGKILL);
    let status = child.wait();
    let _ = done_rx.recv_timeout(DRAIN);
    let output = tail(&kept.lock().unwrap_or_else(|e| e.into_inner()).0);
    let ending = match status {
        _ if timed_out => Ending::TimedOut,
        Ok(s) => match (s.code(), s.signal()) {
            (Some(code), _) => Ending::Exited(code),
            (None, Some(sig)) => Ending::Signalled(sig),
            (None, None) => Ending::Exited(-1),
        },
        Err(e) => Ending::NotStarted(format!("it could not be waited for ({e})")),
    };
    Outcome {
        ending,
        output,
        pgid: Some(pid.as_raw()),
        took: started.elapsed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b";

    fn script(text: &str, limit_ms: u64) -> Script {
        Script {
            text: text.into(),
            loop_id: ID.into(),
            switch: Switch::None,
            env: vec![("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into())],
            cwd: std::env::temp_dir(),
            limit: Duration::from_millis(limit_ms),
            grace: Duration::from_millis(300),
        }
    }

    /// Whether any process is in process group `pgid`.
    fn group_alive(pgid: i32) -> bool {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                return false;
            };
            let after = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
            after.split(' ').nth(2) == Some(&pgid.to_string())
        })
    }

    #[test]
    fn output_is_combined_in_order_and_the_exit_is_the_error() {
        let o = run(&script(
            "echo one; echo two >&2; echo three; echo \"$CLOUDROOM_LOOP\"; exit 3",
            10_000,
        ));
        assert_eq!(o.ending, Ending::Exited(3));
        assert_eq!(o.output, format!("one\ntwo\nthree\n{ID}\n"));
        assert_eq!(
            o.last_error(Duration::from_secs(60)).as_deref(),
            Some("The script failed (exit 3).")
        );
        let ok = run(&script("true", 10_000));
        assert_eq!(
            (ok.ending.clone(), ok.last_error(Duration::ZERO)),
            (Ending::Exited(0), None)
        );
    }

    #[test]
    fn the_environment_is_only_what_the_runner_gives() {
        // The test process has plenty (CARGO_*, HOME, …); none of it passes.
        let o = run(&script("env | sort", 10_000));
        assert_eq!(
            o.output
                .lines()
                .map(|l| l.split('=').next().unwrap())
                .collect::<Vec<_>>(),
            // bash adds PWD, SHLVL and _ itself.
            vec!["CLOUDROOM_LOOP", "PATH", "PWD", "SHLVL", "_"],
            "{}",
            o.output
        );
    }

    #[test]
    fn only_the_last_4_kb_are_kept_cut_at_a_character() {
        // 3000 three-byte characters: 9000 bytes, so the cut lands mid-character.
        let o = run(&script(
            "printf 'start'; for i in $(seq 3000); do printf '€'; done; printf 'end'",
            10_000,
        ));
        assert!(o.output.len() <= OUTPUT_LIMIT && o.output.len() > OUTPUT_LIMIT - 4);
        assert!(o.output.ends_with("€end") && !o.output.contains("start"));
        assert!(o.output.trim_end_matches("end").chars().all(|c| c == '€'));
        assert_eq!(tail(b"\xff\xfeok"), "\u{fffd}\u{fffd}ok");
        let lossy = tail(&[0xff; 5000]);
        assert!(lossy.len() <= OUTPUT_LIMIT && lossy.chars().all(|c| c == '\u{fffd}'));
    }

    #[test]
    fn a_script_past_its_limit_loses_its_whole_group() {
        let started = Instant::now();
        let o = run(&script(
            // Nothing in it dies of SIGTERM (ignored signals stay ignored
            // across exec): SIGKILL after the grace ends it.
            "trap '' TERM; echo before; sleep 30 & sleep 30; echo never",
            500,
        ));
        assert_eq!(o.ending, Ending::TimedOut);
        assert_eq!(o.output, "before\n");
        assert_eq!(
            o.last_error(Duration::from_millis(500)).as_deref(),
            Some("The script ran longer than its limit of 0.5 s and was stopped.")
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        let pgid = o.pgid.unwrap();
        // SIGKILL is delivered at once; the orphans are reaped by init soon after.
        let deadline = Instant::now() + Duration::from_secs(5);
        while group_alive(pgid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!group_alive(pgid), "process group {pgid} is gone");
    }

    #[test]
    fn through_sudo_the_marker_is_set_after_the_switch() {
        let mut s = script("room-cli loop list", 1000);
        s.switch = Switch::Sudo("room-agent".into());
        let (_read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
        let cmd = command(&s, &write).unwrap();
        assert!(cmd.get_program().to_string_lossy().ends_with("sudo"));
        let mut args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        // sudo, then env clears what sudo kept and sets the marker and the rest.
        let bash = args.remove(8);
        assert!(bash.ends_with("bash"), "{bash}");
        let marker = format!("CLOUDROOM_LOOP={ID}");
        let want = [
            "-n",
            "-u",
            "room-agent",
            "--",
            "/usr/bin/env",
            "-i",
            &marker,
            "PATH=/usr/local/bin:/usr/bin:/bin",
            "-c",
            "room-cli loop list",
            "cloudroom-loop-script",
        ];
        assert_eq!(args, want);
    }

    #[test]
    fn leftovers_of_a_finished_script_are_killed_and_a_missing_cwd_is_reported() {
        let o = run(&script("sleep 30 & echo done", 10_000));
        assert_eq!(
            (o.ending.clone(), o.output.as_str()),
            (Ending::Exited(0), "done\n")
        );
        assert!(o.took < Duration::from_secs(5), "{:?}", o.took);
        let mut s = script("true", 1000);
        s.cwd = "/nonexistent-7731".into();
        let o = run(&s);
        assert!(matches!(o.ending, Ending::NotStarted(_)), "{:?}", o.ending);
        assert!(o
            .last_error(Duration::ZERO)
            .unwrap()
            .starts_with("The script could not start: "));
    }
}
