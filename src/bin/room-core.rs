//! room-core: the service. `room-core [--config FILE]`, `--help`,
//! `--version`. The demo is another crate's binary, `room-demo`
//! (reference/); `--demo` says so.

use room_core::config::Config;

/// What `--help` prints (and a usage error, on stderr).
const USAGE: &str = "\
Usage: room-core [--config FILE]
       room-core --help | --version

Starts and supervises coding-agent harnesses (Claude Code, Codex) for the
app, serves the app's HTTP API on loopback, and answers room-cli on the agent
socket. It runs until SIGTERM, SIGINT, SIGHUP or SIGQUIT.

Options:
  --config FILE  a JSON config; every field has a default (docs/api.md,
                 Configuration), and an unknown field is refused
  --help         this text
  --version      the version

Exit status: 0 after a clean stop, 1 when the service fails, 2 for a usage
or config error.
";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let config = match args.as_slice() {
        [flag] if flag == "--help" || flag == "-h" => {
            print!("{USAGE}");
            return;
        }
        [flag] if flag == "--version" || flag == "-V" => {
            println!("room-core {}", env!("CARGO_PKG_VERSION"));
            return;
        }
        [] => Ok(Config::default()),
        [flag, path] if flag == "--config" => Config::load(path.as_ref()),
        [flag] if flag == "--demo" => {
            eprintln!("room-core: the demo is its own binary, room-demo: `cargo run --release --bin room-demo` in the repository");
            std::process::exit(2);
        }
        _ => {
            eprint!("{USAGE}");
            std::process::exit(2);
        }
    };
    init_log();
    let config = config.unwrap_or_else(|e| {
        eprintln!("room-core: {e}");
        std::process::exit(2);
    });
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
