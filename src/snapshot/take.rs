//! One snapshot, on the service's side: the request written to a walker
//! running as the agent account ([`super::helper`]), and its answer read
//! as hostile input: within the deadline, at most `max_bytes` of file
//! bytes plus [`MAX_OVERHEAD`] in all, every length and path bounded and
//! checked, every object's sha256 computed here from the bytes received.
//! A walker that breaks the protocol or misses the deadline is killed
//! (its whole group and cgroup); one that answered exactly is kept for
//! the next snapshot.

use std::io::{self, BufReader, Read, Write};
use std::path::Path;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::cache::{settled, Known, StatCache};
use super::costs::{Counts, Limits, Skipped};
use super::helper::{read_failure, Helper, Walker};
use super::objects::{Batch, Objects};
use super::protocol::{
    bad, end, get_str, get_u8, read_chunk_len, Frame, Request, ANSWER_MAGIC, MAX_OVERHEAD,
    MAX_PATH, MAX_WHY,
};
use super::tree::{parent, Entry, EntryKind};

/// How the walk ended.
pub(crate) enum Ended {
    /// Every entry was sent.
    Done,
    /// Over a limit (the walker's sentence).
    TooLarge(String),
    /// The walker could not go on (its sentence).
    Failed(String),
}

/// What the walker's answer gave.
#[derive(Default)]
pub(crate) struct Received {
    pub(crate) entries: Vec<Entry>,
    pub(crate) skipped: Vec<Skipped>,
    /// The new objects, not yet durable under their names.
    pub(crate) batch: Batch,
    /// The files read whose keys may be cached, once `batch` is durable
    /// (before, the cache would name objects not stored).
    pub(crate) fresh: Vec<(String, Known)>,
    pub(crate) counts: Counts,
}

/// Runs the walker on `folder` and reads its answer into `objects`,
/// marking in `cache` the files it found unchanged (the files read are
/// [`Received::fresh`]); the sentence of a failure otherwise. A walker
/// kept from an earlier snapshot is asked first; one that has gone (past
/// its idle limit, or killed by the agent account) before it answered a
/// byte is replaced by a new one.
pub(crate) fn walk(
    snaps: &Walker,
    objects: &Objects,
    limits: &Limits,
    folder: &Path,
    cache: &mut StatCache,
) -> Result<(Received, Ended), String> {
    let end = Instant::now() + limits.deadline;
    let began_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    let root = folder
        .to_str()
        .ok_or_else(|| format!("{} is not UTF-8", folder.display()))?;
    let request = Request {
        root: root.to_string(),
        max_bytes: limits.max_bytes,
        max_entries: limits.max_entries,
        ignore: limits.ignore.clone(),
        cached: Default::default(),
    }
    .encode_with(cache.files.iter().map(|(p, k)| (p.as_str(), k.key)));
    let ask = |helper: &Helper, cache: &mut StatCache| {
        std::thread::scope(|s| {
            s.spawn(|| {
                // A walker that reads nothing is killed at the deadline,
                // which ends this write (EPIPE).
                let mut stdin = helper.stdin();
                let _ = stdin.write_all(&request);
            });
            let cap = limits.max_bytes.saturating_add(MAX_OVERHEAD);
            let mut r = BufReader::with_capacity(256 * 1024, helper.reader(end, cap));
            let received = receive(&mut r, objects, cache, limits, began_ns);
            // Only a walker that said exactly its answer is asked again.
            let whole = received.is_ok() && r.buffer().is_empty();
            if !whole {
                helper.kill();
            }
            (received, whole, r.get_ref().read)
        })
    };
    let mut received = None;
    if let Some(helper) = snaps.lend() {
        let (got, whole, read) = ask(&helper, cache);
        if whole {
            snaps.keep(helper);
        }
        let gone = read == 0
            && got
                .as_ref()
                .is_err_and(|e| e.kind() == io::ErrorKind::UnexpectedEof);
        if !gone {
            received = Some(got);
        }
    }
    let received = match received {
        Some(got) => got,
        None => {
            let helper = Helper::start(snaps, "--snapshot-walk")?;
            let (got, whole, _) = ask(&helper, cache);
            if whole {
                snaps.keep(helper);
            }
            got
        }
    };
    received.map_err(|e| {
        let what = format!("the snapshot of {}", folder.display());
        read_failure(&e, &what, "the snapshot walker", limits.deadline)
    })
}

