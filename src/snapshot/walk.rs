//! The walker: `room-core --snapshot-walk`, run as the agent account (or
//! the service's own when there is none). It reads [`Request`]s on stdin
//! and answers each with frames on stdout ([`super::protocol`]), one at a
//! time, until stdin ends or stays quiet for [`WALKER_IDLE`].
//!
//! It never follows a symbolic link and never opens what is not a regular
//! file or a folder: the folder is reached from `/` one component at a
//! time (`O_PATH | O_NOFOLLOW` for those above it, which need only search
//! permission), each folder is opened `O_RDONLY | O_DIRECTORY |
//! O_NOFOLLOW` relative to its parent's descriptor, each entry looked at
//! with `fstatat(AT_SYMLINK_NOFOLLOW)`, a link read with `readlinkat`, and
//! a file opened `O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY` and
//! `fstat`ed (still a regular file, the same inode) before at most its
//! size + 1 bytes are read. FIFOs, sockets and devices are named, not
//! opened. Only the chain of folders from the top to the one being read is
//! open at a time, and folders nest at most [`MAX_DEPTH`] deep.

use std::ffi::CString;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::Duration;

use nix::dir::Dir;
use nix::fcntl::{readlinkat, AtFlags, OFlag};
use nix::libc;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::stat::{fstat, fstatat, FileStat, Mode};

use super::protocol::{
    end, write_chunk, Frame, Request, StatKey, ANSWER_MAGIC, MAX_CHUNK, MAX_PATH, MAX_REQUEST,
    MAX_TARGET,
};
use super::reach::{errno_text, open_root};

/// How many bytes of a file are read between two looks at its stat: a
/// file written while it is read stops being read within about this much.
const RECHECK_EVERY: u64 = 8 << 20;

/// The deepest nesting of folders walked (each level holds a descriptor).
pub(crate) const MAX_DEPTH: usize = 256;

/// How long the walker waits for its next request before it exits: the
/// service keeps a walker between snapshots, and one it stops asking ends
/// on its own.
pub(crate) const WALKER_IDLE: Duration = Duration::from_secs(60);

/// Runs the walker on stdin and stdout, one answer per request, until
/// stdin ends or no request comes for [`WALKER_IDLE`]; the process's exit
/// code.
pub(crate) fn main() -> i32 {
    let stdin = io::stdin();
    let mut input = BufReader::with_capacity(1 << 20, stdin.lock());
    let mut out = BufWriter::with_capacity(256 * 1024, io::stdout().lock());
    loop {
        if input.buffer().is_empty() {
            let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
            let idle = PollTimeout::try_from(WALKER_IDLE).unwrap_or(PollTimeout::MAX);
            match poll(&mut fds, idle) {
                Ok(0) => return 0,
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(_) => return 1,
            }
        }
        match input.fill_buf() {
            Ok([]) => return 0,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return 1,
        }
        if out.write_all(ANSWER_MAGIC).is_err() {
            return 1;
        }
        let request = Request::decode((&mut input).take(MAX_REQUEST));
        // After a request it could not read, the next one's start is lost.
        let in_step = request.is_ok();
        let outcome = request
            .map_err(|e| Stop::Failed(format!("cannot read the request: {e}")))
            .and_then(|req| Walker::new(&req, &mut out).run());
        let last = match outcome {
            Ok(()) => Frame::End,
            Err(Stop::TooLarge(why)) => Frame::TooLarge { why },
            Err(Stop::Failed(why)) => Frame::Failed { why },
            Err(Stop::Output) => return 1,
        };
        if last.write(&mut out).and_then(|_| out.flush()).is_err() || !in_step {
            return 1;
        }
    }
}

/// Why the walk ended early.
enum Stop {
    /// Over a limit.
    TooLarge(String),
    /// It cannot go on.
    Failed(String),
    /// stdout is gone: nobody is listening.
    Output,
}

impl From<io::Error> for Stop {
    fn from(_: io::Error) -> Stop {
        Stop::Output
    }
}

/// One folder being read: its descriptor, its path, its entries' names
/// (sorted) and the next one to look at.
struct Level {
    dir: Dir,
    path: String,
    names: Vec<Vec<u8>>,
    next: usize,
}

struct Walker<'a, W: Write> {
    req: &'a Request,
    out: &'a mut W,
    entries: u64,
    bytes: u64,
    buf: Vec<u8>,
}

