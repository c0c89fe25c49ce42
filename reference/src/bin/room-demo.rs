//! room-demo: a guided run of the service on a temp state dir with the fake
//! harnesses, then a loop's check script through the reference website
//! (see `room_reference::demo`). `cargo run --release --bin room-demo`.

fn main() {
    if std::env::args().len() > 1 {
        eprintln!("Usage: room-demo (it takes no arguments)");
        std::process::exit(2);
    }
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    if let Err(e) = room_reference::demo::run() {
        eprintln!("room-demo: {e}");
        std::process::exit(1);
    }
}
