//! The fields that name a request, read leniently from the start of a line
//! that cannot be read whole (over the cap, not UTF-8, too deep, not JSON).
//! Both CLIs print a request's ID, kind and tool before its input (claude:
//! `type`, `request_id`, then `request` with `subtype` and `tool_name`;
//! codex: `method` and `id` before `params`), so the start is enough to
//! answer it. The start may be cut anywhere, or be broken JSON further on:
//! reading stops there, and only a value read to its end counts, so what is
//! read is never a wrong value, at worst a missing one. Bounded: the input
//! is the line's first few KiB, and nesting past the paths asked for is
//! skipped without recursion.

/// A scalar value read at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scalar {
    /// A string, its escapes decoded.
    Text(String),
    /// A number, as written.
    Number(String),
    /// Something else: an object, an array, `true`, `false`, `null`.
    Other,
}

impl Scalar {
    /// The string, if it is one.
    pub fn text(&self) -> Option<&str> {
        match self {
            Scalar::Text(s) => Some(s),
            _ => None,
        }
    }
}

/// The values at `paths` (keys from the top object down; the first of a
/// repeated key wins) in the JSON object `bytes` starts with.
pub(crate) fn fields<const N: usize>(bytes: &[u8], paths: [&[&str]; N]) -> [Option<Scalar>; N] {
    let mut out: [Option<Scalar>; N] = std::array::from_fn(|_| None);
    let mut s = Scanner {
        b: bytes,
        i: 0,
        paths: &paths,
    };
    s.ws();
    if s.peek() == Some(b'{') {
        let _ = s.object(&mut Vec::new(), &mut out);
    }
    out
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    paths: &'a [&'a [&'a str]],
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.ws();
        (self.peek()? == byte).then(|| self.i += 1)
    }

    /// An object at `path`; `None` where reading stops (cut or broken).
    fn object<const N: usize>(
        &mut self,
        path: &mut Vec<String>,
        out: &mut [Option<Scalar>; N],
    ) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            let key = self.string()?;
            self.eat(b':')?;
            self.ws();
            path.push(key);
            let read = self.value(path, out);
            path.pop();
            read?;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The value at `path`, kept when a path asks for it.
    fn value<const N: usize>(
        &mut self,
        path: &mut Vec<String>,
        out: &mut [Option<Scalar>; N],
    ) -> Option<()> {
        let wanted = self.paths.iter().position(|p| p.iter().eq(path.iter()));
        let inside = self
            .paths
            .iter()
            .any(|p| p.len() > path.len() && p.iter().zip(path.iter()).all(|(a, b)| a == b));
        let scalar = match self.peek()? {
            b'"' => Scalar::Text(self.string()?),
            b'{' if inside => {
                self.object(path, out)?;
                Scalar::Other
            }
            b'{' | b'[' => {
                self.skip()?;
                Scalar::Other
            }
            b'-' | b'0'..=b'9' => Scalar::Number(self.number()?),
            b't' | b'f' | b'n' => {
                self.literal()?;
                Scalar::Other
            }
            _ => return None,
        };
        if let Some(k) = wanted {
            out[k].get_or_insert(scalar);
        }
        Some(())
    }

    /// A string, unescaped; `None` if cut, broken or not UTF-8.
    fn string(&mut self) -> Option<String> {
        if self.peek()? != b'"' {
            return None;
        }
        self.i += 1;
        let mut text = Vec::new();
        loop {
            let b = self.peek()?;
            self.i += 1;
            match b {
                b'"' => return String::from_utf8(text).ok(),
                b'\\' => {
                    let e = self.peek()?;
                    self.i += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode()?,
                        _ => return None,
                    };
                    text.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                }
                0..=0x1f => return None,
                _ => text.push(b),
            }
        }
    }

    /// The character of a `\u` escape (after the `u`), a surrogate pair
    /// whole; `None` for a lone surrogate.
    fn unicode(&mut self) -> Option<char> {
        let first = self.hex4()?;
        if !(0xd800..0xdc00).contains(&first) {
            return char::from_u32(first);
        }
        if self.b.get(self.i..self.i + 2)? != b"\\u" {
            return None;
        }
        self.i += 2;
        let second = self.hex4()?;
        if !(0xdc00..0xe000).contains(&second) {
            return None;
        }
        char::from_u32(0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00))
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = std::str::from_utf8(self.b.get(self.i..self.i + 4)?).ok()?;
        let n = u32::from_str_radix(digits, 16).ok()?;
        self.i += 4;
        Some(n)
    }

    /// A number's text; `None` if the input ends inside it (it may go on).
    fn number(&mut self) -> Option<String> {
        let start = self.i;
        while matches!(self.peek()?, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
            self.i += 1;
        }
        let text = std::str::from_utf8(&self.b[start..self.i]).ok()?;
        text.parse::<f64>().ok().map(|_| text.to_string())
    }

    /// `true`, `false` or `null`.
    fn literal(&mut self) -> Option<()> {
        for word in [&b"true"[..], b"false", b"null"] {
            if self.b.get(self.i..self.i + word.len()) == Some(word) {
                self.i += word.len();
                return Some(());
            }
        }
        None
    }

    /// An array or object skipped whole, without recursion; `None` if cut.
    fn skip(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'"' => {
                    self.string()?;
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        self.i += 1;
                        return Some(());
                    }
                }
                _ => {}
            }
            self.i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::transcripts;

    const CLAUDE: [&[&str]; 4] = [
        &["type"],
        &["request_id"],
        &["request", "subtype"],
        &["request", "tool_name"],
    ];

    fn text(s: &str) -> Option<Scalar> {
        Some(Scalar::Text(s.into()))
    }

    #[test]
    fn a_request_is_named_by_the_start_of_its_line() {
        let line = br#"{"type":"control_request","request_id":"r\"1","request":{"subtype":"can_use_tool","display_name":{"a":[1,{"b":"}"}]},"tool_name":"Write","input":{"content":"xxxx"#;
        assert_eq!(
            fields(line, CLAUDE),
            [
                text("control_request"),
                text("r\"1"),
                text("can_use_tool"),
                text("Write")
            ]
        );
        let line = br#" {"id": 12, "method": "item/commandExecution/requestApproval", "params": {"#;
        assert_eq!(
            fields(line, [&["method"], &["id"], &["params"]]),
            [
                text("item/commandExecution/requestApproval"),
                Some(Scalar::Number("12".into())),
                None
            ]
        );
    }

    #[test]
    fn only_values_read_to_their_end_count() {
        // Cut inside the ID, inside a number, before a value.
        assert_eq!(
            fields(br#"{"type":"control_request","request_id":"r1"#, CLAUDE),
            [text("control_request"), None, None, None]
        );
        assert_eq!(fields(br#"{"id":12"#, [&["id"]]), [None]);
        assert_eq!(fields(br#"{"id":"#, [&["id"]]), [None]);
        // Broken further on: what came before stands, nothing after.
        assert_eq!(
            fields(br#"{"method":"m", oops "id":1}"#, [&["method"], &["id"]]),
            [text("m"), None]
        );
        // Not an object, or not JSON at all.
        for odd in [
            &b"[\"type\"]"[..],
            b"not json {\"type\":\"x\"}",
            b"",
            b"\xff\xfe",
        ] {
            assert_eq!(fields(odd, [&["type"]]), [None]);
        }
        // A string that is not UTF-8, or holds a lone surrogate, is not read.
        assert_eq!(
            fields(b"{\"id\":\"a\xffb\",\"m\":1}", [&["id"], &["m"]]),
            [None, None]
        );
        assert_eq!(fields(br#"{"id":"\ud800"}"#, [&["id"]]), [None]);
        assert_eq!(
            fields(br#"{"id":"\ud83d\ude00 \u00e9"}"#, [&["id"]]),
            [text("😀 é")]
        );
        // The first of a repeated key wins; a non-scalar is Other.
        assert_eq!(
            fields(
                br#"{"id":1,"id":2,"p":[1],"t":true} "#,
                [&["id"], &["p"], &["t"]]
            ),
            [
                Some(Scalar::Number("1".into())),
                Some(Scalar::Other),
                Some(Scalar::Other)
            ]
        );
    }

    #[test]
    fn deep_nesting_is_skipped_without_recursion() {
        let mut line = br#"{"a":"#.to_vec();
        line.extend(std::iter::repeat_n(b'[', 100_000));
        line.extend(std::iter::repeat_n(b']', 100_000));
        line.extend(br#","request_id":"deep"}"#);
        assert_eq!(fields(&line, [&["request_id"]]), [text("deep")]);
    }

    /// Cut anywhere, a recorded request's start reads what its whole line
    /// says, or nothing.
    #[test]
    fn every_cut_of_every_recorded_line_reads_right_or_nothing() {
        for (cli, paths) in [
            ("claude", CLAUDE.to_vec()),
            ("codex", vec![&["method"][..], &["id"]]),
        ] {
            for (_, lines) in transcripts::transcripts(cli) {
                for e in lines.iter().filter(|e| e["dir"] == "from_cli") {
                    let line = e["msg"].to_string();
                    let whole: Vec<Option<Scalar>> = paths
                        .iter()
                        .map(|p| {
                            let v = p.iter().try_fold(&e["msg"], |v, k| v.get(k))?;
                            Some(match v {
                                serde_json::Value::String(s) => Scalar::Text(s.clone()),
                                serde_json::Value::Number(n) => Scalar::Number(n.to_string()),
                                _ => Scalar::Other,
                            })
                        })
                        .collect();
                    for cut in (0..=line.len().min(600)).filter(|c| line.is_char_boundary(*c)) {
                        let got = match paths.len() {
                            4 => fields(&line.as_bytes()[..cut], CLAUDE).to_vec(),
                            _ => fields(&line.as_bytes()[..cut], [&["method"], &["id"]]).to_vec(),
                        };
                        for (g, w) in got.iter().zip(&whole) {
                            assert!(g.is_none() || g == w, "{cli} cut at {cut}: {g:?} {w:?}");
                        }
                        if cut == line.len() {
                            assert_eq!(got, whole, "{line}");
                        }
                    }
                }
            }
        }
    }
}
