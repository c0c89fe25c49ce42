//! What the service and the walker (`room-core --snapshot-walk`) say to
//! each other: one request on the walker's stdin, then a stream of binary
//! frames on its stdout.
//!
//! One round trip, with the stat cache in the request: the service sends,
//! for every regular file it knows in the folder, the stat key it last saw
//! (device, inode, size, mtime and ctime in ns); the walker sends the bytes
//! only of the files whose key differs, and a [`Frame::Cached`] with no
//! bytes for the rest. A listing first and a wanted-list after would cost a
//! second exchange and the walker's state between them, for nothing: the
//! walker can compare keys itself, and what it says is checked anyway (a
//! cached frame must match a key the service holds, with its sha256).
//!
//! Binary framing, not JSON: file bytes go through as they are, in chunks
//! of at most [`MAX_CHUNK`], so neither side holds a whole file, and every
//! length is read before what it sizes, so the service bounds each one
//! before it reads it (the walker runs as the agent account, and its
//! output is hostile input).
//!
//! Numbers are big-endian; a string is a `u32` length and its bytes.

use rustc_hash::FxHashMap;
use std::io::{self, Read, Write};

/// The first bytes of a request.
pub(crate) const REQUEST_MAGIC: &[u8; 8] = b"RCSNAPQ1";
/// The first bytes of an answer.
pub(crate) const ANSWER_MAGIC: &[u8; 8] = b"RCSNAPA1";
/// The longest relative path either side accepts (bytes).
pub(crate) const MAX_PATH: usize = 16 * 1024;
/// The longest symbolic link target (bytes): PATH_MAX.
pub(crate) const MAX_TARGET: usize = 4096;
/// The longest reason the walker may give (bytes).
pub(crate) const MAX_WHY: usize = 1024;
/// The largest chunk of a file's bytes in one piece.
pub(crate) const MAX_CHUNK: usize = 1 << 20;
/// The most bytes of frames, beside the files' bytes, the service reads.
pub(crate) const MAX_OVERHEAD: u64 = 64 << 20;
/// The largest request the walker reads (the cache's keys are most of it).
pub(crate) const MAX_REQUEST: u64 = 256 << 20;

/// What decides whether a file is unchanged since it was last read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct StatKey {
    /// `st_dev`.
    pub(crate) dev: u64,
    /// `st_ino`.
    pub(crate) ino: u64,
    /// `st_size`.
    pub(crate) size: u64,
    /// `st_mtime` in ns.
    pub(crate) mtime_ns: i64,
    /// `st_ctime` in ns (no one can set it: any change to the inode moves it).
    pub(crate) ctime_ns: i64,
}

impl StatKey {
    /// The key of a stat.
    pub(crate) fn of(st: &nix::sys::stat::FileStat) -> StatKey {
        StatKey {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size.max(0) as u64,
            mtime_ns: st.st_mtime * 1_000_000_000 + st.st_mtime_nsec,
            ctime_ns: st.st_ctime * 1_000_000_000 + st.st_ctime_nsec,
        }
    }

    fn put(&self, out: &mut Vec<u8>) {
        for n in [self.dev, self.ino, self.size] {
            out.extend_from_slice(&n.to_be_bytes());
        }
        for n in [self.mtime_ns, self.ctime_ns] {
            out.extend_from_slice(&n.to_be_bytes());
        }
    }

    fn get(r: &mut impl Read) -> io::Result<StatKey> {
        Ok(StatKey {
            dev: get_u64(r)?,
            ino: get_u64(r)?,
            size: get_u64(r)?,
            mtime_ns: get_u64(r)? as i64,
            ctime_ns: get_u64(r)? as i64,
        })
    }
}

/// What the service asks the walker.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Request {
    /// The folder, absolute.
    pub(crate) root: String,
    /// The most bytes of regular files.
    pub(crate) max_bytes: u64,
    /// The most entries.
    pub(crate) max_entries: u64,
    /// Names (no `/`) skipped at any depth, and paths (with `/`) from the
    /// top.
    pub(crate) ignore: Vec<String>,
    /// The stat key of each file the service holds the bytes of.
    pub(crate) cached: FxHashMap<String, StatKey>,
}

impl Request {
    /// The request's bytes.
    #[cfg(test)]
    pub(crate) fn encode(&self) -> Vec<u8> {
        self.encode_with(self.cached.iter().map(|(p, k)| (p.as_str(), *k)))
    }

