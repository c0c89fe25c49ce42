//! Section 5's warm follow-ups to real claude, paired: room-core's
//! lingering session (room_warm.rs), the Claude Agent SDK's client
//! (sdk_warm.rs), claude's own floor (floor.rs) and room-core through the
//! ACP agent claude-agent-acp (room_warm.rs too) are all warm at once,
//! and each round sends follow-up n through each in turn, the order
//! rotated every round, with the same pause before each. Machine noise
//! (other builds on the 2-core VM) then lands on the three sides alike, and
//! each round's differences compare like with like: their median, with an
//! order-statistic 95% interval, is what says whether room-core is within
//! 2 ms of the SDK, which the medians of two runs minutes apart could not.

use std::path::Path;
use std::time::Duration;

use crate::floor::Floor;
use crate::follow_up::{warm_note, PAUSE_MS};
use crate::room_warm::{RoomWarm, INIT};
use crate::sdk_warm::SdkWarm;
use crate::stats::{median_ci, ms, signed_ms, stats, Table};

/// Paired rounds: each times one follow-up on every side.
const ROUNDS: usize = 40;
/// The longest any one follow-up (or a side's first turn) may take on any
/// side; past it the side is skipped with why, the others go on.
pub(crate) const LIMIT: Duration = Duration::from_secs(30);
/// How far over the SDK's median room-core's may be (issue 30's goal).
const GOAL_MS: f64 = 2.0;

/// One follow-up's times, in ms from the send.
pub(crate) struct Sample {
    /// To the turn's first event (`system`/`init`), where the side sees it.
    pub(crate) first_event: Option<f64>,
    /// To the first assistant message.
    pub(crate) assistant: f64,
}

/// One side's warm process.
enum Warm {
    /// room-core's lingering session.
    Room(Box<RoomWarm>),
    /// The SDK's client.
    Sdk(SdkWarm),
    /// claude's stdin straight from the bench.
    Floor(Floor),
}

impl Warm {
    /// Follow-up `n` on this side.
    fn follow_up(&mut self, n: usize) -> Result<Sample, String> {
        match self {
            Warm::Room(w) => w.follow_up(n),
            Warm::Sdk(w) => w.follow_up(n),
            Warm::Floor(w) => w.follow_up(n),
        }
    }
}

/// A side: its process while it works, why not once it failed, and its
/// samples by round (none where it had failed by then).
struct Side {
    /// The warm process, or why the side is skipped.
    warm: Result<Warm, String>,
    /// Round n's sample at n.
    samples: Vec<Option<Sample>>,
}

impl Side {
    /// A side from its start, with no samples yet.
    fn new(warm: Result<Warm, String>) -> Side {
        Side {
            warm,
            samples: Vec::new(),
        }
    }

    /// Round `n`'s follow-up, after the pause; a failure ends the side
    /// (its process is dropped, which ends it) and keeps why.
    fn round(&mut self, n: usize) {
        let Ok(warm) = &mut self.warm else {
            self.samples.push(None);
            return;
        };
        std::thread::sleep(Duration::from_millis(PAUSE_MS));
        let sample = warm.follow_up(n);
        if let Err(why) = &sample {
            println!("  warm follow-up {n} failed: {why}");
            self.warm = Err(format!("{why} (at follow-up {} of {ROUNDS})", n + 1));
        }
        self.samples.push(sample.ok());
    }

    /// Its samples' times to the first assistant message, or why the side
    /// is skipped.
    fn assistant(&self) -> Result<Vec<f64>, String> {
        self.warm.as_ref().map_err(Clone::clone)?;
        Ok(self.samples.iter().flatten().map(|s| s.assistant).collect())
    }

    /// Its samples' times to the turn's first event.
    fn first_event(&self) -> Vec<f64> {
        self.samples
            .iter()
            .flatten()
            .filter_map(|s| s.first_event)
            .collect()
    }
}

