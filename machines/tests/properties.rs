//! Property tests over random input sequences: the launch rules of seed 000
//! and the caller/policy rules of seed 001 hold whatever order things happen in.

use proptest::prelude::*;
use room_machines::caller::{classify, Caller, EnvView, ProcView};
use room_machines::command::{Command, Group, ParseError, GROUPS};
use room_machines::copy::{CopyMark, Observation};
use room_machines::files_wait::{verdict, Verdict, FILES_WAIT_GRACE, FILES_WAIT_LIMIT};
use room_machines::launch::{holds, Config, Effect, Input, Launch, Outcome, Phase, Plan};
use room_machines::policy::{decide, Decision, Scope, SECRET};
use room_machines::Millis;

const LIMIT: Millis = 300_000;

fn observation() -> impl Strategy<Value = Observation> {
    let age = 0..2 * LIMIT;
    prop_oneof![
        Just(Observation::missing()),
        age.clone()
            .prop_map(|a| Observation::marked(CopyMark::Copying, a)),
        age.clone()
            .prop_map(|a| Observation::marked(CopyMark::Ready, a)),
        age.clone()
            .prop_map(|a| Observation::marked(CopyMark::Failed("boom".into()), a)),
        age.prop_map(|a| Observation::from_file(b"garbage", a)),
    ]
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        4 => observation().prop_map(Input::Observed),
        1 => Just(Input::Changed),
        4 => Just(Input::Timeout),
        1 => Just(Input::Stop),
        1 => Just(Input::Close),
        1 => Just(Input::ServiceStop),
        2 => Just(Input::PermitGranted),
        1 => Just(Input::HarnessStarted { native_id: Some("n1".into()) }),
        1 => Just(Input::HarnessFailed("spawn failed".into())),
    ]
}

fn plan() -> impl Strategy<Value = Plan> {
    (any::<bool>(), any::<bool>()).prop_map(|(promised, relaunch)| Plan { promised, relaunch })
}

/// One step of a recorded run: when, what came in, what came out.
#[derive(Debug)]
struct Step {
    at: Millis,
    input: Option<Input>,
    outcome: Outcome,
    effects: Vec<Effect>,
    waiting_before: bool,
}

/// Runs `inputs`, each `dt` ms after the last (from 0 to 90 s apart, so long
/// runs cross the 5-minute limit); the first step is `Launch::new`.
fn run(plan: Plan, inputs: &[(Millis, Input)]) -> (Launch, Vec<Step>) {
    let mut l = Launch::new(Config::default(), plan, 0);
    let mut steps = vec![Step {
        at: 0,
        input: None,
        outcome: Outcome::Applied,
        effects: std::iter::from_fn(|| l.poll_effect()).collect(),
        waiting_before: false,
    }];
    let mut now = 0;
    for (dt, input) in inputs {
        now += dt;
        let waiting_before = matches!(l.state().phase, Phase::Checking | Phase::Waiting(_));
        let outcome = l.handle(now, input.clone());
        steps.push(Step {
            at: now,
            input: Some(input.clone()),
            outcome,
            effects: std::iter::from_fn(|| l.poll_effect()).collect(),
            waiting_before,
        });
    }
    (l, steps)
}

fn inputs() -> impl Strategy<Value = Vec<(Millis, Input)>> {
    prop::collection::vec((prop_oneof![0..300u64, 0..90_000u64], input()), 0..60)
}

