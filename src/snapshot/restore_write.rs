//! The restorer: `room-core --snapshot-restore`, run as the agent account
//! (or the service's own when there is none). It reads one request on
//! stdin ([`super::restore_protocol`]), makes its operations in order,
//! answers on stdout and exits. Running as the agent account, it can write
//! nothing the agent could not write itself; what follows keeps it from
//! being led anywhere else when there is no agent account, and from
//! harming what a snapshot never recorded.
//!
//! It never follows a symbolic link: the folder is reached from `/` one
//! component at a time ([`super::reach`]), each folder below it opened
//! `O_PATH | O_DIRECTORY | O_NOFOLLOW` relative to its parent's descriptor,
//! and every change is a `*at()` call in the descriptor of the folder it
//! changes: `unlinkat` (`AT_REMOVEDIR` for a folder, which goes only when
//! empty, so what the snapshot did not record, a FIFO or an ignored
//! `.git`, is never removed with it), `mkdirat`, `symlinkat` to a
//! temporary name then `renameat` over the path, and a file written with
//! no name in its folder (`O_TMPFILE`), its bits set with `fchmod`,
//! fsync'd, then given a temporary name (`linkat` through
//! `/proc/self/fd/N`) and at once `renameat` over the path: a restorer
//! killed while it writes (at the service's deadline, or by the agent)
//! leaves nothing in the folder. Where the folder's file system has no
//! `O_TMPFILE`, the file is written at the temporary name from the start
//! (`O_CREAT | O_EXCL | O_NOFOLLOW`). Only a mode change opens what is
//! there, `O_PATH | O_NOFOLLOW` (which opens nothing, so a FIFO never
//! blocks it), checks its kind with `fstat` and sets the bits through
//! `/proc/self/fd/N` (`fchmod` refuses an `O_PATH` descriptor).
//!
//! setuid and setgid bits are never set ([`KEPT_BITS`]): without an agent
//! account the restorer runs as the service's account, and a recorded
//! setuid bit would make the agent's bytes a program that runs as it.
//!
//! One failure never stops the others: each operation's result is a
//! sentence or nothing. The answers are sent once every folder the
//! restore changed is fsync'd, so a path said to be restored is durable
//! (an operation in a folder that could not be synced is said to have
//! failed).

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use nix::dir::Dir;
use nix::errno::Errno;
use nix::fcntl::{renameat, AtFlags, OFlag};
use nix::libc;
use nix::sys::stat::{fchmod, fchmodat, fstat, mkdirat, FchmodatFlags, Mode};
use nix::unistd::{fsync, linkat, symlinkat, unlinkat, UnlinkatFlags};
use rustc_hash::FxHashSet;

use super::protocol::{bad, get_u8, read_chunk_len, MAX_CHUNK};
use super::reach::{errno_text, reach, refused};
use super::restore_protocol::{data_end, ignored, is_normal, Header, Op, Said, ANSWER_MAGIC};
use super::tree::parent;
use super::walk::MAX_DEPTH;

/// The permission bits a restore sets: the recorded ones but setuid and
/// setgid (the module's doc says why).
pub(crate) const KEPT_BITS: u32 = 0o1777;

/// Who follows no link, in the sentence of a refusal.
const WHO: &str = "the restore";