    /// The request's bytes, its `cached` (left empty) given apart so the
    /// service's cache is not copied to be sent.
    pub(crate) fn encode_with<'a>(
        &self,
        cached: impl ExactSizeIterator<Item = (&'a str, StatKey)>,
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + cached.len() * 80);
        out.extend_from_slice(REQUEST_MAGIC);
        put_str(&mut out, &self.root);
        out.extend_from_slice(&self.max_bytes.to_be_bytes());
        out.extend_from_slice(&self.max_entries.to_be_bytes());
        out.extend_from_slice(&(self.ignore.len() as u32).to_be_bytes());
        for i in &self.ignore {
            put_str(&mut out, i);
        }
        out.extend_from_slice(&(cached.len() as u32).to_be_bytes());
        for (path, key) in cached {
            put_str(&mut out, path);
            key.put(&mut out);
        }
        out
    }

    /// Reads a request.
    pub(crate) fn decode(mut r: impl Read) -> io::Result<Request> {
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic)?;
        if &magic != REQUEST_MAGIC {
            return Err(bad("not a snapshot request"));
        }
        let root = get_str(&mut r, MAX_PATH + 4096)?;
        let max_bytes = get_u64(&mut r)?;
        let max_entries = get_u64(&mut r)?;
        let n = get_u32(&mut r)?;
        let mut ignore = Vec::new();
        for _ in 0..n {
            ignore.push(get_str(&mut r, MAX_PATH)?);
        }
        let n = get_u32(&mut r)?;
        let mut cached = FxHashMap::default();
        cached.reserve((n as usize).min(1 << 20));
        for _ in 0..n {
            let path = get_str(&mut r, MAX_PATH)?;
            cached.insert(path, StatKey::get(&mut r)?);
        }
        Ok(Request {
            root,
            max_bytes,
            max_entries,
            ignore,
            cached,
        })
    }
}

/// How a file's bytes ended (the byte after its chunks).
pub(crate) mod end {
    /// All of them, and the file did not change while it was read.
    pub(crate) const WHOLE: u8 = 0;
    /// The file changed while it was read: the bytes are dropped.
    pub(crate) const CHANGED: u8 = 1;
    /// A read failed; a reason follows.
    pub(crate) const FAILED: u8 = 2;
}

/// One frame of the answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Frame {
    /// `D` path mode: a folder.
    Dir { path: String, mode: u32 },
    /// `L` path mode target: a symbolic link.
    Link {
        path: String,
        mode: u32,
        target: String,
    },
    /// `C` path mode key: a regular file whose key is the cached one.
    Cached {
        path: String,
        mode: u32,
        key: StatKey,
    },
    /// `F` path mode key, then chunks (`u32` length and bytes; 0 ends them)
    /// and an [`end`] byte (and a reason after [`end::FAILED`]): a regular
    /// file's bytes.
    File {
        path: String,
        mode: u32,
        key: StatKey,
    },
    /// `S` path why: an entry not recorded.
    Skipped { path: String, why: String },
    /// `T` why: over a limit; the last frame.
    TooLarge { why: String },
    /// `X` why: the walk failed; the last frame.
    Failed { why: String },
    /// `E`: the walk is done; the last frame.
    End,
}

impl Frame {
    /// Writes the frame (a `File`'s chunks follow it).
    pub(crate) fn write(&self, w: &mut impl Write) -> io::Result<()> {
        let mut out = Vec::with_capacity(64);
        match self {
            Frame::Dir { path, mode } => {
                out.push(b'D');
                put_str(&mut out, path);
                out.extend_from_slice(&mode.to_be_bytes());
            }
            Frame::Link { path, mode, target } => {
                out.push(b'L');
                put_str(&mut out, path);
                out.extend_from_slice(&mode.to_be_bytes());
                put_str(&mut out, target);
            }
            Frame::Cached { path, mode, key } | Frame::File { path, mode, key } => {
                out.push(if matches!(self, Frame::Cached { .. }) {
                    b'C'
                } else {
                    b'F'
                });
                put_str(&mut out, path);
                out.extend_from_slice(&mode.to_be_bytes());
                key.put(&mut out);
            }
            Frame::Skipped { path, why } => {
                out.push(b'S');
                put_str(&mut out, path);
                put_str(&mut out, why);
            }
            Frame::TooLarge { why } => {
                out.push(b'T');
                put_str(&mut out, why);
            }
            Frame::Failed { why } => {
                out.push(b'X');
                put_str(&mut out, why);
            }
            Frame::End => out.push(b'E'),
        }
        w.write_all(&out)
    }

