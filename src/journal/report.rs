//! What a scan found damaged, and the `journal_repaired` event that tells
//! the app: the runs of damaged lines (kept in the file, not served) that no
//! earlier `journal_repaired` event in the journal reported, and the bytes
//! of an unfinished last line that were set aside.
//!
//! A run is a stretch of adjacent damaged lines. An event lists at most
//! [`MAX_LISTED`] runs by offset and length; a later scan drops from its
//! findings the runs an event after them listed, so a damaged line is
//! reported once, however often the journal is opened. An event that could
//! not list every run (`runs` above the list's length) reports everything
//! before it.

use std::collections::HashSet;

use super::event::NewEvent;

/// The kind of room-core's event that reports a repair.
pub const REPAIRED: &str = "journal_repaired";

/// The most runs one `journal_repaired` event lists.
pub const MAX_LISTED: usize = 1000;

/// A stretch of adjacent damaged lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Run {
    /// Its first byte's offset in the file.
    pub offset: u64,
    /// Its length, newlines included.
    pub bytes: u64,
    /// How many lines it is.
    pub lines: u64,
    /// The last seq served before it (0: none).
    pub after_seq: u64,
}

/// Bytes of an unfinished last line, copied aside and cut from the journal.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SetAside {
    /// The copy's file name, beside the journal.
    pub file: String,
    /// Where they were in the journal.
    pub offset: u64,
    /// How many.
    pub bytes: u64,
}

/// The `journal_repaired` event's data.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Repaired {
    /// The runs of damaged lines found, first ones first (at most
    /// [`MAX_LISTED`]).
    pub skipped: Vec<Run>,
    /// How many runs were found (more than listed when the list is full).
    pub runs: u64,
    /// Their lines, all runs together.
    pub lines: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Where this event was written: everything it reports is before it.
    pub through: u64,
    /// An unfinished last line set aside in the same repair, if any.
    pub set_aside: Option<SetAside>,
}

/// Counts of runs, lines and bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Counts {
    pub runs: u64,
    pub lines: u64,
    pub bytes: u64,
}

impl Counts {
    fn add(&mut self, run: &Run) {
        self.runs += 1;
        self.lines += run.lines;
        self.bytes += run.bytes;
    }
}

/// The damage a scan found: what is not reported yet, and all of it.
#[derive(Debug, Default)]
pub(super) struct Damage {
    /// Runs not reported yet, in file order (at most [`MAX_LISTED`]).
    listed: Vec<Run>,
    /// Runs not reported yet beyond those.
    unlisted: Counts,
    /// The run being read.
    open: Option<Run>,
    /// Every run found, reported or not.
    pub found: Counts,
}

impl Damage {
    /// A damaged line at `offset`, `len` bytes, after seq `after_seq`.
    pub(super) fn bad(&mut self, offset: u64, len: u64, after_seq: u64) {
        match &mut self.open {
            Some(run) => {
                run.bytes += len;
                run.lines += 1;
            }
            None => {
                self.open = Some(Run {
                    offset,
                    bytes: len,
                    lines: 1,
                    after_seq,
                })
            }
        }
    }

    /// A served line: the run being read, if any, is over.
    pub(super) fn good(&mut self) {
        let Some(run) = self.open.take() else { return };
        self.found.add(&run);
        if self.listed.len() < MAX_LISTED {
            self.listed.push(run);
        } else {
            self.unlisted.add(&run);
        }
    }

    /// A served `journal_repaired` event with `data`: what it reported is
    /// no longer news.
    pub(super) fn reported(&mut self, data: &str) {
        let Ok(report) = serde_json::from_str::<Repaired>(data) else {
            return;
        };
        if report.runs > report.skipped.len() as u64 {
            self.listed.clear();
            self.unlisted = Counts::default();
            return;
        }
        let known: HashSet<(u64, u64)> =
            report.skipped.iter().map(|r| (r.offset, r.bytes)).collect();
        self.listed
            .retain(|r| !known.contains(&(r.offset, r.bytes)));
    }

    /// Ends the scan (a run still open is over).
    pub(super) fn finish(&mut self) {
        self.good();
    }

    /// The runs not reported yet, listed or not.
    pub(super) fn news(&self) -> Counts {
        let mut c = self.unlisted;
        for run in &self.listed {
            c.add(run);
        }
        c
    }

    /// The first runs not reported yet.
    pub(super) fn listed(&self) -> &[Run] {
        &self.listed
    }

    /// The `journal_repaired` event for what is not reported yet, to be
    /// written at offset `through`; `None` when there is nothing new.
    pub(super) fn event(&self, through: u64, set_aside: Option<SetAside>) -> Option<NewEvent> {
        let news = self.news();
        if news.runs == 0 {
            return None;
        }
        Some(NewEvent::new(
            REPAIRED,
            &Repaired {
                skipped: self.listed.clone(),
                runs: news.runs,
                lines: news.lines,
                bytes: news.bytes,
                through,
                set_aside,
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(offset: u64, bytes: u64) -> Run {
        Run {
            offset,
            bytes,
            lines: 1,
            after_seq: 0,
        }
    }

    #[test]
    fn adjacent_damaged_lines_make_one_run_and_a_report_is_news_once() {
        let mut d = Damage::default();
        d.bad(10, 5, 1);
        d.bad(15, 7, 1);
        d.good();
        d.bad(40, 3, 2);
        d.finish();
        assert_eq!(
            d.listed(),
            [
                Run {
                    offset: 10,
                    bytes: 12,
                    lines: 2,
                    after_seq: 1
                },
                Run {
                    offset: 40,
                    bytes: 3,
                    lines: 1,
                    after_seq: 2
                }
            ]
        );
        let event = d.event(100, None).unwrap();
        assert_eq!(event.kind, REPAIRED);
        // The next scan meets the same runs and then the event.
        let mut again = Damage::default();
        again.bad(10, 12, 1);
        again.good();
        again.bad(40, 3, 2);
        again.bad(43, 9, 2);
        again.good();
        again.reported(event.data.get());
        assert_eq!(again.news().runs, 1, "a run that grew is news");
        assert_eq!(again.found.runs, 2);
        // The same report again changes nothing.
        again.reported(event.data.get());
        assert_eq!(
            again.listed(),
            [Run {
                lines: 2,
                after_seq: 2,
                ..run(40, 12)
            }]
        );
    }

    #[test]
    fn a_report_that_could_not_list_every_run_covers_all_before_it() {
        let mut d = Damage::default();
        for i in 0..MAX_LISTED as u64 + 5 {
            d.bad(i * 10, 1, i);
            d.good();
        }
        assert_eq!(d.listed().len(), MAX_LISTED);
        assert_eq!(d.news().runs, MAX_LISTED as u64 + 5);
        let event = d.event(1 << 20, None).unwrap();
        let report: Repaired = serde_json::from_str(event.data.get()).unwrap();
        assert_eq!((report.runs, report.skipped.len()), (1005, MAX_LISTED));
        assert!(event.data.get().len() < 100 << 10, "the event stays small");
        d.reported(event.data.get());
        assert_eq!(d.news().runs, 0);
        assert!(d.event(0, None).is_none());
    }
}
