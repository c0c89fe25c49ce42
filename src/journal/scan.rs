//! Opening a journal: create it (mode 0600) or read it through once, line
//! by line, to index where its served lines start, keep the last ones for
//! readers, and find what is damaged. A scan only reads: what the file's
//! end needs ([`TailFix`]) and what is to be reported ([`Damage`]) are done
//! by the journal afterwards.

use std::fs::OpenOptions;
use std::io::BufReader;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::event::Journalled;
use super::index::Index;
use super::lines::{Kind, Lines};
use super::repair::{sync_dir, TailFix};
use super::report::{Damage, REPAIRED};

/// What a scan found.
#[derive(Debug)]
pub(super) struct Scanned {
    /// The served lines' index.
    pub index: Index,
    /// The damaged lines, kept in the file and skipped.
    pub damage: Damage,
    /// What the file's end needs before the next append.
    pub fix: TailFix,
}

/// Opens (creating, mode 0600) the journal at `path` and scans it. The file
/// is read in a stream, never whole, and is not changed.
pub(super) fn open(path: &Path) -> std::io::Result<Scanned> {
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
    let mut index = Index::default();
    let mut damage = Damage::default();
    let mut fix = TailFix::Sound;
    let mut lines = Lines::new(BufReader::with_capacity(64 << 10, &file), 0);
    while let Some(piece) = lines.next_piece()? {
        let line = match piece.kind {
            Kind::Whole | Kind::Unterminated { kept: true } => index.seq.check(lines.bytes()),
            Kind::TooLong | Kind::Unterminated { kept: false } => None,
        };
        let unterminated = matches!(piece.kind, Kind::Unterminated { .. });
        match line {
            Some(line) => {
                damage.good();
                if line.kind == REPAIRED {
                    if let Ok(event) = serde_json::from_str::<Journalled>(&line.json) {
                        damage.reported(event.data.get());
                    }
                }
                // A whole last event that lacks only its newline is kept:
                // indexed as if it had it, which the repair then writes.
                if unterminated {
                    fix = TailFix::Newline { at: piece.end() };
                    index.push(line, piece.end() + 1, false);
                } else {
                    index.push(line, piece.end(), false);
                }
            }
            // Only the file's last bytes can be unterminated: a crash
            // mid-append (never served) or what no event ever was.
            None if unterminated => {
                fix = TailFix::SetAside {
                    at: piece.start,
                    len: piece.len,
                }
            }
            None => {
                damage.bad(piece.start, piece.len, index.seq.last());
                index.skip(piece.len);
            }
        }
    }
    damage.finish();
    log_damage(path, &damage);
    Ok(Scanned { index, damage, fix })
}

/// Logs the damaged lines a scan skipped: each new run (the first few),
/// and how many were reported before.
fn log_damage(path: &Path, damage: &Damage) {
    let news = damage.news();
    if news.runs > 0 {
        let mut runs: Vec<String> = damage
            .listed()
            .iter()
            .take(10)
            .map(|r| {
                format!(
                    "{} bytes ({} lines) at byte {} after seq {}",
                    r.bytes, r.lines, r.offset, r.after_seq
                )
            })
            .collect();
        if news.runs > runs.len() as u64 {
            runs.push(format!("{} more runs", news.runs - runs.len() as u64));
        }
        log::warn!(
            "{}: skipping {} damaged lines ({} bytes), kept in the file and not served: {}; \
             the events after them are served",
            path.display(),
            news.lines,
            news.bytes,
            runs.join(", ")
        );
    }
    let known = damage.found.lines - news.lines.min(damage.found.lines);
    if known > 0 {
        log::info!(
            "{}: skipping {known} damaged lines reported before",
            path.display()
        );
    }
}
