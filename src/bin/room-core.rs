//! room-core: the service. `room-core [--config FILE]`, `--help`,
//! `--version`, and `--console-url [--config FILE]` (the browser console's
//! URL with the token). The demo is another crate's binary, `room-demo`
//! (reference/); `--demo` says so.

use room_core::config::Config;

/// What `--help` prints (and a usage error, on stderr).
const USAGE: &str = "\
Usage: room-core [--config FILE]
       room-core --console-url [--config FILE]
       room-core --help | --version

Starts and supervises coding-agent harnesses (Claude Code, Codex) for the
app, serves the app's HTTP API on loopback, and answers room-cli on the agent
socket. It runs until SIGTERM, SIGINT, SIGHUP or SIGQUIT.

Options:
  --config FILE  a JSON config; every field has a default (docs/api.md,
                 Configuration), and an unknown field is refused
  --console-url  print the browser console's URL with the API token in its
                 fragment (docs/console.md), and exit
  --help         this text
  --version      the version

Exit status: 0 after a clean stop, 1 when the service fails, 2 for a usage
or config error.
";

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    // The snapshot walker (room_core::snapshot): the service runs its own
    // binary so, as the agent account; not a user's mode, so not in USAGE.
    if args == ["--snapshot-walk"] {
        std::process::exit(room_core::snapshot::walker_main());
    }
    // Its writing half, which restores a folder to a recorded tree.
    if args == ["--snapshot-restore"] {
        std::process::exit(room_core::snapshot::restorer_main());
    }
    let console_url = args.first().is_some_and(|a| a == "--console-url");
    if console_url {
        args.remove(0);
    }
    let config = match args.as_slice() {
        [flag] if !console_url && (flag == "--help" || flag == "-h") => {
            print!("{USAGE}");
            return;
        }
        [flag] if !console_url && (flag == "--version" || flag == "-V") => {
            println!("room-core {}", env!("CARGO_PKG_VERSION"));
            return;
        }
        [] => Ok(Config::default()),
        [flag, path] if flag == "--config" => Config::load(path.as_ref()),
        [flag] if !console_url && flag == "--demo" => {
            eprintln!("room-core: the demo is its own binary, room-demo: `cargo run --release --bin room-demo` in the repository");
            std::process::exit(2);
        }
        _ => {
            eprint!("{USAGE}");
            std::process::exit(2);
        }
    };
    let config = config.unwrap_or_else(|e| {
        eprintln!("room-core: {e}");
        std::process::exit(2);
    });
    if console_url {
        match room_core::api::console_url(&config) {
            Ok(url) => println!("{url}"),
            Err(e) => {
                eprintln!("room-core: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    init_log();
    if let Err(e) = room_core::service::run(config) {
        eprintln!("room-core: {e}");
        // A config the service refuses once it sees the machine is a
        // config error too.
        let config_error = e.is::<room_core::config::ConfigError>();
        std::process::exit(if config_error { 2 } else { 1 });
    }
}

fn init_log() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
}
