//! Timeline recording: with `record_timelines` set, every session the
//! runtime drives is written as a timeline in the format of
//! `fixtures/timelines/` (`<dir>/<session id>.json`, `"machine":
//! "session"`): one run per service process, begun by `Session::new` or by
//! `Session::restore` with the record the service read, then every input
//! with its outcome and the effects it produced. A recorded session replays
//! through the machine exactly, which is what ties the driver to the
//! tables: see `tests/recorded_timelines.rs`.

use std::path::{Path, PathBuf};

use room_machines::session::{Config, Effect, Input, Options, Outcome};
use room_machines::timeline::{Begin, SessionRun, Timeline};
use room_machines::Millis;

/// A session's timeline being recorded.
#[derive(Debug)]
pub(crate) struct Recording {
    path: PathBuf,
    /// The file as it was (the runs of earlier service processes).
    earlier: Timeline,
    /// This process's run.
    run: SessionRun,
}

impl Recording {
    /// Begins this process's run of session `id`, after the runs already in
    /// `<dir>/<id>.json`.
    pub(crate) fn begin(
        dir: &Path,
        id: &str,
        config: Config,
        options: Options,
        begin: Begin,
    ) -> Recording {
        let path = dir.join(format!("{id}.json"));
        let earlier = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Timeline>(&b).ok())
            .filter(|t| matches!(t, Timeline::Session { .. }))
            .unwrap_or_else(|| Timeline::Session {
                test: id.into(),
                about: format!("Session {id}, recorded by room-core."),
                config: Some(config),
                options,
                runs: Vec::new(),
            });
        Recording {
            path,
            earlier,
            run: SessionRun::new(begin),
        }
    }

    /// Records an input handled at `at`.
    pub(crate) fn input(&mut self, at: Millis, input: Input, outcome: Outcome) {
        self.run.record_input(at, input, outcome);
    }

    /// Records an effect of the last input.
    pub(crate) fn effect(&mut self, effect: &Effect) {
        self.run.record_effect(effect);
    }

    /// Forgets the last input: an app command undone because its record
    /// could not be written.
    pub(crate) fn unrecord_last(&mut self) {
        self.run.steps.pop();
    }

    /// Writes the file (atomically). Recording is a debugging aid: a
    /// failure is logged, never fatal.
    pub(crate) fn save(&self) {
        let mut file = self.earlier.clone();
        if let Timeline::Session { runs, .. } = &mut file {
            runs.push(self.run.clone());
        }
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let result = std::fs::create_dir_all(dir).and_then(|()| {
            let bytes = serde_json::to_vec_pretty(&file)?;
            crate::store::write_atomic(&self.path, &bytes)
        });
        if let Err(e) = result {
            log::warn!("cannot record the timeline in {}: {e}", self.path.display());
        }
    }
}
