//! Section 5, `startup`, its first half: the real CLIs' own start and the
//! python fakes', each turn built as the service builds it and spawned
//! straight from the bench, against the loopback fake model; then the
//! follow-ups (follow_up.rs, the warm ones paired.rs, sdk.rs).

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use room_kit::Model;

use crate::follow_up::follow_up_latency;
use crate::stats::{ms, stats, Table};

/// Turns per harness in the startup section (real CLIs take ~1 s each).
const STARTUP_RUNS: usize = 15;

/// The file `name` on the bench's PATH, if there is one.
pub(crate) fn on_path(name: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The real CLIs' own startup next to the fakes': a turn's command built as
/// the service builds it (`harness::command::build`: argv, environment,
/// prompt on stdin), spawned straight from the bench, timed from spawn to
/// the first event (the one that names the native session, which is what
/// ends a launch) and to exit. The real CLIs talk to the loopback fake model
/// (fixtures/fake_model_server.py), so the figures are the CLIs' own cost
/// with a model that answers at once: the real-world denominator of the
/// wake lag. A CLI not on PATH is left out with a note.
pub(crate) fn startup(table: &mut Table) {
    use room_core::harness::command::{self, Turn};
    use room_core::harness::speech::{Heard, Out, Said};
    use room_core::harness::{Harness, Programs};
    use room_kit::fixtures_dir;

    println!("\n5. harness startup: spawn -> first event (native ID) -> exit");
    let root = std::env::temp_dir().join(format!("room-core-bench-startup-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let model = Model::start(&root);
    let cli_env = model.cli_env(&root);
    let version = |program: &Path| {
        Command::new(program)
            .arg("--version")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    let candidates = [
        (Harness::Claude, "real claude", on_path("claude")),
        (Harness::Codex, "real codex", on_path("codex")),
        (
            Harness::Claude,
            "fake-claude (python)",
            Some(fixtures_dir().join("fake-claude")),
        ),
        (
            Harness::Codex,
            "fake-codex (python)",
            Some(fixtures_dir().join("fake-codex")),
        ),
    ];
    let config = room_core::config::Config {
        state_dir: root.join("state"),
        ..room_core::config::Config::default()
    };
    let secrets = command::secrets(&config);
    for (harness, label, program) in candidates {
        let Some(program) = program else {
            println!("  {label}: not on PATH, left out (.ci/run installs it)");
            continue;
        };
        let programs = Programs {
            claude: program.clone(),
            codex: program.clone(),
        };
        let mut first = Vec::new();
        let mut exit = Vec::new();
        for n in 0..STARTUP_RUNS {
            let folder = root
                .join("work")
                .join(format!("{label}-{n}").replace(' ', "-"));
            std::fs::create_dir_all(&folder).unwrap();
            let turn = Turn {
                agent: None,
                harness,
                native_id: None,
                cut: None,
                fork: false,
                plan_only: false,
                approvals: room_machines::session::ApprovalMode::Auto,
                folder: &folder,
                options: Default::default(),
                mcp: None,
            };
            let mut spec =
                command::build(&config, &programs, &secrets, &turn).expect("a turn's spec");
            spec.env
                .retain(|(k, _)| !cli_env.iter().any(|(c, _)| k == c.as_str()));
            spec.env
                .extend(cli_env.iter().map(|(k, v)| (k.into(), v.into())));
            let began = Instant::now();
            let (mut child, mut talker) = crate::service::spawn_turn(spec);
            // The bench talks the turn's protocol itself: the prompt, what
            // the harness must be answered, and the end of its input once
            // its turn is done.
            let mut stdin = child.stdin.take();
            let say = |stdin: &mut Option<std::process::ChildStdin>, lines: Vec<Out>| {
                for out in lines {
                    if let Some(pipe) = stdin.as_mut() {
                        let _ = pipe.write_all(out.line.as_bytes());
                    }
                }
            };
            say(&mut stdin, talker.say(Said::prompt("hi".into())));
            let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
            let mut named = None;
            for line in std::io::BufRead::lines(stdout) {
                let Ok(line) = line else { break };
                let hearing = talker.hear(&line);
                if named.is_none() && hearing.named.is_some() {
                    named = Some(began.elapsed());
                }
                say(&mut stdin, hearing.writes);
                if matches!(hearing.heard, Some(Heard::Finished { .. })) {
                    stdin = None;
                }
            }
            let status = child.wait().expect("the harness exits");
            let done = began.elapsed();
            assert!(status.success(), "{label} failed: {status}");
            first.push(
                named
                    .expect("a first event with the native ID")
                    .as_secs_f64()
                    * 1000.0,
            );
            exit.push(done.as_secs_f64() * 1000.0);
        }
        // The fakes take any argv as a turn: only the real CLIs are asked.
        let v = if label.starts_with("real") {
            version(&program)
        } else {
            String::new()
        };
        let (p50, p99) = stats(&first);
        table.row(
            "harness startup to first event",
            format!("{label} {v}").trim_end(),
            ms(p50),
            ms(p99),
            format!(
                "{STARTUP_RUNS} runs; spawn -> the event that names the session (ends a launch)"
            ),
        );
        let (p50, p99) = stats(&exit);
        table.row(
            "harness turn, spawn to exit",
            format!("{label} {v}").trim_end(),
            ms(p50),
            ms(p99),
            format!("{STARTUP_RUNS} runs; a one-answer turn against the loopback fake model"),
        );
    }
    match on_path("claude") {
        Some(claude) => {
            let cold = follow_up_latency(table, "claude", &claude, &cli_env, false);
            let cold = cold.first();
            crate::paired::warm_follow_ups(
                table,
                &claude,
                &cli_env,
                &root,
                cold.map(|m| m.first_event),
            );
            crate::sdk::cold(
                table,
                &claude,
                &cli_env,
                &root,
                cold.and_then(|m| m.assistant),
            );
        }
        None => println!("  real claude: not on PATH, follow-ups left out"),
    }
    match on_path("codex") {
        Some(codex) => {
            follow_up_latency(table, "codex", &codex, &cli_env, true);
        }
        None => println!("  real codex: not on PATH, follow-ups left out"),
    }
    drop(model);
    if std::env::var_os("ROOM_BENCH_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&root);
    }
}
