//! Asking an ACP agent what it offers, for `GET /v1/capabilities`: the
//! agent started as turns are ([`crate::supervise::spawn`]: the account
//! turns run as, the harness environment, `no_new_privs`, a process group
//! of its own that dies with the thread that waits for it), sent
//! `initialize`, its output read line by line within a deadline and a cap
//! until the answer comes, then its group killed. Nothing of it outlives
//! the check or the service.

use std::ffi::OsString;
use std::fs::File;
use std::io::Read;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use super::protocol;
use crate::harness::account::Account;
use crate::harness::bounds::cut;
use crate::harness::jsonrpc::{self, Envelope, RequestId};
use crate::supervise::spawn;

/// How long an agent may take to answer `initialize`, from its spawn
/// (a node agent takes about a second here).
pub(crate) const DEADLINE: Duration = Duration::from_secs(20);
/// The most bytes of its stdout read (and of its stderr, dropped).
pub(crate) const MAX_READ: usize = 1 << 20;
/// The most characters of a name or version kept, and of extensions named.
const MAX_TEXT: usize = 200;
const MAX_EXTENSIONS: usize = 32;

/// What the agent at `program` (with `args`) offers, from its answer to
/// `initialize`; or why it is not known: it could not start, did not
/// answer within `deadline`, or answered with an error.
pub(crate) fn ask(
    program: &Path,
    args: &[String],
    env: &[(OsString, OsString)],
    account: Option<&Account>,
    deadline: Duration,
) -> Result<Value, String> {
    let spec = crate::harness::version::check_spec(program, args, env, account);
    let mut child = spawn(&spec).map_err(|e| e.to_string())?;
    let asked = child
        .stdin
        .take()
        .map(OwnedFd::from)
        .map(File::from)
        .map(|mut stdin| {
            // Its stdin stays open until the answer is read: an agent ends
            // when it closes.
            let written = stdin.write_all(protocol::initialize(1).as_bytes());
            (stdin, written)
        });
    let answer = match asked {
        Some((_stdin, Ok(()))) => read_answer(&mut child, deadline),
        Some((_, Err(e))) => Err(format!("it took no initialize: {e}")),
        None => Err("it has no stdin".into()),
    };
    // Unreaped, the leader keeps its group's number: this reaches only
    // what the check started.
    let _ = killpg(Pid::from_raw(child.pgid() as i32), Signal::SIGKILL);
    let _ = child.wait();
    answer.map(|result| summary(&result))
}

/// Reads the child's stdout line by line (its stderr drained and dropped)
/// until the answer to request 1, within `deadline` and [`MAX_READ`]
/// bytes each.
fn read_answer(child: &mut crate::supervise::Child, deadline: Duration) -> Result<Value, String> {
    let end = Instant::now() + deadline;
    let file = |fd: Option<OwnedFd>| fd.map(File::from);
    let mut out = file(child.stdout.take().map(OwnedFd::from));
    let mut err = file(child.stderr.take().map(OwnedFd::from));
    let (mut line, mut read, mut drained) = (Vec::new(), 0usize, 0usize);
    let mut chunk = [0u8; 4096];
    let late = || {
        let secs = deadline.as_secs_f64();
        format!("it did not answer initialize within {secs} s")
    };
    loop {
        let left = end.saturating_duration_since(Instant::now());
        let Some(stdout) = out.as_mut() else {
            return Err("it ended without answering initialize".into());
        };
        if left.is_zero() {
            return Err(late());
        }
        let (out_ready, err_ready) = {
            let mut fds = vec![PollFd::new(stdout.as_fd(), PollFlags::POLLIN)];
            if let Some(e) = err.as_ref() {
                fds.push(PollFd::new(e.as_fd(), PollFlags::POLLIN));
            }
            let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
            match poll(&mut fds, timeout) {
                Ok(0) => return Err(late()),
                Ok(_) => {
                    let ready = |f: &PollFd| f.any().unwrap_or(true);
                    (ready(&fds[0]), fds.get(1).is_some_and(ready))
                }
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(format!("cannot wait for its answer: {e}")),
            }
        };
        if err_ready {
            match err.as_mut().map(|e| e.read(&mut chunk)) {
                Some(Ok(n)) if n > 0 && drained + n < MAX_READ => drained += n,
                Some(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => {}
                _ => err = None,
            }
        }
        if !out_ready {
            continue;
        }
        let n = match stdout.read(&mut chunk) {
            Ok(0) => {
                out = None;
                continue;
            }
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("cannot read its answer: {e}")),
        };
        read += n;
        if read > MAX_READ {
            return Err(format!(
                "it wrote more than {MAX_READ} bytes before answering initialize"
            ));
        }
        for &b in &chunk[..n] {
            if b != b'\n' {
                line.push(b);
                continue;
            }
            let text = String::from_utf8_lossy(&line).into_owned();
            line.clear();
            match jsonrpc::sort(&text) {
                Envelope::Response {
                    id: RequestId::Number(1),
                    result,
                } => return Ok(result),
                Envelope::Error {
                    id: RequestId::Number(1),
                    message,
                } => {
                    return Err(format!(
                        "it refused initialize: {}",
                        cut(&message, MAX_TEXT)
                    ))
                }
                _ => {}
            }
        }
    }
}

