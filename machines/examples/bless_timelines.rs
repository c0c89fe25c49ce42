//! `cargo run -p room-machines --example bless_timelines`: after a
//! deliberate change of the session machine, re-derives the effects and
//! outcomes of every session timeline in `fixtures/timelines/` from its
//! recorded inputs (the same beginnings, inputs and times) and writes them
//! back, so `git diff` shows exactly what the change does to a real run.
//! Launch and caller timelines are left as they are.

use std::path::Path;

use room_machines::session::{Effect, Session};
use room_machines::timeline::{Begin, SessionRun, Timeline};

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/timelines");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixtures/timelines exists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).expect("a readable timeline");
        let mut timeline: Timeline = serde_json::from_str(&text).expect("a timeline");
        let Timeline::Session {
            config,
            options,
            runs,
            ..
        } = &mut timeline
        else {
            continue;
        };
        let config = config.unwrap_or_default();
        for run in runs.iter_mut() {
            rerun(run, config, options);
        }
        let mut out = serde_json::to_string_pretty(&timeline).expect("serializable");
        out.push('\n');
        if out != text {
            std::fs::write(&path, out).expect("a writable fixture");
            println!("blessed {}", path.display());
        }
    }
}

/// Feeds `run`'s beginning and inputs to a new machine and keeps what it
/// emits and answers now.
fn rerun(
    run: &mut SessionRun,
    config: room_machines::session::Config,
    options: &room_machines::session::Options,
) {
    let mut s = match &run.begin {
        Begin::New { at, prompt } => Session::new(config, options.clone(), prompt.clone(), *at),
        Begin::Restore { at, record } => {
            Session::restore(config, options.clone(), (**record).clone(), *at)
        }
    };
    let drain =
        |s: &mut Session| -> Vec<Effect> { std::iter::from_fn(|| s.poll_effect()).collect() };
    run.effects = drain(&mut s);
    for step in &mut run.steps {
        step.outcome = s.handle(step.at, step.input.clone());
        step.effects = drain(&mut s);
    }
}
