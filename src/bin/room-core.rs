//! room-core: the service. `room-core [--config FILE]`, or `room-core --demo`
//! for a guided run on defaults in a temp state dir (see `room_core::demo`).

use room_core::config::Config;

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let config = match args.as_slice() {
        [] => Ok(Config::default()),
        [flag, path] if flag == "--config" => Config::load(path.as_ref()),
        [flag] if flag == "--demo" => {
            if let Err(e) = room_core::demo::run() {
                eprintln!("room-core --demo: {e}");
                std::process::exit(1);
            }
            return;
        }
        _ => {
            eprintln!("Usage: room-core [--config FILE] | room-core --demo");
            std::process::exit(2);
        }
    };
    let config = config.unwrap_or_else(|e| {
        eprintln!("room-core: {e}");
        std::process::exit(2);
    });
    if let Err(e) = room_core::service::run(config) {
        eprintln!("room-core: {e}");
        std::process::exit(1);
    }
}