/// Runs the paired rounds on `claude` with the section's CLI environment
/// (`root` holds the work folders) and prints each side's rows and the
/// paired differences; `cold` is room-core's cold median to `system/init`,
/// which the warm row's notes compare with.
pub(crate) fn warm_follow_ups(
    table: &mut Table,
    claude: &Path,
    cli_env: &[(String, String)],
    root: &Path,
    cold: Option<f64>,
) {
    println!("  warm follow-ups, {ROUNDS} paired rounds (room-core, the SDK, the floor, room-core through claude-agent-acp)");
    let acp = crate::startup::on_path("claude-agent-acp")
        .ok_or_else(|| "no claude-agent-acp on PATH (.ci/run installs it from npm)".to_string())
        .and_then(|acp| RoomWarm::start_acp(&acp, claude, cli_env));
    let mut sides = [
        Side::new(RoomWarm::start(claude, cli_env).map(|w| Warm::Room(Box::new(w)))),
        Side::new(SdkWarm::start(claude, cli_env, root).map(Warm::Sdk)),
        Side::new(Floor::start(claude, cli_env, root).map(Warm::Floor)),
        Side::new(acp.map(|w| Warm::Room(Box::new(w)))),
    ];
    let version = match &sides[1].warm {
        Ok(Warm::Sdk(sdk)) => sdk.version.clone(),
        _ => crate::sdk::SDK_PIN.to_string(),
    };
    for n in 0..ROUNDS {
        // Rotated so that no side always goes first, or always right
        // after the same one.
        for i in 0..sides.len() {
            sides[(n + i) % sides.len()].round(n);
        }
    }
    let [room, sdk, floor, acp] = &sides;
    rows(table, room, sdk, floor, &version, cold);
    acp_rows(table, acp, room);
    // The processes end here, once every figure is in.
    drop(sides);
}

/// Each side's rows, in the wording the unpaired bench had, then the
/// paired differences.
fn rows(
    table: &mut Table,
    room: &Side,
    sdk: &Side,
    floor: &Side,
    version: &str,
    cold: Option<f64>,
) {
    let what = crate::sdk::WHAT;
    let first_what = "follow-up message to its turn's first event";
    let warm = "real claude, warm (within the linger)";
    let floor_setup = "real claude, warm, straight from the bench (the floor)";
    let room_p50 = match room.assistant() {
        Ok(took) if !took.is_empty() => {
            let (p50, p99) = stats(&room.first_event());
            let note = match cold {
                Some(cold) => warm_note(took.len(), INIT, cold, p50),
                None => format!("{} messages; POST -> {INIT} on the stream", took.len()),
            };
            table.row(first_what, warm, ms(p50), ms(p99), note);
            let (p50, p99) = stats(&took);
            table.row(
                what,
                &format!("{warm}, through room-core"),
                ms(p50),
                ms(p99),
                format!(
                    "{} messages; POST -> the first \"type\":\"assistant\" event on the stream",
                    took.len()
                ),
            );
            Some(p50)
        }
        Ok(_) => None,
        Err(why) => {
            let note = format!("skipped: {why}");
            table.row(
                what,
                &format!("{warm}, through room-core"),
                "skipped".into(),
                "-".into(),
                note,
            );
            None
        }
    };
    match sdk.assistant() {
        Ok(took) if !took.is_empty() => {
            let (p50, p99) = stats(&took);
            table.row(
                what,
                &crate::sdk::setup("warm (one process)", version),
                ms(p50),
                ms(p99),
                format!(
                    "{} messages; client.query() -> the first AssistantMessage{}",
                    took.len(),
                    crate::sdk::against(room_p50, p50)
                ),
            );
        }
        Ok(_) => {}
        Err(why) => crate::sdk::skipped(table, "warm (one process)", why),
    }
    match floor.assistant() {
        Ok(took) if !took.is_empty() => {
            let (p50, p99) = stats(&floor.first_event());
            table.row(
                first_what,
                floor_setup,
                ms(p50),
                ms(p99),
                format!("{} messages; write to its stdin -> system/init on its stdout: claude's own time", took.len()),
            );
            let (p50, p99) = stats(&took);
            table.row(
                what,
                floor_setup,
                ms(p50),
                ms(p99),
                format!("the same {} messages, to the first assistant message on its stdout: claude run with the service's own turn spec, no service", took.len()),
            );
        }
        Ok(_) => {}
        Err(why) => table.row(
            what,
            floor_setup,
            "skipped".into(),
            "-".into(),
            format!("skipped: {why}"),
        ),
    }
    difference(
        table,
        room,
        sdk,
        &format!("the Claude Agent SDK {version}"),
        true,
    );
    difference(table, room, floor, "the floor", false);
}

