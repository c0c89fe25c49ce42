//! The watch thread: inotify on the parent folders of waiting starts. Any
//! change to a session's status file sends that session `Changed`, so the
//! launch reads the file at once instead of at its next 250 ms poll (which
//! stays as the fallback, e.g. when the parent folder does not exist yet).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crossbeam_channel::Sender;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};
use room_machines::Input;

use super::Event;
use crate::files::status_file;

/// Handle to add and drop watched sessions.
#[derive(Clone)]
pub struct Watch {
    inotify: Arc<Inotify>,
    table: Arc<Mutex<Table>>,
}

#[derive(Default)]
struct Table {
    /// Parent folder → its watch.
    by_parent: HashMap<PathBuf, WatchDescriptor>,
    /// Watch → (status file name, session) pairs waiting in that folder.
    sessions: HashMap<WatchDescriptor, Vec<(OsString, String)>>,
    /// Session → its watch.
    of_session: HashMap<String, WatchDescriptor>,
}

impl Watch {
    /// Starts the watch thread; changes are sent to `events`.
    pub fn start(events: Sender<Event>) -> std::io::Result<Watch> {
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

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Watches `folder`'s status file for `session`. Failure (no parent
    /// folder yet) is logged at debug level: polling still covers it.
    pub fn add(&self, session: &str, folder: &Path) {
        let file = status_file(folder);
        let (Some(parent), Some(name)) = (file.parent(), file.file_name()) else {
            return;
        };
        let mut t = self.table();
        if t.of_session.contains_key(session) {
            return;
        }
        let wd = match t.by_parent.get(parent) {
            Some(wd) => *wd,
            None => {
                // A write is seen when its writer closes the file (or
                // renames it into place), not at the truncation or creation
                // that precedes it, which would only read an empty file.
                let flags = AddWatchFlags::IN_CLOSE_WRITE
                    | AddWatchFlags::IN_MOVED_TO
                    | AddWatchFlags::IN_ATTRIB;
                match self.inotify.add_watch(parent, flags) {
                    Ok(wd) => {
                        t.by_parent.insert(parent.to_path_buf(), wd);
                        wd
                    }
                    Err(e) => {
                        log::debug!("no watch on {}: {e}; polling only", parent.display());
                        return;
                    }
                }
            }
        };
        t.sessions
            .entry(wd)
            .or_default()
            .push((name.to_os_string(), session.to_string()));
        t.of_session.insert(session.to_string(), wd);
    }

    /// Stops watching for `session`; the folder's watch goes with its last session.
    pub fn remove(&self, session: &str) {
        let mut t = self.table();
        let Some(wd) = t.of_session.remove(session) else {
            return;
        };
        let empty = t.sessions.get_mut(&wd).map_or(true, |list| {
            list.retain(|(_, s)| s != session);
            list.is_empty()
        });
        if empty {
            t.sessions.remove(&wd);
            t.by_parent.retain(|_, w| *w != wd);
            let _ = self.inotify.rm_watch(wd);
        }
    }

    fn run(self, events: Sender<Event>) {
        loop {
            let batch = match self.inotify.read_events() {
                Ok(b) => b,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => {
                    log::error!("inotify read failed: {e}; falling back to polling");
                    return;
                }
            };
            let mut wake = Vec::new();
            {
                let t = self.table();
                for ev in batch {
                    if ev.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                        // Events were lost: wake every waiting session.
                        wake.extend(t.of_session.keys().cloned());
                        continue;
                    }
                    let Some(list) = t.sessions.get(&ev.wd) else {
                        continue;
                    };
                    for (name, session) in list {
                        if ev.name.as_ref() == Some(name) {
                            wake.push(session.clone());
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
