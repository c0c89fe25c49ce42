//! A restore, on the service's side: the plan that turns a folder recorded
//! as one tree into another, computed from the two trees alone (the
//! service never looks at the folder), sent to a restorer running as the
//! agent account ([`super::restore_write`]), whose answer is read as
//! hostile input: within the deadline, bounded, exactly one result per
//! operation. Files' bytes go from the store to the restorer in chunks,
//! checked against their object's name as they go.
//!
//! The plan's order makes each step possible: folders that are to become
//! writable first, then removals deepest first (a folder after what was
//! in it), then new folders top down, then files, links and files' bits in
//! path order, then the bits of folders that would have kept the steps
//! before out (no write or search for their owner), deepest first. A path
//! that changes kind is removed, then made.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::time::Instant;

use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};

use super::costs::{Limits, Restored, Skipped};
use super::helper::{read_failure, Helper, Walker};
use super::objects::Objects;
use super::protocol::write_chunk;
use super::restore_protocol::{answer_cap, data_end, ignored, read_answer, Answer, Header, Op};
use super::tree::{self, Entry, EntryKind, Tree, TreeId};

/// The owner's write and search bits: a folder without both takes no new
/// entries from its owner, so its bits are set after everything in it.
const OWNER_WX: u32 = 0o300;
/// The bytes of a file sent in one chunk (the service holds no more of it).
const SEND_CHUNK: usize = 256 * 1024;

/// One step of a plan: the operation, and for a file the object its bytes
/// come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Step {
    /// What the restorer is asked to do.
    pub(crate) op: Op,
    /// A file's object (its sha256).
    pub(crate) sha256: Option<String>,
}

impl Step {
    /// A step with no bytes.
    fn of(op: Op) -> Step {
        Step { op, sha256: None }
    }
}

/// How deep `path` is (its `/`s).
fn depth(path: &str) -> usize {
    path.bytes().filter(|b| *b == b'/').count()
}

/// Whether `a` and `b` are the same kind (file, link, folder).
fn same_kind(a: &EntryKind, b: &EntryKind) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// The steps that turn a folder recorded as `now` into `to`, in the order
/// they are to be made (the module's doc). Paths `ignore` names are left
/// out, whatever the trees hold.
pub(crate) fn plan(now: &Tree, to: &Tree, ignore: &[String]) -> Vec<Step> {
    let kept = |e: &&Entry| !ignored(ignore, &e.path);
    let mut early = Vec::new();
    let mut removes: Vec<&Entry> = Vec::new();
    let mut dirs: Vec<(&Entry, u32)> = Vec::new();
    let mut writes = Vec::new();
    let mut late: Vec<&Entry> = Vec::new();
    for old in now.entries.iter().filter(kept) {
        match to.get(&old.path) {
            Some(new) if same_kind(&old.kind, &new.kind) => {}
            _ => removes.push(old),
        }
    }
    for new in to.entries.iter().filter(kept) {
        let old = now.get(&new.path);
        if old == Some(new) {
            continue;
        }
        let was = old.map(|o| &o.kind);
        match (&new.kind, was) {
            (EntryKind::Dir, Some(EntryKind::Dir)) if new.mode & OWNER_WX == OWNER_WX => {
                early.push(new)
            }
            (EntryKind::Dir, Some(EntryKind::Dir)) => late.push(new),
            (EntryKind::Dir, _) if new.mode & OWNER_WX == OWNER_WX => dirs.push((new, new.mode)),
            (EntryKind::Dir, _) => {
                // Made open to its owner, closed once filled.
                dirs.push((new, new.mode | 0o700));
                late.push(new);
            }
            (EntryKind::File { sha256, size }, Some(EntryKind::File { sha256: s, size: z }))
                if sha256 == s && size == z =>
            {
                writes.push(Step::of(Op::Mode {
                    path: new.path.clone(),
                    mode: new.mode,
                    dir: false,
                }))
            }
            (EntryKind::File { sha256, size }, _) => writes.push(Step {
                op: Op::File {
                    path: new.path.clone(),
                    mode: new.mode,
                    size: *size,
                },
                sha256: Some(sha256.clone()),
            }),
            (EntryKind::Symlink { target }, _) => writes.push(Step::of(Op::Link {
                path: new.path.clone(),
                target: target.clone(),
            })),
        }
    }
    removes.sort_by(|a, b| {
        depth(&b.path)
            .cmp(&depth(&a.path))
            .then(a.path.cmp(&b.path))
    });
    dirs.sort_by(|a, b| {
        depth(&a.0.path)
            .cmp(&depth(&b.0.path))
            .then(a.0.path.cmp(&b.0.path))
    });
    late.sort_by(|a, b| {
        depth(&b.path)
            .cmp(&depth(&a.path))
            .then(a.path.cmp(&b.path))
    });
    let mode = |e: &Entry| {
        Step::of(Op::Mode {
            path: e.path.clone(),
            mode: e.mode,
            dir: true,
        })
    };
    let mut steps = Vec::with_capacity(early.len() + removes.len() + dirs.len() + writes.len());
    steps.extend(early.into_iter().map(mode));
    steps.extend(removes.into_iter().map(|e| {
        Step::of(Op::Remove {
            path: e.path.clone(),
            dir: e.kind == EntryKind::Dir,
        })
    }));
    steps.extend(dirs.into_iter().map(|(e, mode)| {
        Step::of(Op::MakeDir {
            path: e.path.clone(),
            mode,
        })
    }));
    steps.extend(writes);
    steps.extend(late.into_iter().map(mode));
    steps
}

