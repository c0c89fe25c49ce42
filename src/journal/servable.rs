//! Whether a harness's line can be journalled and served as it is: one
//! JSON value that every client's parser can read back inside a page.
//!
//! A page wraps each event in three more levels (`{"events":[{…,"data":
//! <line>}]}`), and parsers with a recursion limit stop there: serde_json at
//! 128 levels, Python's and most others' not far beyond. So a line nesting
//! deeper than [`DEPTH_MAX`] is not served as it is; one O(n) pass finds
//! that before anything parses it. The same pass flags what serde_json's
//! own value parser refuses though the grammar allows it (a lone UTF-16
//! surrogate escape, a number beyond a double's range), and only such a
//! line pays for a full parse to tell.

use serde_json::value::RawValue;

/// The deepest a harness's line may nest (arrays and objects), so that a
/// page holding it (three more levels) parses within serde_json's limit of
/// 127 with room to spare.
pub const DEPTH_MAX: usize = 100;

/// Why a harness's line is not journalled as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unservable {
    /// Empty or only whitespace: nothing to journal, nothing to report.
    Blank,
    /// It nests deeper than [`DEPTH_MAX`].
    TooDeep,
    /// It is not one JSON value.
    NotJson,
    /// JSON that strict parsers refuse: a lone UTF-16 surrogate escape,
    /// a number beyond a double's range.
    NotPortable,
}

impl Unservable {
    /// Its name in events: `blank`, `too_deep`, `not_json`, `not_portable`.
    pub fn code(self) -> &'static str {
        match self {
            Unservable::Blank => "blank",
            Unservable::TooDeep => "too_deep",
            Unservable::NotJson => "not_json",
            Unservable::NotPortable => "not_portable",
        }
    }
}

/// `text` (trimmed) as one JSON value that every page can serve, or why not.
pub(super) fn servable(text: &str) -> Result<Box<RawValue>, Unservable> {
    if text.is_empty() {
        return Err(Unservable::Blank);
    }
    let scan = scan(text.as_bytes(), DEPTH_MAX);
    if scan.too_deep {
        return Err(Unservable::TooDeep);
    }
    let raw: Box<RawValue> = serde_json::from_str(text).map_err(|_| Unservable::NotJson)?;
    if scan.odd && serde_json::from_str::<serde_json::Value>(text).is_err() {
        return Err(Unservable::NotPortable);
    }
    Ok(raw)
}

/// Whether the JSON text `text` nests deeper than `max` levels, counted
/// outside strings; one pass, no allocation.
pub fn nests_deeper(text: &[u8], max: usize) -> bool {
    scan(text, max).too_deep
}

/// What one pass over a JSON text found.
struct Scan {
    /// It nests deeper than the limit.
    too_deep: bool,
    /// It holds a lone surrogate escape or a number at or past a double's
    /// range: what a strict parser may refuse, for a full parse to tell.
    odd: bool,
}

/// A number's magnitude from which a strict parser may find it out of
/// range (a double's largest is about 1.8e308).
const NEAR_MAX: f64 = 1e308;

