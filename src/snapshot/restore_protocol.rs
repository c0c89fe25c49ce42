//! What the service and the restorer (`room-core --snapshot-restore`) say
//! to each other: one request on the restorer's stdin, one answer on its
//! stdout, then the restorer exits (a restore is rare: a process per
//! restore costs nothing worth keeping one for).
//!
//! The request: [`REQUEST_MAGIC`], a [`Header`] (the folder and the ignore
//! list), then [`Op`]s in the order they are to be made, [`Op::End`] last.
//! A file's bytes follow its [`Op::File`] in chunks of at most
//! [`MAX_CHUNK`] (protocol.rs's framing: a `u32` length and the bytes, an
//! empty chunk ends them) and a [`data_end`] byte, so neither side holds a
//! whole file, and the service can still take a file back after its bytes
//! went (its object did not hold what its name says).
//!
//! The answer: [`ANSWER_MAGIC`], then one [`Said::Done`] or
//! [`Said::Failed`] per operation, in the order they were sent, then
//! [`Said::End`]; or [`Said::Stopped`] when the restorer could not start
//! (no folder, a link on its path, a request it could not read). The
//! restorer runs as the agent account, so the service reads this as hostile
//! input ([`read_answer`]): bounded before it is read, exactly one result
//! per operation.
//!
//! Numbers are big-endian; a string is a `u32` length and its bytes.

use std::io::{self, Read, Write};

use super::protocol::{
    bad, get_str, get_u32, get_u64, get_u8, put_str, MAX_PATH, MAX_TARGET, MAX_WHY,
};

/// The first bytes of a restore's request.
pub(crate) const REQUEST_MAGIC: &[u8; 8] = b"RCRESTQ1";
/// The first bytes of a restore's answer.
pub(crate) const ANSWER_MAGIC: &[u8; 8] = b"RCRESTA1";
/// The most ignore entries a request may carry (a config's list is short).
const MAX_IGNORE: u32 = 4096;

/// The request's start: what the operations apply to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Header {
    /// The folder, absolute.
    pub(crate) root: String,
    /// [`super::Limits::ignore`]: paths the restorer refuses to touch.
    pub(crate) ignore: Vec<String>,
}

impl Header {
    /// Appends the magic and the header to `out`.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(REQUEST_MAGIC);
        put_str(out, &self.root);
        out.extend_from_slice(&(self.ignore.len() as u32).to_be_bytes());
        for i in &self.ignore {
            put_str(out, i);
        }
    }

    /// Reads the magic and the header.
    pub(crate) fn read(r: &mut impl Read) -> io::Result<Header> {
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic)?;
        if &magic != REQUEST_MAGIC {
            return Err(bad("not a restore request"));
        }
        let root = get_str(r, MAX_PATH + 4096)?;
        let n = get_u32(r)?;
        if n > MAX_IGNORE {
            return Err(bad(&format!("{n} ignore entries (at most {MAX_IGNORE})")));
        }
        let ignore = (0..n)
            .map(|_| get_str(r, MAX_PATH))
            .collect::<io::Result<_>>()?;
        Ok(Header { root, ignore })
    }
}

/// How a file's bytes ended (the byte after its chunks).
pub(crate) mod data_end {
    /// They are the file's: put it in place.
    pub(crate) const KEEP: u8 = 0;
    /// They are not (the store's object was damaged or short): drop them
    /// and leave the path as it is.
    pub(crate) const DROP: u8 = 1;
}

/// One operation of the request; paths are relative to the folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    /// `R` path kind (`d` a folder, `f` anything else): `unlinkat` it (a
    /// folder only when empty).
    Remove {
        /// The path.
        path: String,
        /// Whether it was recorded as a folder (`AT_REMOVEDIR`).
        dir: bool,
    },
    /// `D` path mode: `mkdirat` a folder with these bits.
    MakeDir {
        /// The path.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// `F` path mode size, then chunks and a [`data_end`] byte: a regular
    /// file, written to a temporary name and renamed over the path.
    File {
        /// The path.
        path: String,
        /// Its permission bits.
        mode: u32,
        /// How many bytes its chunks hold.
        size: u64,
    },
    /// `L` path target: a symbolic link, made at a temporary name and
    /// renamed over the path.
    Link {
        /// The path.
        path: String,
        /// What it points at (never followed).
        target: String,
    },
    /// `M` path mode kind: only the permission bits of what is there, which
    /// must still be of that kind (`d` a folder, `f` a regular file).
    Mode {
        /// The path.
        path: String,
        /// Its permission bits.
        mode: u32,
        /// Whether it is a folder (else a regular file).
        dir: bool,
    },
    /// `E`: no more operations.
    End,
}