/// Restores `folder` from tree `now` (just taken of it) to tree `to`
/// through a restorer started from `walker`; what it did, or why it could
/// not (a tree not in the store, a restorer that could not start, could
/// not reach the folder, broke the protocol or missed the deadline: it is
/// killed then).
pub(crate) fn run(
    walker: &Walker,
    objects: &Objects,
    limits: &Limits,
    folder: &Path,
    now: &TreeId,
    to: &TreeId,
) -> Result<Restored, String> {
    let end = Instant::now() + limits.deadline;
    let load = |id| {
        tree::load(objects, id).map_err(|e| format!("cannot read tree {id} from the store: {e}"))
    };
    let (before, after) = (load(now)?, load(to)?);
    let steps = plan(&before, &after, &limits.ignore);
    if steps.is_empty() {
        return Ok(Restored::default());
    }
    let root = folder
        .to_str()
        .ok_or_else(|| format!("{} is not UTF-8", folder.display()))?;
    let header = Header {
        root: root.to_string(),
        ignore: limits.ignore.clone(),
    };
    let helper = Helper::start(walker, "--snapshot-restore")?;
    let (answer, dropped) = std::thread::scope(|s| {
        // Sent from a thread of its own while the answer is read here, so
        // neither side waits on a full pipe for the other.
        let sender = s.spawn(|| send(&helper, &header, &steps, objects));
        let mut r = BufReader::new(helper.reader(end, answer_cap(steps.len())));
        let answer = read_answer(&mut r, steps.len());
        // Whatever it said, the restorer is done: ended now, so a send
        // still blocked on it (it stopped reading) ends too (EPIPE).
        helper.kill();
        let dropped = sender.join().unwrap_or_default();
        (answer, dropped)
    });
    drop(helper);
    let results = match answer {
        Ok(Answer::Results(results)) => results,
        Ok(Answer::Stopped(why)) => {
            return Err(format!("cannot restore {}: {why}", folder.display()))
        }
        Err(e) => {
            let what = format!("the restore of {}", folder.display());
            return Err(read_failure(
                &e,
                &what,
                "the restore helper",
                limits.deadline,
            ));
        }
    };
    Ok(outcome(&steps, results, dropped, &after))
}