fn scan(text: &[u8], max: usize) -> Scan {
    let mut depth = 0usize;
    let mut odd = false;
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => {
                i = string_end(text, i + 1, &mut odd);
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Scan {
                        too_deep: true,
                        odd,
                    };
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'-' | b'0'..=b'9' => {
                let end = i + text[i..]
                    .iter()
                    .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                    .unwrap_or(text.len() - i);
                let number = &text[i..end];
                // Only a number with an exponent, or a long one, can be
                // that large: the rest costs no parse.
                if number.len() > 300 || number.iter().any(|b| matches!(b, b'e' | b'E')) {
                    let value = std::str::from_utf8(number)
                        .ok()
                        .and_then(|n| n.parse::<f64>().ok());
                    odd |= value.is_some_and(|v| v.abs() >= NEAR_MAX);
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    Scan {
        too_deep: false,
        odd,
    }
}

/// Where the string whose text starts at `i` ends (after its closing
/// quote, or the text's end); `odd` is set by a lone surrogate escape.
fn string_end(text: &[u8], mut i: usize, odd: &mut bool) -> usize {
    loop {
        let Some(k) = quote_or_backslash(&text[i..]) else {
            return text.len();
        };
        i += k;
        if text[i] == b'"' {
            return i + 1;
        }
        // An escape: `\uXXXX` may be half of a surrogate pair.
        if text.get(i + 1) == Some(&b'u') {
            match hex4(text, i + 2) {
                Some(0xd800..=0xdbff) => {
                    let pair = text.get(i + 6..i + 8) == Some(b"\\u")
                        && matches!(hex4(text, i + 8), Some(0xdc00..=0xdfff));
                    *odd |= !pair;
                    i += if pair { 12 } else { 6 };
                    continue;
                }
                Some(0xdc00..=0xdfff) => *odd = true,
                _ => {}
            }
        }
        i = (i + 2).min(text.len());
    }
}

/// Where the first `"` or `\` of `s` is. Whole 16-byte blocks are
/// checked without an early exit, which compiles to vector compares: a
/// string's long run of text costs a few cycles a block.
fn quote_or_backslash(s: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i + 16 <= s.len() {
        let block = &s[i..i + 16];
        if block
            .iter()
            .fold(false, |found, b| found | (*b == b'"') | (*b == b'\\'))
        {
            break;
        }
        i += 16;
    }
    s[i..]
        .iter()
        .position(|b| *b == b'"' || *b == b'\\')
        .map(|k| i + k)
}

/// The four hex digits at `at`, if they are.
fn hex4(text: &[u8], at: usize) -> Option<u16> {
    let digits = std::str::from_utf8(text.get(at..at + 4)?).ok()?;
    u16::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        "[".repeat(depth) + &"]".repeat(depth)
    }

    #[test]
    fn depth_is_counted_outside_strings() {
        assert!(!nests_deeper(nested(100).as_bytes(), 100));
        assert!(nests_deeper(nested(101).as_bytes(), 100));
        assert!(nests_deeper(b"{\"a\":[{\"b\":[", 3));
        assert!(!nests_deeper(b"{\"a\":\"[[[[[[\"}", 1));
        // An escaped quote does not end the string; an escaped backslash
        // before a quote does.
        assert!(!nests_deeper(br#"["\"[[[[" ]"#, 1));
        assert!(nests_deeper(br#"["\\",[[[ ]]]]"#, 3));
        // Unbalanced closers never count below zero.
        assert!(nests_deeper(b"]]]]][[", 1));
        // Cut anywhere, even after a backslash or inside an escape.
        for cut in [&b"[\"a\\"[..], b"[\"\\u", b"[\"\\ud83d\\u", b"[1e"] {
            assert!(!nests_deeper(cut, 1));
        }
    }

    #[test]
    fn a_line_is_served_as_is_only_when_every_parser_reads_it() {
        assert_eq!(servable("").err(), Some(Unservable::Blank));
        assert_eq!(servable(&nested(101)).err(), Some(Unservable::TooDeep));
        assert_eq!(servable(&nested(100)).unwrap().get(), nested(100));
        assert_eq!(servable("{\"a\":").err(), Some(Unservable::NotJson));
        assert_eq!(servable("{} {}").err(), Some(Unservable::NotJson));
        for not_portable in [
            r#"{"s":"\ud800"}"#,
            r#"{"s":"\udc00\ud800"}"#,
            r#"["\ud800\u0041"]"#,
            "[1e999]",
            "[-2E308]",
            &format!("[{}]", "9".repeat(400)),
        ] {
            assert_eq!(
                servable(not_portable).err(),
                Some(Unservable::NotPortable),
                "{not_portable}"
            );
        }
        // What only looks odd is served: a surrogate pair, an exponent in
        // range, `true`, a long number within a double's range.
        for fine in [
            r#"{"s":"\ud83d\ude00","t":"\\ud800"}"#,
            "[1.5e-5, 2E10, 1e-999, true, false]",
            &format!("[{}]", "1".repeat(301)),
        ] {
            assert_eq!(servable(fine).unwrap().get(), fine);
        }
    }

    #[test]
    fn a_page_of_the_deepest_line_parses_in_serde_json() {
        let line = servable(&nested(DEPTH_MAX)).unwrap();
        let page = format!(
            r#"{{"events":[{{"seq":1,"at_ms":1,"kind":"harness","data":{}}}],"next_after":1}}"#,
            line.get()
        );
        serde_json::from_str::<serde_json::Value>(&page).expect("within the recursion limit");
    }
}
