//! `cargo bench --bench service [-- WORD…]`: the service's figures, each
//! measured against the real room-core binary on loopback (`127.0.0.1:0`,
//! a temp folder each, removed after) and printed as it goes, then as one
//! table (figure, setup, median, p99, notes). docs/performance.md explains
//! the figures and what bounds each.
//!
//! Sections, in the order they run (all of them without a word, about 6
//! minutes); each word after `--` runs the sections whose name contains it,
//! so `cargo bench --bench service -- startup` runs the startup section
//! alone:
//! - `lag` (lag.rs): a copy's `ready` written to its harness running, with
//!   the inotify watch and with 250 ms polling, beside up to 10,000 other
//!   waiting starts; the spawn floor under it.
//! - `waiting` (waiting.rs): the CPU and memory 1,000 and 10,000 waiting
//!   starts cost.
//! - `classify` (classify.rs): `classify()` alone, and an agent-socket
//!   request from a caller at depth 10.
//! - `throughput` (throughput.rs): `POST /v1/sessions` from 8 clients.
//! - `startup` (startup.rs, follow_up.rs, sdk.rs, paired.rs and its sides
//!   room_warm.rs, sdk_warm.rs, floor.rs, lines.rs): the real CLIs' and the
//!   fakes' start against the loopback fake model, then follow-up messages
//!   cold through room-core and the Claude Agent SDK (a pinned venv the
//!   bench makes once), and warm to claude in paired rounds: room-core, the
//!   SDK and claude's stdin straight from the bench, all warm at once, one
//!   follow-up each per round in a rotating order, compared on the median
//!   of the rounds' differences.
//! - `spawn` (spawn.rs): one turn's process started four ways.
//! - `hostile` (hostile.rs): `GET /v1/sessions/{id}` alone and beside 200
//!   hostile connections.
//! - `follow` (follow.rs, journal.rs): harness output to an SSE reader, and
//!   journal appends.
//! - `approvals` (approvals.rs): an approval's round trip through the app.
//! - `queue` (queue.rs): `POST …/messages` with 1 and 5,000 prompts waiting.
//! - `lingering` (lingering.rs): threads and RSS with 1,000 harnesses
//!   lingering at once.
//! - `snapshot` (snapshot.rs): the turn-end snapshot of a 10,000-file,
//!   200 MB folder with 10 files changed, beside `git add -A && git
//!   commit -q` of the same change and one `fstatat` per entry (the floor
//!   of any walk that stats every file), and the store's growth per turn.
//!
//! The binary is also what the sections run, so that what is timed is the
//! service and not a fake's interpreter (modes.rs): the service's harness
//! (with `ROOM_BENCH_STAMP_DIR` set) and an agent-socket client (with
//! `ROOM_BENCH_CLIENT` set).
//!
//! `ROOM_BENCH_KEEP=1` keeps each service's temp folder (config, log,
//! state); `ROOM_BENCH_LAG_WATCH_ONLY=1` skips the polling half of the lag
//! section; `ROOM_BENCH_SUPERVISION=process_group` (or `cgroup`) sets every
//! service's `supervision` (default: the service's own choice, `auto`);
//! `ROOM_BENCH_SDK=off` leaves the Claude Agent SDK out of the startup
//! section.

mod approvals;
mod approvals_real;
mod classify;
mod floor;
mod follow;
mod follow_up;
mod hostile;
mod journal;
mod lag;
mod lines;
mod lingering;
mod modes;
mod paired;
mod queue;
mod room_warm;
mod sdk;
mod sdk_warm;
mod service;
mod snapshot;
mod spawn;
mod startup;
mod stats;
mod throughput;
mod waiting;

use std::path::Path;
use std::time::Instant;

use stats::Table;

/// Set to the folder the harnesses stamp into: this binary is the harness.
const STAMP_ENV: &str = "ROOM_BENCH_STAMP_DIR";
/// Set to the agent socket's path: this binary is the agent-socket client.
const CLIENT_ENV: &str = "ROOM_BENCH_CLIENT";
/// How many requests of each kind the agent-socket client times.
const CLIENT_RUNS_ENV: &str = "ROOM_BENCH_RUNS";
/// The API token of every service the bench starts (loopback only).
const TOKEN: &str = "bench-token-not-a-secret";
/// The depth of the agent-socket caller's ancestry (itself up to pid 1).
const DEPTH: usize = 10;

/// Plays the part the environment asks for (modes.rs), or runs the
/// sections the arguments pick and prints the table.
fn main() {
    // The service asks each harness program its version at start, and this
    // binary is its harness: it answers, and runs no bench.
    if std::env::args().nth(1).as_deref() == Some("--version") {
        println!("room-core bench harness");
        return;
    }
    if let Some(dir) = std::env::var_os(STAMP_ENV) {
        modes::harness_mode(Path::new(&dir));
    }
    if let Some(socket) = std::env::var_os(CLIENT_ENV) {
        modes::client_mode(Path::new(&socket));
        return;
    }
    // `cargo bench` passes `--bench`; any other word picks sections.
    let picked: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let run = |name: &str| picked.is_empty() || picked.iter().any(|p| name.contains(p.as_str()));
    let began = Instant::now();
    let mut table = Table::default();
    println!(
        "room-core service bench ({} CPUs; figures from one run)",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    if run("lag") {
        lag::lag(&mut table);
    }
    if run("waiting") {
        waiting::waiting(&mut table);
    }
    if run("classify") {
        classify::classification(&mut table);
    }
    if run("throughput") {
        throughput::throughput(&mut table);
    }
    if run("startup") {
        startup::startup(&mut table);
    }
    if run("spawn") {
        spawn::spawn_cost(&mut table);
    }
    if run("hostile") {
        hostile::hostile(&mut table);
    }
    if run("follow") {
        follow::follow(&mut table);
    }
    if run("approvals") {
        approvals::approval_round_trip(&mut table);
    }
    if run("queue") {
        queue::message_cost(&mut table);
    }
    if run("lingering") {
        lingering::lingering(&mut table);
    }
    if run("snapshot") {
        snapshot::snapshot(&mut table);
    }
    println!();
    table.print();
    println!("\nwhole run: {:.0} s", began.elapsed().as_secs_f64());
}
