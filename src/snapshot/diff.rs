//! What changed between two trees: each path added, deleted, modified or
//! changed kind, a deleted and an added file with the same bytes as one
//! rename, with line counts from the `similar` crate for text files.
//!
//! A file is binary when its first 8 KiB hold a NUL byte or it is not
//! UTF-8; binary files and files over [`MAX_LINE_DIFF`] get no line counts.
//! A symbolic link's target counts as one line. Folders are reported when
//! they appear, go or change mode (an empty folder is part of the tree).

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use similar::{ChangeTag, TextDiff};

use super::objects::Objects;
use super::tree::{Entry, EntryKind, Tree};

/// The largest file line-diffed (bytes).
pub(crate) const MAX_LINE_DIFF: u64 = 4 << 20;
/// How much of a file is looked at for a NUL byte.
const BINARY_PEEK: usize = 8192;
/// How long one file's line diff may search before it settles for a
/// coarser (still correct) answer.
pub(crate) const DIFF_TIMEOUT: Duration = Duration::from_secs(2);

/// How a path changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// It is new.
    Added,
    /// It is gone.
    Deleted,
    /// Its bytes, target or mode changed.
    Modified,
    /// It moved (`from` names where it was), its bytes the same.
    Renamed,
    /// It is now another kind (a file became a link, …).
    TypeChanged,
}

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A regular file.
    File,
    /// A symbolic link.
    Symlink,
    /// A folder.
    Dir,
}

/// A mode change, each side as 4 octal digits ("0644").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeChange {
    /// Before.
    pub from: String,
    /// After.
    pub to: String,
}

/// One changed path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// Its path (after the change; for a deleted one, before).
    pub path: String,
    /// How it changed: "added", "deleted", "modified", "renamed" or
    /// "type_changed".
    pub status: Change,
    /// Where a renamed file was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// What it is ("file", "symlink" or "dir"; after the change, for a
    /// deleted one before).
    pub kind: Kind,
    /// Lines added; `None` for a binary file, one too large to count, or a
    /// folder.
    pub added: Option<u64>,
    /// Lines removed; as `added`.
    pub removed: Option<u64>,
    /// Whether either side is a binary file.
    pub binary: bool,
    /// Its permission bits' change, if they changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ModeChange>,
}

/// A change with both sides' entries, for the unified text.
#[derive(Debug, Clone)]
pub(crate) struct Changed {
    pub change: FileChange,
    pub old: Option<Entry>,
    pub new: Option<Entry>,
}

fn kind_of(e: &Entry) -> Kind {
    match e.kind {
        EntryKind::File { .. } => Kind::File,
        EntryKind::Symlink { .. } => Kind::Symlink,
        EntryKind::Dir => Kind::Dir,
    }
}

/// A mode as 4 octal digits.
pub(crate) fn octal(mode: u32) -> String {
    format!("{:04o}", mode & 0o7777)
}

/// One side's content, as far as a diff needs it.
pub(crate) enum Content {
    /// Text (a link's target, or a UTF-8 file without NUL), whole.
    Text(String),
    /// A binary file.
    Binary,
    /// A file over [`MAX_LINE_DIFF`], not read.
    TooLarge,
    /// No content: a folder, or the side is missing.
    None,
}

/// The content of `entry` (`None`: the side is missing).
pub(crate) fn content(objects: &Objects, entry: Option<&Entry>) -> io::Result<Content> {
    let Some(e) = entry else {
        return Ok(Content::None);
    };
    Ok(match &e.kind {
        EntryKind::Dir => Content::None,
        EntryKind::Symlink { target } => Content::Text(format!("{target}\n")),
        EntryKind::File { size, .. } if *size > MAX_LINE_DIFF => Content::TooLarge,
        EntryKind::File { sha256, size } => {
            let bytes = objects.get(sha256, *size)?;
            let head = &bytes[..bytes.len().min(BINARY_PEEK)];
            match String::from_utf8(bytes.clone()) {
                Ok(text) if !head.contains(&0) => Content::Text(text),
                _ => Content::Binary,
            }
        }
    })
}

/// Lines added and removed from `a` to `b`.
pub(crate) fn line_counts(a: &str, b: &str) -> (u64, u64) {
    let diff = TextDiff::configure().timeout(DIFF_TIMEOUT).diff_lines(a, b);
    let (mut added, mut removed) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    (added, removed)
}

/// A changed path: its path, where it was renamed from, and both sides.
type Pair<'a> = (String, Option<String>, Option<&'a Entry>, Option<&'a Entry>);

