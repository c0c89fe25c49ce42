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
        (
            "harness failed",
            100,
            Input::HarnessFailed("exec failed".into()),
        ),
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
    let cases: Vec<(&str, Vec<ProcView>)> = vec![
        (
            "a harness above, no marker",
            vec![
                proc(30, None, marker(None)),
                proc(20, Some("cr_a"), marker(None)),
            ],
        ),
        (
            "a marker nearer than a harness",
            vec![
                proc(30, None, marker(Some(ID))),
                proc(20, Some("cr_a"), marker(None)),
            ],
        ),
        (
            "a valid marker on the parent (caller ran under env -i)",
            vec![
                proc(30, None, marker(None)),
                proc(20, None, marker(Some(ID))),
            ],
        ),
        (
            "a malformed marker nearer than a valid one",
            vec![
                proc(30, None, marker(Some("abc"))),
                proc(20, None, marker(Some(ID))),
            ],
        ),
        ("an empty marker", vec![proc(30, None, marker(Some("")))]),
        (
            "a hidden environment and a readable marker",
            vec![
                proc(30, None, EnvView::Hidden),
                proc(20, None, marker(Some(ID))),
            ],
        ),
        (
            "the caller's own environment hidden, no marker",
            vec![
                proc(30, None, EnvView::Hidden),
                proc(1, None, EnvView::Hidden),
            ],
        ),
        (
            "only an ancestor's environment hidden (root's pid 1), no marker",
            vec![proc(30, None, marker(None)), proc(1, None, EnvView::Hidden)],
        ),
        (
            "no harness, no marker",
            vec![proc(30, None, marker(None)), proc(1, None, marker(None))],
        ),
    ];
    let mut out = String::from("| ancestry (nearest first) | caller |\n|---|---|\n");
    for (name, ancestry) in cases {
        out.push_str(&format!("| {name} | `{:?}` |\n", classify(&ancestry)));
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
