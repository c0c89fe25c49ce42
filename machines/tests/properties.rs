//! Property tests over random input sequences: the launch rules of seed 000
//! and the caller/policy rules of seed 001 hold whatever order things happen in.

use proptest::prelude::*;
use room_machines::caller::{classify, Caller, EnvView, ProcView};
use room_machines::command::{Command, Group, ParseError, GROUPS};
use room_machines::copy::{CopyMark, Observation};
use room_machines::files_wait::{verdict, Verdict, FILES_WAIT_GRACE, FILES_WAIT_LIMIT};
use room_machines::launch::{
    holds, Config, Effect, Input, Launch, LaunchEffect, Outcome, Phase, Plan, Timer, WaitEnd,
    MARK_MAX_AHEAD,
};
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
        (0..3 * 60_000u64).prop_map(|a| Observation::marked(CopyMark::Copying, 0).dated_ahead(a)),
    ]
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        4 => observation().prop_map(Input::Observed),
        1 => Just(Input::Changed),
        1 => any::<bool>().prop_map(Input::Watched),
        4 => Just(Input::Timeout),
        1 => Just(Input::Stop),
        1 => Just(Input::Close),
        1 => Just(Input::ServiceStop),
        2 => Just(Input::PermitGranted),
        1 => Just(Input::HarnessStarted { native_id: Some("n1".into()) }),
        1 => Just(Input::HarnessFailed),
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
    /// The status file was watched before the input.
    watched_before: bool,
    /// The machine's deadline before and after the input.
    deadline_before: Option<(Millis, Timer)>,
    deadline_after: Option<(Millis, Timer)>,
    /// The status file was watched after the input.
    watched_after: bool,
    /// A read was under way before the input, and another one is wanted
    /// once it answers after it.
    reading_before: bool,
    reread_before: bool,
    reread_after: bool,
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
        watched_before: false,
        deadline_before: None,
        deadline_after: l.poll_timeout(),
        watched_after: false,
        reading_before: false,
        reread_before: false,
        reread_after: false,
    }];
    let mut now = 0;
    for (dt, input) in inputs {
        now += dt;
        let waiting_before = matches!(l.state().phase, Phase::Checking | Phase::Waiting(_));
        let watched_before = l.state().watched;
        let deadline_before = l.poll_timeout();
        let (reading_before, reread_before) = (l.state().reading, l.state().reread);
        let outcome = l.handle(now, input.clone());
        steps.push(Step {
            at: now,
            input: Some(input.clone()),
            outcome,
            effects: std::iter::from_fn(|| l.poll_effect()).collect(),
            waiting_before,
            watched_before,
            deadline_before,
            deadline_after: l.poll_timeout(),
            watched_after: l.state().watched,
            reading_before,
            reread_before,
            reread_after: l.state().reread,
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
        prop_assert!(steps[1].effects.contains(&Effect::Runtime(LaunchEffect::AskPermit)), "{:?}", steps[1]);
        prop_assert!(
            !emitted(&steps).any(|e| matches!(e, Effect::Runtime(LaunchEffect::WaitFor { .. }))),
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
        prop_assert!(emitted(&steps).filter(|e| **e == Effect::Runtime(LaunchEffect::AskPermit)).count() <= 1);
    }

    #[test]
    fn ask_permit_never_comes_before_the_wait_ends(plan in plan(), all in inputs()) {
        let (_, steps) = run(plan, &all);
        let config = Config::default();
        for s in &steps {
            if !s.effects.contains(&Effect::Runtime(LaunchEffect::AskPermit)) || s.input.is_none() {
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
            prop_assert_eq!(&steps[0].effects, &vec![Effect::Runtime(LaunchEffect::AskPermit)]);
        }
    }

    #[test]
    fn a_relaunch_never_waits(all in inputs(), promised in any::<bool>()) {
        let (_, steps) = run(Plan { promised, relaunch: true }, &all);
        prop_assert!(!emitted(&steps).any(|e| matches!(
            e,
            Effect::Runtime(LaunchEffect::WaitFor { .. }) | Effect::Runtime(LaunchEffect::WaitEnded { .. }) | Effect::Runtime(LaunchEffect::Observe)
                | Effect::Runtime(LaunchEffect::Watch) | Effect::Runtime(LaunchEffect::Unwatch)
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
                if let Effect::Runtime(LaunchEffect::WaitFor { until, .. }) = e { prop_assert!(*until <= LIMIT); }
                if let Effect::Runtime(LaunchEffect::WaitEnded { waited, .. }) = e { prop_assert!(*waited <= s.at.max(LIMIT)); }
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
        let released = emitted(&steps).filter(|e| **e == Effect::Runtime(LaunchEffect::ReleasePermit)).count();
        prop_assert!(released <= granted);
        let done = matches!(
            l.state().phase,
            Phase::Started { native_id: _ } | Phase::Closed | Phase::Ended(_)
        );
        let asked_but_ungranted = emitted(&steps).any(|e| *e == Effect::Runtime(LaunchEffect::AskPermit)) && granted == 0;
        if done && !asked_but_ungranted {
            prop_assert_eq!(released, granted);
        }
    }
}

/// The timer's bucket width in the runtime (`src/runtime/alarms.rs` SLACK):
/// a deadline fires at the end of its bucket, less than this late.
const SLACK: Millis = 25;

fn bucket(at: Millis) -> Millis {
    at.div_ceil(SLACK) * SLACK
}

/// What a read at `now` of a status file saying `copying` since `born`
/// (same clock) gives: its age, or how far ahead of the clock it is dated.
fn copying_born(born: i64, now: Millis) -> Observation {
    let age = now as i64 - born;
    let o = Observation::marked(CopyMark::Copying, age.max(0) as Millis);
    if age < 0 {
        o.dated_ahead((-age) as Millis)
    } else {
        o
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn a_watched_wait_reads_on_each_change_and_on_its_deadlines_only(plan in plan(), all in inputs()) {
        let mut watched_first = vec![(0, Input::Watched(true))];
        watched_first.extend(all);
        let (_, steps) = run(plan, &watched_first);
        for s in &steps[1..] {
            let Some(input) = &s.input else { continue };
            if s.watched_after {
                prop_assert!(
                    !matches!(s.deadline_after, Some((_, Timer::Poll))),
                    "a watched wait polls: {s:?}"
                );
            }
            if !(s.waiting_before && s.watched_before) {
                continue;
            }
            // A read asked for by this input: now, or, while one is under
            // way, once it answers; a read already wanted covers a change.
            let read = s.effects.contains(&Effect::Runtime(LaunchEffect::Observe))
                || (!s.reread_before && s.reread_after);
            match input {
                Input::Changed => prop_assert!(read || s.reread_after, "a change was not read: {s:?}"),
                // A lost watch reads at once (see below).
                Input::Watched(false) => {}
                // The read a change asked for while another was under way.
                Input::Observed(_) => prop_assert!(!read || s.reread_before, "read without a change or a deadline: {s:?}"),
                Input::Timeout => {
                    if read {
                        let due = matches!(s.deadline_before, Some((d, Timer::MarkAge)) if s.at >= d);
                        prop_assert!(due, "read at a timeout that was not its deadline: {s:?}");
                    }
                }
                _ => prop_assert!(!read, "read without a change or a deadline: {s:?}"),
            }
        }
    }

    #[test]
    fn a_lost_watch_falls_back_to_polling_at_once(plan in plan(), all in inputs()) {
        let mut watched_first = vec![(0, Input::Watched(true))];
        watched_first.extend(all);
        let (_, steps) = run(plan, &watched_first);
        let config = Config::default();
        for s in &steps {
            if s.input != Some(Input::Watched(false)) || !(s.waiting_before && s.watched_before) {
                continue;
            }
            let read_after = if s.reading_before { vec![] } else { vec![Effect::Runtime(LaunchEffect::Observe)] };
            prop_assert_eq!(&s.effects[1..], &read_after[..], "{:?}", s);
            prop_assert_eq!(&s.effects[0], &Effect::Runtime(LaunchEffect::Watch), "{:?}", s);
            prop_assert!(!s.reading_before || s.reread_after, "a lost watch read nothing: {s:?}");
            let (at, _) = s.deadline_after.expect("a waiting launch has a deadline");
            prop_assert!(at <= s.at + config.poll, "no poll after a lost watch: {s:?}");
        }
    }

    /// A runtime that watches, reports some changes and fires each deadline
    /// at the end of its timer bucket: an unpromised start held by a
    /// `copying` mark that nobody touches again is let go within one bucket
    /// of the mark turning `mark_max_age` old, and reads it only at that
    /// deadline and on the changes.
    #[test]
    fn the_age_deadline_fires_within_one_timer_bucket_of_mark_max_age(
        began in 0..10_000_000u64,
        born_offset in -300_000i64..120_000,
        changes in prop::collection::vec(0..300_000u64, 0..6),
    ) {
        let config = Config { copy_wait: 2 * LIMIT, mark_max_age: LIMIT, poll: 250 };
        let born = began as i64 + born_offset;
        let mut changes: Vec<Millis> = changes.into_iter().map(|c| began + c).collect();
        changes.sort();
        let mut l = Launch::new(config, Plan::default(), began);
        let mut now = began;
        let (mut reads, mut fired, mut delivered) = (0, 0, 0);
        let mut pending = changes.iter().peekable();
        let end = loop {
            let mut ended = None;
            while let Some(e) = l.poll_effect() {
                match e {
                    Effect::Runtime(LaunchEffect::Watch) => { l.handle(now, Input::Watched(true)); }
                    Effect::Runtime(LaunchEffect::Observe) => {
                        reads += 1;
                        l.handle(now, Input::Observed(copying_born(born, now)));
                    }
                    Effect::Runtime(LaunchEffect::WaitEnded { why, .. }) => ended = Some(why),
                    _ => {}
                }
            }
            if let Some(why) = ended { break why; }
            let (deadline, timer) = l.poll_timeout().expect("waiting");
            prop_assert_ne!(timer, Timer::Poll);
            let fire = bucket(deadline);
            match pending.peek() {
                Some(&&c) if c < fire => {
                    pending.next();
                    now = now.max(c);
                    delivered += 1;
                    l.handle(now, Input::Changed);
                }
                _ => {
                    now = fire;
                    fired += 1;
                    l.handle(now, Input::Timeout);
                }
            }
        };
        let too_old_by = now as i64 - born - LIMIT as i64;
        if born_offset > MARK_MAX_AHEAD as i64 {
            // Dated over a minute ahead: clock trouble, let go at the first read.
            prop_assert_eq!(end, WaitEnd::MarkInFuture);
            prop_assert_eq!(now, began);
        } else {
            prop_assert_eq!(end, WaitEnd::MarkTooOld);
            prop_assert!(too_old_by > 0 && too_old_by <= SLACK as i64, "let go {too_old_by} ms after the mark turned too old");
            // A change due at the very moment the deadline fires is never
            // delivered: the wait is over by then.
            prop_assert_eq!(reads, 1 + delivered + fired, "reads besides changes and deadlines");
            // One deadline read at most (none when a change came first).
            prop_assert!(fired <= 1, "{fired} deadline reads");
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
    fn a_turn_cgroup_wins_over_any_ancestry(ancestry in prop::collection::vec(proc_view(), 0..12)) {
        // A double-forked tool keeps its turn's cgroup whatever its ancestry,
        // markers or hidden environments say.
        prop_assert_eq!(classify(Some("cr_turn"), &ancestry), Caller::Harness("cr_turn".into()));
    }

    #[test]
    fn a_harness_anywhere_in_the_ancestry_always_wins(ancestry in prop::collection::vec(proc_view(), 1..12)) {
        let first_harness = ancestry.iter().find_map(|p| p.harness.clone());
        let caller = classify(None, &ancestry);
        match first_harness {
            Some(s) => prop_assert_eq!(caller, Caller::Harness(s)),
            None => prop_assert!(!matches!(caller, Caller::Harness(_))),
        }
    }

    #[test]
    fn a_refused_command_never_yields_forward(ancestry in prop::collection::vec(proc_view(), 0..12), cmd in command()) {
        let caller = classify(None, &ancestry);
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
        prop_assert_eq!(classify(None, &with_init), classify(None, &without));
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
        let caller = classify(None, &ancestry);
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
