//! As root beside the agent account: a symbolic link the agent plants in a
//! session's folder path, or at its status path, never turns into root's
//! write, chown or read through it.

use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use room_kit::*;
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// `owned` (the agent's) holding `proj -> rootonly` (root's, 0700): the
/// stand-in for `/etc/systemd/system` behind an agent-owned path.
fn plant(root: &Path, agent: &nix::unistd::User) {
    let (owned, rootonly) = (root.join("owned"), root.join("rootonly"));
    std::fs::create_dir_all(&owned).unwrap();
    std::fs::create_dir_all(&rootonly).unwrap();
    std::fs::set_permissions(&rootonly, std::fs::Permissions::from_mode(0o700)).unwrap();
    nix::unistd::chown(&owned, Some(agent.uid), Some(agent.gid)).unwrap();
    symlink(&rootonly, owned.join("proj")).unwrap();
}

/// A service whose harnesses run as the agent account, and its work folder
/// with the planted link in it; `None` after a skip.
fn beside_the_agent(test: &str) -> Option<(Service, std::path::PathBuf)> {
    let agent = agent_account(test)?;
    let svc = Service::start(
        ROOM_CORE,
        json!({
            "agent_uid": agent.uid.as_raw(),
            "agent_socket": temp_root().join("agent.sock"),
        }),
    );
    let work = svc.folder("w");
    plant(&work, &agent);
    Some((svc, work))
}

#[test]
fn a_planted_link_at_any_depth_of_the_folder_fails_the_launch_and_root_writes_nothing_behind_it() {
    let test = "a_planted_link_at_any_depth_of_the_folder_fails_the_launch_and_root_writes_nothing_behind_it";
    let Some((svc, work)) = beside_the_agent(test) else {
        return;
    };
    let link = work.join("owned/proj");
    for folder in [link.join("service.d"), link.join("a/b"), link.clone()] {
        let s = svc.start_session(start_body(&folder, "claude", json!({})));
        let id = s["id"].as_str().unwrap();
        let v = svc.await_session(id, "the launch to fail", |v| v["state"] == "failed");
        assert_eq!(
            v["error"],
            format!(
                "claude could not be started: cannot use the folder {}: {} is a symbolic link, \
                 and room-core follows none in a session's folder; its prompt stays queued for a relaunch",
                folder.display(),
                link.display()
            ),
            "{v}"
        );
    }
    let behind = std::fs::read_dir(work.join("rootonly")).unwrap().count();
    assert_eq!(behind, 0, "nothing was created behind the link");
    assert_eq!(std::fs::metadata(work.join("rootonly")).unwrap().uid(), 0);
    assert!(svc.records().is_empty(), "no harness ran");
}

#[test]
fn a_linked_status_file_is_no_mark_and_its_target_is_never_shown() {
    let test = "a_linked_status_file_is_no_mark_and_its_target_is_never_shown";
    let Some((svc, work)) = beside_the_agent(test) else {
        return;
    };
    let secret = work.join("rootonly/secret");
    std::fs::write(&secret, "failed: root-only text 5b1e\n").unwrap();
    // The status file itself a link, and a folder whose parent is one.
    let owned = work.join("owned");
    symlink(&secret, status_file(&owned.join("code"))).unwrap();
    std::fs::write(
        work.join("rootonly/code.cloudroom-files"),
        "failed: root-only text 5b1e\n",
    )
    .unwrap();
    let mut ids = Vec::new();
    for folder in [owned.join("code"), owned.join("proj/code")] {
        let s = svc.start_session(start_body(&folder, "claude", json!({"project_copy": true})));
        let id = s["id"].as_str().unwrap().to_string();
        // A promised start holds as for a missing mark: the link is no mark.
        let v = svc.await_session(&id, "the wait", |v| !v["waiting_for"].is_null());
        assert_eq!(v["state"], "pending", "{v}");
        ids.push((id, folder));
    }
    // The first start's link replaced by a real mark: it starts at once.
    std::fs::remove_file(status_file(&owned.join("code"))).unwrap();
    mark(&owned.join("code"), "ready");
    let (first, folder) = &ids[0];
    svc.await_record(folder, 1, Duration::from_secs(10));
    svc.await_session(first, "the turn", |v| v["state"] != "pending");
    for (id, _) in &ids {
        let shown = format!(
            "{} {}",
            svc.session(id),
            svc.get(&format!("/v1/sessions/{id}/events")).1
        );
        assert!(!shown.contains("5b1e"), "{shown}");
    }
    assert!(!svc.log().contains("5b1e"), "the log shows none of it");
}
