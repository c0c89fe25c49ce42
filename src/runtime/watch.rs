//! The watch thread: inotify on the path of each waiting start's status
//! file. It only watches and wakes; the launch machine decides every read.
//!
//! A session's status file `/a/b/code.cloudroom-files` is watched through a
//! chain of directory watches, one per existing directory on its path, each
//! filtered by the next component's name: `/` for `a`, `/a` for `b`, `/a/b`
//! for `code.cloudroom-files`. When a directory on the path does not exist
//! (yet), the chain ends at the deepest one that does, filtered by the
//! missing name. Watches are shared: one per directory, whatever number of
//! sessions look through it.
//!
//! - A change to the file itself (written and closed, renamed into or out of
//!   place, created, deleted, touched) sends the session
//!   [`LaunchInput::Changed`](room_machines::session::LaunchInput::Changed).
//! - A change to the path (a directory on it created, deleted or renamed,
//!   or a watched directory itself deleted, moved or unmounted) means the
//!   chain no longer describes the path: the session is dropped from the
//!   watch and sent `Watched(false)`. Its launch then asks for a new watch
//!   ([`Watch::add`], which arms the chain anew from `/` down) and reads the
//!   file after it, so nothing that happened in between is missed.
//! - A queue overflow (events lost) does the same for every session, and so
//!   does a failed inotify read, after which no session is watched again.
//!
//! Each chain is armed from `/` down, under the table's lock, before the
//! launch reads the file: a directory that changes while the chain is armed
//! sends an event on a watch already in place, which the thread takes in
//! after the lock is released.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use crossbeam_channel::Sender;
use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, InotifyEvent, WatchDescriptor};
use room_machines::session::LaunchInput;
use rustc_hash::{FxHashMap, FxHashSet};

use super::job::Job;
use crate::files::status_file;

/// Handle to add and drop watched sessions.
#[derive(Clone)]
pub(crate) struct Watch {
    inotify: Arc<Inotify>,
    table: Arc<Mutex<Table>>,
}

/// What a name in a watched directory is to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A directory on the path (or the missing one the chain ends at).
    Folder,
    /// The status file itself.
    File,
}

/// A session's ID.
type Id = Arc<str>;
/// A name in a watched directory, shared by the links and tables that use it.
type Name = Arc<OsStr>;

/// One watched directory and the name the session cares about in it.
#[derive(Debug, Clone)]
struct Link {
    wd: WatchDescriptor,
    name: Name,
    kind: Kind,
}

/// Who looks through which watch. Kept small per session (10,000 waiting
/// starts are a case the bench measures): a status file's sessions are
/// found by its directory and name; the sessions behind a folder name, which
/// near `/` is every session, are found by a scan when that rare event
/// comes, so only a count is kept for them.
#[derive(Default)]
struct Table {
    /// Session → its chain, from `/` down.
    sessions: FxHashMap<Id, Vec<Link>>,
    /// (directory, status file name) → the sessions waiting on that file.
    files: FxHashMap<(WatchDescriptor, Name), Vec<Id>>,
    /// (directory, folder name) → how many chains pass through it.
    folders: FxHashMap<(WatchDescriptor, Name), usize>,
    /// Directory → how many links use its watch.
    watches: FxHashMap<WatchDescriptor, usize>,
    /// The inotify read failed: nothing can be watched any more.
    broken: bool,
}

impl Table {
    /// The table's own copy of `name` in `wd`, if a link already uses it.
    fn shared(&self, wd: WatchDescriptor, name: &Name, kind: Kind) -> Option<Name> {
        let key = (wd, name.clone());
        match kind {
            Kind::Folder => self.folders.get_key_value(&key).map(|(k, _)| k.1.clone()),
            Kind::File => self.files.get_key_value(&key).map(|(k, _)| k.1.clone()),
        }
    }