fn emitted(steps: &[Step]) -> impl Iterator<Item = &Effect> {
    steps.iter().flat_map(|s| s.effects.iter())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn an_unpromised_start_with_no_mark_never_waits(
        age in 0..LIMIT, rest in inputs(), malformed in any::<bool>()
    ) {
        let first = if malformed { Observation::from_file(b"??", age) } else { Observation::missing() };
        let mut all = vec![(0, Input::Observed(first))];
        all.extend(rest);
        let (_, steps) = run(Plan::default(), &all);
        prop_assert!(steps[1].effects.contains(&Effect::AskPermit), "{:?}", steps[1]);
        prop_assert!(
            !emitted(&steps).any(|e| matches!(e, Effect::WaitFor { .. })),
            "waited: {:?}",
            steps
        );
    }

    #[test]
    fn a_closed_start_never_emits_start_harness(plan in plan(), before in inputs(), after in inputs()) {
        let mut all = before;
        all.push((0, Input::Close));
        all.extend(after);
        let (_, steps) = run(plan, &all);
        let closed_at = steps
            .iter()
            .position(|s| s.effects.contains(&Effect::Closed));
        if let Some(i) = closed_at {
            prop_assert!(!emitted(&steps[i..]).any(|e| *e == Effect::StartHarness));
        }
    }

    #[test]
    fn start_harness_is_emitted_at_most_once(plan in plan(), all in inputs()) {
        let (_, steps) = run(plan, &all);
        prop_assert!(emitted(&steps).filter(|e| **e == Effect::StartHarness).count() <= 1);
        prop_assert!(emitted(&steps).filter(|e| **e == Effect::AskPermit).count() <= 1);
    }

    #[test]
    fn ask_permit_never_comes_before_the_wait_ends(plan in plan(), all in inputs()) {
        let (_, steps) = run(plan, &all);
        let config = Config::default();
        for s in &steps {
            if !s.effects.contains(&Effect::AskPermit) || s.input.is_none() {
                continue;
            }
            // Only a wait that is over may ask: the status file said so, or the limit passed.
            prop_assert!(s.waiting_before, "asked outside a wait: {s:?}");
            let over = match s.input.as_ref().unwrap() {
                Input::Observed(o) => holds(plan, o, &config).is_err() || s.at >= config.copy_wait,
                Input::Timeout => s.at >= config.copy_wait,
                other => panic!("AskPermit after {other:?}"),
            };
            prop_assert!(over, "asked while the copy still holds: {s:?}");
        }
        if plan.relaunch {
            prop_assert_eq!(&steps[0].effects, &vec![Effect::AskPermit]);
        }
    }

    #[test]
    fn a_relaunch_never_waits(all in inputs(), promised in any::<bool>()) {
        let (_, steps) = run(Plan { promised, relaunch: true }, &all);
        prop_assert!(!emitted(&steps).any(|e| matches!(
            e,
            Effect::WaitFor { .. } | Effect::WaitEnded { .. } | Effect::Observe
        )), "a relaunch waited: {:?}", steps);
    }

    #[test]
    fn the_wait_never_outlasts_project_copy_wait(plan in plan(), all in inputs()) {
        let (mut l, steps) = run(plan, &all);
        // Every deadline the machine asks for lies within the limit...
        if let Some((at, _)) = l.poll_timeout() {
            prop_assert!(at <= LIMIT);
        }
        for s in &steps {
            for e in &s.effects {
                if let Effect::WaitFor { until, .. } = e { prop_assert!(*until <= LIMIT); }
                if let Effect::WaitEnded { waited, .. } = e { prop_assert!(*waited <= s.at.max(LIMIT)); }
            }
        }
        // ...and a timeout at the limit ends any wait, whatever the file says.
        let now = steps.last().unwrap().at.max(LIMIT);
        l.handle(now, Input::Timeout);
        prop_assert!(!matches!(l.state().phase, Phase::Checking | Phase::Waiting(_)));
    }

    #[test]
    fn every_granted_permit_is_given_back_once_the_launch_is_done(plan in plan(), all in inputs()) {
        let (l, steps) = run(plan, &all);
        let granted = steps.iter().filter(|s| s.input == Some(Input::PermitGranted) && s.outcome == Outcome::Applied).count();
        let released = emitted(&steps).filter(|e| **e == Effect::ReleasePermit).count();
        prop_assert!(released <= granted);
        let done = matches!(
            l.state().phase,
            Phase::Started { native_id: _ } | Phase::Closed | Phase::Ended(_)
        );
        let asked_but_ungranted = emitted(&steps).any(|e| *e == Effect::AskPermit) && granted == 0;
        if done && !asked_but_ungranted {
            prop_assert_eq!(released, granted);
        }
    }
}

const ID: &str = "0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b";