/// Runs the restorer on stdin and stdout: one request, one answer; the
/// process's exit code.
pub(crate) fn main() -> i32 {
    let mut input = BufReader::with_capacity(1 << 20, io::stdin().lock());
    let mut out = BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    let answered = out
        .write_all(ANSWER_MAGIC)
        .and_then(|()| match run(&mut input) {
            Ok(results) => {
                for result in results {
                    match result {
                        None => Said::Done.write(&mut out)?,
                        Some(why) => Said::Failed { why }.write(&mut out)?,
                    }
                }
                Said::End.write(&mut out)
            }
            Err(why) => Said::Stopped { why }.write(&mut out),
        });
    match answered.and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// Reads the request and makes its operations; each one's result, or why
/// the restorer could not start or go on.
fn run(input: &mut impl Read) -> Result<Vec<Option<String>>, String> {
    let broken = |e: io::Error| format!("cannot read the request: {e}");
    let header = Header::read(input).map_err(broken)?;
    let root = reach(&header.root, WHO)?.ok_or_else(|| format!("{} is not there", header.root))?;
    let mut writer = Writer {
        root: &root,
        ignore: &header.ignore,
        chain: Vec::new(),
        touched: BTreeMap::new(),
        removed: FxHashSet::default(),
        current: 0,
        buf: vec![0; MAX_CHUNK],
    };
    let mut results = Vec::new();
    loop {
        let op = Op::read(input).map_err(broken)?;
        if op == Op::End {
            break;
        }
        writer.current = results.len();
        let result = writer.apply(&op, input).map_err(broken)?;
        results.push(result.err());
    }
    writer.sync(&mut results);
    Ok(results)
}

/// The operations' state: the folder, the folders open below it, and what
/// was changed where.
struct Writer<'a> {
    /// The folder.
    root: &'a Dir,
    /// Paths left out of snapshots, refused here too.
    ignore: &'a [String],
    /// The folders below the top opened last, from the top down, each with
    /// its `O_PATH` descriptor: the next operation in the same folder (they
    /// come in path order) opens none again.
    chain: Vec<(String, OwnedFd)>,
    /// Each folder whose names changed, with the operations that changed
    /// them: fsync'd at the end.
    touched: BTreeMap<String, Vec<usize>>,
    /// The folders removed (nothing in them needs syncing).
    removed: FxHashSet<String>,
    /// The index of the operation being made.
    current: usize,
    /// One chunk of a file's bytes.
    buf: Vec<u8>,
}

