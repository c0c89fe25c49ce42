//! room-website: the reference website (seed 001's website half): loops,
//! their check scripts, and the routes Core forwards room-cli calls to.
//! `room-website --config FILE`; see docs/website.md.

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [flag, path] = args.as_slice() else {
        eprintln!("Usage: room-website --config FILE");
        std::process::exit(2);
    };
    if flag != "--config" {
        eprintln!("Usage: room-website --config FILE");
        std::process::exit(2);
    }
    if let Err(e) = room_reference::website::run_from(path.as_ref()) {
        eprintln!("room-website: {e}");
        std::process::exit(1);
    }
}
