//! room-core: the service. `room-core [--config FILE]`.

use room_core::config::Config;

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let config = match args.as_slice() {
        [] => Ok(Config::default()),
        [flag, path] if flag == "--config" => Config::load(path.as_ref()),
        _ => {
            eprintln!("Usage: room-core [--config FILE]");
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