/// Each path's outcome from its steps' results (a path that changes kind,
/// or a folder whose bits are set last, has two): failed with the first
/// failure's sentence (the service's own, for a file whose bytes it could
/// not send, before the restorer's), else written when `to` holds it,
/// else deleted.
fn outcome(
    steps: &[Step],
    results: Vec<Option<String>>,
    mut dropped: FxHashMap<usize, String>,
    to: &Tree,
) -> Restored {
    let mut paths: BTreeMap<&str, Option<String>> = BTreeMap::new();
    for (i, (step, said)) in steps.iter().zip(results).enumerate() {
        let why = dropped.remove(&i).or(said.map(|why| {
            if why.is_empty() {
                "failed, and the restore helper did not say why".to_string()
            } else {
                why
            }
        }));
        let first = paths.entry(step.op.path()).or_default();
        if first.is_none() {
            *first = why;
        }
    }
    let mut restored = Restored::default();
    for (path, why) in paths {
        match why {
            Some(why) => restored.failed.push(Skipped {
                path: path.to_string(),
                why,
            }),
            None if to.get(path).is_some() => restored.written.push(path.to_string()),
            None => restored.deleted.push(path.to_string()),
        }
    }
    restored
}

/// Writes the request to the restorer: the header, every step (a file's
/// bytes streamed from the store after its step), the end. The files whose
/// bytes could not be sent whole, by step, with why; a write that fails
/// (the restorer ended or was killed) ends the sending, and the answer
/// says the rest.
fn send(
    helper: &Helper,
    header: &Header,
    steps: &[Step],
    objects: &Objects,
) -> FxHashMap<usize, String> {
    let mut dropped = FxHashMap::default();
    let mut w = BufWriter::with_capacity(SEND_CHUNK + 64, helper.stdin());
    let mut buf = vec![0u8; SEND_CHUNK];
    let mut sent = || -> io::Result<()> {
        let mut start = Vec::new();
        header.write(&mut start);
        w.write_all(&start)?;
        for (i, step) in steps.iter().enumerate() {
            step.op.write(&mut w)?;
            if let (Op::File { size, .. }, Some(sha)) = (&step.op, &step.sha256) {
                if let Err(why) = stream(&mut w, objects, sha, *size, &mut buf)? {
                    dropped.insert(i, why);
                }
            }
        }
        Op::End.write(&mut w)?;
        w.flush()
    };
    let _ = sent();
    dropped
}