impl Op {
    /// The path it acts on (`""` for [`Op::End`]).
    pub(crate) fn path(&self) -> &str {
        match self {
            Op::Remove { path, .. }
            | Op::MakeDir { path, .. }
            | Op::File { path, .. }
            | Op::Link { path, .. }
            | Op::Mode { path, .. } => path,
            Op::End => "",
        }
    }

    /// Writes the operation (a file's chunks follow it).
    pub(crate) fn write(&self, w: &mut impl Write) -> io::Result<()> {
        let mut out = Vec::with_capacity(64);
        let kind = |dir: bool| if dir { b'd' } else { b'f' };
        match self {
            Op::Remove { path, dir } => {
                out.push(b'R');
                put_str(&mut out, path);
                out.push(kind(*dir));
            }
            Op::MakeDir { path, mode } => {
                out.push(b'D');
                put_str(&mut out, path);
                out.extend_from_slice(&mode.to_be_bytes());
            }
            Op::File { path, mode, size } => {
                out.push(b'F');
                put_str(&mut out, path);
                out.extend_from_slice(&mode.to_be_bytes());
                out.extend_from_slice(&size.to_be_bytes());
            }
            Op::Link { path, target } => {
                out.push(b'L');
                put_str(&mut out, path);
                put_str(&mut out, target);
            }
            Op::Mode { path, mode, dir } => {
                out.push(b'M');
                put_str(&mut out, path);
                out.extend_from_slice(&mode.to_be_bytes());
                out.push(kind(*dir));
            }
            Op::End => out.push(b'E'),
        }
        w.write_all(&out)
    }

    /// Reads one operation, each length bounded before what it sizes.
    pub(crate) fn read(r: &mut impl Read) -> io::Result<Op> {
        let path = |r: &mut _| get_str(r, MAX_PATH);
        let dir = |r: &mut _| match get_u8(r)? {
            b'd' => Ok(true),
            b'f' => Ok(false),
            other => Err(bad(&format!("an unknown kind {other:#04x}"))),
        };
        Ok(match get_u8(r)? {
            b'R' => Op::Remove {
                path: path(r)?,
                dir: dir(r)?,
            },
            b'D' => Op::MakeDir {
                path: path(r)?,
                mode: get_u32(r)?,
            },
            b'F' => Op::File {
                path: path(r)?,
                mode: get_u32(r)?,
                size: get_u64(r)?,
            },
            b'L' => Op::Link {
                path: path(r)?,
                target: get_str(r, MAX_TARGET)?,
            },
            b'M' => Op::Mode {
                path: path(r)?,
                mode: get_u32(r)?,
                dir: dir(r)?,
            },
            b'E' => Op::End,
            other => return Err(bad(&format!("an unknown operation {other:#04x}"))),
        })
    }
}

/// One frame of the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Said {
    /// `O`: the next operation was made.
    Done,
    /// `X` why: the next operation failed, and why (a sentence).
    Failed {
        /// Why, at most [`MAX_WHY`] bytes.
        why: String,
    },
    /// `F` why: the restorer could not start or go on; the last frame.
    Stopped {
        /// Why, at most [`MAX_WHY`] bytes.
        why: String,
    },
    /// `E`: every operation was answered; the last frame.
    End,
}

