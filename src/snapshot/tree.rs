//! A recorded folder: its entries as the store keeps them, one object per
//! folder (its listing), so a turn stores new listings only for the
//! folders on the paths of what it changed, as git does.
//!
//! A listing's canonical bytes: `room-core tree 1\n`, then each entry in
//! the byte order of its name: a kind byte (`f` file, `l` symbolic link,
//! `d` folder), its permission bits (`u32`), its name (`u32` length and
//! bytes), then for a file its size (`u64`) and the raw sha256 of its
//! bytes, for a link its target (`u32` length and bytes), for a folder the
//! raw sha256 of its own listing. Numbers are big-endian. A tree's id is
//! the sha256 of its top folder's listing.

use rustc_hash::FxHashMap;
use std::fmt;
use std::io;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::objects::{is_sha256, Batch, Objects};

const HEADER: &[u8] = b"room-core tree 1\n";
/// The largest listing read back.
const MAX_LISTING: u64 = 256 << 20;
/// The most entries a tree read back may hold.
const MAX_ENTRIES: usize = 10_000_000;

/// A tree's id: the sha256 (64 lowercase hex digits) of the canonical bytes
/// of its top folder's listing, which name everything below it by hash.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TreeId(String);

impl TreeId {
    /// The id as 64 hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for TreeId {
    type Err = String;

    /// Accepts exactly 64 lowercase hex digits.
    fn from_str(s: &str) -> Result<TreeId, String> {
        if is_sha256(s) {
            Ok(TreeId(s.to_string()))
        } else {
            Err(format!(
                "{s:.80} is not a tree id (64 lowercase hex digits)"
            ))
        }
    }
}

impl TryFrom<String> for TreeId {
    type Error = String;

    fn try_from(s: String) -> Result<TreeId, String> {
        s.parse()
    }
}

impl From<TreeId> for String {
    fn from(id: TreeId) -> String {
        id.0
    }
}

impl fmt::Display for TreeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What an entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file: its bytes are object `sha256`.
    File {
        /// The sha256 of its bytes (64 hex digits), their object's name.
        sha256: String,
        /// Its size in bytes.
        size: u64,
    },
    /// A symbolic link (never followed).
    Symlink {
        /// What it points at, as it was written.
        target: String,
    },
    /// A folder.
    Dir,
}

/// One entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its path from the folder, `/` between components.
    pub path: String,
    /// Its permission bits (`st_mode & 0o7777`).
    pub mode: u32,
    /// What it is.
    pub kind: EntryKind,
}

/// A recorded folder: every entry, sorted by path (byte order).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tree {
    /// The entries, sorted by path.
    pub entries: Vec<Entry>,
}

impl Tree {
    /// The entry at `path`.
    pub fn get(&self, path: &str) -> Option<&Entry> {
        self.entries
            .binary_search_by(|e| e.path.as_str().cmp(path))
            .ok()
            .map(|i| &self.entries[i])
    }
}

/// The folder holding `path` (`""` for the top).
pub(crate) fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_be_bytes());
    out.extend_from_slice(b);
}

fn raw_sha(hex: &str) -> [u8; 32] {
    let nibble = |c: u8| match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    };
    let mut out = [0u8; 32];
    for (o, pair) in out.iter_mut().zip(hex.as_bytes().chunks_exact(2)) {
        *o = nibble(pair[0]) << 4 | nibble(pair[1]);
    }
    out
}

/// Stores the listings of `entries` (each folder's parent among them or
/// the top; paths unique) and returns the tree's id and how many listings
/// were new.
pub(crate) fn store(
    objects: &Objects,
    batch: &mut Batch,
    entries: &[Entry],
) -> io::Result<(TreeId, u64)> {
    let mut children: FxHashMap<&str, Vec<(&str, &Entry)>> = FxHashMap::default();
    let mut dirs: Vec<&str> = vec![""];
    for e in entries {
        let up = parent(&e.path);
        let name = &e.path[up.len() + usize::from(!up.is_empty())..];
        children.entry(up).or_default().push((name, e));
        if e.kind == EntryKind::Dir {
            dirs.push(&e.path);
        }
    }
    // The deepest first, so each folder's listing is known before its parent's.
    dirs.sort_by_key(|d| {
        std::cmp::Reverse(if d.is_empty() {
            0
        } else {
            1 + d.bytes().filter(|b| *b == b'/').count()
        })
    });
    let mut listed: FxHashMap<&str, String> = FxHashMap::default();
    let mut new = 0;
    for dir in dirs {
        let mut kids = children.remove(dir).unwrap_or_default();
        kids.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut out = HEADER.to_vec();
        out.reserve(kids.len() * 64);
        for (name, e) in kids {
            out.push(match &e.kind {
                EntryKind::File { .. } => b'f',
                EntryKind::Symlink { .. } => b'l',
                EntryKind::Dir => b'd',
            });
            out.extend_from_slice(&e.mode.to_be_bytes());
            put_bytes(&mut out, name.as_bytes());
            match &e.kind {
                EntryKind::File { sha256, size } => {
                    out.extend_from_slice(&size.to_be_bytes());
                    out.extend_from_slice(&raw_sha(sha256));
                }
                EntryKind::Symlink { target } => put_bytes(&mut out, target.as_bytes()),
                EntryKind::Dir => {
                    let sha = listed
                        .get(e.path.as_str())
                        .ok_or_else(|| io::Error::other(format!("{} has no listing", e.path)))?;
                    out.extend_from_slice(&raw_sha(sha));
                }
            }
        }
        let sha = super::objects::sha256_hex(&out);
        if !objects.has(&sha) {
            objects.stage(batch, &out)?;
            new += 1;
        }
        listed.insert(dir, sha);
    }
    let top = listed.remove("").expect("the top is listed");
    Ok((TreeId(top), new))
}

