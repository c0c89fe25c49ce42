//! The watch thread: inotify on the parent folders of waiting starts. Any
//! change to a session's status file sends that session `Changed`, so the
//! launch reads the file at once instead of at its next 250 ms poll (which
//! stays as the fallback, e.g. when the parent folder does not exist yet).
//!
//! The watch also keeps the last read of each watched status file, so the
//! fallback polls of a thousand waiting starts do not read a thousand files
//! four times a second: [`Watch::observe`] answers from that cache while the
//! file's parent folder is watched and the watch is healthy, and reads the
//! file otherwise. Any event on the file's name (a write, a close, a
//! creation, a deletion, a rename, an attribute change) drops its entry
//! before the session is woken, and a lost event (queue overflow), a parent
//! folder that is removed or moved, or a failed watch drops them all.
//! A read only fills the cache if no event arrived while it ran, and an
//! entry serves at most [`CACHE_TTL`]: a change the watch cannot see (a
//! folder above the watched parent renamed, which moves the path to another
//! inode) is still read within that time.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};
use room_machines::{Input, Observation};
use rustc_hash::FxHashMap;

use super::Event;
use crate::files::{self, status_file, Raw};

/// The longest a cached read answers polls; then the file is read again.
/// Re-reading costs about 60 µs a file here (1,000 waiting starts: 0.87% of
/// a core with no expiry, 1.07% with a 30 s one), so two minutes keeps that
/// near 0.05% while a change the watch cannot see still lands well inside
/// the 5-minute copy limit.
pub const CACHE_TTL: Duration = Duration::from_secs(120);

/// Handle to add and drop watched sessions.
#[derive(Clone)]
pub struct Watch {
    inotify: Arc<Inotify>,
    table: Arc<Mutex<Table>>,
    ttl: Duration,
}

#[derive(Default)]
struct Table {
    /// Parent folder → its watch.
    by_parent: HashMap<PathBuf, WatchDescriptor>,
    /// Watch → (status file name, session) pairs waiting in that folder.
    sessions: HashMap<WatchDescriptor, Vec<(OsString, String)>>,
    /// Session → its watch and its status file's name.
    of_session: FxHashMap<String, (WatchDescriptor, OsString)>,
    /// The last read of each watched status file, by watch and name.
    cache: HashMap<WatchDescriptor, FxHashMap<OsString, (Raw, Instant)>>,
    /// Bumped by every event the thread takes in; a read that saw it change
    /// may have raced a write and is not cached.
    epoch: u64,
    /// The watch thread stopped (inotify failed): nothing is cached.
    broken: bool,
}

impl Table {
    /// Forgets a watch that no longer stands for its folder's path.
    fn drop_watch(&mut self, wd: WatchDescriptor) -> Vec<String> {
        self.cache.remove(&wd);
        self.by_parent.retain(|_, w| *w != wd);
        let sessions = self.sessions.remove(&wd).unwrap_or_default();
        for (_, s) in &sessions {
            self.of_session.remove(s);
        }
        sessions.into_iter().map(|(_, s)| s).collect()
    }
}

/// The events that wake a session: a write is seen when its writer closes
/// the file (or renames it into place, or touches it), not at the truncation
/// or creation that precedes it, which would only read an empty file.
fn wakes() -> AddWatchFlags {
    AddWatchFlags::IN_CLOSE_WRITE | AddWatchFlags::IN_MOVED_TO | AddWatchFlags::IN_ATTRIB
}

/// Every event that may change what a read of a file in the folder gives,
/// or that ends the watch's hold on the folder's path.
fn watched() -> AddWatchFlags {
    wakes()
        | AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
}

