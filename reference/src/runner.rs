//! When loops run: the schedule (which loops are due at a given time, with
//! the time passed in, so it is tested with an injected clock) and the run
//! queue (a loop runs at most once at a time; a trigger while it is queued
//! or running starts nothing more).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::cron::Cron;
use super::loops::Loop;

/// Which loops are due. A repeating loop first seen (or resumed, or given a
/// new schedule) at `t` runs at its first matching minute after `t`, then at
/// each matching minute after that; minutes missed while the website was
/// down are not made up. A one-time loop runs once its time has come, if it
/// has not run since.
#[derive(Debug, Default)]
pub struct Schedule {
    /// Loop ID → (the schedule's text, the next run in Unix ms).
    next: HashMap<String, (String, u64)>,
}

impl Schedule {
    /// The IDs of the loops due at `now_ms`, each once per due time.
    pub fn due(&mut self, now_ms: u64, loops: &[Loop]) -> Vec<String> {
        let mut due = Vec::new();
        let mut seen = HashSet::new();
        for l in loops {
            seen.insert(l.id.as_str());
            if l.paused {
                self.next.remove(&l.id);
                continue;
            }
            if let Some(at) = l.at_ms {
                if now_ms >= at && l.last_run_ms.map_or(true, |r| r < at) {
                    due.push(l.id.clone());
                }
                continue;
            }
            let Some(cron) = l.schedule.as_deref().and_then(|s| Cron::parse(s).ok()) else {
                continue;
            };
            let entry = self.next.get(&l.id).filter(|(text, _)| text == cron.text());
            let next = match entry {
                Some((_, n)) => *n,
                None => match cron.next_after(now_ms) {
                    Some(n) => n,
                    None => continue,
                },
            };
            if now_ms >= next {
                due.push(l.id.clone());
                match cron.next_after(now_ms) {
                    Some(n) => self.next.insert(l.id.clone(), (cron.text().into(), n)),
                    None => self.next.remove(&l.id),
                };
            } else {
                self.next.insert(l.id.clone(), (cron.text().into(), next));
            }
        }
        self.next.retain(|id, _| seen.contains(id.as_str()));
        due
    }
}

/// What a run queue runs.
pub type RunFn = Arc<dyn Fn(&str) + Send + Sync>;

/// The run queue and its worker threads.
pub struct Runner {
    tx: crossbeam_channel::Sender<String>,
    busy: Arc<Mutex<HashSet<String>>>,
}

impl Runner {
    /// Starts `workers` threads that run queued loops with `run`.
    pub fn start(workers: usize, run: RunFn) -> Runner {
        let (tx, rx) = crossbeam_channel::unbounded::<String>();
        let busy = Arc::new(Mutex::new(HashSet::new()));
        for i in 0..workers.max(1) {
            let (rx, busy, run) = (rx.clone(), busy.clone(), run.clone());
            let _ = std::thread::Builder::new()
                .name(format!("loop-run-{i}"))
                .spawn(move || {
                    for id in rx {
                        // A run that panics frees its loop and keeps the worker.
                        let ran =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&id)));
                        if ran.is_err() {
                            log::error!("loop {id}: the run panicked");
                        }
                        busy.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                    }
                });
        }
        Runner { tx, busy }
    }

    /// Queues a run of `id`; false when it is already queued or running.
    pub fn trigger(&self, id: &str) -> bool {
        if !self
            .busy
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_string())
        {
            return false;
        }
        self.tx.send(id.to_string()).is_ok()
    }
}

