//! The project copy's status file, `<folder>.cloudroom-files`, as the launch
//! machine sees it: a parsed mark and its age.

use serde::{Deserialize, Serialize};

use crate::time::Millis;

/// The largest status file that is read as a mark; anything longer is
/// malformed (the app writes at most a short failure reason).
pub const MAX_MARK_BYTES: usize = 4096;

/// What the app wrote into the status file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CopyMark {
    /// `copying`: a copy is filling the folder.
    Copying,
    /// `ready`: the files have landed.
    Ready,
    /// `failed` or `failed: <reason>`: the copy gave up; the reason (empty
    /// for a bare `failed`) is kept for the user.
    Failed(String),
}

/// Why a status file's bytes are not a mark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkError {
    /// The file is empty (or only whitespace).
    Empty,
    /// The file is longer than [`MAX_MARK_BYTES`].
    TooLong(usize),
    /// The file is not UTF-8.
    NotText,
    /// The file says something else, in this many bytes. Its text is not
    /// kept: the file lies where another account writes, and nothing of it
    /// beyond the mark's grammar is shown to the app or the log.
    Unknown(usize),
}

impl std::fmt::Display for MarkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MarkError::Empty => write!(f, "the status file is empty"),
            MarkError::TooLong(n) => {
                write!(f, "the status file is {n} bytes, over {MAX_MARK_BYTES}")
            }
            MarkError::NotText => write!(f, "the status file is not UTF-8 text"),
            MarkError::Unknown(n) => write!(
                f,
                "the status file says something other than copying, ready or failed ({n} bytes)"
            ),
        }
    }
}

impl CopyMark {
    /// Parses a status file's bytes: `copying`, `ready`, `failed` or
    /// `failed: <reason>`, with surrounding whitespace (a trailing newline)
    /// ignored. The reason is the text after `failed` with a leading `:`
    /// removed (seed 000), so a bare `failed` is a failed copy with no reason.
    pub fn parse(bytes: &[u8]) -> Result<CopyMark, MarkError> {
        if bytes.len() > MAX_MARK_BYTES {
            return Err(MarkError::TooLong(bytes.len()));
        }
        let text = std::str::from_utf8(bytes).map_err(|_| MarkError::NotText)?;
        let text = text.trim();
        match text {
            "" => Err(MarkError::Empty),
            "copying" => Ok(CopyMark::Copying),
            "ready" => Ok(CopyMark::Ready),
            _ => match text.strip_prefix("failed") {
                Some(rest) => {
                    let reason = rest.strip_prefix(':').unwrap_or(rest);
                    Ok(CopyMark::Failed(reason.trim().to_string()))
                }
                None => Err(MarkError::Unknown(text.len())),
            },
        }
    }
}

/// One read of the status file, made by the runtime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Observation {
    /// The parsed mark; `None` when the file is missing or malformed.
    #[serde(default)]
    pub mark: Option<CopyMark>,
    /// How long ago the file was last modified, in milliseconds; `None` when
    /// there is no file.
    #[serde(default)]
    pub age: Option<Millis>,
    /// Set when a file exists but is not a mark; it is then treated as missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub malformed: Option<MarkError>,
    /// Set when the file's mtime lies ahead of the service's clock: by how
    /// many milliseconds (`age` is then 0). The launch decides what that means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ahead: Option<Millis>,
}

impl Observation {
    /// No status file.
    pub fn missing() -> Observation {
        Observation::default()
    }

    /// A status file with `bytes`, last modified `age` milliseconds ago.
    pub fn from_file(bytes: &[u8], age: Millis) -> Observation {
        match CopyMark::parse(bytes) {
            Ok(mark) => Observation {
                mark: Some(mark),
                age: Some(age),
                ..Observation::default()
            },
            Err(e) => Observation {
                age: Some(age),
                malformed: Some(e),
                ..Observation::default()
            },
        }
    }

    /// The same read of a file whose mtime lies `ms` ahead of the clock:
    /// age 0, `ahead` set (left unset for 0).
    pub fn dated_ahead(self, ms: Millis) -> Observation {
        Observation {
            age: self.age.map(|_| 0),
            ahead: (ms > 0).then_some(ms),
            ..self
        }
    }

    /// A well-formed mark of the given age (for tests and timelines).
    pub fn marked(mark: CopyMark, age: Millis) -> Observation {
        Observation {
            mark: Some(mark),
            age: Some(age),
            ..Observation::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_marks() {
        assert_eq!(CopyMark::parse(b"copying"), Ok(CopyMark::Copying));
        assert_eq!(CopyMark::parse(b"copying\n"), Ok(CopyMark::Copying));
        assert_eq!(CopyMark::parse(b"ready\n"), Ok(CopyMark::Ready));
        assert_eq!(
            CopyMark::parse(b"failed: disk full\n"),
            Ok(CopyMark::Failed("disk full".into()))
        );
        assert_eq!(
            CopyMark::parse(b"failed:"),
            Ok(CopyMark::Failed(String::new()))
        );
    }

    #[test]
    fn a_bare_failed_mark_is_a_failed_copy_with_no_reason() {
        assert_eq!(
            CopyMark::parse(b"failed"),
            Ok(CopyMark::Failed(String::new()))
        );
        assert_eq!(
            CopyMark::parse(b"failed\n"),
            Ok(CopyMark::Failed(String::new()))
        );
        // The reason is what follows `failed`, a leading `:` removed.
        assert_eq!(
            CopyMark::parse(b"failed:disk full"),
            Ok(CopyMark::Failed("disk full".into()))
        );
    }

    #[test]
    fn anything_else_is_malformed() {
        assert_eq!(CopyMark::parse(b""), Err(MarkError::Empty));
        assert_eq!(CopyMark::parse(b" \n"), Err(MarkError::Empty));
        assert_eq!(CopyMark::parse(&[0xff, 0xfe]), Err(MarkError::NotText));
        assert_eq!(CopyMark::parse(b"Ready"), Err(MarkError::Unknown(5)));
        assert_eq!(
            CopyMark::parse(b"copying please"),
            Err(MarkError::Unknown(14))
        );
        let long = vec![b'a'; MAX_MARK_BYTES + 1];
        assert_eq!(
            CopyMark::parse(&long),
            Err(MarkError::TooLong(MAX_MARK_BYTES + 1))
        );
        let mut ready_padded = b"ready".to_vec();
        ready_padded.resize(MAX_MARK_BYTES + 1, b' ');
        assert!(CopyMark::parse(&ready_padded).is_err());
    }

    #[test]
    fn a_malformed_file_observes_as_missing_and_says_why() {
        let o = Observation::from_file(b"???", 10);
        assert_eq!(o.mark, None);
        assert_eq!(o.malformed, Some(MarkError::Unknown(3)));
    }
}