/// Reads tree `id` back from the store, every listing checked against its
/// name.
pub(crate) fn load(objects: &Objects, id: &TreeId) -> io::Result<Tree> {
    let mut entries = Vec::new();
    let mut todo = vec![(String::new(), id.0.clone())];
    while let Some((dir, sha)) = todo.pop() {
        let bytes = objects.get(&sha, MAX_LISTING)?;
        parse(&bytes, &dir, &mut entries, &mut todo)
            .map_err(|why| io::Error::other(format!("listing {sha} is malformed: {why}")))?;
        if entries.len() > MAX_ENTRIES {
            return Err(io::Error::other(format!(
                "tree {id} holds more than {MAX_ENTRIES} entries"
            )));
        }
    }
    entries.sort_by(|a: &Entry, b: &Entry| a.path.cmp(&b.path));
    Ok(Tree { entries })
}

fn parse(
    bytes: &[u8],
    dir: &str,
    entries: &mut Vec<Entry>,
    todo: &mut Vec<(String, String)>,
) -> Result<(), String> {
    let mut r = bytes
        .strip_prefix(HEADER)
        .ok_or("it does not start with the header")?;
    let take = |r: &mut &[u8], n: usize| -> Result<Vec<u8>, String> {
        if r.len() < n {
            return Err("it ends early".into());
        }
        let (a, b) = r.split_at(n);
        *r = b;
        Ok(a.to_vec())
    };
    let u32_of = |b: Vec<u8>| u32::from_be_bytes(b.try_into().expect("4 bytes"));
    let hex_of = |b: Vec<u8>| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    while !r.is_empty() {
        let tag = take(&mut r, 1)?[0];
        let mode = u32_of(take(&mut r, 4)?);
        let n = u32_of(take(&mut r, 4)?) as usize;
        let name = String::from_utf8(take(&mut r, n)?).map_err(|_| "a name is not UTF-8")?;
        if name.is_empty() || name == "." || name == ".." || name.contains('/') {
            return Err(format!("a bad name {name:?}"));
        }
        let path = if dir.is_empty() {
            name
        } else {
            format!("{dir}/{name}")
        };
        let kind = match tag {
            b'f' => {
                let size = u64::from_be_bytes(take(&mut r, 8)?.try_into().expect("8 bytes"));
                EntryKind::File {
                    sha256: hex_of(take(&mut r, 32)?),
                    size,
                }
            }
            b'l' => {
                let n = u32_of(take(&mut r, 4)?) as usize;
                let target =
                    String::from_utf8(take(&mut r, n)?).map_err(|_| "a target is not UTF-8")?;
                EntryKind::Symlink { target }
            }
            b'd' => {
                todo.push((path.clone(), hex_of(take(&mut r, 32)?)));
                EntryKind::Dir
            }
            other => return Err(format!("an unknown kind {other:#04x}")),
        };
        entries.push(Entry { path, mode, kind });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_reads_back_as_stored_and_its_id_is_its_bytes() {
        let dir = std::env::temp_dir().join(format!("room-core-tree-{}", uuid::Uuid::new_v4()));
        let objects = Objects::open(dir.clone()).unwrap();
        let file = objects.put(b"hi\n").unwrap();
        let e = |path: &str, mode, kind| Entry {
            path: path.into(),
            mode,
            kind,
        };
        let entries = vec![
            e(
                "a.txt",
                0o644,
                EntryKind::File {
                    sha256: file.clone(),
                    size: 3,
                },
            ),
            e("a", 0o755, EntryKind::Dir),
            e("a/empty", 0o700, EntryKind::Dir),
            e(
                "a/link",
                0o777,
                EntryKind::Symlink {
                    target: "../a.txt".into(),
                },
            ),
        ];
        let mut batch = Batch::default();
        let (id, new) = store(&objects, &mut batch, &entries).unwrap();
        objects.commit(batch).unwrap();
        assert_eq!(new, 3);
        let tree = load(&objects, &id).unwrap();
        let paths: Vec<&str> = tree.entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["a", "a.txt", "a/empty", "a/link"]);
        assert_eq!(tree.get("a.txt").unwrap().kind, entries[0].kind);
        // The same entries in another order: the same id, nothing new.
        let mut again = entries.clone();
        again.reverse();
        let mut batch = Batch::default();
        assert_eq!(
            store(&objects, &mut batch, &again).unwrap(),
            (id.clone(), 0)
        );
        assert!(id.as_str().parse::<TreeId>().is_ok());
        assert!("ABC".parse::<TreeId>().is_err());
        assert!(serde_json::from_str::<TreeId>("\"x\"").is_err());
        assert_eq!(serde_json::to_string(&id).unwrap(), format!("\"{id}\""));
        let _ = std::fs::remove_dir_all(dir);
    }
}
