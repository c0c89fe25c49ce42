//! Opening a journal: create it (mode 0600) or read it through once, line
//! by line, to index where each line starts, keep the last lines for
//! readers, and drop a torn last line.

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::{Index, Line, MAX_LINE};

/// Opens (creating, mode 0600) the journal at `path`, drops a torn last line
/// and returns its index. The file is read in a stream, never whole.
pub(super) fn open(path: &Path) -> std::io::Result<Index> {
    let dir = path.parent().unwrap_or(Path::new("."));
    if !dir.exists() {
        std::fs::create_dir_all(dir)?;
        sync_dir(dir.parent())?;
    }
    let new = !path.exists();
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(nix::libc::O_CLOEXEC)
        .open(path)?;
    if new {
        // The new file's name must be durable too before any event of it
        // is served (an fdatasync of the file does not promise that).
        sync_dir(Some(dir))?;
    }
    let len = file.metadata()?.len();
    let mut index = Index::default();
    let mut reader = BufReader::with_capacity(64 << 10, &file);
    let mut buf = Vec::new();
    let mut at = 0u64;
    loop {
        buf.clear();
        // No line is longer than MAX_LINE: a longer one is not ours.
        let n = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)?;
        if n == 0 || buf.last() != Some(&b'\n') {
            break;
        }
        // A line that is not a whole event ends the journal: only the last
        // line can be torn, and nothing after a torn line is trusted.
        let line = Line::parse(&buf[..n - 1]).filter(|l| l.seq == index.last_seq() + 1);
        let Some(line) = line else { break };
        at += n as u64;
        index.push(line, at);
    }
    if at < len {
        log::warn!(
            "{}: dropping {} bytes of a torn last event",
            path.display(),
            len - at
        );
        file.set_len(at)?;
        file.sync_data()?;
    }
    Ok(index)
}

/// fsyncs a folder, so the names made in it are durable.
fn sync_dir(dir: Option<&Path>) -> std::io::Result<()> {
    match dir {
        Some(dir) => std::fs::File::open(dir)?.sync_all(),
        None => Ok(()),
    }
}