/// Reads `data` as a walker's answer into a store at `dir`, with an empty
/// stat cache and small limits (the fuzz target `snapshot_answer`):
/// whatever the bytes, it ends, an error or what the answer said.
#[cfg(feature = "_internal_test_exports")]
pub(crate) fn read_answer(data: &[u8], dir: &Path) -> io::Result<()> {
    let objects = Objects::open(dir.to_path_buf())?;
    let mut cache = StatCache::default();
    let limits = Limits {
        max_bytes: 1 << 20,
        max_entries: 1000,
        ..Limits::default()
    };
    let mut r = data;
    let (got, _) = receive(&mut r, &objects, &mut cache, &limits, 0)?;
    objects.commit(got.batch)
}

/// Reads the answer: every frame checked, every file's bytes stored under
/// the sha256 computed here.
fn receive(
    r: &mut impl Read,
    objects: &Objects,
    cache: &mut StatCache,
    limits: &Limits,
    began_ns: i64,
) -> io::Result<(Received, Ended)> {
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic)?;
    if &magic != ANSWER_MAGIC {
        return Err(bad("it does not start as an answer"));
    }
    let mut got = Received::default();
    got.entries.reserve(cache.files.len() + 256);
    cache.start_walk();
    let walk = cache.walk;
    let mut open = vec![(String::new(), String::new())];
    let mut bytes = 0u64;
    let mut frames = 0u64;
    let mut chunk = Vec::new();
    loop {
        frames += 1;
        if frames > limits.max_entries.saturating_add(1) {
            return Err(bad(&format!(
                "it sent more than {} entries",
                limits.max_entries
            )));
        }
        let frame = Frame::read(r)?;
        match &frame {
            Frame::Dir { path, .. } => check_path(path, &mut open, true)?,
            Frame::Link { path, .. } | Frame::Cached { path, .. } | Frame::File { path, .. } => {
                check_path(path, &mut open, false)?
            }
            Frame::Skipped { path, .. } if path.is_empty() || path.len() > MAX_PATH => {
                return Err(bad("a skipped entry with a bad path"));
            }
            _ => {}
        }
        match frame {
            Frame::Dir { path, mode } => {
                got.entries.push(Entry {
                    path,
                    mode: mode & 0o7777,
                    kind: EntryKind::Dir,
                });
            }
            Frame::Link { path, mode, target } => got.entries.push(Entry {
                path,
                mode: mode & 0o7777,
                kind: EntryKind::Symlink { target },
            }),
            Frame::Cached { path, mode, key } => {
                let known = cache
                    .files
                    .get_mut(&path)
                    .filter(|k| k.key == key)
                    .ok_or_else(|| bad(&format!("{path:?} is no file the cache knows")))?;
                known.seen = walk;
                bytes = bytes.saturating_add(key.size);
                got.counts.files_cached += 1;
                got.entries.push(Entry {
                    path,
                    mode: mode & 0o7777,
                    kind: EntryKind::File {
                        sha256: known.sha256.clone(),
                        size: key.size,
                    },
                });
            }
            Frame::File { path, mode, key } => {
                let mut writer = objects.writer();
                loop {
                    let n = read_chunk_len(r)?;
                    if n == 0 {
                        break;
                    }
                    if writer.len() + n as u64 > key.size.saturating_add(1) {
                        return Err(bad(&format!("{path:?} is longer than its size")));
                    }
                    bytes = bytes.saturating_add(n as u64);
                    if bytes > limits.max_bytes {
                        return Err(bad(&format!(
                            "its files hold more than {} bytes",
                            limits.max_bytes
                        )));
                    }
                    chunk.resize(n, 0);
                    r.read_exact(&mut chunk)?;
                    writer.write(&chunk)?;
                }
                match get_u8(r)? {
                    end::WHOLE if writer.len() == key.size => {
                        let (sha256, size) = writer.finish(&mut got.batch)?;
                        got.counts.files_read += 1;
                        got.counts.bytes_read += size;
                        if settled(&key, began_ns) {
                            let known = Known {
                                key,
                                sha256: sha256.clone(),
                                seen: walk,
                            };
                            got.fresh.push((path.clone(), known));
                        }
                        got.entries.push(Entry {
                            path,
                            mode: mode & 0o7777,
                            kind: EntryKind::File { sha256, size },
                        });
                    }
                    end::CHANGED => got.skipped.push(Skipped {
                        path,
                        why: "changed while it was read".into(),
                    }),
                    end::FAILED => {
                        let why = get_str(r, MAX_WHY)?;
                        got.skipped.push(Skipped { path, why });
                    }
                    _ => return Err(bad(&format!("{path:?} ended badly"))),
                }
            }
            Frame::Skipped { path, why } => got.skipped.push(Skipped { path, why }),
            Frame::TooLarge { why } => return Ok((got, Ended::TooLarge(why))),
            Frame::Failed { why } => return Ok((got, Ended::Failed(why))),
            Frame::End => {
                got.counts.entries = got.entries.len() as u64;
                return Ok((got, Ended::Done));
            }
        }
    }
}