    /// Reads one frame, each length bounded before what it sizes is read.
    pub(crate) fn read(r: &mut impl Read) -> io::Result<Frame> {
        let tag = get_u8(r)?;
        let path = |r: &mut _| get_str(r, MAX_PATH);
        let why = |r: &mut _| get_str(r, MAX_WHY);
        Ok(match tag {
            b'D' => Frame::Dir {
                path: path(r)?,
                mode: get_u32(r)?,
            },
            b'L' => Frame::Link {
                path: path(r)?,
                mode: get_u32(r)?,
                target: get_str(r, MAX_TARGET)?,
            },
            b'C' => Frame::Cached {
                path: path(r)?,
                mode: get_u32(r)?,
                key: StatKey::get(r)?,
            },
            b'F' => Frame::File {
                path: path(r)?,
                mode: get_u32(r)?,
                key: StatKey::get(r)?,
            },
            b'S' => Frame::Skipped {
                path: path(r)?,
                why: why(r)?,
            },
            b'T' => Frame::TooLarge { why: why(r)? },
            b'X' => Frame::Failed { why: why(r)? },
            b'E' => Frame::End,
            other => return Err(bad(&format!("an unknown frame {other:#04x}"))),
        })
    }
}

/// Writes one chunk of a file's bytes (an empty one ends them).
pub(crate) fn write_chunk(w: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    w.write_all(&(bytes.len() as u32).to_be_bytes())?;
    w.write_all(bytes)
}

/// Reads the length of the next chunk (0: the end), at most [`MAX_CHUNK`].
pub(crate) fn read_chunk_len(r: &mut impl Read) -> io::Result<usize> {
    let n = get_u32(r)? as usize;
    if n > MAX_CHUNK {
        return Err(bad(&format!("a chunk of {n} bytes")));
    }
    Ok(n)
}

/// Writes a string: its `u32` length, then its bytes.
pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// A malformed-input error.
pub(crate) fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// One byte.
pub(crate) fn get_u8(r: &mut impl Read) -> io::Result<u8> {
    let mut b = [0u8; 1];
    r.read_exact(&mut b)?;
    Ok(b[0])
}

/// A big-endian `u32`.
pub(crate) fn get_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

/// A big-endian `u64`.
pub(crate) fn get_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

/// A string of at most `max` bytes, which must be UTF-8.
pub(crate) fn get_str(r: &mut impl Read, max: usize) -> io::Result<String> {
    let n = get_u32(r)? as usize;
    if n > max {
        return Err(bad(&format!("a string of {n} bytes (at most {max})")));
    }
    let mut b = vec![0u8; n];
    r.read_exact(&mut b)?;
    String::from_utf8(b).map_err(|_| bad("a string that is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_and_frames_read_back_as_written() {
        let mut req = Request {
            root: "/w/p".into(),
            max_bytes: 5,
            max_entries: 7,
            ignore: vec![".git".into()],
            ..Request::default()
        };
        req.cached.insert(
            "a/b".into(),
            StatKey {
                dev: 1,
                ino: 2,
                size: 3,
                mtime_ns: -4,
                ctime_ns: 5,
            },
        );
        assert_eq!(Request::decode(&req.encode()[..]).unwrap(), req);
        let frames = [
            Frame::Dir {
                path: "d".into(),
                mode: 0o755,
            },
            Frame::Link {
                path: "l".into(),
                mode: 0o777,
                target: "/etc".into(),
            },
            Frame::Skipped {
                path: "p".into(),
                why: "a FIFO".into(),
            },
            Frame::End,
        ];
        let mut out = Vec::new();
        for f in &frames {
            f.write(&mut out).unwrap();
        }
        let mut r = &out[..];
        for f in &frames {
            assert_eq!(&Frame::read(&mut r).unwrap(), f);
        }
    }

    #[test]
    fn oversized_lengths_are_refused_before_they_are_read() {
        let mut out = vec![b'D'];
        out.extend_from_slice(&u32::MAX.to_be_bytes());
        let e = Frame::read(&mut &out[..]).unwrap_err();
        assert!(
            e.to_string().contains("a string of 4294967295 bytes"),
            "{e}"
        );
        let e = read_chunk_len(&mut &(MAX_CHUNK as u32 + 1).to_be_bytes()[..]).unwrap_err();
        assert!(e.to_string().contains("a chunk of"), "{e}");
        assert!(Frame::read(&mut &b"Q"[..]).is_err());
    }
}