    /// The sessions whose chain passes through a directory in `gone` or
    /// a folder name in `moved`: one scan for a whole batch of events.
    fn looking(
        &self,
        gone: &FxHashSet<WatchDescriptor>,
        moved: &FxHashSet<(WatchDescriptor, Name)>,
    ) -> Vec<Id> {
        let hit = |l: &Link| {
            gone.contains(&l.wd)
                || (l.kind == Kind::Folder && moved.contains(&(l.wd, l.name.clone())))
        };
        self.sessions
            .iter()
            .filter(|(_, links)| links.iter().any(hit))
            .map(|(s, _)| s.clone())
            .collect()
    }
}

/// A change to the path through a directory: a name on it appearing or going.
fn path_changes() -> AddWatchFlags {
    AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
}

/// A change to the status file worth a read. A write is seen when its writer
/// closes the file (or renames it into place, or touches it), not at the
/// truncation that precedes it (`IN_MODIFY`), which would read an empty file.
/// A change of the mtime alone (`touch -m`) is also `IN_MODIFY` and so not
/// seen: a mark made younger that way is read at its age deadline anyway;
/// one backdated that way counts from then.
fn file_changes() -> AddWatchFlags {
    path_changes() | AddWatchFlags::IN_CLOSE_WRITE | AddWatchFlags::IN_ATTRIB
}

/// The directory itself stopped being where the path says.
fn self_gone() -> AddWatchFlags {
    AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_UNMOUNT
        | AddWatchFlags::IN_IGNORED
}

/// What a directory is watched for, for a link of `kind`; added to what
/// other sessions' links already asked of the same directory.
fn mask(kind: Kind) -> AddWatchFlags {
    let events = match kind {
        Kind::Folder => path_changes(),
        Kind::File => file_changes(),
    };
    events
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_ONLYDIR
        // nix names no IN_MASK_ADD: OR into the directory's existing mask
        // rather than replace it.
        | AddWatchFlags::from_bits_retain(nix::libc::IN_MASK_ADD)
}

