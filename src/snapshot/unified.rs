//! The unified diff text of a list of changes, in git's form: a `diff
//! --git a/x b/x` line, `new file mode`, `deleted file mode`, `old mode`
//! / `new mode` and `rename from` / `rename to` lines as they apply, then
//! `--- a/x` and `+++ b/x` (`/dev/null` for a side that is missing) and
//! the hunks with 3 lines of context (formatted by `similar`). A binary
//! file is named (`Binary files a/x and b/x differ`), one over 4 MiB too.
//! Folders show only their mode changes. The text stops before the first
//! line that would pass the cap, so it ends at a hunk or line boundary.

use std::io;

use serde::Serialize;
use similar::TextDiff;

use super::diff::{content, octal, Change, Changed, Content, Kind, DIFF_TIMEOUT};
use super::objects::Objects;

/// A unified diff, perhaps cut.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unified {
    /// The text, whole lines only.
    pub text: String,
    /// Whether lines were left out to keep to the cap.
    pub truncated: bool,
}

/// The text under construction, up to its cap.
struct Capped {
    text: String,
    cap: usize,
    truncated: bool,
}

impl Capped {
    /// Adds `line` (with its `\n`) if it fits; false once one did not.
    fn line(&mut self, line: &str) -> bool {
        if self.truncated || self.text.len() + line.len() > self.cap {
            self.truncated = true;
            return false;
        }
        self.text.push_str(line);
        true
    }

    /// Adds `lines` (each ending in `\n`) as far as they fit.
    fn lines(&mut self, lines: &str) -> bool {
        lines.split_inclusive('\n').all(|l| self.line(l))
    }
}

/// The unified text of `changes`, at most `cap` bytes.
pub(crate) fn render(objects: &Objects, changes: &[Changed], cap: usize) -> io::Result<Unified> {
    let mut out = Capped {
        text: String::new(),
        cap,
        truncated: false,
    };
    for c in changes {
        if !one(objects, c, &mut out)? {
            break;
        }
    }
    Ok(Unified {
        text: out.text,
        truncated: out.truncated,
    })
}

/// Adds one change; false once the cap is reached.
fn one(objects: &Objects, c: &Changed, out: &mut Capped) -> io::Result<bool> {
    let f = &c.change;
    let old_path = f.from.as_deref().unwrap_or(&f.path);
    let mut head = Vec::new();
    let is_dir = |e: &Option<super::tree::Entry>| {
        e.as_ref()
            .is_some_and(|e| e.kind == super::tree::EntryKind::Dir)
    };
    // A folder that came or went, or a file's folder side, shows nothing.
    let old = c.old.clone().filter(|_| !is_dir(&c.old));
    let new = c.new.clone().filter(|_| !is_dir(&c.new));
    if f.kind == Kind::Dir && f.status != Change::TypeChanged && f.mode.is_none() {
        return Ok(true);
    }
    head.push(format!("diff --git a/{old_path} b/{}\n", f.path));
    match (&old, &new) {
        (None, Some(n)) => head.push(format!("new file mode {}\n", octal(n.mode))),
        (Some(o), None) => head.push(format!("deleted file mode {}\n", octal(o.mode))),
        _ => {}
    }
    if let Some(m) = &f.mode {
        head.push(format!("old mode {}\nnew mode {}\n", m.from, m.to));
    }
    if let Some(from) = &f.from {
        head.push(format!("rename from {from}\nrename to {}\n", f.path));
    }
    let same = matches!((&old, &new), (Some(o), Some(n)) if o.kind == n.kind);
    let (a, b) = if same {
        (Content::None, Content::None)
    } else {
        (
            content(objects, old.as_ref())?,
            content(objects, new.as_ref())?,
        )
    };
    let a_name = match old {
        Some(_) => format!("a/{old_path}"),
        None => "/dev/null".into(),
    };
    let b_name = match new {
        Some(_) => format!("b/{}", f.path),
        None => "/dev/null".into(),
    };
    let text_of = |c: &Content| match c {
        Content::Text(t) => Some(t.clone()),
        Content::None => Some(String::new()),
        _ => None,
    };
    let mut body = String::new();
    if !same {
        match (text_of(&a), text_of(&b)) {
            _ if matches!(a, Content::Binary) || matches!(b, Content::Binary) => {
                body = format!("Binary files {a_name} and {b_name} differ\n");
            }
            (Some(x), Some(y)) => {
                let diff = TextDiff::configure()
                    .timeout(DIFF_TIMEOUT)
                    .diff_lines(&x, &y);
                let mut hunks = String::new();
                let mut udiff = diff.unified_diff();
                udiff.context_radius(3);
                for hunk in udiff.iter_hunks() {
                    hunks.push_str(&hunk.to_string());
                }
                if !hunks.is_empty() {
                    body = format!("--- {a_name}\n+++ {b_name}\n{hunks}");
                }
            }
            _ => body = format!("Files {a_name} and {b_name} differ (over 4 MiB, not shown)\n"),
        }
    }
    Ok(head.iter().all(|h| out.lines(h)) && out.lines(&body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_cuts_at_a_line() {
        let mut out = Capped {
            text: String::new(),
            cap: 10,
            truncated: false,
        };
        assert!(out.lines("abcd\nefgh\n"));
        assert!(!out.lines("ij\n"));
        assert_eq!((out.text.as_str(), out.truncated), ("abcd\nefgh\n", true));
    }
}
