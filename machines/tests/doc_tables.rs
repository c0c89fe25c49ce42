//! docs/machines.md holds each machine's transition table between
//! `<!-- table:NAME -->` and `<!-- /table:NAME -->`. This test renders the
//! tables from the code and fails when the doc differs, so the doc cannot
//! drift. `UPDATE_DOCS=1 cargo test -p room-machines --test doc_tables`
//! rewrites the doc from the code.

use std::path::PathBuf;

use room_machines::caller::{classify, EnvView, ProcView};
use room_machines::command::Command;
use room_machines::copy::{CopyMark, Observation};
use room_machines::launch::{Config, Effect, Input, Launch, Outcome, Plan};
use room_machines::policy::{decide, Decision};
use room_machines::Millis;

const MIN: Millis = 60_000;

fn copying(age: Millis) -> Input {
    Input::Observed(Observation::marked(CopyMark::Copying, age))
}

/// A named way to reach a state: a plan and the inputs (at ms) that lead there.
/// A state's name, its plan, and the timed inputs that reach it.
type Situation = (&'static str, Plan, Vec<(Millis, Input)>);

fn situations() -> Vec<Situation> {
    let promised = Plan {
        promised: true,
        relaunch: false,
    };
    let blank = Plan::default();
    let relaunch = Plan {
        promised: false,
        relaunch: true,
    };
    let missing = Input::Observed(Observation::missing());
    vec![
        ("checking, promised", promised, vec![]),
        ("checking, unpromised", blank, vec![]),
        (
            "waiting on a missing mark (promised)",
            promised,
            vec![(0, missing.clone())],
        ),
        (
            "waiting on copying, promised",
            promised,
            vec![(0, copying(0))],
        ),
        (
            "waiting on copying, unpromised",
            blank,
            vec![(0, copying(0))],
        ),
        (
            "waiting on a missing mark (promised), watched",
            promised,
            vec![(0, Input::Watched(true)), (0, missing.clone())],
        ),
        (
            "waiting on copying 4 min old, unpromised, watched",
            blank,
            vec![(0, Input::Watched(true)), (0, copying(4 * MIN))],
        ),
        ("awaiting permit", blank, vec![(0, missing.clone())]),
        ("awaiting permit (relaunch)", relaunch, vec![]),
        (
            "starting",
            blank,
            vec![(0, missing.clone()), (1, Input::PermitGranted)],
        ),
        (
            "started",
            blank,
            vec![
                (0, missing.clone()),
                (1, Input::PermitGranted),
                (
                    2,
                    Input::HarnessStarted {
                        native_id: Some("n1".into()),
                    },
                ),
            ],
        ),
        (
            "closed, permit still asked",
            blank,
            vec![(0, missing.clone()), (1, Input::Close)],
        ),
        ("closed", promised, vec![(0, copying(0)), (1, Input::Close)]),
        (
            "ended (service stop)",
            promised,
            vec![(0, copying(0)), (1, Input::ServiceStop)],
        ),
    ]
}

/// The inputs tried in every state, with when they come (ms after the launch began).
fn probes() -> Vec<(&'static str, Millis, Input)> {
    vec![
        (
            "observed: no file",
            100,
            Input::Observed(Observation::missing()),
        ),
        (
            "observed: malformed file",
            100,
            Input::Observed(Observation::from_file(b"copy", 0)),
        ),
        ("observed: copying, 1 min old", 100, copying(MIN)),
        ("observed: copying, 6 min old", 100, copying(6 * MIN)),
        (
            "observed: ready",
            100,
            Input::Observed(Observation::marked(CopyMark::Ready, 0)),
        ),
        (
            "observed: failed: disk full",
            100,
            Input::Observed(Observation::marked(CopyMark::Failed("disk full".into()), 0)),
        ),
        (
            "observed: failed (no reason)",
            100,
            Input::Observed(Observation::from_file(b"failed", 0)),
        ),
        (
            "observed: copying, dated 2 min ahead",
            100,
            Input::Observed(Observation::marked(CopyMark::Copying, 0).dated_ahead(2 * MIN)),
        ),
        ("changed (watch event)", 100, Input::Changed),
        ("watched (watch armed)", 100, Input::Watched(true)),
        ("watch lost or failed", 100, Input::Watched(false)),
        ("timeout before the next poll", 100, Input::Timeout),
        ("timeout at the next poll", 250, Input::Timeout),
        (
            "timeout at 60001 ms (a 4-min-old mark turns 5 min old)",
            MIN + 1,
            Input::Timeout,
        ),
        ("timeout at the 5-min limit", 5 * MIN, Input::Timeout),
        ("observed: copying, at the limit", 5 * MIN, copying(0)),
        ("stop", 100, Input::Stop),
        ("close", 100, Input::Close),
        ("service stop", 100, Input::ServiceStop),
        ("permit granted", 100, Input::PermitGranted),
        (
            "harness started",
            100,
            Input::HarnessStarted {
                native_id: Some("n1".into()),
            },
        ),
        ("harness failed", 100, Input::HarnessFailed),
    ]
}

fn effects(l: &mut Launch) -> Vec<Effect> {
    std::iter::from_fn(|| l.poll_effect()).collect()
}

fn launch_table() -> String {
    let mut out = String::from("| state | input | next phase | effects |\n|---|---|---|---|\n");
    for (name, plan, setup) in situations() {
        let mut base = Launch::new(Config::default(), plan, 0);
        for (at, input) in setup {
            base.handle(at, input);
        }
        effects(&mut base);
        let mut ignored = Vec::new();
        for (probe, at, input) in probes() {
            let mut l = base.clone();
            match l.handle(at, input) {
                Outcome::Ignored => ignored.push(probe),
                Outcome::Applied => {
                    let e: Vec<String> =
                        effects(&mut l).iter().map(|e| format!("`{e:?}`")).collect();
                    out.push_str(&format!(
                        "| {name} | {probe} | `{:?}` | {} |\n",
                        l.state().phase,
                        if e.is_empty() {
                            "—".to_string()
                        } else {
                            e.join(", ")
                        }
                    ));
                }
            }
        }
        if !ignored.is_empty() {
            out.push_str(&format!(
                "| {name} | ignored: {} | unchanged | — |\n",
                ignored.join("; ")
            ));
        }
    }
    out
}

fn proc(pid: u32, harness: Option<&str>, env: EnvView) -> ProcView {
    ProcView {
        pid,
        harness: harness.map(String::from),
        env,
    }
}

fn marker(m: Option<&str>) -> EnvView {
    EnvView::Readable {
        loop_marker: m.map(String::from),
    }
}

const ID: &str = "0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b";

fn caller_table() -> String {
    let cases: Vec<(&str, Option<&str>, Vec<ProcView>)> = vec![
        (
            "in turn cr_b's cgroup, a double fork (no harness above) with a valid marker",
            Some("cr_b"),
            vec![proc(30, None, marker(Some(ID)))],
        ),
        (
            "in turn cr_b's cgroup, under cr_a's harness",
            Some("cr_b"),
            vec![
                proc(30, None, marker(None)),
                proc(20, Some("cr_a"), marker(None)),
            ],
        ),
        (
            "a harness above, no marker",
            None,
            vec![
                proc(30, None, marker(None)),
                proc(20, Some("cr_a"), marker(None)),
            ],
        ),
        (
            "a marker nearer than a harness",
            None,
            vec![
                proc(30, None, marker(Some(ID))),
                proc(20, Some("cr_a"), marker(None)),
            ],
        ),
        (
            "a valid marker on the parent (caller ran under env -i)",
            None,
            vec![
                proc(30, None, marker(None)),
                proc(20, None, marker(Some(ID))),
            ],
        ),
        (
            "a malformed marker nearer than a valid one",
            None,
            vec![
                proc(30, None, marker(Some("abc"))),
                proc(20, None, marker(Some(ID))),
            ],
        ),
        (
            "an empty marker",
            None,
            vec![proc(30, None, marker(Some("")))],
        ),
        (
            "a hidden environment and a readable marker",
            None,
            vec![
                proc(30, None, EnvView::Hidden),
                proc(20, None, marker(Some(ID))),
            ],
        ),
        (
            "the caller's own environment hidden, no marker",
            None,
            vec![
                proc(30, None, EnvView::Hidden),
                proc(1, None, EnvView::Hidden),
            ],
        ),
        (
            "only an ancestor's environment hidden (root's pid 1), no marker",
            None,
            vec![proc(30, None, marker(None)), proc(1, None, EnvView::Hidden)],
        ),
        (
            "no harness, no marker",
            None,
            vec![proc(30, None, marker(None)), proc(1, None, marker(None))],
        ),
        (
            "a marker only on pid 1 (a container's init)",
            None,
            vec![
                proc(30, None, marker(None)),
                proc(1, None, marker(Some(ID))),
            ],
        ),
    ];
    let mut out =
        String::from("| turn cgroup and ancestry (nearest first) | caller |\n|---|---|\n");
    for (name, turn_cgroup, ancestry) in cases {
        out.push_str(&format!(
            "| {name} | `{:?}` |\n",
            classify(turn_cgroup, &ancestry)
        ));
    }
    out
}

fn policy_table() -> String {
    use room_machines::caller::Caller;
    let callers = [
        Caller::Harness("cr_a".into()),
        Caller::Loop(ID.into()),
        Caller::Malformed("abc".into()),
        Caller::Hidden,
        Caller::Unknown,
    ];
    let commands: [&[&str]; 9] = [
        &["loop", "list"],
        &["loop", "report", "done"],
        &["thread", "spawn", "--top-level", "p"],
        &["thread", "spawn", "p"],
        &["thread", "spawn", "--shared-sandbox", "p"],
        &["thread", "list"],
        &["fork"],
        &["secret", "API_KEY"],
        &["files", "wait"],
    ];
    let mut out = String::from("| caller | command | decision |\n|---|---|---|\n");
    for caller in &callers {
        for argv in commands {
            let cmd = Command::parse(argv).unwrap().command().unwrap();
            let d = match decide(caller, &cmd) {
                Decision::Forward(scope) => format!("forward `{:?}`", scope),
                Decision::Refuse { message, exit_code } => {
                    format!("refuse, exit {exit_code}: {message}")
                }
                Decision::Local => "room-cli runs it itself".to_string(),
            };
            out.push_str(&format!("| `{caller:?}` | `{}` | {d} |\n", argv.join(" ")));
        }
    }
    out
}

fn files_wait_table() -> String {
    use room_machines::files_wait::{verdict, FILES_WAIT_GRACE, FILES_WAIT_LIMIT};
    let files: [(&str, Observation); 5] = [
        ("missing", Observation::missing()),
        ("malformed", Observation::from_file(b"copy", 0)),
        ("copying", Observation::marked(CopyMark::Copying, 0)),
        ("ready", Observation::marked(CopyMark::Ready, 0)),
        (
            "failed: disk full",
            Observation::marked(CopyMark::Failed("disk full".into()), 0),
        ),
    ];
    let mut out = String::from(
        "| status file | folder | at 0 | at 10 s (grace) | at 10 min (limit) |\n|---|---|---|---|---|\n",
    );
    for (name, o) in &files {
        for (folder, looks_empty) in [("looks empty", true), ("has files", false)] {
            let v: Vec<String> = [0, FILES_WAIT_GRACE, FILES_WAIT_LIMIT]
                .iter()
                .map(|at| {
                    format!(
                        "`{:?}`",
                        verdict(o, looks_empty, *at, FILES_WAIT_GRACE, FILES_WAIT_LIMIT)
                    )
                })
                .collect();
            out.push_str(&format!("| {name} | {folder} | {} |\n", v.join(" | ")));
        }
    }
    out
}

fn usage_table() -> String {
    let argvs: [&[&str]; 5] = [
        &["thread", "spawn", "--top-level=false", "p"],
        &["loop", "create", "--new-thread=true"],
        &["thread", "spawn", "--top-level", "--shared-sandbox", "p"],
        &["loop", "list", "--session", "cr_other"],
        &["status"],
    ];
    let mut out = String::from("| argv | room-cli and Core answer |\n|---|---|\n");
    for argv in argvs {
        let answer = match Command::parse(argv) {
            Err(e) => format!("exit 2: {e}"),
            Ok(p) => format!("`{p:?}`"),
        };
        out.push_str(&format!("| `{}` | {answer} |\n", argv.join(" ")));
    }
    out
}

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/machines.md")
}