impl Watch {
    /// Starts the watch thread; changes are sent to `events`.
    /// A cached read answers polls for at most `ttl` ([`CACHE_TTL`]).
    pub fn start(events: Sender<Event>, ttl: Duration) -> std::io::Result<Watch> {
        let inotify = Arc::new(Inotify::init(InitFlags::IN_CLOEXEC)?);
        let watch = Watch {
            inotify,
            table: Arc::default(),
            ttl,
        };
        let me = watch.clone();
        std::thread::Builder::new()
            .name("watch".into())
            .spawn(move || me.run(events))?;
        Ok(watch)
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Watches `folder`'s status file for `session`. Failure (no parent
    /// folder yet) is logged at debug level: polling still covers it.
    pub fn add(&self, session: &str, folder: &Path) {
        let mut t = self.table();
        if t.of_session.contains_key(session) {
            return;
        }
        let file = status_file(folder);
        let (Some(parent), Some(name)) = (file.parent(), file.file_name()) else {
            return;
        };
        let wd = match t.by_parent.get(parent) {
            Some(wd) => *wd,
            None => match self.inotify.add_watch(parent, watched()) {
                Ok(wd) => {
                    t.by_parent.insert(parent.to_path_buf(), wd);
                    wd
                }
                Err(e) => {
                    log::debug!("no watch on {}: {e}; polling only", parent.display());
                    return;
                }
            },
        };
        t.sessions
            .entry(wd)
            .or_default()
            .push((name.to_os_string(), session.to_string()));
        t.of_session
            .insert(session.to_string(), (wd, name.to_os_string()));
    }

    /// Stops watching for `session`; the folder's watch goes with its last
    /// session, and a file's cached read with the last session that waits on it.
    pub fn remove(&self, session: &str) {
        let mut t = self.table();
        let Some((wd, _)) = t.of_session.remove(session) else {
            return;
        };
        let mut gone = None;
        let empty = t.sessions.get_mut(&wd).map_or(true, |list| {
            if let Some(i) = list.iter().position(|(_, s)| s == session) {
                let (name, _) = list.swap_remove(i);
                if !list.iter().any(|(n, _)| *n == name) {
                    gone = Some(name);
                }
            }
            list.is_empty()
        });
        if let Some(name) = gone {
            if let Some(files) = t.cache.get_mut(&wd) {
                files.remove(&name);
            }
        }
        if empty {
            t.drop_watch(wd);
            let _ = self.inotify.rm_watch(wd);
        }
    }

    /// What `session`'s status file (that of `folder`) says: the cached
    /// read while the session is watched and the watch is healthy, else a
    /// read now (cached for next time when no event arrived during it).
    /// An unwatched session is first watched, if its parent folder exists
    /// by now (the watch comes before the read, so no write is missed).
    pub fn observe(&self, session: &str, folder: &Path) -> Observation {
        let watched = |t: &Table| t.of_session.get(session).filter(|_| !t.broken).cloned();
        let (watched, epoch) = {
            let t = self.table();
            match t.of_session.get(session).filter(|_| !t.broken) {
                Some((wd, name)) => {
                    let cached = t.cache.get(wd).and_then(|files| files.get(name));
                    if let Some((raw, _)) = cached.filter(|(_, at)| at.elapsed() < self.ttl) {
                        return files::observation(raw);
                    }
                    (watched(&t), t.epoch)
                }
                None => {
                    drop(t);
                    self.add(session, folder);
                    let t = self.table();
                    (watched(&t), t.epoch)
                }
            }
        };
        let file = status_file(folder);
        let read_at = Instant::now();
        let raw = match files::read_raw(&file) {
            Ok(raw) => raw,
            Err(e) => {
                log::warn!("cannot read {}: {e}", file.display());
                return Observation::missing();
            }
        };
        let observation = files::observation(&raw);
        if let Some((wd, name)) = watched {
            let mut t = self.table();
            // Still watched the same way, and no event since the read began.
            let same = t.of_session.get(session) == Some(&(wd, name.clone()));
            if !t.broken && t.epoch == epoch && same {
                t.cache.entry(wd).or_default().insert(name, (raw, read_at));
            }
        }
        observation
    }

    fn run(self, events: Sender<Event>) {
        loop {
            let batch = match self.inotify.read_events() {
                Ok(b) => b,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => {
                    log::error!("inotify read failed: {e}; falling back to polling");
                    let mut t = self.table();
                    t.broken = true;
                    t.cache.clear();
                    return;
                }
            };
            let mut wake = Vec::new();
            {
                let mut t = self.table();
                t.epoch += 1;
                for ev in batch {
                    if ev.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                        // Events were lost: forget every read, wake every
                        // waiting session.
                        t.cache.clear();
                        wake.extend(t.of_session.keys().cloned());
                        continue;
                    }
                    let ends = AddWatchFlags::IN_IGNORED
                        | AddWatchFlags::IN_DELETE_SELF
                        | AddWatchFlags::IN_MOVE_SELF
                        | AddWatchFlags::IN_UNMOUNT;
                    if ev.mask.intersects(ends) {
                        // The folder's path no longer leads to the watched
                        // folder: drop the watch (the sessions' next poll
                        // watches the path again if it exists) and wake them.
                        wake.extend(t.drop_watch(ev.wd));
                        let _ = self.inotify.rm_watch(ev.wd);
                        continue;
                    }
                    let Some(name) = ev.name else { continue };
                    if let Some(files) = t.cache.get_mut(&ev.wd) {
                        files.remove(&name);
                    }
                    if !ev.mask.intersects(wakes()) {
                        continue;
                    }
                    if let Some(list) = t.sessions.get(&ev.wd) {
                        for (n, session) in list {
                            if *n == name {
                                wake.push(session.clone());
                            }
                        }
                    }
                }
            }
            wake.sort();
            wake.dedup();
            for session in wake {
                if events.send(Event::Input(session, Input::Changed)).is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use room_machines::CopyMark;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rc-watch-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// How many reads the watch keeps.
    fn cached(w: &Watch) -> usize {
        w.table().cache.values().map(|m| m.len()).sum()
    }

    fn changed(rx: &crossbeam_channel::Receiver<Event>, session: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(Event::Input(s, Input::Changed)) if s == session => return,
                Ok(_) => {}
                Err(e) => panic!("no Changed for {session}: {e}"),
            }
        }
    }

    #[test]
    fn a_cached_read_still_sees_a_write_the_watch_reports() {
        let dir = temp("cache");
        let folder = dir.join("code");
        let (tx, rx) = crossbeam_channel::unbounded();
        let w = Watch::start(tx, CACHE_TTL).unwrap();
        w.add("s1", &folder);
        assert_eq!(w.observe("s1", &folder), Observation::missing());
        // The second read is answered from the cache.
        assert_eq!(cached(&w), 1);
        assert_eq!(w.observe("s1", &folder), Observation::missing());
        std::fs::write(status_file(&folder), "copying\n").unwrap();
        changed(&rx, "s1");
        assert_eq!(w.observe("s1", &folder).mark, Some(CopyMark::Copying));
        // Written in place, then renamed over: both seen.
        std::fs::write(dir.join("tmp"), "ready\n").unwrap();
        std::fs::rename(dir.join("tmp"), status_file(&folder)).unwrap();
        changed(&rx, "s1");
        assert_eq!(w.observe("s1", &folder).mark, Some(CopyMark::Ready));
        // A deletion wakes no one but is not missed by the next read.
        std::fs::remove_file(status_file(&folder)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while cached(&w) > 0 {
            assert!(
                Instant::now() < deadline,
                "the deletion never reached the cache"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(w.observe("s1", &folder), Observation::missing());
        // Once no session waits there, nothing is kept.
        w.remove("s1");
        assert_eq!(cached(&w), 0);
        assert!(w.table().by_parent.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_whose_folder_cannot_be_watched_is_read_every_time() {
        let dir = temp("nocache");
        // The parent folder does not exist yet: no watch, so every observe
        // reads and nothing is kept.
        let folder = dir.join("later/code");
        let (tx, _rx) = crossbeam_channel::unbounded();
        let w = Watch::start(tx, CACHE_TTL).unwrap();
        assert_eq!(w.observe("s1", &folder), Observation::missing());
        assert_eq!(cached(&w), 0);
        std::fs::create_dir_all(dir.join("later")).unwrap();
        std::fs::write(status_file(&folder), "copying\n").unwrap();
        // The next poll watches the new folder, then reads (and keeps) it.
        assert_eq!(w.observe("s1", &folder).mark, Some(CopyMark::Copying));
        assert_eq!(cached(&w), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_removed_parent_folder_drops_its_watch_and_wakes_its_sessions() {
        let dir = temp("gone");
        let parent = dir.join("work");
        std::fs::create_dir_all(&parent).unwrap();
        let folder = parent.join("code");
        let (tx, rx) = crossbeam_channel::unbounded();
        let w = Watch::start(tx, CACHE_TTL).unwrap();
        w.add("s3", &folder);
        assert_eq!(w.observe("s3", &folder), Observation::missing());
        assert_eq!(cached(&w), 1);
        std::fs::remove_dir_all(&parent).unwrap();
        changed(&rx, "s3");
        assert_eq!(cached(&w), 0);
        assert!(!w.table().of_session.contains_key("s3"));
        // Made again with a mark in it: the next poll reads the new folder.
        std::fs::create_dir_all(&parent).unwrap();
        std::fs::write(status_file(&folder), "ready\n").unwrap();
        w.add("s3", &folder);
        assert_eq!(w.observe("s3", &folder).mark, Some(CopyMark::Ready));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_change_the_watch_cannot_see_is_read_once_the_cache_expires() {
        let ttl = Duration::from_millis(200);
        let dir = temp("ttl");
        let parent = dir.join("a");
        let folder = parent.join("code");
        std::fs::create_dir_all(&parent).unwrap();
        std::fs::write(status_file(&folder), "copying\n").unwrap();
        let (tx, _rx) = crossbeam_channel::unbounded();
        let w = Watch::start(tx, ttl).unwrap();
        w.add("s1", &folder);
        let cached_at = Instant::now();
        assert_eq!(w.observe("s1", &folder).mark, Some(CopyMark::Copying));
        // Renaming a folder above the watched parent sends the watch nothing:
        // the path now names a new folder whose file says ready.
        std::fs::rename(&dir, dir.with_extension("moved")).unwrap();
        std::fs::create_dir_all(&parent).unwrap();
        std::fs::write(status_file(&folder), "ready\n").unwrap();
        let seen = loop {
            let o = w.observe("s1", &folder);
            if o.mark == Some(CopyMark::Ready) {
                break cached_at.elapsed();
            }
            assert!(
                cached_at.elapsed() < Duration::from_secs(5),
                "never re-read"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(seen >= ttl, "the cache answered for only {seen:?}");
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(dir.with_extension("moved")).unwrap();
    }
}
