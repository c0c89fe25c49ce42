//! room-cli: the agents' CLI. `--help`, `--version` and `files wait` run here; every other
//! command goes to Core over the agent socket (`ROOM_CORE_SOCKET`, else the
//! default path), which identifies the caller and answers with what to print
//! and the exit status.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use room_core::config::Config;
use room_core::files;
use room_core::website::Answer;
use room_machines::command::Group;
use room_machines::files_wait::{
    is_project_entry, verdict, Verdict, FILES_WAIT_GRACE, FILES_WAIT_LIMIT,
};
use room_machines::{Command, Millis, Observation, Parsed};

/// How often `files wait` reads the status file.
const POLL: Duration = Duration::from_millis(250);

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let code = run(&argv);
    let _ = std::io::stdout().flush();
    std::process::exit(code);
}

fn run(argv: &[String]) -> i32 {
    if let [flag] = argv {
        if flag == "--version" || flag == "-V" {
            println!("room-cli {}", env!("CARGO_PKG_VERSION"));
            return 0;
        }
    }
    match Command::parse(argv) {
        Err(e) => {
            eprintln!("{e}");
            2
        }
        Ok(Parsed::Help(text)) => {
            print!("{text}");
            0
        }
        Ok(Parsed::Run(cmd)) if cmd.group == Group::Files => files_wait(),
        Ok(Parsed::Run(_)) => ask_core(argv),
    }
}

fn socket_path() -> PathBuf {
    match std::env::var_os("ROOM_CORE_SOCKET") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => Config::default().agent_socket_path(),
    }
}

fn ask_core(argv: &[String]) -> i32 {
    let path = socket_path();
    let answer = exchange(&path, argv).unwrap_or_else(|e| Answer::fail(1, e));
    print!("{}", answer.stdout);
    eprint!("{}", answer.stderr);
    answer.exit
}

fn exchange(path: &Path, argv: &[String]) -> Result<Answer, String> {
    let mut stream = UnixStream::connect(path)
        .map_err(|e| format!("room-cli: cannot reach Core at {}: {e}", path.display()))?;
    let cwd = std::env::current_dir()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let request = serde_json::json!({ "argv": argv, "cwd": cwd });
    let lost = |e: std::io::Error| format!("room-cli: lost Core at {}: {e}", path.display());
    // Core may answer without reading (a peer of another account): then the
    // write fails, but its answer is there to read.
    let sent = stream
        .write_all(request.to_string().as_bytes())
        .and_then(|()| stream.shutdown(std::net::Shutdown::Write));
    // ...and closing with our request unread resets the connection after
    // the answer: what was read before the reset counts.
    let mut bytes = Vec::new();
    let read = stream.read_to_end(&mut bytes);
    if bytes.is_empty() {
        return Err(lost(match (sent, read) {
            (Err(e), _) | (Ok(()), Err(e)) => e,
            (Ok(()), Ok(_)) => std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "it closed without an answer",
            ),
        }));
    }
    let text = String::from_utf8_lossy(&bytes);
    serde_json::from_str(&text)
        .map_err(|e| format!("room-cli: Core's answer is not valid ({e}): {text:?}"))
}

fn env_ms(name: &str, default: Millis) -> Millis {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The nearest ancestor of `start` (itself included) that has a status
/// file, and one read of that file; `start` and no file when none has.
fn observe(start: &Path) -> (PathBuf, Observation) {
    start
        .ancestors()
        .filter(|f| f.parent().is_some())
        .find(|f| files::status_file(f).exists())
        .map_or((start.to_path_buf(), Observation::missing()), |f| {
            (f.to_path_buf(), files::observe(f))
        })
}

/// Whether `folder` looks empty: it holds no project entry (see
/// `files_wait::is_project_entry`) or does not exist yet. A folder that
/// cannot be listed for another reason does not: there is nothing to wait
/// for that could be seen.
fn looks_empty(folder: &Path) -> bool {
    match std::fs::read_dir(folder) {
        // Stops at the first project entry, however big the folder.
        Ok(entries) => !entries
            .filter_map(Result::ok)
            .any(|e| is_project_entry(&e.file_name().to_string_lossy())),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

fn human(ms: Millis) -> String {
    match ms {
        m if m >= 60_000 && m % 60_000 == 0 => {
            let n = m / 60_000;
            format!("{n} minute{}", if n == 1 { "" } else { "s" })
        }
        m if m % 1000 == 0 => format!("{} s", m / 1000),
        m => format!("{m} ms"),
    }
}

fn files_wait() -> i32 {
    let grace = env_ms("ROOM_CLI_FILES_GRACE_MS", FILES_WAIT_GRACE);
    let limit = env_ms("ROOM_CLI_FILES_LIMIT_MS", FILES_WAIT_LIMIT);
    let cwd = match std::env::current_dir() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("room-cli: no working directory: {e}");
            return 1;
        }
    };
    let started = Instant::now();
    loop {
        let (folder, observation) = observe(&cwd);
        // Listed only when no status file says anything.
        let empty = observation.mark.is_none() && looks_empty(&folder);
        let elapsed = started.elapsed().as_millis() as Millis;
        match verdict(&observation, empty, elapsed, grace, limit) {
            Verdict::Ready => {
                println!("Project files are ready in {}.", folder.display());
                return 0;
            }
            Verdict::Failed(reason) => {
                eprintln!(
                    "The project copy into {} failed: {reason}",
                    folder.display()
                );
                return 1;
            }
            Verdict::TimedOut => {
                eprintln!(
                    "The project copy into {} did not finish within {}.",
                    folder.display(),
                    human(limit)
                );
                return 1;
            }
            Verdict::Wait => std::thread::sleep(POLL),
        }
    }
}