fn splice(doc: &str, name: &str, table: &str) -> Result<String, String> {
    let open = format!("<!-- table:{name} -->\n");
    let close = format!("<!-- /table:{name} -->");
    let start = doc
        .find(&open)
        .ok_or(format!("docs/machines.md lacks {open}"))?
        + open.len();
    let end = doc[start..]
        .find(&close)
        .ok_or(format!("docs/machines.md lacks {close}"))?
        + start;
    Ok(format!("{}{}{}", &doc[..start], table, &doc[end..]))
}

#[test]
fn the_transition_tables_in_the_doc_match_the_code() {
    let doc = std::fs::read_to_string(doc_path()).expect("docs/machines.md exists");
    let mut want = doc.clone();
    for (name, table) in [
        ("launch", launch_table()),
        ("caller", caller_table()),
        ("policy", policy_table()),
        ("usage", usage_table()),
        ("files_wait", files_wait_table()),
        ("session", session_table()),
        ("session-restore", session_restore_table()),
    ] {
        want = splice(&want, name, &table).unwrap();
    }
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(doc_path(), &want).unwrap();
        return;
    }
    if want != doc {
        let first = want
            .lines()
            .zip(doc.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "docs/machines.md differs from the code at line {}:\n doc:  {}\n code: {}\nRun UPDATE_DOCS=1 cargo test -p room-machines --test doc_tables after checking the change is meant.",
            first + 1,
            doc.lines().nth(first).unwrap_or(""),
            want.lines().nth(first).unwrap_or("")
        );
    }
}