fn proc_view() -> impl Strategy<Value = ProcView> {
    let env = prop_oneof![
        3 => Just(EnvView::Readable { loop_marker: None }),
        2 => Just(EnvView::Readable { loop_marker: Some(ID.into()) }),
        1 => "[a-z0-9/-]{0,40}".prop_map(|m| EnvView::Readable { loop_marker: Some(m) }),
        1 => Just(EnvView::Hidden),
    ];
    let harness = prop_oneof![4 => Just(None), 1 => "cr_[a-f0-9]{4}".prop_map(Some)];
    (1u32..100_000, harness, env).prop_map(|(pid, harness, env)| ProcView { pid, harness, env })
}

/// A flag that takes no value: absent, given alone, or (wrongly) with `=value`.
fn bool_flag(name: &'static str) -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        2 => Just(None),
        2 => Just(Some(format!("--{name}"))),
        1 => "(true|false|0|)".prop_map(move |v| Some(format!("--{name}={v}"))),
    ]
}

/// A room-cli argv: a group, an action, and `--top-level` / `--shared-sandbox`
/// in either order, each absent, alone or with a value.
fn argv() -> impl Strategy<Value = Vec<String>> {
    (
        0..GROUPS.len(),
        0..10usize,
        bool_flag("top-level"),
        bool_flag("shared-sandbox"),
        any::<bool>(),
    )
        .prop_map(|(g, a, top, shared, swap)| {
            let (_, name, actions, _) = GROUPS[g];
            let mut argv = vec![name.to_string()];
            if !actions.is_empty() {
                argv.push(actions[a % actions.len()].to_string());
            }
            let (first, second) = if swap { (shared, top) } else { (top, shared) };
            argv.extend(first);
            argv.extend(second);
            argv.push("prompt".into());
            argv
        })
}

/// A command that parses (a usage error never reaches the policy).
fn command() -> impl Strategy<Value = Command> {
    argv().prop_filter_map("a usage error", |argv| {
        Command::parse(&argv).ok()?.command()
    })
}