impl<'a, W: Write> Walker<'a, W> {
    fn new(req: &'a Request, out: &'a mut W) -> Walker<'a, W> {
        Walker {
            req,
            out,
            entries: 0,
            bytes: 0,
            buf: vec![0; MAX_CHUNK],
        }
    }

    fn run(&mut self) -> Result<(), Stop> {
        // A folder that is not there yet (a session's first turn makes
        // it, and the folders above it) holds nothing: its snapshot is the
        // empty tree.
        let Some(top) = open_root(&self.req.root).map_err(Stop::Failed)? else {
            return Ok(());
        };
        let mut stack = vec![level(top, String::new())?];
        while let Some(at) = stack.last_mut() {
            let Some(name) = at.names.get(at.next).cloned() else {
                stack.pop();
                continue;
            };
            at.next += 1;
            let dirfd = at.dir.as_raw_fd();
            let path = match std::str::from_utf8(&name) {
                Ok(n) if at.path.is_empty() => n.to_string(),
                Ok(n) => format!("{}/{n}", at.path),
                Err(_) => {
                    let lossy = String::from_utf8_lossy(&name);
                    let path = join(&at.path, &lossy);
                    self.count()?;
                    self.skip(&path, "its name is not UTF-8")?;
                    continue;
                }
            };
            let base = path.rsplit('/').next().unwrap_or(&path);
            if self.ignored(&path, base) {
                continue;
            }
            self.count()?;
            if path.len() > MAX_PATH {
                self.skip(&path, &format!("its path is longer than {MAX_PATH} bytes"))?;
                continue;
            }
            let depth = stack.len();
            if let Some(next) = self.entry(dirfd, &name, path, depth)? {
                stack.push(next);
            }
        }
        Ok(())
    }

    /// Whether the ignore list names `path` (with a `/`) or `base`.
    fn ignored(&self, path: &str, base: &str) -> bool {
        self.req.ignore.iter().any(|i| {
            if i.contains('/') {
                i.trim_matches('/') == path
            } else {
                i == base
            }
        })
    }

    fn count(&mut self) -> Result<(), Stop> {
        self.entries += 1;
        if self.entries > self.req.max_entries {
            return Err(Stop::TooLarge(format!(
                "the folder has more than {} entries (max_entries)",
                self.req.max_entries
            )));
        }
        Ok(())
    }

    fn skip(&mut self, path: &str, why: &str) -> Result<(), Stop> {
        let frame = Frame::Skipped {
            path: path.to_string(),
            why: why.to_string(),
        };
        Ok(frame.write(self.out)?)
    }

    /// Records `name` in `dirfd` (its path `path`); a folder is returned to
    /// be read next.
    fn entry(
        &mut self,
        dirfd: RawFd,
        name: &[u8],
        path: String,
        depth: usize,
    ) -> Result<Option<Level>, Stop> {
        let Ok(c) = CString::new(name) else {
            self.skip(&path, "its name holds a NUL byte")?;
            return Ok(None);
        };
        let st = match fstatat(Some(dirfd), c.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(e) => {
                self.skip(&path, &format!("cannot be looked at: {}", e.desc()))?;
                return Ok(None);
            }
        };
        let mode = st.st_mode & 0o7777;
        match st.st_mode & libc::S_IFMT {
            libc::S_IFDIR => {
                if depth >= MAX_DEPTH {
                    let why = format!("a folder nested deeper than {MAX_DEPTH} folders");
                    self.skip(&path, &why)?;
                    return Ok(None);
                }
                let flags = OFlag::O_RDONLY
                    | OFlag::O_DIRECTORY
                    | OFlag::O_NOFOLLOW
                    | OFlag::O_CLOEXEC
                    | OFlag::O_NONBLOCK;
                let dir = match Dir::openat(Some(dirfd), c.as_c_str(), flags, Mode::empty()) {
                    Ok(d) => d,
                    Err(e) => {
                        let why = format!("a folder that cannot be read: {}", e.desc());
                        self.skip(&path, &why)?;
                        return Ok(None);
                    }
                };
                match fstat(dir.as_raw_fd()) {
                    Ok(now) if same(&now, &st) => {}
                    _ => {
                        self.skip(&path, "changed while it was read")?;
                        return Ok(None);
                    }
                }
                Frame::Dir {
                    path: path.clone(),
                    mode,
                }
                .write(self.out)?;
                Ok(Some(level(dir, path)?))
            }
            libc::S_IFLNK => {
                let target = match readlinkat(Some(dirfd), c.as_c_str()) {
                    Ok(t) => t,
                    Err(e) => {
                        let why = format!("a symbolic link that cannot be read: {}", e.desc());
                        self.skip(&path, &why)?;
                        return Ok(None);
                    }
                };
                match target.to_str() {
                    Some(t) if t.len() <= MAX_TARGET => {
                        let target = t.to_string();
                        Frame::Link { path, mode, target }.write(self.out)?;
                    }
                    Some(_) => self.skip(&path, "a symbolic link with too long a target")?,
                    None => self.skip(&path, "a symbolic link whose target is not UTF-8")?,
                }
                Ok(None)
            }
            libc::S_IFREG => {
                self.file(dirfd, &c, path, mode, &st)?;
                Ok(None)
            }
            kind => {
                let what = match kind {
                    libc::S_IFIFO => "a FIFO (named pipe)",
                    libc::S_IFSOCK => "a socket",
                    libc::S_IFCHR => "a character device",
                    libc::S_IFBLK => "a block device",
                    _ => "an unknown kind of file",
                };
                self.skip(&path, &format!("{what}, not opened"))?;
                Ok(None)
            }
        }
    }

    /// A regular file: named as cached when its key is, else its bytes.
    fn file(
        &mut self,
        dirfd: RawFd,
        c: &CString,
        path: String,
        mode: u32,
        st: &FileStat,
    ) -> Result<(), Stop> {
        let key = StatKey::of(st);
        self.add_bytes(key.size)?;
        if self.req.cached.get(&path) == Some(&key) {
            return Ok(Frame::Cached { path, mode, key }.write(self.out)?);
        }
        let flags = OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC;
        let fd = match crate::sys::openat(dirfd, c, flags) {
            Ok(fd) => fd,
            Err(e) => return self.skip(&path, &format!("cannot be read: {}", errno_text(&e))),
        };
        let opened = match fstat(fd.as_raw_fd()) {
            Ok(now) if same(&now, st) && now.st_mode & libc::S_IFMT == libc::S_IFREG => now,
            _ => return self.skip(&path, "changed while it was read"),
        };
        let key = StatKey::of(&opened);
        // The size counted is the one read; a file grown since is counted so.
        self.bytes -= StatKey::of(st).size;
        self.add_bytes(key.size)?;
        Frame::File { path, mode, key }.write(self.out)?;
        let mut file = std::fs::File::from(fd);
        let mut left = key.size + 1;
        let mut got = 0u64;
        let mut moved = false;
        let mut unchecked = 0u64;
        let failed = loop {
            let want = (left as usize).min(self.buf.len());
            if want == 0 {
                break None;
            }
            match file.read(&mut self.buf[..want]) {
                Ok(0) => break None,
                Ok(n) => {
                    write_chunk(self.out, &self.buf[..n])?;
                    got += n as u64;
                    left -= n as u64;
                    unchecked += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Some(e),
            }
            // A file written while it is read is said to have changed as
            // soon as that shows, not after all of it was read and sent.
            if unchecked >= RECHECK_EVERY {
                unchecked = 0;
                if !fstat(file.as_raw_fd()).is_ok_and(|now| StatKey::of(&now) == key) {
                    moved = true;
                    break None;
                }
            }
        };
        write_chunk(self.out, &[])?;
        if let Some(e) = failed {
            self.out.write_all(&[end::FAILED])?;
            let why = format!("cannot be read: {}", errno_text(&e));
            self.out.write_all(&(why.len() as u32).to_be_bytes())?;
            return Ok(self.out.write_all(why.as_bytes())?);
        }
        let unchanged = !moved
            && got == key.size
            && fstat(file.as_raw_fd()).is_ok_and(|after| StatKey::of(&after) == key);
        let status = if unchanged { end::WHOLE } else { end::CHANGED };
        Ok(self.out.write_all(&[status])?)
    }

    fn add_bytes(&mut self, n: u64) -> Result<(), Stop> {
        self.bytes = self.bytes.saturating_add(n);
        if self.bytes > self.req.max_bytes {
            return Err(Stop::TooLarge(format!(
                "the folder's files hold more than {} bytes (max_bytes)",
                self.req.max_bytes
            )));
        }
        Ok(())
    }
}

/// `a` and `b` are the same inode.
fn same(a: &FileStat, b: &FileStat) -> bool {
    a.st_dev == b.st_dev && a.st_ino == b.st_ino
}

fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}/{name}")
    }
}

/// A folder's level: its entries' names, sorted.
fn level(mut dir: Dir, path: String) -> Result<Level, Stop> {
    let mut names = Vec::new();
    for entry in dir.iter() {
        let entry =
            entry.map_err(|e| Stop::Failed(format!("cannot list {path:?}: {}", e.desc())))?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(name.to_vec());
        }
    }
    names.sort();
    Ok(Level {
        dir,
        path,
        names,
        next: 0,
    })
}
