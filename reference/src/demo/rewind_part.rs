//! The demo's fifth part (issue 32): the session of the fourth part is
//! rewound to its turn 1. The dry run says what would change and that
//! the edit made by hand between the turns would go (a conflict), and
//! changes nothing; the rewind puts the folder back as turn 1 left it.
//! Only the folder: the fake harness writes no message its conversation
//! could be cut at (the real CLIs' is, in tests/real_rewind.rs).

use std::path::Path;

use room_kit::Service;
use serde_json::json;

use super::diff_part::files;
use super::wait::Error;

/// Rewinds session `id` (its folder in `root/diffs`) to turn 1, after a
/// dry run, and prints both.
pub fn run(core: &Service, root: &Path, id: &str) -> Result<(), Error> {
    let folder = root.join("diffs");
    let path = format!("/v1/sessions/{id}/rewind");
    let dry = json!({"to_turn": 1, "conversation": false, "dry_run": true});
    println!("\n== POST {path} {dry}");
    let (status, v) = core.post(&path, dry);
    if status != 200 {
        return Err(format!("the dry run was refused: {status} {v}").into());
    }
    println!("   would change: {}", files(&v));
    println!(
        "   conflicts (changed since turn 1 by someone other than a turn): {}",
        v["conflicts"]
    );
    let rewind = json!({"to_turn": 1, "conversation": false});
    println!("\n== POST {path} {rewind}");
    let (status, v) = core.post(&path, rewind);
    if status != 200 {
        return Err(format!("the rewind was refused: {status} {v}").into());
    }
    println!(
        "   written: {}, deleted: {}, failed: {}",
        v["written"], v["deleted"], v["failed"]
    );
    let notes = std::fs::read_to_string(folder.join("notes.txt"))?;
    println!(
        "   notes.txt now: {notes:?}; by-hand.txt there: {}",
        folder.join("by-hand.txt").exists()
    );
    println!("\nDone: the folder is as turn 1 left it, and the dry run named the edit it undid.");
    Ok(())
}
