//! How much of what a harness says is kept: the caps on an approval
//! request's text fields and on a request ID, and the cut that keeps a
//! text within a cap. A leaf: the talkers, their speech and their
//! refusals all use it.

/// The longest tool name or reason kept.
pub(crate) const TEXT_MAX: usize = 1024;

/// The longest request ID taken for an approval (claude's are UUIDs,
/// codex's numbers); a longer one is refused.
pub(crate) const REF_MAX: usize = 256;

/// `s`'s first `max` bytes, at a character boundary.
pub(crate) fn cut(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}
