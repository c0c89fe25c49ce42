//! A session's event journal: an append-only file of JSON lines,
//! `<state_dir>/events/<session id>.jsonl`, one event a line:
//! `{"seq":N,"at_ms":T,"kind":"…","data":…}`.
//!
//! An event is written and fdatasync'd before anyone can read it, so what a
//! reader was served survives kill -9. A crash can only leave the last line
//! unfinished (an append is one `write`): opening the journal copies those
//! bytes aside and cuts them (`repair.rs`), the only bytes ever removed, so
//! they are never served. Sequence numbers start at 1 and ascend by one,
//! which is what lets a stream resume after any `seq` with no gap and no
//! duplicate.
//!
//! Any other damage (bit rot, a stray write) costs only the lines it hits:
//! `rule.rs` says which lines are served, the same for the scan and for
//! every read; a damaged line is skipped and stays in the file, the events
//! after it are served, and a `journal_repaired` event (`report.rs`) says
//! what was skipped, once. Its seq is past every seq the damage could have
//! held, so no seq a reader may have seen is given again.
//!
//! The index is sparse: one offset every [`STRIDE`] events (or every
//! [`MARK_BYTES`] of file, whichever comes first), so its memory stays small
//! at any journal size; a read seeks to the nearest offset at or before
//! what it wants and scans forward, at most a stride of lines (and skips
//! damage that runs past a mark's span to the next mark).
//!
//! A journal has caps ([`Caps`]: bytes and events). A harness's events
//! ([`Journal::append_output`]) are journalled only while they fit under
//! both; the first one that does not is dropped with everything after it
//! in that append, and the caller is told which cap it met. room-core's own
//! events ([`Journal::append`]) are always journalled: they are bounded by
//! the app's commands, and the events that say a turn was cut must land.
//!
//! The file is scanned lazily, on the first append or read, so a service
//! with many sessions does not scan every journal at start; it is opened for
//! each append or file read and closed after, so a journal holds no
//! descriptor between them (a service may hold thousands of journals).
//!
//! Readers are told of appends through [`Journal::subscribe`] (a tokio watch
//! channel, which needs no tokio runtime to send: the synchronous runtime
//! appends, the async front end waits). The last events are kept in memory
//! ([`RECENT_EVENTS`], [`RECENT_BYTES`]), so a reader at the tail never
//! touches the file and never waits for an append's fdatasync: appends hold
//! the write lock across their write and sync, readers only the index lock,
//! which no I/O is ever done under.
//!
//! The files: a [`Journal`] (`handle.rs`) is scanned (`scan.rs`, line by
//! line with `lines.rs`) into its index (`index.rs`), appends
//! (`append.rs`) and reads (`read.rs`); its events are in `event.rs` (a
//! harness's line only when every page can serve it: `servable.rs`), its
//! bounds in `limits.rs`, and [`Journals`] (`registry.rs`) holds the open
//! ones. The index also follows the last started turn (`turn_tail.rs`),
//! which a restore reads.

mod append;
mod event;
mod handle;
mod index;
mod limits;
mod lines;
mod read;
pub(crate) mod registry;
mod repair;
mod report;
mod rule;
mod scan;
mod servable;
mod turn_tail;

pub use append::Appended;
pub use event::{Journalled, Line, NewEvent};
pub use handle::{Caps, Journal, JournalError, Tail};
pub use limits::{
    MARK_BYTES, MAX_LINE, MAX_PAGE, MAX_PAGE_BYTES, RECENT_BYTES, RECENT_EVENTS, STRIDE,
};
pub use registry::{dir, Journals};
pub use report::{Repaired, Run, SetAside, MAX_LISTED, REPAIRED};
pub use room_machines::session::JournalCap;
pub use servable::{nests_deeper, Unservable, DEPTH_MAX};

#[cfg(test)]
mod caps_tests;
#[cfg(test)]
mod repair_props;
#[cfg(test)]
mod repair_tests;
#[cfg(test)]
mod tests;
