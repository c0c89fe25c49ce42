//! A cgroup v2 per turn: the exact set of processes a turn started, however
//! they detached (`setsid`, double fork), ended at once with `cgroup.kill`.
//!
//! Turns live in `<the service's own cgroup>/room-core/<turn key>`. No
//! controller is enabled anywhere (the cgroups only group), so the
//! no-internal-process rule does not bite and the service may stay in its
//! own cgroup.

use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::process;

/// The folder, in the service's cgroup, that holds the turns' cgroups.
pub const BASE_NAME: &str = "room-core";

/// Where this service's turn cgroups go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupRoot {
    /// The cgroup2 mount point (`/sys/fs/cgroup`, or
    /// `/sys/fs/cgroup/unified` on a hybrid setup).
    pub mount: PathBuf,
    /// The mount's root within the hierarchy (`/` unless a namespace or a
    /// bind mount shows only part of it).
    pub mount_root: String,
    /// `<own cgroup>/room-core`.
    pub base: PathBuf,
}

/// The mount point and root of the first cgroup2 mount in the text of
/// `/proc/self/mountinfo`: `id parent major:minor root mountpoint options
/// [optional fields] - fstype source superoptions`.
pub fn parse_mountinfo(text: &str) -> Option<(PathBuf, String)> {
    text.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        if right.split_ascii_whitespace().next()? != "cgroup2" {
            return None;
        }
        let mut f = left.split_ascii_whitespace();
        let root = unescape(f.nth(3)?);
        let mount = unescape(f.next()?);
        Some((PathBuf::from(mount), root))
    })
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The directory of cgroup `path` (as `/proc/PID/cgroup` gives it) under a
/// mount of `mount_root` at `mount`; `None` if the mount does not show it.
pub fn dir_of(mount: &Path, mount_root: &str, path: &str) -> Option<PathBuf> {
    let root = mount_root.trim_end_matches('/');
    let rel = path.strip_prefix(root)?;
    if !(rel.is_empty() || rel.starts_with('/')) {
        return None;
    }
    Some(mount.join(rel.trim_start_matches('/')))
}

impl CgroupRoot {
    /// Finds the cgroup2 mount and this service's cgroup, makes
    /// `room-core` in it and checks that a turn cgroup can be made and
    /// killed there. The error says why not (for the log line).
    pub fn find() -> Result<CgroupRoot, String> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
        let (mount, mount_root) =
            parse_mountinfo(&mountinfo).ok_or("no cgroup2 file system is mounted")?;
        let own = process::cgroup_of(std::process::id())
            .ok_or("/proc/self/cgroup has no cgroup v2 line")?;
        let own_dir = dir_of(&mount, &mount_root, &own).ok_or_else(|| {
            format!(
                "this service's cgroup {own} is outside the mount at {}",
                mount.display()
            )
        })?;
        let base = own_dir.join(BASE_NAME);
        match std::fs::create_dir(&base) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot create {}: {e}", base.display())),
        }
        let root = CgroupRoot {
            mount,
            mount_root,
            base,
        };
        // One name per look: two threads may look at once (tests do).
        static LOOKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let look = LOOKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let probe = root
            .base
            .join(format!(".probe-{}-{look}", std::process::id()));
        let _ = std::fs::remove_dir(&probe);
        std::fs::create_dir(&probe)
            .map_err(|e| format!("cannot create {}: {e}", probe.display()))?;
        let has_kill = probe.join("cgroup.kill").exists();
        let procs = std::fs::OpenOptions::new()
            .write(true)
            .open(probe.join("cgroup.procs"));
        let _ = std::fs::remove_dir(&probe);
        if !has_kill {
            return Err(format!(
                "{} has no cgroup.kill (Linux 5.14 or later is needed)",
                root.base.display()
            ));
        }
        procs.map_err(|e| format!("cannot write {}/cgroup.procs: {e}", probe.display()))?;
        // Moving a process needs write access to cgroup.procs of the
        // common ancestor of where it is and where it goes: our own cgroup.
        nix::unistd::access(
            &own_dir.join("cgroup.procs"),
            nix::unistd::AccessFlags::W_OK,
        )
        .map_err(|e| format!("cannot write {}/cgroup.procs: {e}", own_dir.display()))?;
        Ok(root)
    }

    /// The cgroup directory of the turn `key`.
    pub fn dir(&self, key: &str) -> PathBuf {
        self.base.join(key)
    }

    /// Makes the cgroup of turn `key`; it must not exist yet (a leftover of
    /// an earlier run is for `kill_survivor`).
    pub fn create(&self, key: &str) -> io::Result<PathBuf> {
        let dir = self.dir(key);
        std::fs::create_dir(&dir)?;
        Ok(dir)
    }

    /// `dir` as `/proc/PID/cgroup` shows it (`/…/room-core/<key>`).
    pub fn path_of(&self, dir: &Path) -> Option<String> {
        let rel = dir.strip_prefix(&self.mount).ok()?;
        let root = self.mount_root.trim_end_matches('/');
        Some(format!("{root}/{}", rel.display()))
    }
}