impl Said {
    /// Writes the frame (a sentence cut to [`MAX_WHY`] bytes at a
    /// character, so the service never refuses an honest one).
    pub(crate) fn write(&self, w: &mut impl Write) -> io::Result<()> {
        let mut out = Vec::with_capacity(16);
        let mut why = |tag: u8, why: &str| {
            let mut end = why.len().min(MAX_WHY);
            while !why.is_char_boundary(end) {
                end -= 1;
            }
            out.push(tag);
            put_str(&mut out, &why[..end]);
        };
        match self {
            Said::Done => out.push(b'O'),
            Said::Failed { why: w } => why(b'X', w),
            Said::Stopped { why: w } => why(b'F', w),
            Said::End => out.push(b'E'),
        }
        w.write_all(&out)
    }

    /// Reads one frame, a sentence bounded by [`MAX_WHY`] before it is read.
    pub(crate) fn read(r: &mut impl Read) -> io::Result<Said> {
        Ok(match get_u8(r)? {
            b'O' => Said::Done,
            b'X' => Said::Failed {
                why: get_str(r, MAX_WHY)?,
            },
            b'F' => Said::Stopped {
                why: get_str(r, MAX_WHY)?,
            },
            b'E' => Said::End,
            other => return Err(bad(&format!("an unknown frame {other:#04x}"))),
        })
    }
}

/// What a whole answer said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Each operation's result in the order sent: `None` made, or why not.
    Results(Vec<Option<String>>),
    /// The restorer stopped, and why.
    Stopped(String),
}

/// The most bytes an honest answer to `ops` operations takes: the service
/// reads no more.
pub(crate) fn answer_cap(ops: usize) -> u64 {
    let frame = 1 + 4 + MAX_WHY as u64;
    ANSWER_MAGIC.len() as u64 + (ops as u64 + 1).saturating_mul(frame)
}

/// Reads the answer to `ops` operations: exactly one result for each, then
/// the end (or a stop). Anything else is an error that says what broke.
pub(crate) fn read_answer(r: &mut impl Read, ops: usize) -> io::Result<Answer> {
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic)?;
    if &magic != ANSWER_MAGIC {
        return Err(bad("it does not start as a restore's answer"));
    }
    // Sized by what was sent, not by what the restorer says.
    let mut results = Vec::with_capacity(ops);
    loop {
        let said = Said::read(r)?;
        if matches!(said, Said::Done | Said::Failed { .. }) && results.len() == ops {
            return Err(bad(&format!(
                "it answered more operations than the {ops} it was sent"
            )));
        }
        match said {
            Said::Done => results.push(None),
            Said::Failed { why } => results.push(Some(why)),
            Said::Stopped { why } => return Ok(Answer::Stopped(why)),
            Said::End if results.len() < ops => {
                return Err(bad(&format!(
                    "it ended after {} of the {ops} operations",
                    results.len()
                )))
            }
            Said::End => return Ok(Answer::Results(results)),
        }
    }
}

