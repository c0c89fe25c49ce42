//! A turn's output, read in bounded memory whatever the harness writes.
//!
//! - stdout: line by line ([`LineSplitter`], fed what each read gets;
//!   [`LineReader`] over a blocking reader); a line longer than the cap
//!   (1 MiB) is dropped and one that is not UTF-8 is skipped, each reported
//!   with its length and its first [`HEAD`] bytes (enough to read a
//!   request's ID, which comes before its big input), and reading goes on
//!   after it.
//! - stderr: read to its end so the harness never blocks on a full pipe
//!   nor gets EPIPE, keeping only its last few KiB for an error message
//!   ([`Tail::push`], [`drain_tail`]).

#[cfg(any(test, feature = "_internal_test_exports"))]
use std::collections::VecDeque;
#[cfg(any(test, feature = "_internal_test_exports"))]
use std::io::{self, ErrorKind, Read};

/// The longest stdout line kept, newline excluded.
pub const LINE_CAP: usize = 1 << 20;
/// The bytes of stderr kept (its end).
pub const STDERR_TAIL: usize = 4096;
/// The size of one read.
pub const CHUNK: usize = 64 * 1024;
/// The bytes kept of the start of a line that is dropped or skipped: the
/// CLIs print a request's ID, kind and tool before its input, so a request
/// too big to read can still be answered.
pub const HEAD: usize = 4096;

/// One line of output, or what was skipped in its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A UTF-8 line, without its newline.
    Text(String),
    /// A line over the cap, dropped.
    TooLong {
        /// Its length in bytes.
        bytes: u64,
        /// Its first bytes (at most [`HEAD`]).
        head: Vec<u8>,
    },
    /// A line that is not UTF-8, skipped.
    NotUtf8 {
        /// Its length in bytes.
        bytes: usize,
        /// Its first bytes (at most [`HEAD`]).
        head: Vec<u8>,
    },
}

/// Splits bytes, pushed in as they arrive, into lines of at most `cap`
/// bytes: what a poller reading many pipes keeps per pipe. It holds only the
/// unfinished line (at most `cap` bytes, or [`HEAD`] of one being dropped),
/// and nothing once a line is finished, so an idle pipe costs no buffer.
#[derive(Debug)]
pub struct LineSplitter {
    /// The unfinished line.
    buf: Vec<u8>,
    /// Bytes of an over-long line dropped so far (its end not yet seen).
    dropping: Option<u64>,
    /// The start of the over-long line being dropped.
    head: Vec<u8>,
    cap: usize,
    peak: usize,
}

impl LineSplitter {
    /// A splitter of lines of at most `cap` bytes.
    pub fn new(cap: usize) -> LineSplitter {
        LineSplitter {
            buf: Vec::new(),
            dropping: None,
            head: Vec::new(),
            cap,
            peak: 0,
        }
    }

    /// Splits `data`, giving each line it finishes to `line`, in order.
    pub fn push(&mut self, mut data: &[u8], line: &mut impl FnMut(Line)) {
        while let Some(i) = data.iter().position(|b| *b == b'\n') {
            line(self.finish_line(&data[..i]));
            data = &data[i + 1..];
        }
        self.hold(data);
    }

    /// At the end of the input: its last line, if it has no newline.
    pub fn finish(&mut self) -> Option<Line> {
        (self.dropping.is_some() || !self.buf.is_empty()).then(|| self.finish_line(&[]))
    }

    /// The most memory its buffer has held, in bytes.
    pub fn peak_buffer(&self) -> usize {
        self.peak
    }

    /// Forgets the unfinished line (what is read from now on is dropped
    /// unsplit).
    pub fn clear(&mut self) {
        self.buf = Vec::new();
        self.dropping = None;
        self.head = Vec::new();
    }

    /// Keeps `part`, the start of a line, unless the line is over the cap:
    /// then only its head is kept and its length counted.
    fn hold(&mut self, part: &[u8]) {
        if let Some(dropped) = &mut self.dropping {
            *dropped += part.len() as u64;
            // The head is the line's first bytes however they arrived.
            let room = HEAD.saturating_sub(self.head.len());
            self.head.extend_from_slice(&part[..part.len().min(room)]);
        } else if self.buf.len() + part.len() > self.cap {
            let mut head = std::mem::take(&mut self.buf);
            let total = (head.len() + part.len()) as u64;
            head.extend_from_slice(&part[..part.len().min(HEAD.saturating_sub(head.len()))]);
            head.truncate(HEAD);
            self.head = head;
            self.dropping = Some(total);
        } else if !part.is_empty() {
            // Exactly what it needs: a doubling Vec could hold twice the cap.
            self.buf.reserve_exact(part.len());
            self.buf.extend_from_slice(part);
            self.peak = self.peak.max(self.buf.capacity());
        }
    }

