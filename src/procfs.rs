//! `/proc/PID/stat` and `/proc/PID/environ` reads: a caller's ancestry as the
//! caller machine wants it. No decisions here; `room_machines::classify` makes
//! them.
//!
//! A pid is reused once its process is reaped, so a process is known by its
//! pid and its start time together ([`ProcKey`]): harnesses are registered
//! under both, and the walk reads each process's start time before and after
//! its environment, so what it reports belongs to one process.

use std::cell::RefCell;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

use room_machines::caller::{INIT_PID, LOOP_MARKER};
use room_machines::{EnvView, ProcView};

/// The longest walk; a guard against a cycle in a changing process table.
pub const MAX_DEPTH: usize = 4096;

/// Where `/proc` is; tests may point it elsewhere.
#[derive(Debug, Clone)]
pub struct Procfs {
    root: PathBuf,
}

impl Default for Procfs {
    fn default() -> Self {
        Procfs {
            root: PathBuf::from("/proc"),
        }
    }
}

/// One process, as opposed to one pid: its pid and its start time
/// (`/proc/PID/stat` field 22, clock ticks after boot). A recycled pid has
/// another start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProcKey {
    /// The process ID.
    pub pid: u32,
    /// When it started, in clock ticks after boot.
    pub start_time: u64,
}

/// The fields of `/proc/PID/stat` the walk uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// The parent's pid (field 4).
    pub ppid: u32,
    /// The start time (field 22), clock ticks after boot.
    pub start_time: u64,
}

/// The ppid and start time from the text of `/proc/PID/stat`. The second
/// field (comm) is in parentheses and may itself hold spaces and
/// parentheses, so the fields are read after the LAST `)`: ` state ppid …`,
/// which makes field 3 (state) the first and field 22 the twentieth.
pub fn parse_stat(stat: &str) -> Option<Stat> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let _state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    // Fields 5 to 21 lie between ppid (4) and starttime (22).
    let start_time = fields.nth(22 - 5)?.parse().ok()?;
    Some(Stat { ppid, start_time })
}

