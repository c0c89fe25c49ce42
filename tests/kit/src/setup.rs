//! What a [`Builder`](crate::Builder) hands the [`Service`](crate::Service)
//! it prepares: a leaf both name, so neither names the other.

use std::path::PathBuf;

use serde_json::Value;

/// Where the service's stdout and stderr go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// `service.log` in its folder, appended to by every start.
    LogFile,
    /// This process's own.
    Inherit,
}

/// What `Builder::prepare` made.
pub(crate) struct Setup {
    pub binary: PathBuf,
    pub config_value: Value,
    pub program: PathBuf,
    pub root: PathBuf,
    pub state: PathBuf,
    pub records: PathBuf,
    pub config: PathBuf,
    pub env: Vec<(String, String)>,
    pub log_filter: String,
    pub output: Output,
    pub run_as: Option<u32>,
    pub keep: bool,
}