    /// The line that `part` ends.
    fn finish_line(&mut self, part: &[u8]) -> Line {
        let head = |b: &[u8]| b[..b.len().min(HEAD)].to_vec();
        if self.dropping.is_some() {
            self.hold(part);
            return Line::TooLong {
                bytes: self.dropping.take().unwrap_or_default(),
                head: std::mem::take(&mut self.head),
            };
        }
        let whole;
        let bytes = if self.buf.is_empty() {
            part
        } else if self.buf.len() + part.len() > self.cap {
            self.hold(part);
            return self.finish_line(&[]);
        } else {
            self.buf.extend_from_slice(part);
            whole = std::mem::take(&mut self.buf);
            &whole[..]
        };
        if bytes.len() > self.cap {
            return Line::TooLong {
                bytes: bytes.len() as u64,
                head: head(bytes),
            };
        }
        match std::str::from_utf8(bytes) {
            Ok(s) => Line::Text(s.to_string()),
            Err(_) => Line::NotUtf8 {
                bytes: bytes.len(),
                head: head(bytes),
            },
        }
    }
}

/// Reads lines of at most `cap` bytes from a blocking reader, one chunk at a
/// time through a [`LineSplitter`]; memory stays under `cap` plus one read
/// (64 KiB) plus the lines of one read, whatever the input. For tests (the
/// service's pipes are read by the poller).
#[cfg(any(test, feature = "_internal_test_exports"))]
pub struct LineReader<R> {
    inner: R,
    split: LineSplitter,
    ready: VecDeque<Line>,
    eof: bool,
}

#[cfg(any(test, feature = "_internal_test_exports"))]
impl<R: Read> LineReader<R> {
    /// A reader with the 1 MiB cap.
    pub fn new(inner: R) -> LineReader<R> {
        LineReader::with_cap(inner, LINE_CAP)
    }

    /// A reader with another cap.
    pub fn with_cap(inner: R, cap: usize) -> LineReader<R> {
        LineReader {
            inner,
            split: LineSplitter::new(cap),
            ready: VecDeque::new(),
            eof: false,
        }
    }

    /// The most memory its buffers have held, in bytes: the unfinished
    /// line's and one read's.
    pub fn peak_buffer(&self) -> usize {
        self.split.peak_buffer() + CHUNK
    }

    /// The next line; `None` at the end. A last line without a newline
    /// counts as a line.
    pub fn next_line(&mut self) -> io::Result<Option<Line>> {
        let mut chunk = Vec::new();
        loop {
            if let Some(line) = self.ready.pop_front() {
                return Ok(Some(line));
            }
            if self.eof {
                return Ok(None);
            }
            chunk.resize(CHUNK, 0);
            let n = match self.inner.read(&mut chunk) {
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                self.eof = true;
                self.ready.extend(self.split.finish());
            } else {
                let ready = &mut self.ready;
                self.split.push(&chunk[..n], &mut |l| ready.push_back(l));
            }
        }
    }

    /// The text lines, each skipped line logged as a warning naming `what`
    /// (e.g. the session); ends at the end of input or at a read error
    /// (logged).
    pub fn text_lines(mut self, what: String) -> impl Iterator<Item = String> {
        std::iter::from_fn(move || loop {
            match self.next_line() {
                Ok(Some(Line::Text(s))) => return Some(s),
                Ok(Some(Line::TooLong { bytes: n, .. })) => {
                    log::warn!(
                        "{what}: dropped a stdout line of {n} bytes (the cap is {} bytes)",
                        self.split.cap
                    );
                }
                Ok(Some(Line::NotUtf8 { bytes: n, .. })) => {
                    log::warn!("{what}: skipped a stdout line of {n} bytes that is not UTF-8");
                }
                Ok(None) => return None,
                Err(e) => {
                    log::warn!("{what}: cannot read stdout: {e}");
                    return None;
                }
            }
        })
    }
}

/// The end of a stream read to its end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tail {
    /// Its last bytes (at most the `keep` asked for).
    pub bytes: Vec<u8>,
    /// How many bytes the stream held in all.
    pub total: u64,
}

impl Tail {
    /// The kept bytes as text (invalid UTF-8 replaced), trimmed.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).trim().to_string()
    }
}

impl Tail {
    /// Adds `data`, read from the stream, keeping the last `keep` bytes.
    pub fn push(&mut self, data: &[u8], keep: usize) {
        self.total += data.len() as u64;
        let from = data.len().saturating_sub(keep);
        self.bytes.extend_from_slice(&data[from..]);
        if self.bytes.len() > keep {
            let cut = self.bytes.len() - keep;
            self.bytes.drain(..cut);
        }
    }
}