fn is_loop_or_spawn(cmd: &Command) -> bool {
    cmd.group == Group::Loop
        || (cmd.group == Group::Thread && cmd.action.as_deref() == Some("spawn"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn a_harness_anywhere_in_the_ancestry_always_wins(ancestry in prop::collection::vec(proc_view(), 1..12)) {
        let first_harness = ancestry.iter().find_map(|p| p.harness.clone());
        let caller = classify(&ancestry);
        match first_harness {
            Some(s) => prop_assert_eq!(caller, Caller::Harness(s)),
            None => prop_assert!(!matches!(caller, Caller::Harness(_))),
        }
    }

    #[test]
    fn a_refused_command_never_yields_forward(ancestry in prop::collection::vec(proc_view(), 0..12), cmd in command()) {
        let caller = classify(&ancestry);
        let decision = decide(&caller, &cmd);
        let loop_may = (cmd.group == Group::Loop && cmd.action.as_deref() != Some("report"))
            || cmd.is_top_level_spawn();
        match (&caller, &decision) {
            (_, Decision::Local) => prop_assert_eq!(cmd.group, Group::Files),
            (Caller::Harness(_), d) => prop_assert!(matches!(d, Decision::Forward(_))),
            (Caller::Loop(_), Decision::Forward(_)) => prop_assert!(loop_may, "forwarded {:?}", cmd),
            (Caller::Loop(_), Decision::Refuse { .. }) => prop_assert!(!loop_may),
            (_, Decision::Forward(_)) => prop_assert!(false, "{:?} forwarded for {:?}", cmd, caller),
            (_, Decision::Refuse { exit_code, message }) => {
                prop_assert_eq!(*exit_code, 1);
                // secret keeps its own message; everything else names the variable.
                if matches!(caller, Caller::Malformed(_)) && cmd.group != Group::Secret {
                    prop_assert!(message.contains("CLOUDROOM_LOOP"));
                }
            }
        }
    }

    #[test]
    fn pid_1s_environment_never_changes_the_caller(
        ancestry in prop::collection::vec(proc_view(), 0..12),
        init_env in prop_oneof![
            Just(EnvView::Hidden),
            Just(EnvView::Readable { loop_marker: None }),
            Just(EnvView::Readable { loop_marker: Some(ID.into()) }),
            "[a-z0-9/-]{0,40}".prop_map(|m| EnvView::Readable { loop_marker: Some(m) }),
        ],
    ) {
        let without: Vec<ProcView> = ancestry.iter().filter(|p| p.pid != 1).cloned().collect();
        let mut with_init = without.clone();
        with_init.push(ProcView { pid: 1, harness: None, env: init_env });
        prop_assert_eq!(classify(&with_init), classify(&without));
    }

    #[test]
    fn a_flag_that_takes_no_value_never_gets_one_through(argv in argv()) {
        let valued = argv.iter().any(|a| a.starts_with("--") && a.contains('='));
        let spawn = argv[0] == "thread" && argv[1] == "spawn";
        let both = argv.iter().any(|a| a.starts_with("--top-level"))
            && argv.iter().any(|a| a.starts_with("--shared-sandbox"));
        match Command::parse(&argv) {
            Err(ParseError::NoValue(_)) => prop_assert!(valued),
            Err(ParseError::TopLevelShared) => prop_assert!(spawn && both && !valued),
            Err(e) => prop_assert!(false, "{:?}: {:?}", argv, e),
            Ok(parsed) => {
                prop_assert!(!(valued || (spawn && both)), "{:?} parsed", argv);
                let cmd = parsed.command().unwrap();
                if cmd.is_top_level_spawn() {
                    let r = room_machines::website_request(&cmd, &Scope::Automation(ID.into()), || "r".into());
                    prop_assert!(r.body.get("shared_sandbox").is_none());
                }
            }
        }
    }

    #[test]
    fn secret_keeps_its_own_check_whoever_calls(ancestry in prop::collection::vec(proc_view(), 0..12)) {
        let caller = classify(&ancestry);
        let secret = Command::parse(&["secret", "API_KEY"]).unwrap().command().unwrap();
        match (&caller, decide(&caller, &secret)) {
            (Caller::Harness(s), Decision::Forward(scope)) => prop_assert_eq!(scope, Scope::Session(s.clone())),
            (_, Decision::Refuse { message, exit_code }) => {
                prop_assert_eq!(message, SECRET);
                prop_assert_eq!(exit_code, 1);
            }
            (c, d) => prop_assert!(false, "{:?}: {:?}", c, d),
        }
    }

    #[test]
    fn no_refusal_offers_a_loop_script_what_it_cannot_run(cmd in command(), hidden in any::<bool>()) {
        let caller = if hidden { Caller::Hidden } else { Caller::Unknown };
        let loop_may = (cmd.group == Group::Loop && cmd.action.as_deref() != Some("report"))
            || cmd.is_top_level_spawn();
        if let Decision::Refuse { message, .. } = decide(&caller, &cmd) {
            // "…or from a loop's check script" only for what a script may run…
            prop_assert_eq!(message.contains("or from a loop's check script"), loop_may && !hidden, "{}", message);
            // …and every loop and spawn refusal mentions loop scripts.
            if is_loop_or_spawn(&cmd) {
                prop_assert!(message.contains("loop's check script") || message.contains("loop script's"), "{}", message);
            }
        }
    }

    #[test]
    fn files_wait_holds_a_missing_status_file_only_while_the_folder_looks_empty(
        o in observation(),
        elapsed in 0..2 * FILES_WAIT_LIMIT,
    ) {
        let with_files = verdict(&o, false, elapsed, FILES_WAIT_GRACE, FILES_WAIT_LIMIT);
        let empty = verdict(&o, true, elapsed, FILES_WAIT_GRACE, FILES_WAIT_LIMIT);
        if o.mark.is_none() {
            prop_assert_eq!(with_files, Verdict::Ready);
            prop_assert_eq!(empty == Verdict::Wait, elapsed < FILES_WAIT_GRACE);
        } else {
            // A status file decides alone; the folder does not matter.
            prop_assert_eq!(with_files, empty);
        }
    }
}
