//! `/proc/PID/stat` and `/proc/PID/environ` reads: a caller's ancestry as the
//! caller machine wants it. No decisions here; `room_machines::classify` makes
//! them.

use std::cell::RefCell;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

use room_machines::caller::LOOP_MARKER;
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

/// The parent pid from the text of `/proc/PID/stat`. The second field (comm)
/// is in parentheses and may itself hold spaces and parentheses, so the
/// fields are read after the LAST `)`: ` state ppid …`.
pub fn parse_ppid(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let _state = fields.next()?;
    fields.next()?.parse().ok()
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

    /// The parent of `pid`; `None` when the process is gone (or its stat
    /// cannot be read or parsed).
    pub fn ppid(&self, pid: u32) -> Option<u32> {
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
            return parse_ppid(&String::from_utf8_lossy(&stat));
        }
        parse_ppid(&String::from_utf8_lossy(&buf[..n]))
    }

    /// What can be read of `pid`'s environment: EACCES is `Hidden`; `None`
    /// when the process is gone.
    pub fn env(&self, pid: u32) -> Option<EnvView> {
        read_env(&self.file(pid, "environ"))
    }

    /// The ancestry of `pid`, nearest first (`pid` itself first), up to pid 1
    /// or the first process whose parent is outside our view (ppid 0). Each
    /// process is marked with `harness(pid)`. A process that vanishes
    /// mid-walk ends the walk there.
    pub fn ancestry(&self, pid: u32, harness: impl Fn(u32) -> Option<String>) -> Vec<ProcView> {
        let mut out = Vec::new();
        let mut pid = pid;
        while pid != 0 && out.len() < MAX_DEPTH {
            // Read stat first: if the process is gone, the walk ends and no
            // half-read entry is added.
            let Some(ppid) = self.ppid(pid) else { break };
            let Some(env) = self.env(pid) else { break };
            out.push(ProcView {
                pid,
                harness: harness(pid),
                env,
            });
            if pid == 1 || ppid == pid {
                break;
            }
            pid = ppid;
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

    #[test]
    fn ppid_is_read_after_the_last_parenthesis() {
        assert_eq!(parse_ppid("42 (sh) S 7 42 42 0 -1"), Some(7));
        assert_eq!(parse_ppid("42 (a b) c) R 9 1 1"), Some(9));
        assert_eq!(parse_ppid("42 ()) (x) S 1 1"), Some(1));
        assert_eq!(parse_ppid("42 (x y"), None);
        assert_eq!(parse_ppid(""), None);
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

    #[test]
    fn a_fake_proc_walks_to_pid_1_and_stops_where_a_process_vanished() {
        let dir = std::env::temp_dir().join(format!("procfs-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let put = |pid: u32, ppid: u32, env: &str| {
            let d = dir.join(pid.to_string());
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("stat"), format!("{pid} (odd ) name) S {ppid} 0 0")).unwrap();
            std::fs::write(d.join("environ"), env).unwrap();
        };
        put(30, 20, "A=1\0");
        put(20, 10, "CLOUDROOM_LOOP=x\0");
        put(10, 1, "");
        put(1, 0, "");
        let p = Procfs::at(&dir);
        let a = p.ancestry(30, |pid| (pid == 10).then(|| "s".to_string()));
        let pids: Vec<u32> = a.iter().map(|v| v.pid).collect();
        assert_eq!(pids, vec![30, 20, 10, 1]);
        assert_eq!(a[2].harness.as_deref(), Some("s"));
        assert_eq!(
            a[1].env,
            EnvView::Readable {
                loop_marker: Some("x".into())
            }
        );
        // 10 vanishes: the walk ends after 20.
        std::fs::remove_dir_all(dir.join("10")).unwrap();
        let pids: Vec<u32> = p.ancestry(30, |_| None).iter().map(|v| v.pid).collect();
        assert_eq!(pids, vec![30, 20]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_real_ancestry_of_this_process_starts_with_it() {
        let me = std::process::id();
        let a = Procfs::default().ancestry(me, |_| None);
        assert_eq!(a.first().map(|v| v.pid), Some(me));
        assert!(a.len() >= 2, "{a:?}");
    }
}
