//! Reading a journal file one line at a time in a stream: each line is held
//! only up to [`MAX_LINE`] bytes, and a longer one is passed over to its
//! newline without being kept, so no file makes a read hold more than that.

use std::io::{self, BufRead, Read};

use super::limits::MAX_LINE;

/// What one piece of the file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A line ending in a newline, at most [`MAX_LINE`] bytes with it.
    Whole,
    /// A line ending in a newline but longer than [`MAX_LINE`]: not ours.
    TooLong,
    /// The file's last bytes, with no newline after them (`kept` when they
    /// are few enough to be held).
    Unterminated {
        /// Whether [`Lines::bytes`] holds them.
        kept: bool,
    },
}

/// One piece of the file: where it starts, its length with its newline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Piece {
    /// Its first byte's offset in the file.
    pub start: u64,
    /// Its length, newline included.
    pub len: u64,
    /// What it is.
    pub kind: Kind,
}

impl Piece {
    /// The offset just past it.
    pub(super) fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// The lines of a reader positioned at offset `at` of a journal file.
pub(super) struct Lines<R> {
    reader: R,
    at: u64,
    buf: Vec<u8>,
}

impl<R: BufRead> Lines<R> {
    /// Lines from `reader`, whose first byte is the file's byte `at`.
    pub(super) fn new(reader: R, at: u64) -> Lines<R> {
        Lines {
            reader,
            at,
            buf: Vec::new(),
        }
    }

    /// The next piece, `None` at the end of the reader.
    pub(super) fn next_piece(&mut self) -> io::Result<Option<Piece>> {
        self.buf.clear();
        let start = self.at;
        let n = (&mut self.reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut self.buf)? as u64;
        if n == 0 {
            return Ok(None);
        }
        let kind = if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            Kind::Whole
        } else if n <= MAX_LINE as u64 {
            Kind::Unterminated { kept: true }
        } else {
            self.buf.clear();
            let (more, newline) = skip_line(&mut self.reader)?;
            self.at += more;
            if newline {
                Kind::TooLong
            } else {
                Kind::Unterminated { kept: false }
            }
        };
        self.at += n;
        Ok(Some(Piece {
            start,
            len: self.at - start,
            kind,
        }))
    }

    /// The last piece's bytes (without its newline) when they were kept.
    pub(super) fn bytes(&self) -> &[u8] {
        &self.buf
    }
}

/// Passes over the rest of a line without keeping it: the bytes passed, and
/// whether a newline ended them (else the reader ended).
fn skip_line(reader: &mut impl BufRead) -> io::Result<(u64, bool)> {
    let mut skipped = 0u64;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok((skipped, false));
        }
        if let Some(i) = buf.iter().position(|&b| b == b'\n') {
            reader.consume(i + 1);
            return Ok((skipped + i as u64 + 1, true));
        }
        let n = buf.len();
        reader.consume(n);
        skipped += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(bytes: &[u8]) -> Vec<(Piece, Vec<u8>)> {
        let mut lines = Lines::new(io::BufReader::with_capacity(4096, bytes), 0);
        let mut out = Vec::new();
        while let Some(p) = lines.next_piece().unwrap() {
            out.push((p, lines.bytes().to_vec()));
        }
        out
    }

    #[test]
    fn lines_long_lines_and_an_unterminated_end_are_told_apart() {
        let long = vec![b'x'; MAX_LINE + 10];
        let mut file = b"one\n\n".to_vec();
        file.extend_from_slice(&long);
        file.extend_from_slice(b"\ntwo\ntorn");
        let got = pieces(&file);
        let kinds: Vec<(u64, u64, Kind)> =
            got.iter().map(|(p, _)| (p.start, p.len, p.kind)).collect();
        let long_end = 5 + long.len() as u64 + 1;
        assert_eq!(
            kinds,
            [
                (0, 4, Kind::Whole),
                (4, 1, Kind::Whole),
                (5, long.len() as u64 + 1, Kind::TooLong),
                (long_end, 4, Kind::Whole),
                (long_end + 4, 4, Kind::Unterminated { kept: true }),
            ]
        );
        assert_eq!(got[0].1, b"one");
        assert!(got[2].1.is_empty(), "a long line is not kept");
        assert_eq!(got[4].1, b"torn");
        // A long line the file ends in is unterminated and not kept.
        let got = pieces(&long);
        assert_eq!(
            (got[0].0.len, got[0].0.kind),
            (long.len() as u64, Kind::Unterminated { kept: false })
        );
        // The longest line that is ours is whole.
        let mut max = vec![b'y'; MAX_LINE];
        max.push(b'\n');
        assert_eq!(pieces(&max)[0].0.kind, Kind::Whole);
    }
}