impl Watch {
    /// Starts the watch thread; what it sees is sent to `events`.
    pub(crate) fn start(events: Sender<Job>) -> std::io::Result<Watch> {
        let inotify = Arc::new(Inotify::init(InitFlags::IN_CLOEXEC)?);
        let watch = Watch {
            inotify,
            table: Arc::default(),
        };
        let me = watch.clone();
        std::thread::Builder::new()
            .name("watch".into())
            .spawn(move || me.run(events))?;
        Ok(watch)
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Watches the path of `folder`'s status file for `session`; true when
    /// every change to it will be reported from now on (also when it
    /// already was). False when it cannot be watched (no inotify, no
    /// permission to watch a directory on the path, the watch limit): the
    /// launch polls then.
    pub(crate) fn add(&self, session: &str, folder: &Path) -> bool {
        let mut t = self.table();
        if t.broken {
            return false;
        }
        if t.sessions.contains_key(session) {
            return true;
        }
        let file = status_file(folder);
        let links = match self.arm(&t, &file) {
            Ok(links) => links,
            Err(e) => {
                log::warn!(
                    "{session}: cannot watch {}: {e}; polling it instead",
                    file.display()
                );
                return false;
            }
        };
        let id: Id = session.into();
        let links: Vec<Link> = links
            .into_iter()
            .map(|mut l| {
                if let Some(name) = t.shared(l.wd, &l.name, l.kind) {
                    l.name = name;
                }
                *t.watches.entry(l.wd).or_default() += 1;
                let key = (l.wd, l.name.clone());
                match l.kind {
                    Kind::Folder => *t.folders.entry(key).or_default() += 1,
                    Kind::File => t.files.entry(key).or_default().push(id.clone()),
                }
                l
            })
            .collect();
        t.sessions.insert(id, links);
        true
    }

    /// The chain for `file`: a watch on each existing directory from `/`
    /// down to its parent. A directory that is missing (or not a directory)
    /// ends the chain at the one above it, which is watched for its name.
    fn arm(&self, t: &Table, file: &Path) -> Result<Vec<Link>, Errno> {
        let (Some(parent), Some(file_name)) = (file.parent(), file.file_name()) else {
            return Err(Errno::EINVAL);
        };
        let mut dirs: Vec<&Path> = parent.ancestors().collect();
        dirs.reverse();
        if !dirs[0].has_root() {
            return Err(Errno::EINVAL);
        }
        let mut links: Vec<Link> = Vec::with_capacity(dirs.len());
        for (i, dir) in dirs.iter().enumerate() {
            let (name, kind) = match dirs.get(i + 1) {
                Some(next) => (next.file_name().unwrap_or_default(), Kind::Folder),
                None => (file_name, Kind::File),
            };
            match self.inotify.add_watch(*dir, mask(kind)) {
                Ok(wd) => links.push(Link {
                    wd,
                    name: name.into(),
                    kind,
                }),
                // Not there (yet): the link above watches for its name.
                Err(Errno::ENOENT | Errno::ENOTDIR) if i > 0 => break,
                Err(e) => {
                    // Give back the watches only this chain asked for.
                    for l in links {
                        if !t.watches.contains_key(&l.wd) {
                            let _ = self.inotify.rm_watch(l.wd);
                        }
                    }
                    return Err(e);
                }
            }
        }
        Ok(links)
    }

    /// Stops watching for `session`; a directory's watch goes with the last
    /// link that used it.
    pub(crate) fn remove(&self, session: &str) {
        let mut t = self.table();
        self.drop_session(&mut t, session);
    }

    fn drop_session(&self, t: &mut Table, session: &str) {
        let Some(links) = t.sessions.remove(session) else {
            return;
        };
        for l in links {
            let key = (l.wd, l.name);
            match l.kind {
                Kind::Folder => {
                    if let Some(n) = t.folders.get_mut(&key) {
                        *n -= 1;
                        if *n == 0 {
                            t.folders.remove(&key);
                        }
                    }
                }
                Kind::File => {
                    if let Some(list) = t.files.get_mut(&key) {
                        list.retain(|s| &**s != session);
                        if list.is_empty() {
                            t.files.remove(&key);
                        }
                    }
                }
            }
            if let Some(n) = t.watches.get_mut(&l.wd) {
                *n -= 1;
                if *n == 0 {
                    t.watches.remove(&l.wd);
                    let _ = self.inotify.rm_watch(l.wd);
                }
            }
        }
    }

    /// How many sessions are watched now.
    #[cfg(test)]
    fn watched(&self) -> usize {
        self.table().sessions.len()
    }

    /// What a batch of events means: the sessions whose status file
    /// changed, and those whose chain no longer describes their path
    /// (sorted, each once).
    fn take(&self, t: &mut Table, batch: Vec<InotifyEvent>) -> (Vec<Id>, Vec<Id>) {
        let mut changed = Vec::new();
        let mut gone = FxHashSet::default();
        let mut moved = FxHashSet::default();
        let mut overflow = false;
        for ev in batch {
            if ev.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                overflow = true;
                continue;
            }
            if !t.watches.contains_key(&ev.wd) {
                // A watch given back; its last events may still come.
                continue;
            }
            if ev.mask.intersects(self_gone()) {
                gone.insert(ev.wd);
                if ev.mask.contains(AddWatchFlags::IN_IGNORED) {
                    // The kernel dropped the watch: nothing to give back.
                    t.watches.remove(&ev.wd);
                }
                continue;
            }
            let Some(name) = ev.name else {
                continue;
            };
            let key = (ev.wd, Name::from(name.as_os_str()));
            if ev.mask.intersects(file_changes()) {
                if let Some(list) = t.files.get(&key) {
                    changed.extend(list.iter().cloned());
                }
            }
            if ev.mask.intersects(path_changes()) && t.folders.contains_key(&key) {
                moved.insert(key);
            }
        }
        let mut lost = if overflow {
            log::warn!("inotify queue overflow: every watched start reads again");
            t.sessions.keys().cloned().collect()
        } else if gone.is_empty() && moved.is_empty() {
            Vec::new()
        } else {
            t.looking(&gone, &moved)
        };
        lost.sort();
        lost.dedup();
        changed.sort();
        changed.dedup();
        changed.retain(|s| lost.binary_search(s).is_err());
        (changed, lost)
    }

