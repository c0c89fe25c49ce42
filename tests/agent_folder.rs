//! With a separate agent account (`agent_uid`), the session folder Core
//! creates for a blank start (and each folder above it that it creates) is
//! that account's, so the agent can write in it.

use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use room_kit::*;
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

#[test]
fn a_folder_core_creates_belongs_to_the_agent_account() {
    let Some(agent) = agent_account("a_folder_core_creates_belongs_to_the_agent_account") else {
        return;
    };
    let root = temp_root();
    let svc = Service::start(
        ROOM_CORE,
        json!({
            "agent_uid": agent.uid.as_raw(),
            // The state dir is the service's and 0700: the socket lives elsewhere.
            "agent_socket": root.join("agent.sock"),
        }),
    );
    std::fs::create_dir_all(svc.folder("")).unwrap();
    let parent = svc.folder("blank");
    let folder = parent.join("code");
    assert!(!parent.exists());
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({"prompt": "run: touch written && id -u"}),
    ));
    let record = wait_until("the tool's output", Duration::from_secs(10), || {
        svc.records_in(&folder)
            .first()
            .filter(|r| !r["tool"].is_null())
            .cloned()
    });
    assert_eq!(
        record["tool"]["stdout"],
        format!("{}\n", agent.uid),
        "{record}"
    );
    for dir in [&parent, &folder] {
        let meta = std::fs::metadata(dir).unwrap();
        assert_eq!(
            (meta.uid(), meta.gid()),
            (agent.uid.as_raw(), agent.gid.as_raw()),
            "{}",
            dir.display()
        );
    }
    assert_eq!(
        std::fs::metadata(folder.join("written")).unwrap().uid(),
        agent.uid.as_raw()
    );
    // The folders above the ones Core made stay as they were.
    assert_eq!(
        std::fs::metadata(parent.parent().unwrap()).unwrap().uid(),
        0
    );
    svc.await_session(s["id"].as_str().unwrap(), "the turn to end", |v| {
        v["state"] == "idle"
    });
    drop(svc);
    let _ = std::fs::remove_dir_all(&root);
}