/// Streams object `sha` (`size` bytes) as a file's chunks and end byte:
/// [`data_end::KEEP`] only when exactly its bytes went (their sha256 its
/// name), else [`data_end::DROP`] and why. An error is a failed write.
fn stream(
    w: &mut impl Write,
    objects: &Objects,
    sha: &str,
    size: u64,
    buf: &mut [u8],
) -> io::Result<Result<(), String>> {
    let mut hasher = Sha256::new();
    let mut sent = 0u64;
    let damaged =
        "the snapshot store's copy of it is damaged (it does not hold the bytes it is named by)";
    let mut failed = None;
    match File::open(objects.path(sha)) {
        Err(e) => {
            failed = Some(format!(
                "its bytes cannot be read from the snapshot store: {e}"
            ))
        }
        Ok(mut file) => loop {
            // One byte past the size is asked for, so a longer object shows.
            let want = (size + 1 - sent).min(buf.len() as u64) as usize;
            match file.read(&mut buf[..want]) {
                Ok(0) => break,
                Ok(n) if sent + n as u64 > size => {
                    failed = Some(damaged.to_string());
                    break;
                }
                Ok(n) => {
                    hasher.update(&buf[..n]);
                    write_chunk(w, &buf[..n])?;
                    sent += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    failed = Some(format!(
                        "its bytes cannot be read from the snapshot store: {e}"
                    ));
                    break;
                }
            }
        },
    }
    write_chunk(w, &[])?;
    if failed.is_none() && (sent != size || format!("{:x}", hasher.finalize()) != sha) {
        failed = Some(damaged.to_string());
    }
    w.write_all(&[if failed.is_none() {
        data_end::KEEP
    } else {
        data_end::DROP
    }])?;
    Ok(failed.map_or(Ok(()), Err))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(path: &str, mode: u32, kind: EntryKind) -> Entry {
        Entry {
            path: path.into(),
            mode,
            kind,
        }
    }

    fn file(sha: char) -> EntryKind {
        EntryKind::File {
            sha256: sha.to_string().repeat(64),
            size: 1,
        }
    }

    fn tree(mut entries: Vec<Entry>) -> Tree {
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        Tree { entries }
    }

    /// Each step as a short line: its tag, path and what matters.
    fn lines(steps: &[Step]) -> Vec<String> {
        steps
            .iter()
            .map(|s| match &s.op {
                Op::Remove { path, dir } => format!("rm{} {path}", if *dir { "dir" } else { "" }),
                Op::MakeDir { path, mode } => format!("mkdir {path} {mode:o}"),
                Op::File { path, mode, .. } => format!("write {path} {mode:o}"),
                Op::Link { path, target } => format!("ln {path} -> {target}"),
                Op::Mode { path, mode, .. } => format!("chmod {path} {mode:o}"),
                Op::End => "end".into(),
            })
            .collect()
    }

    #[test]
    fn a_plan_removes_deepest_first_makes_folders_top_down_then_files_and_closes_folders_last() {
        let now = tree(vec![
            e("gone", 0o755, EntryKind::Dir),
            e("gone/deep", 0o755, EntryKind::Dir),
            e("gone/deep/f", 0o644, file('a')),
            e("kind", 0o755, EntryKind::Dir),
            e("kind/x", 0o644, file('a')),
            e("same", 0o644, file('b')),
            e("chmod", 0o644, file('c')),
            e("opened", 0o555, EntryKind::Dir),
            e("closed", 0o755, EntryKind::Dir),
            e("link", 0o777, EntryKind::Symlink { target: "a".into() }),
            e(".git", 0o755, EntryKind::Dir),
        ]);
        let to = tree(vec![
            e("kind", 0o644, file('d')),
            e("same", 0o644, file('b')),
            e("chmod", 0o755, file('c')),
            e("opened", 0o755, EntryKind::Dir),
            e("closed", 0o555, EntryKind::Dir),
            e("new", 0o755, EntryKind::Dir),
            e("new/ro", 0o500, EntryKind::Dir),
            e("new/ro/f", 0o444, file('e')),
            e("link", 0o777, EntryKind::Symlink { target: "b".into() }),
        ]);
        let steps = plan(&now, &to, &[".git".into()]);
        assert_eq!(
            lines(&steps),
            [
                "chmod opened 755",
                "rm gone/deep/f",
                "rmdir gone/deep",
                "rm kind/x",
                "rmdir gone",
                "rmdir kind",
                "mkdir new 755",
                "mkdir new/ro 700",
                "chmod chmod 755",
                "write kind 644",
                "ln link -> b",
                "write new/ro/f 444",
                "chmod new/ro 500",
                "chmod closed 555",
            ]
        );
        assert_eq!(steps[9].sha256.as_deref(), Some(&*"d".repeat(64)));
        assert!(plan(&to, &to, &[]).is_empty());
    }

    #[test]
    fn each_path_is_written_deleted_or_failed_by_its_first_failure() {
        let to = tree(vec![e("kind", 0o644, file('d')), e("f", 0o644, file('a'))]);
        let steps = vec![
            Step::of(Op::Remove {
                path: "gone".into(),
                dir: false,
            }),
            Step::of(Op::Remove {
                path: "kind".into(),
                dir: true,
            }),
            Step::of(Op::File {
                path: "kind".into(),
                mode: 0o644,
                size: 1,
            }),
            Step::of(Op::File {
                path: "f".into(),
                mode: 0o644,
                size: 1,
            }),
        ];
        let results = vec![
            None,
            Some("cannot be removed: Directory not empty".into()),
            Some("cannot be put in place: Is a directory".into()),
            Some(String::new()),
        ];
        let mut dropped = FxHashMap::default();
        dropped.insert(3, "the store's copy is damaged".to_string());
        let got = outcome(&steps, results, dropped, &to);
        assert_eq!(got.deleted, ["gone"]);
        assert!(got.written.is_empty());
        let failed: Vec<(&str, &str)> = got
            .failed
            .iter()
            .map(|s| (s.path.as_str(), s.why.as_str()))
            .collect();
        assert_eq!(
            failed,
            [
                ("f", "the store's copy is damaged"),
                ("kind", "cannot be removed: Directory not empty"),
            ]
        );
    }
}