/// What `GET /v1/capabilities` shows of an `initialize` result: the
/// protocol version, the agent's name and version, whether it loads,
/// resumes and forks sessions, takes images, which MCP transports it takes
/// besides stdio, whether it takes steers (the steering extension) and the
/// names of its extensions (`_meta`'s keys).
fn summary(result: &Value) -> Value {
    let text = |v: &Value| v.as_str().map(|s| cut(s, MAX_TEXT));
    let caps = &result["agentCapabilities"];
    let offers = protocol::offers(result);
    let extensions: Vec<String> = caps["_meta"]
        .as_object()
        .map(|m| {
            m.keys()
                .take(MAX_EXTENSIONS)
                .map(|k| cut(k, MAX_TEXT))
                .collect()
        })
        .unwrap_or_default();
    json!({
        "protocol_version": result["protocolVersion"].as_u64(),
        "agent": {
            "name": text(&result["agentInfo"]["name"]),
            "version": text(&result["agentInfo"]["version"]),
        },
        "load": offers.load,
        "resume": offers.resume,
        "fork": offers.fork,
        "images": offers.images,
        "steering": offers.steering,
        "mcp": {
            "http": caps["mcpCapabilities"]["http"] == true,
            "sse": caps["mcpCapabilities"]["sse"] == true,
        },
        "extensions": extensions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// An agent script in a temp folder of its own, asked with `deadline`.
    fn run(body: &str, deadline: Duration) -> Result<Value, String> {
        let dir = std::env::temp_dir().join(format!(
            "room-core-acp-probe-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("agent");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let env = [(OsString::from("PATH"), OsString::from("/usr/bin:/bin"))];
        let said = ask(&path, &[], &env, None, deadline);
        let _ = std::fs::remove_dir_all(dir);
        said
    }

    #[test]
    fn the_answer_to_initialize_says_what_the_agent_offers() {
        // Chatter first, then the answer; it would wait forever after.
        let answer = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentInfo":{"name":"fake","version":"9"},"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":true},"mcpCapabilities":{"http":true},"sessionCapabilities":{"fork":{}},"_meta":{"fakeExt":{}}},"_meta":{"steering":{"supported":true}}}}"#;
        let said = run(
            &format!("read line; echo 'not json'; echo '{answer}'; exec sleep 60"),
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(
            said,
            json!({
                "protocol_version": 1, "agent": {"name": "fake", "version": "9"},
                "load": true, "resume": false, "fork": true, "images": true,
                "steering": true, "mcp": {"http": true, "sse": false}, "extensions": ["fakeExt"],
            })
        );
    }

    #[test]
    fn an_agent_that_says_nothing_refuses_or_floods_is_an_error_in_bounded_time() {
        let t = Instant::now();
        let e = run("exec sleep 60", Duration::from_millis(300)).unwrap_err();
        assert!(e.contains("did not answer initialize"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        let e = run(
            r#"read line; echo '{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}'"#,
            Duration::from_secs(10),
        )
        .unwrap_err();
        assert_eq!(e, "it refused initialize: no");
        let e = run("exec yes", Duration::from_secs(10)).unwrap_err();
        assert!(e.contains("more than 1048576 bytes"), "{e}");
        let e = run("exit 0", Duration::from_secs(10)).unwrap_err();
        assert!(
            e.contains("without answering") || e.contains("took no initialize"),
            "{e}"
        );
    }
}
