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
pub fn servable(text: &str) -> Result<Box<RawValue>, Unservable> {
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
    /// It holds a surrogate escape, a number with an exponent or a run of
    /// 300 digits: what may be out of a strict parser's reach.
    odd: bool,
}

/// The digits in a row after which a number may be beyond a double.
const LONG_NUMBER: usize = 300;

fn scan(text: &[u8], max: usize) -> Scan {
    let (mut depth, mut digits) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    let mut odd = false;
    let mut prev = 0u8;
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        if in_string {
            if escaped {
                escaped = false;
                // `\uD800` to `\uDFFF`: half of a surrogate pair.
                let surrogate = b == b'u'
                    && matches!(text.get(i + 1), Some(b'd' | b'D'))
                    && matches!(
                        text.get(i + 2),
                        Some(b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
                    );
                odd |= surrogate;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else {
            match b {
                b'"' => in_string = true,
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
                b'e' | b'E' if prev.is_ascii_digit() || prev == b'.' => odd = true,
                _ => {}
            }
            digits = if b.is_ascii_digit() { digits + 1 } else { 0 };
            odd |= digits >= LONG_NUMBER;
        }
        prev = b;
        i += 1;
    }
    Scan {
        too_deep: false,
        odd,
    }
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
            "[1e999]",
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
            r#"{"s":"\ud83d\ude00"}"#,
            "[1.5e-5, 2E10, true, false]",
            &format!("[{}]", "1".repeat(300)),
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