/// Reads `r` to its end, keeping its last `keep` bytes; memory stays under
/// `keep` plus one read. A read error ends it with what was read. For tests
/// (the poller keeps a harness's stderr with [`Tail::push`]).
#[cfg(any(test, feature = "_internal_test_exports"))]
pub fn drain_tail(mut r: impl Read, keep: usize) -> Tail {
    let mut tail = Tail::default();
    let mut chunk = vec![0u8; CHUNK];
    loop {
        match r.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => tail.push(&chunk[..n], keep),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    tail
}

#[cfg(test)]
mod tests {
    use proptest::strategy::Just;

    use super::*;

    fn lines(input: &[u8], cap: usize) -> Vec<Line> {
        let mut r = LineReader::with_cap(input, cap);
        std::iter::from_fn(|| r.next_line().unwrap()).collect()
    }

    fn text(s: &str) -> Line {
        Line::Text(s.into())
    }

    fn too_long(bytes: u64, head: &[u8]) -> Line {
        Line::TooLong {
            bytes,
            head: head.to_vec(),
        }
    }

    #[test]
    fn lines_split_at_newlines_and_a_last_line_needs_none() {
        assert_eq!(
            lines(b"a\nbc\n\nd", 10),
            vec![text("a"), text("bc"), text(""), text("d")]
        );
        assert_eq!(lines(b"", 10), vec![]);
        assert_eq!(lines(b"x\n", 10), vec![text("x")]);
    }

    #[test]
    fn a_line_over_the_cap_is_dropped_and_reading_goes_on() {
        let mut input = b"ok\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 300_000));
        input.extend(b"\nafter\n12345\n123456\n");
        assert_eq!(
            lines(&input, 5),
            vec![
                text("ok"),
                too_long(300_000, &[b'x'; HEAD]),
                text("after"),
                text("12345"),
                too_long(6, b"123456")
            ]
        );
        // Unterminated at the end.
        assert_eq!(
            lines(&[b'y'; 200_000], 5),
            vec![too_long(200_000, &[b'y'; HEAD])]
        );
    }

    #[test]
    fn a_line_that_is_not_utf8_is_skipped() {
        assert_eq!(
            lines(b"a\n\xff\xfe\nb\n", 10),
            vec![
                text("a"),
                Line::NotUtf8 {
                    bytes: 2,
                    head: b"\xff\xfe".to_vec()
                },
                text("b")
            ]
        );
        let r = LineReader::with_cap(&b"a\n\xff\nb\n"[..], 10);
        assert_eq!(r.text_lines("t".into()).collect::<Vec<_>>(), vec!["a", "b"]);
    }

    /// A reader that hands out one byte at a time: lines cross reads.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let Some((first, rest)) = self.0.split_first() else {
                return Ok(0);
            };
            buf[0] = *first;
            self.0 = rest;
            Ok(1)
        }
    }

    #[test]
    fn lines_that_cross_reads_are_whole() {
        let mut r = LineReader::with_cap(Trickle(b"one\ntwo\nxxxxxxx\nz"), 5);
        let got: Vec<Line> = std::iter::from_fn(|| r.next_line().unwrap()).collect();
        assert_eq!(
            got,
            vec![text("one"), text("two"), too_long(7, b"xxxxxxx"), text("z")]
        );
    }

    #[test]
    fn an_over_long_line_keeps_its_start_and_memory_stays_bounded() {
        // A request's ID comes first; its big input after.
        let mut input = br#"{"type":"control_request","request_id":"r1","#.to_vec();
        input.extend(std::iter::repeat_n(b'x', 3 << 20));
        input.extend(b"\nnext\n");
        let mut r = LineReader::with_cap(&input[..], 1 << 20);
        let Some(Line::TooLong { bytes, head }) = r.next_line().unwrap() else {
            panic!("dropped")
        };
        assert_eq!(bytes, input.len() as u64 - 6);
        assert_eq!(head, input[..HEAD]);
        assert_eq!(r.next_line().unwrap(), Some(text("next")));
        assert!(
            r.peak_buffer() <= (1 << 20) + 2 * CHUNK,
            "{}",
            r.peak_buffer()
        );
        // A short line's head is the whole line.
        let got = lines(b"{\xff}\n", 10);
        assert_eq!(
            got,
            vec![Line::NotUtf8 {
                bytes: 3,
                head: b"{\xff}".to_vec()
            }]
        );
    }

    proptest::proptest! {
        /// However the bytes arrive (the poller gets what each read gives),
        /// the lines are those of the whole input, and the splitter holds
        /// at most the cap.
        #[test]
        fn lines_do_not_depend_on_how_the_bytes_arrive(
            input in proptest::collection::vec(
                proptest::prop_oneof![Just(b'\n'), Just(b'x'), Just(0xffu8), Just(b'{')],
                0..400,
            ),
            cuts in proptest::collection::vec(1usize..50, 0..40),
            cap in 1usize..20,
        ) {
            let whole = lines(&input, cap);
            let mut split = LineSplitter::new(cap);
            let mut got = Vec::new();
            let mut rest = &input[..];
            for cut in cuts {
                let (now, later) = rest.split_at(cut.min(rest.len()));
                split.push(now, &mut |l| got.push(l));
                rest = later;
            }
            split.push(rest, &mut |l| got.push(l));
            got.extend(split.finish());
            proptest::prop_assert_eq!(got, whole);
            proptest::prop_assert!(split.peak_buffer() <= cap);
        }
    }

    #[test]
    fn the_tail_keeps_the_end() {
        let input: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let t = drain_tail(&input[..], 1000);
        assert_eq!(t.total, 100_000);
        assert_eq!(t.bytes, &input[99_000..]);
        let t = drain_tail(&b"short\n"[..], 1000);
        assert_eq!(t.text(), "short");
        let t = drain_tail(Trickle(b"abcdef"), 4);
        assert_eq!(t.bytes, b"cdef");
    }
}