    fn run(self, events: Sender<Job>) {
        loop {
            let batch = match self.inotify.read_events() {
                Ok(b) => b,
                Err(Errno::EINTR) => continue,
                Err(e) => {
                    log::error!("inotify read failed: {e}; every waiting start polls from now on");
                    let mut t = self.table();
                    t.broken = true;
                    let all: Vec<Id> = t.sessions.keys().cloned().collect();
                    for s in &all {
                        self.drop_session(&mut t, s);
                    }
                    drop(t);
                    for s in all {
                        let _ = events.send(Job::Input(s.to_string(), LaunchInput::Watched(false)));
                    }
                    return;
                }
            };
            let (changed, lost) = {
                let mut t = self.table();
                let (changed, lost) = self.take(&mut t, batch);
                for s in &lost {
                    self.drop_session(&mut t, s);
                }
                (changed, lost)
            };
            let inputs = lost
                .into_iter()
                .map(|s| (s, LaunchInput::Watched(false)))
                .chain(changed.into_iter().map(|s| (s, LaunchInput::Changed)));
            for (s, input) in inputs {
                if events.send(Job::Input(s.to_string(), input)).is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::time::{Duration, Instant};

    /// The directories a status file's chain would watch, `/` first (for tests).
    fn chain_dirs(file: &Path) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = file
            .parent()
            .into_iter()
            .flat_map(Path::ancestors)
            .filter(|d| d.is_dir())
            .map(Path::to_path_buf)
            .collect();
        dirs.reverse();
        dirs
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rc-watch-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The next input for `session` within 5 s.
    fn next(rx: &crossbeam_channel::Receiver<Job>, session: &str) -> LaunchInput {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(Job::Input(s, input)) if s == session => return input,
                Ok(_) => {}
                Err(e) => panic!("nothing for {session}: {e}"),
            }
        }
    }

    /// Nothing for `session` within 200 ms (a creation and the close that
    /// follows it may wake another session twice).
    fn quiet(rx: &crossbeam_channel::Receiver<Job>, session: &str) {
        while let Ok(Job::Input(s, input)) = rx.recv_timeout(Duration::from_millis(200)) {
            assert_ne!(s, session, "{s} got {input:?}");
        }
    }

    #[test]
    fn a_write_to_the_status_file_wakes_its_sessions_and_no_others() {
        let dir = temp("file");
        let (a, b) = (dir.join("a"), dir.join("b"));
        let (tx, rx) = crossbeam_channel::unbounded();
        let w = Watch::start(tx).unwrap();
        assert!(w.add("s1", &a));
        assert!(w.add("s2", &b));
        // One watch per directory, shared.
        assert_eq!(w.table().watches.len(), chain_dirs(&status_file(&a)).len());
        std::fs::write(status_file(&a), "copying\n").unwrap();
        assert_eq!(next(&rx, "s1"), LaunchInput::Changed);
        quiet(&rx, "s2");
        // Renamed over, then deleted: both seen.
        std::fs::write(dir.join("tmp"), "ready\n").unwrap();
        std::fs::rename(dir.join("tmp"), status_file(&a)).unwrap();
        assert_eq!(next(&rx, "s1"), LaunchInput::Changed);
        quiet(&rx, "s2");
        std::fs::remove_file(status_file(&a)).unwrap();
        assert_eq!(next(&rx, "s1"), LaunchInput::Changed);
        w.remove("s1");
        w.remove("s2");
        assert!(w.table().watches.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_parent_is_watched_through_the_first_folder_that_exists() {
        let dir = temp("missing");
        let folder = dir.join("x/y/code");
        let (tx, rx) = crossbeam_channel::unbounded();
        let w = Watch::start(tx).unwrap();
        assert!(w.add("s1", &folder));
        let last = w.table().sessions["s1"].last().cloned().unwrap();
        assert_eq!((last.name.to_str(), last.kind), (Some("x"), Kind::Folder));
        assert_eq!(
            w.table().watches.len(),
            chain_dirs(&status_file(&folder)).len()
        );
        // The first missing folder appears: the chain is stale, so the
        // session hears that its watch is lost and adds it again.
        std::fs::create_dir(dir.join("x")).unwrap();
        assert_eq!(next(&rx, "s1"), LaunchInput::Watched(false));
        assert_eq!(w.watched(), 0);
        std::fs::create_dir_all(dir.join("x/y")).unwrap();
        assert!(w.add("s1", &folder));
        let last = w.table().sessions["s1"].last().cloned().unwrap();
        assert_eq!(last.kind, Kind::File);
        std::fs::write(status_file(&folder), "ready\n").unwrap();
        assert_eq!(next(&rx, "s1"), LaunchInput::Changed);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_folder_on_the_path_renamed_away_loses_the_watch() {
        let dir = temp("rename");
        let folder = dir.join("g/p/code");
        std::fs::create_dir_all(dir.join("g/p")).unwrap();
        let (tx, rx) = crossbeam_channel::unbounded();
        let w = Watch::start(tx).unwrap();
        assert!(w.add("s1", &folder));
        assert!(w.add("s2", &dir.join("g/p/other")));
        std::fs::rename(dir.join("g"), dir.join("g.old")).unwrap();
        // Both sessions look through g: both lose their watch, and the
        // directories only they used are no longer watched.
        assert_eq!(next(&rx, "s1"), LaunchInput::Watched(false));
        assert_eq!(next(&rx, "s2"), LaunchInput::Watched(false));
        assert_eq!(w.watched(), 0);
        assert!(w.table().watches.is_empty());
        assert!(w.table().folders.is_empty() && w.table().files.is_empty());
        // Adding again watches the new path; a write in the moved folder
        // wakes no one.
        assert!(w.add("s1", &folder));
        std::fs::write(status_file(&dir.join("g.old/p/code")), "ready\n").unwrap();
        quiet(&rx, "s1");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_queue_overflow_reports_every_watch_lost() {
        let dir = temp("overflow");
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::write(status_file(&a), "copying\n").unwrap();
        let (tx, rx) = crossbeam_channel::unbounded();
        let w = Watch::start(tx).unwrap();
        assert!(w.add("s1", &a));
        assert!(w.add("s2", &b));
        let queue: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(16_384);
        {
            // Hold the table: the thread stops after its first batch while
            // the kernel's queue fills past its limit.
            let _held = w.table();
            let file = std::fs::File::options()
                .write(true)
                .open(status_file(&a))
                .unwrap();
            let now = std::time::SystemTime::now();
            let times = std::fs::FileTimes::new()
                .set_accessed(now)
                .set_modified(now);
            for _ in 0..queue {
                // A touch of both times (IN_ATTRIB) and a close after
                // opening to write (IN_CLOSE_WRITE): alternating, so the
                // kernel merges none of them.
                file.set_times(times).unwrap();
                drop(
                    std::fs::File::options()
                        .write(true)
                        .open(status_file(&a))
                        .unwrap(),
                );
            }
        }
        // s2's file never changed: only the overflow can reach it.
        assert_eq!(next(&rx, "s2"), LaunchInput::Watched(false));
        let deadline = Instant::now() + Duration::from_secs(5);
        while w.watched() > 0 {
            assert!(Instant::now() < deadline, "sessions still watched");
            std::thread::sleep(Duration::from_millis(5));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_relative_or_unwatchable_path_is_not_watched() {
        let (tx, _rx) = crossbeam_channel::unbounded();
        let w = Watch::start(tx).unwrap();
        assert!(!w.add("s1", Path::new("relative/code")));
        assert_eq!(w.watched(), 0);
    }
}