/// Whether a persisted `dir` may be killed as turn `key`'s cgroup: it is
/// named `room-core/<key>` and is a cgroup (whichever mode or own cgroup the
/// run that made it had), so a damaged record cannot name another cgroup.
pub fn is_turn_dir(dir: &Path, key: &str) -> bool {
    dir.is_absolute()
        && dir.file_name().is_some_and(|n| n == key)
        && dir
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == BASE_NAME)
        && dir.join("cgroup.events").is_file()
}

/// Whether any process is left in `dir` or below (`cgroup.events`:
/// `populated 1`). A zombie does not count. A cgroup that is gone is empty.
pub fn populated(dir: &Path) -> io::Result<bool> {
    match std::fs::read_to_string(dir.join("cgroup.events")) {
        Ok(text) => Ok(text.lines().any(|l| l == "populated 1")),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// The cgroups below `dir` (a tool may make some), deepest first.
fn descendants(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    if depth > 64 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            descendants(&e.path(), out, depth + 1);
            out.push(e.path());
        }
    }
}

/// The pids in `dir` and below.
pub fn procs(dir: &Path) -> Vec<u32> {
    let mut dirs = Vec::new();
    descendants(dir, &mut dirs, 0);
    dirs.push(dir.to_path_buf());
    dirs.iter()
        .filter_map(|d| std::fs::read_to_string(d.join("cgroup.procs")).ok())
        .flat_map(|t| {
            t.split_ascii_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// Whether `pid` is in the cgroup that `/proc/PID/cgroup` shows as
/// `cgroup_path`, or below it.
pub fn holds(cgroup_path: &str, pid: u32) -> bool {
    process::cgroup_of(pid).is_some_and(|p| {
        p == cgroup_path
            || p.strip_prefix(cgroup_path)
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// SIGKILL to every process in `dir` and below, at once (`cgroup.kill`).
pub fn kill(dir: &Path) -> io::Result<()> {
    match std::fs::write(dir.join("cgroup.kill"), "1") {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        r => r,
    }
}

/// Removes `dir` and the cgroups below it, once empty. EBUSY (the kernel
/// has not finished the last exit) is retried until `deadline`.
pub fn remove(dir: &Path, deadline: Instant) -> io::Result<()> {
    let mut dirs = Vec::new();
    descendants(dir, &mut dirs, 0);
    dirs.push(dir.to_path_buf());
    for d in dirs {
        loop {
            match std::fs::remove_dir(&d) {
                Ok(()) => break,
                Err(e) if e.kind() == ErrorKind::NotFound => break,
                Err(e)
                    if e.raw_os_error() == Some(nix::libc::EBUSY) && Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn the_cgroup2_mount_is_found_among_v1_mounts() {
        assert_eq!(
            parse_mountinfo(HYBRID),
            Some((PathBuf::from("/sys/fs/cgroup/unified"), "/".to_string()))
        );
        let unified =
            "30 24 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(
            parse_mountinfo(unified),
            Some((PathBuf::from("/sys/fs/cgroup"), "/".to_string())),
            "optional fields before the separator"
        );
        let escaped = "30 24 0:26 /a\\040b /mnt/c\\040g rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            parse_mountinfo(escaped),
            Some((PathBuf::from("/mnt/c g"), "/a b".to_string()))
        );
        assert_eq!(
            parse_mountinfo("31 23 0:28 / /x rw - tmpfs tmpfs rw\n"),
            None
        );
    }

    #[test]
    fn a_cgroup_path_maps_under_the_mount_root() {
        let m = Path::new("/sys/fs/cgroup");
        assert_eq!(dir_of(m, "/", "/"), Some(m.to_path_buf()));
        assert_eq!(
            dir_of(m, "/", "/system.slice/x.service"),
            Some(m.join("system.slice/x.service"))
        );
        assert_eq!(dir_of(m, "/ns", "/ns/a"), Some(m.join("a")));
        assert_eq!(dir_of(m, "/ns", "/nsx/a"), None, "a sibling is not below");
        assert_eq!(dir_of(m, "/ns", "/other"), None);
    }

    #[test]
    fn paths_round_trip_and_only_a_turn_dir_is_trusted() {
        let root = CgroupRoot {
            mount: "/sys/fs/cgroup/unified".into(),
            mount_root: "/".into(),
            base: "/sys/fs/cgroup/unified/svc/room-core".into(),
        };
        let dir = root.dir("s-1");
        assert_eq!(root.path_of(&dir).as_deref(), Some("/svc/room-core/s-1"));
        // Not a cgroup (no cgroup.events there), or not named for the key.
        assert!(!is_turn_dir(Path::new("/tmp/room-core/s-1"), "s-1"));
        assert!(!is_turn_dir(&dir, "s-2"));
        assert!(!is_turn_dir(Path::new("/sys/fs/cgroup/unified"), "unified"));
    }
}