impl Writer<'_> {
    /// Makes `op`; its file bytes, if any, are read from `input` whatever
    /// happens, so the next operation starts where it should. An error is
    /// a request that cannot be read.
    fn apply(&mut self, op: &Op, input: &mut impl Read) -> io::Result<Result<(), String>> {
        Ok(match op {
            Op::Remove { path, dir } => self.remove(path, *dir),
            Op::MakeDir { path, mode } => self.make_dir(path, *mode),
            Op::File { path, mode, size } => return self.file(path, *mode, *size, input),
            Op::Link { path, target } => self.link(path, target),
            Op::Mode { path, mode, dir } => self.mode(path, *mode, *dir),
            Op::End => Ok(()),
        })
    }

    /// The folder at `dir` (`""`: the top), reached from the deepest open
    /// folder above it, one `O_NOFOLLOW` component at a time.
    fn folder(&mut self, dir: &str) -> Result<RawFd, String> {
        if dir.is_empty() {
            return Ok(self.root.as_raw_fd());
        }
        // The chain is a line of folders, each inside the one before it:
        // keep those that hold `dir` (or are it).
        let keep = self
            .chain
            .iter()
            .take_while(|(p, _)| {
                dir == p
                    || dir
                        .strip_prefix(p.as_str())
                        .is_some_and(|r| r.starts_with('/'))
            })
            .count();
        self.chain.truncate(keep);
        let mut at = self.chain.last().map_or(0, |(p, _)| p.len() + 1);
        while at <= dir.len() {
            let end = dir[at..].find('/').map_or(dir.len(), |i| at + i);
            if self.chain.len() >= MAX_DEPTH {
                return Err(format!(
                    "cannot be reached: it is nested deeper than {MAX_DEPTH} folders"
                ));
            }
            let name = CString::new(&dir[at..end])
                .map_err(|_| "cannot be reached: its path holds a NUL byte".to_string())?;
            let up = self
                .chain
                .last()
                .map_or(self.root.as_raw_fd(), |(_, fd)| fd.as_raw_fd());
            let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
            let fd = crate::sys::openat(up, &name, flags)
                .map_err(|e| format!("cannot be reached: {}", refused(&dir[..end], &e, WHO)))?;
            self.chain.push((dir[..end].to_string(), fd));
            at = end + 1;
        }
        Ok(self
            .chain
            .last()
            .map_or(self.root.as_raw_fd(), |(_, fd)| fd.as_raw_fd()))
    }

    /// Where `path` goes: its folder's descriptor, its name there and its
    /// folder's path; a path that is not normal, or that snapshots leave
    /// out, is refused.
    fn place<'p>(&mut self, path: &'p str) -> Result<(RawFd, CString, &'p str), String> {
        if !is_normal(path) {
            return Err("is not a normal relative path, and the restore refuses it".into());
        }
        if ignored(self.ignore, path) {
            return Err("is left out of snapshots, so the restore never touches it".into());
        }
        let up = parent(path);
        let name = &path[up.len() + usize::from(!up.is_empty())..];
        let fd = self.folder(up)?;
        let name = CString::new(name).expect("a normal path holds no NUL");
        Ok((fd, name, up))
    }

    /// Notes that the names in folder `dir` changed.
    fn touch(&mut self, dir: &str) {
        let ops = self.touched.entry(dir.to_string()).or_default();
        ops.push(self.current);
    }

    /// `unlinkat` `path`; a folder only when empty. Already gone is done.
    fn remove(&mut self, path: &str, dir: bool) -> Result<(), String> {
        let (fd, name, up) = self.place(path)?;
        let flag = if dir {
            UnlinkatFlags::RemoveDir
        } else {
            UnlinkatFlags::NoRemoveDir
        };
        match unlinkat(Some(fd), name.as_c_str(), flag) {
            Ok(()) | Err(Errno::ENOENT) => {}
            Err(e @ (Errno::ENOTEMPTY | Errno::EEXIST)) => {
                return Err(format!(
                    "cannot be removed: {} (it holds what the snapshot did not record, or what could not be removed)",
                    e.desc()
                ))
            }
            Err(e) => return Err(format!("cannot be removed: {}", e.desc())),
        }
        if dir {
            // A descriptor of it, or of a folder in it, must not be used
            // again: the path may be made anew.
            if let Some(i) = self.chain.iter().position(|(p, _)| p == path) {
                self.chain.truncate(i);
            }
            self.removed.insert(path.to_string());
        }
        self.touch(up);
        Ok(())
    }

    /// `mkdirat` `path`, then its bits through a descriptor of what was
    /// made (a folder already there is taken as it is, its bits set).
    fn make_dir(&mut self, path: &str, mode: u32) -> Result<(), String> {
        let (fd, name, up) = self.place(path)?;
        // 0700 first, whatever the umask: only the owner reaches it before
        // its bits are set.
        match mkdirat(Some(fd), name.as_c_str(), Mode::S_IRWXU) {
            Ok(()) => self.touch(up),
            Err(Errno::EEXIST) => {}
            Err(e) => return Err(format!("cannot be made: {}", e.desc())),
        }
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let made = crate::sys::openat(fd, &name, flags)
            .map_err(|e| format!("cannot be made: {}", refused(path, &e, WHO)))?;
        chmod(&made, mode)
            .map_err(|e| format!("was made, but its mode cannot be set: {}", e.desc()))
    }

    /// A regular file: its bytes from `input` to a new file in its folder
    /// ([`Pending`]), its bits, fsync, then `renameat` over the path. A
    /// temporary name is removed on any failure.
    fn file(
        &mut self,
        path: &str,
        mode: u32,
        size: u64,
        input: &mut impl Read,
    ) -> io::Result<Result<(), String>> {
        let (fd, name, up) = match self.place(path) {
            Ok(x) => x,
            Err(why) => {
                drain(input, &mut self.buf)?;
                return Ok(Err(why));
            }
        };
        let mut pending = match Pending::create(fd) {
            Ok(p) => p,
            Err(e) => {
                drain(input, &mut self.buf)?;
                return Ok(Err(format!("cannot be written: {}", errno_text(&e))));
            }
        };
        let mut failed = None;
        let mut got = 0u64;
        let received = loop {
            let n = match read_chunk_len(input) {
                Ok(0) => break Ok(()),
                Ok(n) => n,
                Err(e) => break Err(e),
            };
            if let Err(e) = input.read_exact(&mut self.buf[..n]) {
                break Err(e);
            }
            got += n as u64;
            if failed.is_none() {
                if got > size {
                    failed = Some(format!(
                        "cannot be written: more than its {size} bytes came"
                    ));
                } else if let Err(e) = pending.file.write_all(&self.buf[..n]) {
                    failed = Some(format!("cannot be written: {}", errno_text(&e)));
                }
            }
        };
        let ended = received.and_then(|()| match get_u8(input)? {
            data_end::KEEP => Ok(true),
            data_end::DROP => Ok(false),
            other => Err(bad(&format!("a file's bytes ended with {other:#04x}"))),
        });
        if failed.is_none() && got != size {
            failed = Some(format!("cannot be written: {got} of its {size} bytes came"));
        }
        let done = match ended {
            Ok(true) => failed.map_or_else(|| pending.put_in_place(&name, mode), Err),
            Ok(false) => Err("its bytes did not come whole from the snapshot store".into()),
            Err(e) => return Err(e),
        };
        if done.is_ok() {
            self.touch(up);
        }
        Ok(done)
    }

    /// A symbolic link to `target`, made at a temporary name and renamed
    /// over the path.
    fn link(&mut self, path: &str, target: &str) -> Result<(), String> {
        let (fd, name, up) = self.place(path)?;
        let tmp = temp_name();
        symlinkat(target, Some(fd), tmp.as_c_str())
            .map_err(|e| format!("cannot be made: {}", e.desc()))?;
        if let Err(e) = renameat(Some(fd), tmp.as_c_str(), Some(fd), name.as_c_str()) {
            let _ = unlinkat(Some(fd), tmp.as_c_str(), UnlinkatFlags::NoRemoveDir);
            return Err(format!("cannot be put in place: {}", e.desc()));
        }
        self.touch(up);
        Ok(())
    }

    /// Only the bits of what is at `path`, which must still be a folder
    /// (`dir`) or a regular file.
    fn mode(&mut self, path: &str, mode: u32, dir: bool) -> Result<(), String> {
        let (fd, name, _) = self.place(path)?;
        let cannot = |why: String| format!("its mode cannot be set: {why}");
        let flags = OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let there = crate::sys::openat(fd, &name, flags).map_err(|e| cannot(errno_text(&e)))?;
        let st = fstat(there.as_raw_fd()).map_err(|e| cannot(e.desc().into()))?;
        let (want, what) = if dir {
            (libc::S_IFDIR, "a folder")
        } else {
            (libc::S_IFREG, "a regular file")
        };
        if st.st_mode & libc::S_IFMT != want {
            return Err(cannot(format!("it is no longer {what}")));
        }
        chmod(&there, mode).map_err(|e| cannot(e.desc().into()))
    }

    /// fsyncs every folder whose names changed; the operations in one that
    /// cannot be synced are said to have failed.
    fn sync(&mut self, results: &mut [Option<String>]) {
        for (dir, ops) in std::mem::take(&mut self.touched) {
            if self.gone(&dir) {
                continue;
            }
            let Err(why) = self.sync_one(&dir) else {
                continue;
            };
            for i in ops {
                if let Some(slot @ None) = results.get_mut(i) {
                    *slot = Some(format!(
                        "was restored, but its folder could not be made durable: {why}"
                    ));
                }
            }
        }
    }

    /// Whether folder `dir` or one above it was removed: its own removal,
    /// in its parent, is what must be durable.
    fn gone(&self, dir: &str) -> bool {
        !dir.is_empty()
            && dir
                .match_indices('/')
                .map(|(i, _)| &dir[..i])
                .chain([dir])
                .any(|d| self.removed.contains(d))
    }

    /// fsync of folder `dir` (an `O_PATH` descriptor cannot be synced: the
    /// folder is opened again through it, read-only).
    fn sync_one(&mut self, dir: &str) -> Result<(), String> {
        let fd = self.folder(dir)?;
        if dir.is_empty() {
            return fsync(fd).map_err(|e| e.desc().to_string());
        }
        let dot = CString::new(".").expect("no NUL");
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
        let opened = crate::sys::openat(fd, &dot, flags).map_err(|e| errno_text(&e))?;
        fsync(opened.as_raw_fd()).map_err(|e| e.desc().to_string())
    }
}