/// The ACP side's row, and its paired difference with room-core's own
/// claude: what the agent between them costs.
fn acp_rows(table: &mut Table, acp: &Side, room: &Side) {
    let what = crate::sdk::WHAT;
    let setup = "real claude, warm, through room-core and claude-agent-acp (ACP)";
    match acp.assistant() {
        Ok(took) if !took.is_empty() => {
            let (p50, p99) = stats(&took);
            let note = format!(
                "{} messages; POST -> the first agent_message_chunk on the stream",
                took.len()
            );
            table.row(what, setup, ms(p50), ms(p99), note);
        }
        Ok(_) => {}
        Err(why) => table.row(
            what,
            setup,
            "skipped".into(),
            "-".into(),
            format!("skipped: {why}"),
        ),
    }
    let setup = "real claude, room-core through claude-agent-acp minus room-core's own";
    paired(table, acp, room, setup, false);
}

/// The row of the median of room-core's paired differences with `other`
/// (its time minus the other's, round by round, where both have one), its
/// 95% interval, and, against the SDK (`goal`), whether the 2 ms goal holds.
fn difference(table: &mut Table, room: &Side, other: &Side, name: &str, goal: bool) {
    let setup = format!("real claude, room-core minus {name}");
    paired(table, room, other, &setup, goal);
}

/// The row of the median of `room`'s paired differences with `other`
/// (`setup` names them), as [`difference`] says.
fn paired(table: &mut Table, room: &Side, other: &Side, setup: &str, goal: bool) {
    let what = "warm follow-up to its first assistant message, paired difference";
    if let Err(why) = room.assistant().and(other.assistant()) {
        table.row(
            what,
            setup,
            "skipped".into(),
            "-".into(),
            format!("skipped: {why}"),
        );
        return;
    }
    let diffs: Vec<f64> = room
        .samples
        .iter()
        .zip(&other.samples)
        .filter_map(|(r, o)| Some(r.as_ref()?.assistant - o.as_ref()?.assistant))
        .collect();
    let Some(ci) = median_ci(&diffs) else {
        let note = format!("skipped: {} pairs, too few for an interval", diffs.len());
        table.row(what, setup, "skipped".into(), "-".into(), note);
        return;
    };
    // The goal holds only where the whole interval says so; an interval
    // that holds +2 ms leaves it undecided, whichever side the median is.
    let verdict = if !goal {
        String::new()
    } else if ci.high <= GOAL_MS {
        format!("; goal within {GOAL_MS} ms of the SDK on the median: holds (the interval is at or under +{GOAL_MS} ms)")
    } else if ci.low > GOAL_MS {
        format!("; goal within {GOAL_MS} ms of the SDK on the median: not met (the interval is above +{GOAL_MS} ms)")
    } else {
        let median = if ci.median <= GOAL_MS {
            "within"
        } else {
            "over"
        };
        format!("; goal within {GOAL_MS} ms of the SDK on the median: undecided (the median is {median} it, the interval holds +{GOAL_MS} ms)")
    };
    table.row(
        what,
        setup,
        signed_ms(ci.median),
        "-".into(),
        format!(
            "{} rounds, order rotated; median of the differences, 95% interval [{}, {}] (order statistics {} and {}, coverage {:.1}%){verdict}",
            diffs.len(),
            signed_ms(ci.low),
            signed_ms(ci.high),
            ci.ranks.0,
            ci.ranks.1,
            ci.coverage * 100.0
        ),
    );
}
