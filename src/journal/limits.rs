//! The journal's bounds: its longest line, its pages, its recent window
//! and its index's spacing.

/// The longest line a journal holds; a harness event longer than this is
/// not journalled (the turn reader caps lines below it anyway).
pub const MAX_LINE: usize = 1 << 20;

/// The most events one page returns.
pub const MAX_PAGE: usize = 1024;

/// The most recent events a journal keeps in memory for readers at its tail.
pub const RECENT_EVENTS: usize = 256;

/// ...and the most bytes of them (an event longer than this is read from
/// the file).
pub const RECENT_BYTES: usize = 256 << 10;

/// The index keeps the offset of one line in this many (at least).
pub const STRIDE: u64 = 256;

/// ...and of the first line after this many bytes since the last kept one,
/// so a read never scans much more than a megabyte to reach its first line.
pub const MARK_BYTES: u64 = 1 << 20;

/// The most bytes of lines one page or stream chunk reads (it always has at
/// least one line when there is one): a page of long events is cut short
/// rather than held whole in memory.
pub const MAX_PAGE_BYTES: usize = 4 << 20;
