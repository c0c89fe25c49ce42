//! What the fake harnesses recorded (`FAKE_HARNESS_RECORD`): one JSON file
//! per turn, with what the harness saw and what its tool printed.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::service::Service;
use crate::time::wait_until;

impl Service {
    /// Every record the fake harnesses wrote, oldest first.
    pub fn records(&self) -> Vec<Value> {
        let mut out: Vec<Value> = std::fs::read_dir(&self.records)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                    .filter_map(|e| serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok())
                    .collect()
            })
            .unwrap_or_default();
        out.sort_by_key(|r: &Value| r["started_ms"].as_u64());
        out
    }

    /// The records of harnesses that ran in `folder`.
    pub fn records_in(&self, folder: &Path) -> Vec<Value> {
        self.records()
            .into_iter()
            .filter(|r| r["cwd"].as_str().map(Path::new) == Some(folder))
            .collect()
    }

    /// Waits for the `n`th (1-based) harness record in `folder`.
    pub fn await_record(&self, folder: &Path, n: usize, limit: Duration) -> Value {
        wait_until(
            &format!("harness record #{n} in {}", folder.display()),
            limit,
            || self.records_in(folder).get(n - 1).cloned(),
        )
    }
}
