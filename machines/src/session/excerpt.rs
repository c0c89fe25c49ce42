//! A prompt's text as its `prompt_queued` event carries it: whole when it
//! fits a journal line, else cut at a character boundary.

/// The most bytes a prompt's text may take in its event, written as JSON
/// (escapes counted): a journal line's cap (1 MiB) less 1 KiB for the
/// line's other fields, as for a harness's lines.
pub const PROMPT_TEXT_MAX: usize = (1 << 20) - 1024;

/// `text` as an event carries it, and whether it was cut: the longest head
/// of it, ending at a character boundary, whose JSON string takes at most
/// `max` bytes (quotes not counted).
pub fn excerpt(text: &str, max: usize) -> (String, bool) {
    // Most prompts need no escapes: their length says it all.
    if text.len() <= max && !text.bytes().any(needs_escape) {
        return (text.to_string(), false);
    }
    let mut used = 0;
    for (at, c) in text.char_indices() {
        used += json_len(c);
        if used > max {
            return (text[..at].to_string(), true);
        }
    }
    (text.to_string(), false)
}

fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// The bytes `c` takes in a JSON string as serde_json writes it.
fn json_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_that_fits_is_whole_and_a_longer_one_is_cut_at_a_char_boundary() {
        assert_eq!(excerpt("hello", 5), ("hello".into(), false));
        assert_eq!(excerpt("hello", 4), ("hell".into(), true));
        // "é" is two bytes: a cut never splits it.
        assert_eq!(excerpt("aé", 2), ("a".into(), true));
        assert_eq!(excerpt("aé", 3), ("aé".into(), false));
        // Escapes count as written: `\"` is two bytes, U+0001 six.
        assert_eq!(excerpt("a\"b", 3), ("a\"".into(), true));
        assert_eq!(excerpt("\u{1}\u{1}", 11), ("\u{1}".into(), true));
        assert_eq!(excerpt("", 0), (String::new(), false));
    }

    #[test]
    fn the_cut_text_fits_its_cap_as_serde_json_writes_it() {
        let wild = "x\"\\\n\t\u{0}\u{1f}é€😀 ".repeat(50);
        for max in 0..200 {
            let (cut, was_cut) = excerpt(&wild, max);
            let written = serde_json::to_string(&cut).unwrap().len() - 2;
            assert!(written <= max, "{max}: {written}");
            assert!(was_cut);
            // One more character would not have fitted.
            let next = wild[cut.len()..].chars().next().unwrap();
            let longer = format!("{cut}{next}");
            assert!(serde_json::to_string(&longer).unwrap().len() - 2 > max);
        }
    }
}