/// A file's bytes on their way to its path: the file, open for writing,
/// in folder `dir`, and the temporary name it holds there, if any yet.
/// Dropped, it removes that name: a failure leaves none behind.
struct Pending {
    /// The new file.
    file: File,
    /// Its folder.
    dir: RawFd,
    /// Its temporary name in the folder.
    tmp: CString,
    /// Whether the folder holds it at `tmp` now.
    named: bool,
}

impl Pending {
    /// A new empty file (0600) in folder `dir`: with no name
    /// (`O_TMPFILE`), so a restorer killed while it writes leaves nothing
    /// in the folder (the kernel frees the file with its last descriptor);
    /// at a new temporary name where the folder's file system has no
    /// `O_TMPFILE` (EOPNOTSUPP; EISDIR or EINVAL from a kernel that does
    /// not know it).
    fn create(dir: RawFd) -> io::Result<Pending> {
        let tmp = temp_name();
        let flags = OFlag::O_WRONLY | OFlag::O_CLOEXEC;
        let mode = Mode::S_IRUSR | Mode::S_IWUSR;
        let (file, named) = match crate::sys::tmpfile_at(dir, flags, mode) {
            Ok(f) => (f, false),
            Err(Errno::EOPNOTSUPP | Errno::EISDIR | Errno::EINVAL) => {
                let flags = flags | OFlag::O_NOFOLLOW;
                (crate::sys::create_at(dir, &tmp, flags, mode)?, true)
            }
            Err(e) => return Err(e.into()),
        };
        Ok(Pending {
            file: File::from(file),
            dir,
            tmp,
            named,
        })
    }

