//! Why a spawn failed, as the caller is told.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Why a spawn failed: `cannot run <program>: [<step>: ]<error>`.
#[derive(Debug)]
pub struct SpawnError {
    /// The program as the spec named it.
    pub program: PathBuf,
    /// The step that failed, when it was not the exec itself.
    pub step: Option<String>,
    /// The system's error.
    pub source: io::Error,
}

impl SpawnError {
    pub(crate) fn new(program: &Path, step: Option<String>, source: io::Error) -> SpawnError {
        SpawnError {
            program: program.to_path_buf(),
            step,
            source,
        }
    }
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot run {}: ", self.program.display())?;
        if let Some(step) = &self.step {
            write!(f, "{step}: ")?;
        }
        write!(f, "{}", self.source)
    }
}

impl std::error::Error for SpawnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}
