//! pid 1's environment never marks a caller: in a container whose init sets
//! `CLOUDROOM_LOOP`, every orphaned process is init's child, and none of them
//! is that loop's check script. Run for real in a new pid namespace
//! (`unshare --pid --fork --mount-proc`, root only), whose pid 1 is a shell
//! that carries the marker and starts the real service and room-cli.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use room_kit::{is_root, quote, skip, FakeWebsite, Service, TempDir, LOOP_ID};
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// room-cli, built beside the service.
const ROOM_CLI: &str = env!("CARGO_BIN_EXE_room-cli");

/// Whether this machine can make a pid namespace; the reason when not.
fn pid_namespaces() -> Result<(), String> {
    if !is_root() {
        return Err("needs root for unshare --pid".into());
    }
    match Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("unshare --pid --fork --mount-proc true: {s}")),
        Err(e) => Err(format!("no unshare: {e}")),
    }
}

/// What one room-cli call in the namespace printed and exited with.
fn read_out(dir: &std::path::Path, name: &str) -> (i32, String, String) {
    let read = |ext: &str| std::fs::read_to_string(dir.join(format!("{name}.{ext}")));
    (
        read("code").unwrap().trim().parse().unwrap(),
        read("out").unwrap(),
        read("err").unwrap(),
    )
}

#[test]
fn pid_1s_environment_does_not_mark_its_orphans() {
    if let Err(why) = pid_namespaces() {
        return skip("pid_1s_environment_does_not_mark_its_orphans", &why);
    }
    let web = FakeWebsite::start();
    web.answer(200, r#"{"loops":[]}"#);
    let dir = TempDir::new("init-marker");
    let svc = Service::builder(ROOM_CORE)
        .config(json!({ "website_url": web.url }))
        .log_filter("info")
        .prepare();
    let socket = svc.socket();
    let d = quote(&dir.path().to_string_lossy());
    let cli = format!(
        "env -u CLOUDROOM_LOOP ROOM_CORE_SOCKET={} {}",
        quote(&socket.to_string_lossy()),
        quote(ROOM_CLI)
    );
    // pid 1 of the namespace is this shell (`env` execs it), marked with a
    // valid loop ID. The service and room-cli run without the marker.
    let script = format!(
        r#"
{core} >>{log} 2>&1 &
i=0
while [ ! -S {socket} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
# A child of pid 1, as every orphan is.
{cli} loop list >{d}/orphan.out 2>{d}/orphan.err; echo $? >{d}/orphan.code
# The control: the same call under a marked process that is not pid 1.
env CLOUDROOM_LOOP={id} sh -c '{nested} loop list' >{d}/marked.out 2>{d}/marked.err; echo $? >{d}/marked.code
"#,
        core = svc.shell_command(),
        log = quote(&svc.log_path().to_string_lossy()),
        socket = quote(&socket.to_string_lossy()),
        nested = cli.replace('\'', r"'\''"),
        cli = cli,
        id = LOOP_ID,
    );
    let mut child = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "env"])
        .arg(format!("CLOUDROOM_LOOP={LOOP_ID}"))
        .args(["sh", "-c", &script])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    // Bounded: the namespace (and the service in it) dies with its pid 1.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the namespace did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let log = svc.log();
    assert!(status.success(), "{status}: {log}");

    let (code, out, err) = read_out(dir.path(), "orphan");
    assert_eq!(code, 1, "{out}{err}\n{log}");
    assert_eq!(
        err,
        "Run cloudroom loop from a Cloudroom cloud thread or from a loop's check script (marked by CLOUDROOM_LOOP)\n"
    );
    assert_eq!(out, "");

    let (code, out, err) = read_out(dir.path(), "marked");
    assert_eq!(code, 0, "{out}{err}\n{log}");
    assert_eq!(out, "{\"loops\":[]}\n");
    assert_eq!(
        web.calls(),
        vec![(
            "/api/core/automation".to_string(),
            json!({"action": "list", "automation": LOOP_ID})
        )],
        "only the marked call reaches the website"
    );
}