/// The value of `CLOUDROOM_LOOP` in the raw bytes of `/proc/PID/environ`
/// (NUL-separated `KEY=value` entries); the first entry wins, as with
/// `getenv`. An empty value counts as set.
pub fn parse_marker(environ: &[u8]) -> Option<String> {
    let prefix = format!("{LOOP_MARKER}=");
    environ
        .split(|b| *b == 0)
        .find_map(|entry| entry.strip_prefix(prefix.as_bytes()))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

impl Procfs {
    /// A `/proc` at another path (tests).
    pub fn at(root: impl Into<PathBuf>) -> Procfs {
        Procfs { root: root.into() }
    }

    fn file(&self, pid: u32, name: &str) -> PathBuf {
        self.root.join(pid.to_string()).join(name)
    }

    /// The ppid and start time of `pid`; `None` when the process is gone (or
    /// its stat cannot be read or parsed).
    pub fn stat(&self, pid: u32) -> Option<Stat> {
        // One read into a stack buffer: a stat line is a few hundred bytes
        // (comm is at most 64), so 1 KiB holds it; a longer one (a test's
        // fake /proc) is read whole.
        let path = self.file(pid, "stat");
        let mut buf = [0u8; 1024];
        let mut file = std::fs::File::open(&path).ok()?;
        let mut n = 0;
        while n < buf.len() {
            match file.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
        if n == buf.len() {
            let stat = std::fs::read(&path).ok()?;
            return parse_stat(&String::from_utf8_lossy(&stat));
        }
        parse_stat(&String::from_utf8_lossy(&buf[..n]))
    }

    /// `pid` as one process (its pid and start time); `None` when it is gone.
    /// For a child not yet reaped, this is the child.
    pub fn key(&self, pid: u32) -> Option<ProcKey> {
        self.stat(pid).map(|s| ProcKey {
            pid,
            start_time: s.start_time,
        })
    }

    /// `pid`'s cgroup v2 path (the `0::` line of `/proc/PID/cgroup`); `None`
    /// when the process is gone or has no v2 cgroup.
    pub fn cgroup(&self, pid: u32) -> Option<String> {
        let mut text = String::new();
        std::fs::File::open(self.file(pid, "cgroup"))
            .ok()?
            .take(64 * 1024)
            .read_to_string(&mut text)
            .ok()?;
        crate::supervise::process::parse_cgroup_v2(&text).map(str::to_string)
    }

    /// What can be read of `pid`'s environment: EACCES is `Hidden`; `None`
    /// when the process is gone.
    pub fn env(&self, pid: u32) -> Option<EnvView> {
        read_env(&self.file(pid, "environ"))
    }

    /// The ancestry of `pid`, nearest first (`pid` itself first), up to but
    /// not including pid 1 (whose environment is every orphan's, see
    /// [`INIT_PID`]), or up to the first process whose parent is outside our
    /// view (ppid 0). Each process is marked with `harness(its key)`.
    ///
    /// The walk ends, without the entry, at a process that vanished: one
    /// whose stat is gone, whose start time differs after its environment
    /// was read (the pid was reused between the reads), or that started
    /// after the process it is the parent of (the parent died and its pid
    /// was reused).
    pub fn ancestry(&self, pid: u32, harness: impl Fn(ProcKey) -> Option<String>) -> Vec<ProcView> {
        let mut out = Vec::new();
        let mut pid = pid;
        let mut child_start = u64::MAX;
        while pid != 0 && pid != INIT_PID && out.len() < MAX_DEPTH {
            let Some(before) = self.stat(pid) else { break };
            if before.start_time > child_start {
                break;
            }
            let Some(env) = self.env(pid) else { break };
            if self.stat(pid).map(|s| s.start_time) != Some(before.start_time) {
                break;
            }
            let key = ProcKey {
                pid,
                start_time: before.start_time,
            };
            out.push(ProcView {
                pid,
                harness: harness(key),
                env,
            });
            if before.ppid == pid {
                break;
            }
            pid = before.ppid;
            child_start = before.start_time;
        }
        out
    }
}

thread_local! {
    /// Each agent-socket worker's buffer for environments: reused, and big
    /// enough that one `read` takes a usual environment whole. Every `read`
    /// of `/proc/PID/environ` maps the other process's pages, so the growing
    /// reads of `std::fs::read` (32 bytes, then doubling) cost several
    /// times one large read.
    static ENV_BUF: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(ENV_BUF_BYTES));
}

/// The environment buffer's starting capacity.
const ENV_BUF_BYTES: usize = 64 * 1024;

fn read_env(path: &Path) -> Option<EnvView> {
    // EACCES comes from the open (the kernel checks ptrace access there).
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::PermissionDenied => return Some(EnvView::Hidden),
        Err(_) => return None,
    };
    ENV_BUF.with(|buf| {
        let mut buf = buf.borrow_mut();
        buf.clear();
        let view = match file.read_to_end(&mut buf) {
            Ok(_) => Some(EnvView::Readable {
                loop_marker: parse_marker(&buf),
            }),
            Err(e) if e.kind() == ErrorKind::PermissionDenied => Some(EnvView::Hidden),
            Err(_) => None,
        };
        // An outsized environment does not pin its memory in the worker.
        if buf.capacity() > 16 * ENV_BUF_BYTES {
            *buf = Vec::with_capacity(ENV_BUF_BYTES);
        }
        view
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stat line as the kernel writes it, with this comm, ppid and start time.
    fn stat_line(pid: u32, comm: &str, ppid: u32, start_time: u64) -> String {
        // Fields 5 to 21 (pgrp … itrealvalue), then 22 (starttime) and a tail.
        let middle = ["0"; 17].join(" ");
        format!("{pid} ({comm}) S {ppid} {middle} {start_time} 8 9 10\n")
    }

    #[test]
    fn stat_fields_are_read_after_the_last_parenthesis() {
        let stat = |ppid, start_time| Some(Stat { ppid, start_time });
        assert_eq!(parse_stat(&stat_line(42, "sh", 7, 1234)), stat(7, 1234));
        assert_eq!(parse_stat(&stat_line(42, "a b) c", 9, 55)), stat(9, 55));
        assert_eq!(parse_stat(&stat_line(42, ") (x) 1 2 3", 1, 8)), stat(1, 8));
        // A real line from this kernel.
        let real = "16344 (cat) R 16342 16342 6495 0 -1 4194304 97 0 0 0 0 0 0 0 20 0 1 0 94285 3133440 390 18446744073709551615 94640096657408 94640096677289 140732915630880 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 94640096693296 94640096694912 94640400506880 140732915632846 140732915632866 140732915632866 140732915634155 0";
        assert_eq!(parse_stat(real), stat(16342, 94285));
        assert_eq!(parse_stat("42 (sh) S 7 42 42 0 -1"), None, "no field 22");
        assert_eq!(parse_stat("42 (x y"), None);
        assert_eq!(parse_stat(""), None);
    }

    #[test]
    fn the_marker_is_found_between_nuls_and_the_first_wins() {
        let id = "0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b";
        let env = format!("A=1\0CLOUDROOM_LOOP={id}\0CLOUDROOM_LOOP=x\0");
        assert_eq!(parse_marker(env.as_bytes()), Some(id.into()));
        assert_eq!(
            parse_marker(b"CLOUDROOM_LOOP=\0"),
            Some(String::new()),
            "an empty value counts as set"
        );
        assert_eq!(parse_marker(b"XCLOUDROOM_LOOP=1\0CLOUDROOM_LOOPS=2"), None);
        assert_eq!(parse_marker(b""), None);
    }

    /// A fake `/proc` in a temp folder, removed on drop.
    struct FakeProc(PathBuf);

    impl FakeProc {
        fn new(name: &str) -> FakeProc {
            let dir =
                std::env::temp_dir().join(format!("procfs-test-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            FakeProc(dir)
        }

        fn put(&self, pid: u32, ppid: u32, start_time: u64, env: &str) {
            let d = self.0.join(pid.to_string());
            std::fs::create_dir_all(&d).unwrap();
            self.restat(pid, ppid, start_time);
            std::fs::write(d.join("environ"), env).unwrap();
        }

        fn restat(&self, pid: u32, ppid: u32, start_time: u64) {
            let line = stat_line(pid, "odd ) name", ppid, start_time);
            std::fs::write(self.0.join(pid.to_string()).join("stat"), line).unwrap();
        }

        fn procfs(&self) -> Procfs {
            Procfs::at(&self.0)
        }
    }

    impl Drop for FakeProc {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn pids(a: &[ProcView]) -> Vec<u32> {
        a.iter().map(|v| v.pid).collect()
    }

    #[test]
    fn a_fake_proc_walks_up_to_pid_1_and_stops_where_a_process_vanished() {
        let fake = FakeProc::new("walk");
        fake.put(30, 20, 300, "A=1\0");
        fake.put(20, 10, 200, "CLOUDROOM_LOOP=x\0");
        fake.put(10, 1, 100, "");
        fake.put(1, 0, 1, "");
        let p = fake.procfs();
        let a = p.ancestry(30, |k| (k.pid == 10).then(|| "s".to_string()));
        assert_eq!(pids(&a), vec![30, 20, 10]);
        assert_eq!(a[2].harness.as_deref(), Some("s"));
        assert_eq!(
            a[1].env,
            EnvView::Readable {
                loop_marker: Some("x".into())
            }
        );
        // 10 vanishes: the walk ends after 20.
        std::fs::remove_dir_all(fake.0.join("10")).unwrap();
        assert_eq!(pids(&p.ancestry(30, |_| None)), vec![30, 20]);
    }

    #[test]
    fn pid_1s_environment_is_never_read_in_the_marker_walk() {
        // A container whose init sets CLOUDROOM_LOOP, and an orphan under it.
        let fake = FakeProc::new("init");
        fake.put(
            1,
            0,
            1,
            "CLOUDROOM_LOOP=0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b\0",
        );
        fake.put(40, 1, 400, "");
        let a = fake.procfs().ancestry(40, |_| None);
        assert_eq!(pids(&a), vec![40]);
        assert_eq!(
            room_machines::classify(None, &a),
            room_machines::Caller::Unknown
        );
        // pid 1 itself has no ancestry to read.
        assert_eq!(fake.procfs().ancestry(1, |_| None), vec![]);
    }

    #[test]
    fn a_recycled_pid_is_not_taken_for_a_harness() {
        // Harness 10 (started at tick 100) was reaped; its pid now belongs to
        // an unrelated process started at tick 500, the caller's parent.
        let harness = ProcKey {
            pid: 10,
            start_time: 100,
        };
        let is_harness = |k: ProcKey| (k == harness).then(|| "cr_old".to_string());
        let fake = FakeProc::new("recycled");
        fake.put(30, 10, 600, "");
        fake.put(10, 1, 500, "");
        let a = fake.procfs().ancestry(30, is_harness);
        assert_eq!(pids(&a), vec![30, 10]);
        assert_eq!(a[1].harness, None);
        assert_eq!(
            room_machines::classify(None, &a),
            room_machines::Caller::Unknown
        );
        // The same pid with the harness's own start time is the harness.
        fake.restat(10, 1, 100);
        let a = fake.procfs().ancestry(30, is_harness);
        assert_eq!(a[1].harness.as_deref(), Some("cr_old"));
    }

    #[test]
    fn a_parent_younger_than_its_child_is_a_recycled_pid_and_ends_the_walk() {
        // 30's parent 10 died after 30 started, and a harness got pid 10:
        // it is not 30's ancestor.
        let fake = FakeProc::new("younger");
        fake.put(30, 10, 300, "");
        fake.put(10, 1, 900, "");
        let a = fake
            .procfs()
            .ancestry(30, |k| (k.pid == 10).then(|| "cr_new".to_string()));
        assert_eq!(pids(&a), vec![30]);
        assert_eq!(
            room_machines::classify(None, &a),
            room_machines::Caller::Unknown
        );
        // Started in the same tick as its child is still its parent.
        fake.restat(10, 1, 300);
        assert_eq!(pids(&fake.procfs().ancestry(30, |_| None)), vec![30, 10]);
    }

    #[test]
    fn a_pid_reused_between_its_stat_and_environ_reads_ends_the_walk() {
        // 20's environ is a FIFO: the reader's open waits for this test's
        // writer, which replaces 20 (a new start time, a marker) before it
        // lets the read finish. The environ read belongs to the new process.
        let fake = FakeProc::new("reused");
        fake.put(30, 20, 300, "");
        fake.put(20, 10, 200, "");
        fake.put(10, 1, 100, "");
        let environ = fake.0.join("20").join("environ");
        std::fs::remove_file(&environ).unwrap();
        nix::unistd::mkfifo(&environ, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let id = "0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b";
        let writer = {
            let environ = environ.clone();
            let stat = fake.0.join("20").join("stat");
            std::thread::spawn(move || {
                let mut fifo = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&environ)
                    .unwrap();
                std::fs::write(stat, stat_line(20, "new", 10, 700)).unwrap();
                use std::io::Write;
                fifo.write_all(format!("CLOUDROOM_LOOP={id}\0").as_bytes())
                    .unwrap();
            })
        };
        let a = fake.procfs().ancestry(30, |_| None);
        writer.join().unwrap();
        assert_eq!(pids(&a), vec![30], "{a:?}");
        assert_eq!(
            room_machines::classify(None, &a),
            room_machines::Caller::Unknown
        );
    }

    #[test]
    fn the_real_ancestry_of_this_process_starts_with_it() {
        let me = std::process::id();
        let a = Procfs::default().ancestry(me, |_| None);
        assert_eq!(a.first().map(|v| v.pid), Some(me));
        assert!(a.iter().all(|v| v.pid != INIT_PID), "{a:?}");
        assert!(Procfs::default().key(me).is_some());
    }
}