/// The thread that looks at the schedule every `tick` and triggers what is
/// due; it stops when the flag is set.
pub fn start_ticker(
    tick: Duration,
    loops: impl Fn() -> Vec<Loop> + Send + 'static,
    trigger: impl Fn(&str) + Send + 'static,
    stopping: Arc<AtomicBool>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("loop-schedule".into())
        .spawn(move || {
            let mut schedule = Schedule::default();
            while !stopping.load(Ordering::SeqCst) {
                let now = room_core::clock::unix_ms();
                for id in schedule.due(now, &loops()) {
                    trigger(&id);
                }
                std::thread::sleep(tick);
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cron::MINUTE_MS;
    use crate::loops::example;

    /// An injected clock: the minutes from `start`, in steps of `step`.
    fn ticks(start: u64, until: u64, step: u64) -> impl Iterator<Item = u64> {
        (0..)
            .map(move |i| start + i * step)
            .take_while(move |t| *t <= until)
    }

    #[test]
    fn an_every_minute_loop_runs_once_per_minute_from_the_first_boundary() {
        let mut s = Schedule::default();
        let loops = vec![example("l1", "* * * * *")];
        let start = 10 * MINUTE_MS + 30_000; // half a minute in
        let mut runs = Vec::new();
        // Ticks every 7 s for 3.5 minutes.
        for now in ticks(start, start + 210_000, 7_000) {
            for id in s.due(now, &loops) {
                runs.push((id, now));
            }
        }
        let minutes: Vec<u64> = runs.iter().map(|(_, t)| t / MINUTE_MS).collect();
        assert_eq!(minutes, vec![11, 12, 13, 14], "{runs:?}");
        // Each run comes at the first tick at or after its boundary.
        assert!(runs.iter().all(|(_, t)| t % MINUTE_MS < 7_000), "{runs:?}");
    }

    #[test]
    fn steps_pauses_new_schedules_and_late_ticks() {
        let mut s = Schedule::default();
        let mut l = example("l1", "*/5 * * * *");
        assert!(s.due(MINUTE_MS, &[l.clone()]).is_empty());
        assert!(s.due(4 * MINUTE_MS, &[l.clone()]).is_empty());
        assert_eq!(s.due(5 * MINUTE_MS, &[l.clone()]), vec!["l1"]);
        assert!(s.due(5 * MINUTE_MS + 1, &[l.clone()]).is_empty());
        // A tick 12 minutes late runs it once, not once per missed time.
        assert_eq!(s.due(22 * MINUTE_MS, &[l.clone()]), vec!["l1"]);
        assert!(s.due(24 * MINUTE_MS, &[l.clone()]).is_empty());
        // Paused: never due; resumed: from the next boundary after the resume.
        l.paused = true;
        assert!(s.due(25 * MINUTE_MS, &[l.clone()]).is_empty());
        l.paused = false;
        assert!(s.due(31 * MINUTE_MS, &[l.clone()]).is_empty());
        assert_eq!(s.due(35 * MINUTE_MS, &[l.clone()]), vec!["l1"]);
        // A new schedule takes effect at once.
        l.schedule = Some("* * * * *".into());
        assert!(s.due(35 * MINUTE_MS + 10, &[l.clone()]).is_empty());
        assert_eq!(s.due(36 * MINUTE_MS, &[l.clone()]), vec!["l1"]);
        // A deleted loop is forgotten.
        assert!(s.due(37 * MINUTE_MS, &[]).is_empty());
        assert!(s.next.is_empty());
    }

    #[test]
    fn a_one_time_loop_runs_once_its_time_has_come() {
        let mut s = Schedule::default();
        let mut l = example("once", "* * * * *");
        l.schedule = None;
        l.at_ms = Some(90_000);
        assert!(s.due(89_999, &[l.clone()]).is_empty());
        assert_eq!(s.due(90_000, &[l.clone()]), vec!["once"]);
        l.last_run_ms = Some(91_000);
        assert!(s.due(200_000, &[l]).is_empty());
    }

    #[test]
    fn the_queue_runs_a_loop_once_at_a_time() {
        let (gate_tx, gate_rx) = crossbeam_channel::bounded::<()>(0);
        let (ran_tx, ran_rx) = crossbeam_channel::unbounded::<String>();
        let runner = Runner::start(
            2,
            Arc::new(move |id: &str| {
                ran_tx.send(id.to_string()).unwrap();
                gate_rx.recv().unwrap();
            }),
        );
        assert!(runner.trigger("a"));
        assert_eq!(ran_rx.recv_timeout(Duration::from_secs(5)).unwrap(), "a");
        assert!(!runner.trigger("a"), "a is running");
        assert!(runner.trigger("b"));
        assert_eq!(ran_rx.recv_timeout(Duration::from_secs(5)).unwrap(), "b");
        gate_tx.send(()).unwrap();
        gate_tx.send(()).unwrap();
        // Once both finished, a can run again.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !runner.trigger("a") {
            assert!(std::time::Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(ran_rx.recv_timeout(Duration::from_secs(5)).unwrap(), "a");
        gate_tx.send(()).unwrap();
    }
}