// ---- the session machine (machines/src/session/) ----

use room_machines::session::{
    self as session, Exit, LaunchInput, Process, Record, RelaunchMode, Session, Stage, Turn,
};

const PROCESS: Process = Process {
    pid: 4242,
    pgid: 4242,
    start_time: 99,
};

fn session_options(promised: bool) -> session::Options {
    session::Options {
        promised,
        plan_only: false,
        approvals: session::ApprovalMode::App,
        budget: Default::default(),
        choice: Default::default(),
        effort_at_spawn: false,
        auto_allows: false,
    }
}

/// The current turn's number, or 1 when there is none (so a probe for a
/// turn still has one to name).
fn current_turn(s: &Session) -> u64 {
    s.record().turn.as_ref().map_or(1, |t| t.seq)
}

/// Session situations: a name, whether the start promised a copy, its
/// first prompt, and the timed inputs that reach it from `Session::new`
/// (a `None` input is a kill -9 and restart at that time).
type SessionSituation = (&'static str, bool, Vec<(Millis, Option<session::Input>)>);

fn session_situations() -> Vec<SessionSituation> {
    use session::Input as I;
    let l = |i: LaunchInput| Some(I::Launch(i));
    let missing = || l(LaunchInput::Observed(Observation::missing()));
    let spawned = |seq| {
        Some(I::TurnSpawned {
            seq,
            process: PROCESS,
        })
    };
    let first_turn = || {
        vec![
            (0, missing()),
            (1, l(LaunchInput::PermitGranted)),
            (2, spawned(1)),
        ]
    };
    let idle = || {
        let mut v = first_turn();
        v.extend([
            (
                3,
                Some(I::NativeId {
                    seq: 1,
                    native_id: "n1".into(),
                }),
            ),
            (
                4,
                Some(I::TurnEnded {
                    seq: 1,
                    exit: Exit::Code(0),
                    detail: String::new(),
                }),
            ),
        ]);
        v
    };
    let reported = |seq| {
        Some(I::NativeId {
            seq,
            native_id: "n1".into(),
        })
    };
    let running = || {
        let mut v = idle();
        v.extend([(5, Some(I::message("two".into()))), (6, spawned(2))]);
        v
    };
    let with = |mut v: Vec<(Millis, Option<session::Input>)>,
                more: Vec<(Millis, Option<session::Input>)>| {
        v.extend(more);
        v
    };
    vec![
        ("waiting for a promised copy", true, vec![(0, missing())]),
        ("queued for a permit", false, vec![(0, missing())]),
        (
            "first turn asked for",
            false,
            vec![(0, missing()), (1, l(LaunchInput::PermitGranted))],
        ),
        ("first turn running, not named yet", false, first_turn()),
        ("idle", false, idle()),
        (
            "idle, paused",
            false,
            with(idle(), vec![(5, Some(I::Stop))]),
        ),
        ("running", false, running()),
        (
            "running, its harness reported in",
            false,
            with(
                running(),
                vec![(
                    7,
                    Some(I::NativeId {
                        seq: 2,
                        native_id: "n1".into(),
                    }),
                )],
            ),
        ),
        (
            "running, stopped (SIGTERM sent)",
            false,
            with(running(), vec![(7, Some(I::Stop))]),
        ),
        (
            "its harness exited, what it left got SIGKILL",
            false,
            with(
                running(),
                vec![
                    (7, Some(I::LeftBehind { seq: 2 })),
                    (session::KILL_GRACE + 7, Some(I::Timeout)),
                ],
            ),
        ),
        (
            "turn done, its process lingers",
            false,
            with(
                running(),
                vec![
                    (7, reported(2)),
                    (
                        8,
                        Some(I::TurnFinished {
                            seq: 2,
                            failed: None,
                            usage: None,
                        }),
                    ),
                ],
            ),
        ),
        (
            "running, interrupt asked",
            false,
            with(running(), vec![(7, reported(2)), (8, Some(I::Interrupt))]),
        ),
        (
            "relaunching (wake)",
            false,
            with(idle(), vec![(5, Some(I::Relaunch(RelaunchMode::Wake)))]),
        ),
        (
            "restored with a recorded turn",
            false,
            with(running(), vec![(10, None)]),
        ),
        (
            "failed: startup timeout, turn being killed",
            false,
            with(first_turn(), vec![(120_001, Some(I::Timeout))]),
        ),
        (
            "failed: the first turn could not be spawned",
            false,
            vec![
                (0, missing()),
                (1, l(LaunchInput::PermitGranted)),
                (
                    2,
                    Some(I::SpawnFailed {
                        seq: 1,
                        reason: "E2BIG".into(),
                    }),
                ),
            ],
        ),
        ("closed", false, with(idle(), vec![(5, Some(I::Close))])),
        (
            "service stopping, turn being cut",
            false,
            with(running(), vec![(7, Some(I::ServiceStop))]),
        ),
    ]
}

/// The probes tried in every session situation, 100 ms after it was
/// reached; a timeout probe comes at the situation's next deadline.
type SessionProbe = (&'static str, fn(&Session) -> session::Input);

fn session_probes() -> Vec<SessionProbe> {
    use session::Input as I;
    vec![
        ("message", |_| I::message("hi".into())),
        ("steer", |_| I::Steer("hi".into())),
        ("stop", |_| I::Stop),
        ("interrupt", |_| I::Interrupt),
        ("resume", |_| I::Resume),
        ("close", |_| I::Close),
        ("relaunch resume", |_| I::Relaunch(RelaunchMode::Resume)),
        ("relaunch wake", |_| I::Relaunch(RelaunchMode::Wake)),
        ("relaunch restart", |_| I::Relaunch(RelaunchMode::Restart)),
        ("service stop", |_| I::ServiceStop),
        ("permit granted", |_| I::Launch(LaunchInput::PermitGranted)),
        ("observed: ready", |_| {
            I::Launch(LaunchInput::Observed(Observation::marked(
                CopyMark::Ready,
                0,
            )))
        }),
        ("turn spawned", |s| I::TurnSpawned {
            seq: current_turn(s),
            process: PROCESS,
        }),
        ("spawn failed", |s| I::SpawnFailed {
            seq: current_turn(s),
            reason: "E2BIG".into(),
        }),
        ("native ID", |s| I::NativeId {
            seq: current_turn(s),
            native_id: "n1".into(),
        }),
        ("turn finished (its harness says)", |s| I::TurnFinished {
            seq: current_turn(s),
            failed: None,
            usage: None,
        }),
        ("turn failed (its harness says)", |s| I::TurnFinished {
            seq: current_turn(s),
            failed: Some("boom".into()),
            usage: None,
        }),
        ("steer undelivered", |s| I::SteerUndelivered {
            seq: current_turn(s),
            prompt: 9,
            text: "hi".into(),
        }),
        ("prompt undelivered", |s| I::PromptUndelivered {
            seq: current_turn(s),
            error: "ENOSPC".into(),
        }),
        ("persist failed", |_| I::PersistFailed {
            error: "ENOSPC".into(),
        }),
        ("approval requested", |s| I::ApprovalRequested {
            seq: current_turn(s),
            request: session::ApprovalRequest {
                harness_ref: "q1".into(),
                tool: "Bash".into(),
                input: "{}".into(),
                reason: None,
            },
        }),
        ("approval 1 allowed", |_| I::ApprovalDecided {
            id: 1,
            decision: session::Decision::Allow,
            message: None,
        }),
        ("turn usage (its own figures)", |s| I::TurnUsage {
            seq: current_turn(s),
            report: session::UsageReport::Turn(usage()),
        }),
        ("turn usage (a running total)", |s| I::TurnUsage {
            seq: current_turn(s),
            report: session::UsageReport::Total(usage()),
        }),
        ("turn ended, exit 0", |s| I::TurnEnded {
            seq: current_turn(s),
            exit: Exit::Code(0),
            detail: String::new(),
        }),
        ("turn ended, exit 1", |s| I::TurnEnded {
            seq: current_turn(s),
            exit: Exit::Code(1),
            detail: "boom".into(),
        }),
        ("left behind (its harness exited)", |s| I::LeftBehind {
            seq: current_turn(s),
        }),
        ("survivor gone", |s| I::SurvivorGone {
            seq: current_turn(s),
        }),
        ("output capped", |s| I::OutputCapped {
            seq: current_turn(s),
            cap: session::JournalCap::Bytes(256 << 20),
        }),
        ("timeout", |_| I::Timeout),
    ]
}

/// The figures a usage probe reports.
fn usage() -> session::Usage {
    session::Usage {
        input_tokens: 10,
        output_tokens: 5,
        cache_read_tokens: 3,
        cache_write_tokens: 7,
        cost_usd: None,
    }
}

/// Builds a situation; returns the session and the time it was reached.
fn reach(promised: bool, steps: Vec<(Millis, Option<session::Input>)>) -> (Session, Millis) {
    let config = session::Config::default();
    let mut s = Session::new(config, session_options(promised), Some("one".into()), 0);
    let mut now = 0;
    for (at, input) in steps {
        now = at;
        match input {
            Some(input) => {
                s.handle(at, input);
            }
            None => {
                let record = s.record().clone();
                s = Session::restore(config, session_options(promised), record, at);
            }
        }
        while s.poll_effect().is_some() {}
    }
    while s.poll_effect().is_some() {}
    (s, now)
}

/// One effect, short: events by their journal kind (errors with their text).
fn session_effect(e: &session::Effect) -> String {
    use session::{Effect as E, Event};
    match e {
        E::Emit(Event::Error { failure }) => format!("error: `{failure:?}`"),
        E::Emit(Event::State { state }) => format!("state → `{state:?}`"),
        E::Emit(ev) => {
            let v = serde_json::to_value(ev).unwrap();
            format!("event `{}`", v["kind"].as_str().unwrap())
        }
        E::SpawnTurn {
            seq,
            resume,
            plan_only,
            ..
        } => format!("`SpawnTurn {{ seq: {seq}, resume: {resume:?}, plan_only: {plan_only} }}`"),
        E::KillSurvivor { seq, .. } => format!("`KillSurvivor {{ seq: {seq} }}`"),
        E::PersistPrompt(p) => format!("`PersistPrompt {{ prompt: {} }}`", p.id),
        other => format!("`{other:?}`"),
    }
}

/// The session's state, short: what the app sees, then the record.
fn session_state(s: &Session) -> String {
    let r = s.record();
    let mut parts = vec![format!("`{:?}`", s.shown()), format!("{:?}", r.stage)];
    if let Some(t) = &r.turn {
        let mut turn = format!("turn {}", t.seq);
        if t.process().is_none() {
            turn.push_str(" asked for");
        }
        if t.finished() {
            turn.push_str(" done, lingering");
        }
        if let Some(why) = t.ending {
            turn.push_str(&format!(" ending ({why:?})"));
        }
        if s.state().survivor {
            turn.push_str(" (survivor check)");
        }
        parts.push(turn);
    }
    parts.push(format!("queue {}", r.queue.len()));
    if r.paused {
        parts.push("paused".into());
    }
    parts.join(" · ")
}

fn session_table() -> String {
    let mut out =
        String::from("| situation | input | next state | effects, in order |\n|---|---|---|---|\n");
    for (name, promised, steps) in session_situations() {
        let (base, at) = reach(promised, steps);
        let mut ignored = Vec::new();
        for (probe, make) in session_probes() {
            let mut s = base.clone();
            let input = make(&s);
            let (when, label) = match (&input, s.poll_timeout()) {
                (session::Input::Timeout, Some((due, timer))) => {
                    (due, format!("timeout ({timer:?} due)"))
                }
                _ => (at + 100, probe.to_string()),
            };
            match s.handle(when, input) {
                session::Outcome::Ignored => ignored.push(label),
                session::Outcome::Refused(why) => {
                    out.push_str(&format!("| {name} | {label} | refused: `{why:?}` | — |\n"))
                }
                session::Outcome::Applied => out.push_str(&format!(
                    "| {name} | {label} | {} | {} |\n",
                    session_state(&s),
                    session_effects(&mut s)
                )),
            }
        }
        if !ignored.is_empty() {
            out.push_str(&format!(
                "| {name} | ignored: {} | unchanged | — |\n",
                ignored.join("; ")
            ));
        }
    }
    out
}

/// Drains a session's effects into one table cell.
fn session_effects(s: &mut Session) -> String {
    let e: Vec<String> = std::iter::from_fn(|| s.poll_effect())
        .map(|e| session_effect(&e))
        .collect();
    if e.is_empty() {
        "—".into()
    } else {
        e.join(", ")
    }
}

/// What a restart does with each kind of record: the effects of
/// `Session::restore`, and of `SurvivorGone` when it asked for one.
fn session_restore_table() -> String {
    let turn = |seq, spawned: bool, reported, ending| Turn {
        seq,
        prompt: session::Prompt {
            id: seq,
            text: "p".into(),
            choice: Default::default(),
            attachments: Vec::new(),
        },
        launch: false,
        warm: false,
        phase: match spawned {
            false => session::Phase::Asked,
            true => session::Phase::Prompted(session::Run {
                named: reported,
                ..session::Run::new(PROCESS)
            }),
        },
        ending,
    };
    let record = |stage, t: Option<Turn>| Record {
        stage,
        budget: Default::default(),
        native_id: (stage != Stage::Starting).then(|| "n1".into()),
        queue: [session::Prompt {
            id: 9,
            text: "queued".into(),
            choice: Default::default(),
            attachments: Vec::new(),
        }]
        .into(),
        paused: false,
        turn: t,
        error: None,
        pending_approvals: Vec::new(),
        next_approval: 1,
        next_prompt: 10,
        next_turn: 3,
        usage: session::Usage::default(),
        native_total: None,
        retrying: None,
        chosen: Default::default(),
        cut: None,
    };
    let first = |mut t: Turn| {
        t.launch = true;
        t
    };
    let cases: Vec<(&str, bool, Record)> = vec![
        (
            "a start that had not started",
            true,
            record(Stage::Starting, None),
        ),
        (
            "a start whose first turn was asked for, not spawned",
            true,
            record(Stage::Starting, Some(first(turn(1, false, false, None)))),
        ),
        (
            "a start whose first turn was running",
            true,
            record(Stage::Starting, Some(first(turn(1, true, false, None)))),
        ),
        ("started, idle", true, record(Stage::Started, None)),
        (
            "started, a turn running that never reported in",
            false,
            record(Stage::Started, Some(turn(2, true, false, None))),
        ),
        (
            "started, a turn running that reported in",
            false,
            record(Stage::Started, Some(turn(2, true, true, None))),
        ),
        (
            "started, a turn cut by a service stop, not reported in",
            false,
            record(
                Stage::Started,
                Some(turn(2, true, false, Some(session::EndWhy::ServiceStop))),
            ),
        ),
        ("started, paused, a turn being stopped", false, {
            let mut r = record(
                Stage::Started,
                Some(turn(2, true, false, Some(session::EndWhy::Stop))),
            );
            r.paused = true;
            r
        }),
        (
            "failed by the startup timeout, its turn being killed",
            false,
            record(
                Stage::Failed,
                Some(first(turn(
                    1,
                    true,
                    false,
                    Some(session::EndWhy::StartupTimeout),
                ))),
            ),
        ),
        ("closed", false, record(Stage::Closed, None)),
    ];
    let mut out = String::from(
        "| record | restore emits | then `SurvivorGone` emits | state after |\n|---|---|---|---|\n",
    );
    for (name, promised, rec) in cases {
        let mut s = Session::restore(
            session::Config::default(),
            session_options(promised),
            rec,
            1_000,
        );
        let restored = session_effects(&mut s);
        let gone = if s.state().survivor {
            let seq = current_turn(&s);
            s.handle(1_001, session::Input::SurvivorGone { seq });
            session_effects(&mut s)
        } else {
            "—".to_string()
        };
        out.push_str(&format!(
            "| {name} | {restored} | {gone} | {} |\n",
            session_state(&s)
        ));
    }
    out
}
