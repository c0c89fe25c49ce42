//! Reading a journal: from the recent window when it reaches back far
//! enough, else from the file, from the nearest indexed line on, skipping
//! damaged lines by the same rule as the scan.

use std::io::{BufReader, Read, Seek, SeekFrom};
use std::sync::Arc;

use super::event::{Journalled, Line};
use super::handle::{lock, Journal, JournalError};
use super::index::Mark;
use super::limits::{MARK_BYTES, MAX_PAGE, MAX_PAGE_BYTES};
use super::lines::{Kind, Lines};
use super::rule::Sequence;

impl Journal {
    /// Up to `limit` lines after seq `after` from memory only: `None` when
    /// the journal has not been scanned or the recent window does not reach
    /// back that far (then [`Journal::lines`] reads the file). Never does
    /// I/O, never waits for an append.
    pub fn recent(&self, after: u64, limit: usize) -> Option<Vec<Arc<Line>>> {
        lock(&self.index)
            .as_ref()?
            .recent_after(after, limit.min(MAX_PAGE))
    }

    /// Up to `limit` lines after seq `after`, oldest first: from memory when
    /// they are recent, else from the file, from the nearest indexed line
    /// on, skipping damaged lines by the same rule as the scan. Stops early
    /// once the lines it serves and the damaged ones it passes over come to
    /// [`MAX_PAGE_BYTES`] (after at least one line).
    pub fn lines(&self, after: u64, limit: usize) -> Result<Vec<Arc<Line>>, JournalError> {
        let limit = limit.min(MAX_PAGE);
        self.ensure()?;
        if let Some(lines) = lock(&self.index)
            .as_ref()
            .and_then(|i| i.recent_after(after, limit))
        {
            return Ok(lines);
        }
        self.read_file(after, limit)
    }

    /// [`Journal::lines`] from the file, once it is scanned.
    pub(super) fn read_file(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Arc<Line>>, JournalError> {
        self.ensure()?;
        let (mark, to, damaged) = {
            let index = lock(&self.index);
            let index = index.as_ref().expect("loaded");
            if after >= index.last_seq() || limit == 0 {
                return Ok(Vec::new());
            }
            (index.mark_before(after + 1), index.end(), index.damaged)
        };
        let mut file = std::fs::File::open(&self.path).map_err(|e| self.io(e))?;
        if !damaged {
            if let Some(lines) = self.read_counted(&mut file, mark, to, after, limit)? {
                return Ok(lines);
            }
            log::warn!(
                "{}: a line is not what the scan found there; reading it as a damaged journal",
                self.path.display()
            );
        }
        self.read_judged(&mut file, mark, to, after, limit)
    }

    /// [`Journal::read_file`] in a journal with no damaged line: lines are
    /// counted from the mark, and only those served are parsed. `None` when
    /// a line is not the event expected there (the file changed since the
    /// scan).
    fn read_counted(
        &self,
        file: &mut std::fs::File,
        mark: Mark,
        to: u64,
        after: u64,
        limit: usize,
    ) -> Result<Option<Vec<Arc<Line>>>, JournalError> {
        file.seek(SeekFrom::Start(mark.at))
            .map_err(|e| self.io(e))?;
        let reader = BufReader::with_capacity(64 << 10, (&*file).take(to - mark.at));
        let mut lines = Lines::new(reader, mark.at);
        let mut out = Vec::new();
        let mut bytes = 0;
        let mut seq = mark.seq;
        while out.len() < limit && bytes < MAX_PAGE_BYTES {
            let Some(piece) = lines.next_piece().map_err(|e| self.io(e))? else {
                break;
            };
            if piece.kind != Kind::Whole {
                return Ok(None);
            }
            if seq > after {
                let Some(line) = Line::parse(lines.bytes()).filter(|l| l.seq == seq) else {
                    return Ok(None);
                };
                bytes += line.json.len();
                out.push(Arc::new(line));
            }
            seq += 1;
        }
        Ok(Some(out))
    }

    /// [`Journal::read_file`] in a damaged journal: each line is judged by
    /// the scan's rule, from the mark's state on.
    fn read_judged(
        &self,
        file: &mut std::fs::File,
        mut mark: Mark,
        to: u64,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Arc<Line>>, JournalError> {
        let mut out = Vec::new();
        let mut bytes = 0u64;
        'marks: loop {
            let from = mark.at;
            file.seek(SeekFrom::Start(from)).map_err(|e| self.io(e))?;
            // Only what the index said was whole when this began.
            let reader = BufReader::with_capacity(64 << 10, (&*file).take(to - from));
            let mut lines = Lines::new(reader, from);
            // A mark is a served line: the rule takes it as the scan did,
            // and goes on from where the scan was just after it.
            let mut seq = Sequence::after(mark.seq - 1, 0);
            while out.len() < limit && (out.is_empty() || bytes < MAX_PAGE_BYTES as u64) {
                let Some(piece) = lines.next_piece().map_err(|e| self.io(e))? else {
                    break 'marks;
                };
                let line = match piece.kind {
                    Kind::Whole | Kind::Unterminated { kept: true } => seq.check(lines.bytes()),
                    Kind::TooLong | Kind::Unterminated { kept: false } => None,
                };
                match line {
                    Some(line) => {
                        seq.served(&line, piece.len);
                        if piece.start == mark.at {
                            seq = Sequence::after(mark.seq, mark.slack);
                        }
                        if line.seq > after {
                            bytes += line.json.len() as u64;
                            out.push(Arc::new(line));
                        }
                    }
                    None => {
                        seq.skipped(piece.len);
                        bytes += piece.len;
                        // Past a mark's span, damage runs to the next mark:
                        // go there rather than read it.
                        if piece.end() >= from + MARK_BYTES {
                            let past = lock(&self.index)
                                .as_ref()
                                .and_then(|i| i.past_span(piece.start, piece.end()));
                            match past {
                                Some(Some(next)) if next.at < to => {
                                    mark = next;
                                    continue 'marks;
                                }
                                Some(_) => break 'marks,
                                None => {}
                            }
                        }
                    }
                }
            }
            break;
        }
        Ok(out)
    }

    /// Up to `limit` events after seq `after`, oldest first.
    pub fn page(&self, after: u64, limit: usize) -> Result<Vec<Journalled>, JournalError> {
        self.lines(after, limit)?
            .iter()
            .map(|l| {
                serde_json::from_str(&l.json)
                    .map_err(|e| self.io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
            })
            .collect()
    }

    /// The last event of `kind`, searching back from the end a stretch of
    /// [`MAX_PAGE`] seqs at a time (each read page by page).
    pub fn last_of(&self, kind: &str) -> Result<Option<Journalled>, JournalError> {
        let mut before = self.last_seq()?;
        while before > 0 {
            let after = before.saturating_sub(MAX_PAGE as u64);
            let mut found = None;
            let mut from = after;
            while from < before {
                let lines = self.lines(from, MAX_PAGE)?;
                let Some(last) = lines.last() else { break };
                from = last.seq;
                if let Some(line) = lines
                    .iter()
                    .rev()
                    .find(|l| l.seq <= before && l.kind == kind)
                {
                    found = Some(line.clone());
                }
            }
            if let Some(line) = found {
                let event = serde_json::from_str(&line.json).map_err(|e| {
                    self.io(std::io::Error::new(std::io::ErrorKind::InvalidData, e))
                })?;
                return Ok(Some(event));
            }
            before = after;
        }
        Ok(None)
    }
}
