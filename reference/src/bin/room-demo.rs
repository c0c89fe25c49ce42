//! room-demo: a guided run of the service on a temp state dir with the fake
//! harnesses, then a loop's check script through the reference website,
//! then a session with a model, an effort and instructions (see
//! `room_reference::demo`). `cargo run --release --bin room-demo [-- --keep]`:
//! `--keep` leaves the service running (until Ctrl-C) with a session
//! waiting for an approval, and prints the console's address.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let keep = match args.as_slice() {
        [] => false,
        [k] if k == "--keep" => true,
        _ => {
            eprintln!("Usage: room-demo [--keep]");
            std::process::exit(2);
        }
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    if let Err(e) = room_reference::demo::run(keep) {
        eprintln!("room-demo: {e}");
        std::process::exit(1);
    }
}