/// Every change from `a` to `b`, sorted by path.
pub(crate) fn changes(objects: &Objects, a: &Tree, b: &Tree) -> io::Result<Vec<Changed>> {
    let old: BTreeMap<&str, &Entry> = a.entries.iter().map(|e| (e.path.as_str(), e)).collect();
    let new: BTreeMap<&str, &Entry> = b.entries.iter().map(|e| (e.path.as_str(), e)).collect();
    let mut pairs: Vec<Pair<'_>> = Vec::new();
    let mut deleted: Vec<&Entry> = Vec::new();
    let mut added: Vec<&Entry> = Vec::new();
    for (path, o) in &old {
        match new.get(path) {
            None => deleted.push(o),
            Some(n) if o.kind != n.kind || o.mode != n.mode => {
                pairs.push((path.to_string(), None, Some(o), Some(n)))
            }
            Some(_) => {}
        }
    }
    for (path, n) in &new {
        if !old.contains_key(path) {
            added.push(n);
        }
    }
    // Renames: an added file with the bytes of a deleted one, each paired
    // once, in path order.
    let mut by_sha: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, d) in deleted.iter().enumerate() {
        if let EntryKind::File { sha256, .. } = &d.kind {
            by_sha.entry(sha256).or_default().push(i);
        }
    }
    for list in by_sha.values_mut() {
        list.reverse();
    }
    let mut gone = vec![true; deleted.len()];
    for n in &added {
        let from = match &n.kind {
            EntryKind::File { sha256, .. } => by_sha.get_mut(sha256.as_str()).and_then(Vec::pop),
            _ => None,
        };
        match from {
            Some(i) => {
                gone[i] = false;
                let d = deleted[i];
                pairs.push((n.path.clone(), Some(d.path.clone()), Some(d), Some(n)));
            }
            None => pairs.push((n.path.clone(), None, None, Some(n))),
        }
    }
    for (i, d) in deleted.iter().enumerate() {
        if gone[i] {
            pairs.push((d.path.clone(), None, Some(d), None));
        }
    }
    pairs.sort_by(|x, y| x.0.cmp(&y.0));
    let mut out = Vec::with_capacity(pairs.len());
    for (path, from, o, n) in pairs {
        let status = match (o, n, &from) {
            (None, _, _) => Change::Added,
            (_, None, _) => Change::Deleted,
            (_, _, Some(_)) => Change::Renamed,
            (Some(o), Some(n), None) if kind_of(o) != kind_of(n) => Change::TypeChanged,
            _ => Change::Modified,
        };
        let kind = kind_of(n.or(o).expect("one side"));
        let mode = match (o, n) {
            (Some(o), Some(n)) if o.mode != n.mode && kind_of(o) == kind_of(n) => {
                Some(ModeChange {
                    from: octal(o.mode),
                    to: octal(n.mode),
                })
            }
            _ => None,
        };
        let same_bytes = matches!((o, n), (Some(o), Some(n)) if o.kind == n.kind);
        let (a, b) = if same_bytes {
            // Only the mode or the name moved: no content is read.
            (Content::None, Content::None)
        } else {
            (content(objects, o)?, content(objects, n)?)
        };
        let text = |c: &Content| matches!(c, Content::Text(_) | Content::None);
        let binary = matches!(a, Content::Binary) || matches!(b, Content::Binary);
        let binary = binary || (same_bytes && is_binary(objects, n)?);
        let counts = match (&a, &b) {
            _ if kind == Kind::Dir && !matches!(status, Change::TypeChanged) => None,
            _ if binary => None,
            _ if same_bytes => Some((0, 0)),
            (Content::Text(x), Content::Text(y)) => Some(line_counts(x, y)),
            (Content::Text(x), Content::None) => Some(line_counts(x, "")),
            (Content::None, Content::Text(y)) => Some(line_counts("", y)),
            _ if text(&a) && text(&b) => Some((0, 0)),
            _ => None,
        };
        out.push(Changed {
            change: FileChange {
                path,
                status,
                from,
                kind,
                added: counts.map(|c| c.0),
                removed: counts.map(|c| c.1),
                binary,
                mode,
            },
            old: o.cloned(),
            new: n.cloned(),
        });
    }
    Ok(out)
}

/// Whether `entry` is a binary file (a large one by its first 8 KiB).
fn is_binary(objects: &Objects, entry: Option<&Entry>) -> io::Result<bool> {
    Ok(match entry.map(|e| &e.kind) {
        Some(EntryKind::File { size, .. }) if *size > MAX_LINE_DIFF => false,
        _ => matches!(content(objects, entry)?, Content::Binary),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_counts_are_similar_s() {
        assert_eq!(line_counts("a\nb\nc\n", "a\nB\nc\nd\n"), (2, 1));
        assert_eq!(line_counts("", "x\ny\n"), (2, 0));
        assert_eq!(octal(0o100755 & 0o7777), "0755");
    }
}