/// A path from the walker: relative, normal, in a folder it sent, new.
/// The walker sends a folder's entries in the byte order of their names,
/// each folder's own entries right after it (depth first): `open` is the
/// chain of folders from the top to the one being sent, each with the
/// last name sent in it, so a path is checked against the folder it must
/// be in and the name before it, not against every path sent.
fn check_path(path: &str, open: &mut Vec<(String, String)>, is_dir: bool) -> io::Result<()> {
    let normal = !path.is_empty()
        && !path.contains('\0')
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..");
    if !normal {
        return Err(bad(&format!("{path:.200?} is not a normal relative path")));
    }
    let up = parent(path);
    let name = &path[up.len() + usize::from(!up.is_empty())..];
    while open.last().is_some_and(|(dir, _)| dir != up) {
        open.pop();
    }
    let Some((_, last)) = open.last_mut() else {
        return Err(bad(&format!("{path:.200?} is in no folder it sent")));
    };
    match name.cmp(last.as_str()) {
        std::cmp::Ordering::Greater => {}
        std::cmp::Ordering::Equal => return Err(bad(&format!("{path:.200?} was sent twice"))),
        std::cmp::Ordering::Less => return Err(bad(&format!("{path:.200?} came out of order"))),
    }
    last.clear();
    last.push_str(name);
    if is_dir {
        open.push((path.to_string(), String::new()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::protocol::{write_chunk, StatKey};

    fn answer(frames: &[Frame]) -> Vec<u8> {
        let mut out = ANSWER_MAGIC.to_vec();
        for f in frames {
            f.write(&mut out).unwrap();
        }
        out
    }

    fn objects() -> (Objects, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("room-core-take-{}", uuid::Uuid::new_v4()));
        (Objects::open(dir.clone()).unwrap(), dir)
    }

    #[test]
    fn a_hostile_answer_is_refused() {
        let (objects, dir) = objects();
        let limits = Limits::default();
        let refused = |frames: &[Frame]| {
            let bytes = answer(frames);
            receive(
                &mut &bytes[..],
                &objects,
                &mut StatCache::default(),
                &limits,
                0,
            )
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
        };
        let dir_frame = |p: &str| Frame::Dir {
            path: p.into(),
            mode: 0o755,
        };
        assert!(refused(&[dir_frame("../etc")]).contains("not a normal relative path"));
        assert!(refused(&[dir_frame("/etc")]).contains("not a normal relative path"));
        assert!(refused(&[dir_frame("a/b")]).contains("in no folder it sent"));
        assert!(refused(&[dir_frame("a"), dir_frame("a")]).contains("sent twice"));
        assert!(refused(&[dir_frame("b"), dir_frame("a")]).contains("out of order"));
        // A folder's entries after another's: its own are over.
        assert!(refused(&[dir_frame("a"), dir_frame("b"), dir_frame("a/c")])
            .contains("in no folder it sent"));
        let cached = Frame::Cached {
            path: "x".into(),
            mode: 0o644,
            key: StatKey::default(),
        };
        assert!(refused(&[cached]).contains("no file the cache knows"));
        // A file longer than it said.
        let mut bytes = answer(&[Frame::File {
            path: "f".into(),
            mode: 0o644,
            key: StatKey {
                size: 1,
                ..StatKey::default()
            },
        }]);
        write_chunk(&mut bytes, b"abc").unwrap();
        let e = receive(
            &mut &bytes[..],
            &objects,
            &mut StatCache::default(),
            &limits,
            0,
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("longer than its size"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
