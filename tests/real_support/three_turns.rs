//! A session whose three turns change its folder and its conversation, for
//! the rewind and fork checks: turn 1 writes `a.txt` with the CLI's own
//! write, turn 2's shell writes `b.txt`, turn 3's rewrites `a.txt`.

use std::path::Path;

use room_kit::events::await_turn_diff;
use room_kit::start_body;
use serde_json::json;

use super::Real;

/// Turns 2 and 3's prompts as the model sees them: a request that holds
/// neither holds nothing of those turns (their words alone may be in a
/// file's content, which claude tells the model when it changed).
pub const LATER_PROMPTS: [&str; 2] = ["echo bravo-two > b.txt", "echo charlie-three > a.txt"];

/// Sends `prompt` to session `id` and waits for turn `turn` to be over
/// and its diff journalled (the folder recorded after it).
pub fn send(real: &Real, id: &str, turn: u64, prompt: &str) {
    let (status, v) = real.svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({ "prompt": prompt }),
    );
    assert_eq!(status, 200, "{v}");
    real.await_idle(id);
    await_turn_diff(&real.svc, id, turn);
}

/// Starts a `harness` session in `folder` and runs its three turns: its
/// ID and `a.txt` as turn 1 left it.
pub fn three_turns(real: &Real, harness: &str, folder: &Path) -> (String, String) {
    std::fs::create_dir_all(folder).unwrap();
    let a = folder.join("a.txt");
    let s = real.svc.start_session(start_body(
        folder,
        harness,
        json!({"prompt": format!("TOOL_WRITE {} alpha-one", a.display())}),
    ));
    let id = s["id"].as_str().unwrap().to_string();
    real.await_idle(&id);
    await_turn_diff(&real.svc, &id, 1);
    let after_one = std::fs::read_to_string(&a).unwrap();
    let f = folder.display();
    let [two, three] = LATER_PROMPTS;
    send(real, &id, 2, &format!("TOOL_RUN cd {f} && {two}"));
    send(real, &id, 3, &format!("TOOL_RUN cd {f} && {three}"));
    (id, after_one)
}
