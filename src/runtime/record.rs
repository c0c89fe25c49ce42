//! Timeline recording: with `record_timelines` set, every launch the driver
//! steps is written as a timeline in the format of `fixtures/timelines/`
//! (`<dir>/<session id>.json`, one run per launch, so a restart adds a run).
//! A recorded run replays through the machine exactly, which is what ties
//! the driver to the tables: see `tests/recorded_timelines.rs`.

use std::path::Path;

use room_machines::launch::Config;
use room_machines::timeline::{Run, Timeline};

/// Appends `run` to `<dir>/<id>.json`, written atomically. Recording is a
/// debugging aid: a failure is logged, never fatal.
pub fn append(dir: &Path, id: &str, config: Config, run: Run) {
    let path = dir.join(format!("{id}.json"));
    let mut file = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Timeline>(&b).ok())
        .unwrap_or_else(|| Timeline::Launch {
            test: id.into(),
            about: format!("Session {id}'s launches, recorded by room-core."),
            config: Some(config),
            runs: Vec::new(),
        });
    if let Timeline::Launch { runs, .. } = &mut file {
        runs.push(run);
    }
    let result = std::fs::create_dir_all(dir).and_then(|()| {
        let bytes = serde_json::to_vec_pretty(&file)?;
        crate::store::write_atomic(&path, &bytes)
    });
    if let Err(e) = result {
        log::warn!(
            "{id}: cannot record the timeline in {}: {e}",
            path.display()
        );
    }
}
