//! What room-core acknowledges is on disk: with the state dir full,
//! message, stop, resume and close answer `500 state_unwritable` and change
//! nothing, and after a restart nothing acknowledged is lost. The state dir
//! is private (0700, records, journals and the token 0600), repaired at
//! start, and crash leftovers are removed.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// A small tmpfs mounted over a folder; lazily unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Result<Tmpfs, String> {
        std::fs::create_dir_all(at).unwrap();
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(at)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mount refused a tmpfs: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Tmpfs(at.to_path_buf()))
    }

    /// Fills it up; returns the filler, which frees the space when removed.
    fn fill(&self) -> PathBuf {
        let filler = self.0.join("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        let chunk = vec![0u8; 4096];
        while f.write_all(&chunk).is_ok() {}
        let _ = f.sync_all();
        filler
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A service whose state dir is a 2 MiB tmpfs (mounted over the folder of a
/// first run, then started again on it); `None` after a skip.
fn on_a_small_disk(test: &str) -> Option<(Service, Tmpfs)> {
    let mut svc = Service::start(ROOM_CORE, json!({}));
    svc.stop();
    let mount = match Tmpfs::mount(&svc.state, "2m") {
        Ok(m) => m,
        Err(why) => {
            skip(test, &why);
            return None;
        }
    };
    svc.start_again();
    Some((svc, mount))
}

fn view(svc: &Service, id: &str) -> Value {
    let mut v = svc.session(id);
    // Times aside, the view says everything the record does.
    v.as_object_mut().unwrap().remove("waiting_for");
    v
}

#[test]
fn with_the_disk_full_commands_change_nothing_and_nothing_acknowledged_is_lost() {
    let Some((mut svc, mount)) = on_a_small_disk(
        "with_the_disk_full_commands_change_nothing_and_nothing_acknowledged_is_lost",
    ) else {
        return;
    };
    let start = |name: &str| {
        let folder = svc.folder(name);
        let s = svc.start_session(start_body(&folder, "claude", json!({"prompt": "first"})));
        let id = s["id"].as_str().unwrap().to_string();
        svc.await_session(&id, "the first turn to end", |v| v["state"] == "idle");
        id
    };
    let (a, b) = (start("a"), start("b"));
    let (status, v) = svc.post(&format!("/v1/sessions/{a}/stop"), json!({}));
    assert_eq!(status, 200, "{v}");
    let (a_before, b_before) = (view(&svc, &a), view(&svc, &b));

    let filler = mount.fill();
    let unwritable = |id: &str, command: &str, body: Value| {
        let (status, v) = svc.post(&format!("/v1/sessions/{id}/{command}"), body);
        assert_eq!(
            (status, v["code"].as_str()),
            (500, Some("state_unwritable")),
            "{command}: {v}"
        );
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .ends_with("Nothing was changed."),
            "{v}"
        );
    };
    unwritable(&a, "messages", json!({"prompt": "lost"}));
    unwritable(&a, "resume", json!({}));
    unwritable(&a, "close", json!({}));
    unwritable(&b, "stop", json!({}));
    assert_eq!(view(&svc, &a), a_before);
    assert_eq!(view(&svc, &b), b_before);

    std::fs::remove_file(filler).unwrap();
    svc.kill9();
    svc.start_again();
    assert_eq!(view(&svc, &a), a_before);
    assert_eq!(view(&svc, &b), b_before);
    // With room again, the same commands apply.
    let (status, v) = svc.post(
        &format!("/v1/sessions/{a}/messages"),
        json!({"prompt": "now"}),
    );
    assert_eq!(
        (status, &v["queue"]),
        (200, &json!({"length": 1, "paused": true})),
        "{v}"
    );
    let (status, v) = svc.post(&format!("/v1/sessions/{b}/stop"), json!({}));
    assert_eq!((status, &v["queue"]["paused"]), (200, &json!(true)), "{v}");
    let prompts: Vec<Value> = svc.records().iter().map(|r| r["prompt"].clone()).collect();
    assert_eq!(prompts, [json!("first"), json!("first")]);
    drop(mount);
}

#[test]
fn with_the_disk_full_at_a_restart_the_service_comes_up_degraded_and_recovers_when_room_is_back() {
    let Some((mut svc, mount)) = on_a_small_disk("with_the_disk_full_at_a_restart_the_service_comes_up_degraded_and_recovers_when_room_is_back") else {
        return;
    };
    let ids: Vec<String> = (0..32)
        .map(|n| {
            let folder = svc.folder(&format!("w{n}"));
            let s = svc.start_session(start_body(&folder, "claude", json!({"project_copy": true})));
            s["id"].as_str().unwrap().to_string()
        })
        .collect();
    for id in &ids {
        svc.await_session(id, "the copy wait", |v| !v["waiting_for"].is_null());
    }
    let before: Vec<Value> = ids.iter().map(|id| view(&svc, id)).collect();
    svc.stop();
    // Nothing the restart removes frees room (`listen` goes before a start).
    std::fs::remove_file(svc.state.join("listen")).unwrap();
    let filler = mount.fill();
    svc.start_again();
    // Up (ready a moment after it listens), and it says why it is not all
    // right.
    let v = wait_until("the service to be ready", Duration::from_secs(10), || {
        let (status, v) = svc.get("/v1/ready");
        (status == 200).then_some(v)
    });
    let why = v["degraded"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("cannot write ") && why.ends_with("No space left on device (os error 28)"),
        "{v}"
    );
    let after: Vec<Value> = ids.iter().map(|id| view(&svc, id)).collect();
    assert_eq!(after, before, "every waiting start is back as it was");
    let (status, v) = svc.post(&format!("/v1/sessions/{}/stop", ids[0]), json!({}));
    assert_eq!(
        (status, v["code"].as_str()),
        (500, Some("state_unwritable")),
        "{v}"
    );
    // With room again it recovers without a restart: a command applies
    // and a copy that lands starts its harness.
    std::fs::remove_file(filler).unwrap();
    let (status, v) = svc.post(&format!("/v1/sessions/{}/stop", ids[0]), json!({}));
    assert_eq!((status, &v["queue"]["paused"]), (200, &json!(true)), "{v}");
    let folder = svc.folder("w1");
    land_project(&folder);
    mark(&folder, "ready");
    svc.await_record(&folder, 1, Duration::from_secs(10));
    let v = wait_until(
        "the service to say it is all right",
        Duration::from_secs(10),
        || {
            let (status, v) = svc.get("/v1/ready");
            (status == 200 && v["degraded"].is_null()).then_some(v)
        },
    );
    assert_eq!(v["ready"], true, "{v}");
    drop(mount);
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn set(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn the_state_dir_is_private_repaired_at_start_and_rid_of_crash_leftovers() {
    // No token in the config: the service makes one in the state dir.
    let mut svc = Service::start(ROOM_CORE, json!({"token": null}));
    let token = std::fs::read_to_string(svc.state.join("token")).unwrap();
    let folder = svc.folder("code");
    let (status, s) = {
        let r = ureq::post(&format!("{}/v1/sessions", svc.base))
            .set("Authorization", &format!("Bearer {}", token.trim()))
            .send_json(start_body(&folder, "claude", json!({})));
        let r = r.unwrap();
        (r.status(), r.into_json::<Value>().unwrap())
    };
    assert_eq!(status, 201, "{s}");
    let id = s["id"].as_str().unwrap().to_string();
    let record = svc.state.join("sessions").join(format!("{id}.json"));
    let events = svc.state.join("events").join(format!("{id}.jsonl"));
    wait_until("the journal", Duration::from_secs(5), || {
        events.exists().then_some(())
    });
    let dirs = [
        svc.state.clone(),
        svc.state.join("sessions"),
        svc.state.join("events"),
    ];
    let files = [svc.state.join("token"), record.clone(), events.clone()];
    for d in &dirs {
        assert_eq!(mode(d), 0o700, "{}", d.display());
    }
    for f in &files {
        assert_eq!(mode(f), 0o600, "{}", f.display());
    }

    // Loosened while stopped, and a temp file left by a crash mid-write.
    svc.stop();
    for d in &dirs {
        set(d, 0o755);
    }
    for f in &files {
        set(f, 0o644);
    }
    let leftover = svc
        .state
        .join("sessions")
        .join(format!(".{id}.json.0123456789abcdef0123456789abcdef.tmp"));
    std::fs::write(&leftover, "{\"torn").unwrap();
    svc.start_again();
    for d in &dirs {
        assert_eq!(mode(d), 0o700, "{}", d.display());
    }
    for f in &files {
        assert_eq!(mode(f), 0o600, "{}", f.display());
    }
    assert!(!leftover.exists(), "the crash leftover is still there");
    assert!(
        svc.log().contains("removed the crash leftover"),
        "{}",
        svc.log()
    );
    // The session came through.
    let (status, v) = svc.call_with(
        "GET",
        &format!("/v1/sessions/{id}"),
        None,
        Some(token.trim()),
    );
    assert_eq!(status, 200, "{v}");
}