    /// The written file given its bits, made durable, named (if it has no
    /// name yet) and renamed over `name`.
    fn put_in_place(&mut self, name: &CStr, mode: u32) -> Result<(), String> {
        fchmod(
            self.file.as_raw_fd(),
            Mode::from_bits_truncate(mode & KEPT_BITS),
        )
        .map_err(|e| format!("cannot be written: its mode cannot be set: {}", e.desc()))?;
        // Durable before it takes a name: a crash never leaves the path
        // holding part of its bytes.
        self.file
            .sync_all()
            .map_err(|e| format!("cannot be written: {}", errno_text(&e)))?;
        if !self.named {
            // Through the descriptor's `/proc` link, which names this very
            // file (`AT_EMPTY_PATH` would need CAP_DAC_READ_SEARCH, which
            // the agent account lacks); `linkat` never follows the new
            // name, and fails if anything holds it.
            let proc = format!("/proc/self/fd/{}", self.file.as_raw_fd());
            let proc = CString::new(proc).expect("no NUL");
            linkat(
                None,
                proc.as_c_str(),
                Some(self.dir),
                self.tmp.as_c_str(),
                AtFlags::AT_SYMLINK_FOLLOW,
            )
            .map_err(|e| format!("cannot be put in place: {}", e.desc()))?;
            self.named = true;
        }
        renameat(Some(self.dir), self.tmp.as_c_str(), Some(self.dir), name)
            .map_err(|e| format!("cannot be put in place: {}", e.desc()))?;
        self.named = false;
        Ok(())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.named {
            let _ = unlinkat(
                Some(self.dir),
                self.tmp.as_c_str(),
                UnlinkatFlags::NoRemoveDir,
            );
        }
    }
}

/// Sets the bits of what `fd` (`O_PATH` or not) names, through
/// `/proc/self/fd/N`: the inode the descriptor holds, whatever its path now.
fn chmod(fd: &OwnedFd, mode: u32) -> nix::Result<()> {
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    let mode = Mode::from_bits_truncate(mode & KEPT_BITS);
    fchmodat(None, path.as_str(), mode, FchmodatFlags::FollowSymlink)
}

/// A temporary name in a folder: hidden, and new (a collision fails
/// `O_EXCL`, `linkat` or `symlinkat`, never reuses what is there).
fn temp_name() -> CString {
    let name = format!(".room-core-restore-{}", uuid::Uuid::new_v4().simple());
    CString::new(name).expect("no NUL")
}

/// Reads a file's chunks and its end byte, and drops them.
fn drain(input: &mut impl Read, buf: &mut [u8]) -> io::Result<()> {
    loop {
        let n = read_chunk_len(input)?;
        if n == 0 {
            break;
        }
        input.read_exact(&mut buf[..n])?;
    }
    get_u8(input).map(drop)
}