/// Whether `path` is relative and normal: no empty, `.` or `..`
/// component, no NUL (what the walker's paths must be, take.rs).
pub(crate) fn is_normal(path: &str) -> bool {
    !path.is_empty()
        && !path.contains('\0')
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

/// Whether `ignore` ([`super::Limits::ignore`]) leaves `path` out of
/// snapshots: a name without `/` matches a component at any depth, a path
/// with `/` the path from the top or a folder above it (the walker leaves
/// out an ignored folder whole).
pub(crate) fn ignored(ignore: &[String], path: &str) -> bool {
    let mut upto = 0;
    for name in path.split('/') {
        upto += name.len();
        let prefix = &path[..upto];
        upto += 1;
        let hit = ignore.iter().any(|i| {
            if i.contains('/') {
                i.trim_matches('/') == prefix
            } else {
                i == name
            }
        });
        if hit {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(frames: &[Said]) -> Vec<u8> {
        let mut out = ANSWER_MAGIC.to_vec();
        for f in frames {
            f.write(&mut out).unwrap();
        }
        out
    }

    fn read(bytes: &[u8], ops: usize) -> Result<Answer, String> {
        read_answer(&mut &bytes[..], ops).map_err(|e| e.to_string())
    }

    #[test]
    fn a_request_reads_back_as_written() {
        let header = Header {
            root: "/w/p".into(),
            ignore: vec![".git".into(), "a/b".into()],
        };
        let ops = [
            Op::Remove {
                path: "gone".into(),
                dir: true,
            },
            Op::MakeDir {
                path: "d".into(),
                mode: 0o755,
            },
            Op::File {
                path: "d/f".into(),
                mode: 0o644,
                size: 3,
            },
            Op::Link {
                path: "l".into(),
                target: "/etc".into(),
            },
            Op::Mode {
                path: "x".into(),
                mode: 0o700,
                dir: false,
            },
            Op::End,
        ];
        let mut out = Vec::new();
        header.write(&mut out);
        for op in &ops {
            op.write(&mut out).unwrap();
        }
        let mut r = &out[..];
        assert_eq!(Header::read(&mut r).unwrap(), header);
        for op in &ops {
            assert_eq!(&Op::read(&mut r).unwrap(), op);
        }
        assert!(r.is_empty());
        assert!(Op::read(&mut &b"Q"[..]).is_err());
    }

    #[test]
    fn an_answer_gives_one_result_per_operation_in_order() {
        let why = "cannot be removed: Permission denied".to_string();
        let bytes = answer(&[Said::Done, Said::Failed { why: why.clone() }, Said::End]);
        assert_eq!(read(&bytes, 2), Ok(Answer::Results(vec![None, Some(why)])));
        let bytes = answer(&[Said::Stopped { why: "no".into() }]);
        assert_eq!(read(&bytes, 5), Ok(Answer::Stopped("no".into())));
        assert!(bytes.len() as u64 <= answer_cap(0));
    }

    #[test]
    fn a_hostile_answer_is_refused() {
        let e = read(b"RCSNAPA1E", 0).unwrap_err();
        assert!(e.contains("does not start as a restore's answer"), "{e}");
        let e = read(&answer(&[Said::Done, Said::Done, Said::End]), 1).unwrap_err();
        assert!(e.contains("more operations than the 1 it was sent"), "{e}");
        let e = read(&answer(&[Said::Done, Said::End]), 2).unwrap_err();
        assert!(e.contains("ended after 1 of the 2 operations"), "{e}");
        // A sentence over the cap is refused by its length, before its
        // bytes are read (none follow here).
        let mut bytes = ANSWER_MAGIC.to_vec();
        bytes.push(b'X');
        bytes.extend_from_slice(&(MAX_WHY as u32 + 1).to_be_bytes());
        let e = read(&bytes, 1).unwrap_err();
        assert!(e.contains("a string of 1025 bytes (at most 1024)"), "{e}");
        let e = read(&answer(&[]), 1).unwrap_err();
        assert!(e.contains("failed to fill whole buffer"), "{e}");
        let mut bytes = ANSWER_MAGIC.to_vec();
        bytes.push(b'?');
        assert!(read(&bytes, 1).unwrap_err().contains("an unknown frame"));
        // An honest restorer cuts its sentence to fit.
        let long = Said::Failed {
            why: "é".repeat(MAX_WHY),
        };
        let bytes = answer(&[long, Said::End]);
        let Ok(Answer::Results(got)) = read(&bytes, 1) else {
            panic!("refused");
        };
        assert_eq!(got[0].as_ref().map(String::len), Some(MAX_WHY));
        assert!(bytes.len() as u64 <= answer_cap(1));
    }

    #[test]
    fn paths_are_normal_and_ignored_as_the_walker_ignores_them() {
        for bad in ["", "/a", "a/", "a//b", "./a", "a/..", "a\0b"] {
            assert!(!is_normal(bad), "{bad:?}");
        }
        assert!(is_normal("a/b.c/..d"));
        let ignore = [".git".to_string(), "build/out".to_string()];
        assert!(ignored(&ignore, ".git"));
        assert!(ignored(&ignore, "sub/.git/HEAD"));
        assert!(ignored(&ignore, "build/out"));
        assert!(ignored(&ignore, "build/out/x"));
        assert!(!ignored(&ignore, "build"));
        assert!(!ignored(&ignore, "src/build/out"));
        assert!(!ignored(&ignore, ".github"));
    }
}
