//! The bodies of the fuzz targets (`fuzz/fuzz_targets/`, run by cargo-fuzz
//! on nightly) and of their corpora's replay (`tests/fuzz_corpora.rs`, run
//! by `cargo test` on stable): one function per parser of outside input,
//! taking the raw bytes an attacker controls. Each target is a one-line
//! call of its function here, so the fuzzer and the replay run the same
//! code; each function panics only when an invariant the service relies on
//! fails, and a parser that panics is a finding either way.
//!
//! [`TARGETS`] names them all; the replay test checks that every target has
//! a corpus folder and a fuzz target, and every corpus folder a target.

use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use room_machines::body_keys::RESERVED_KEYS;
use room_machines::copy::MAX_MARK_BYTES;
use room_machines::policy::Scope;
use room_machines::request::Value as BodyValue;
use room_machines::session::{DecidedBy, Decision};
use room_machines::{Command, CopyMark, Observation, Parsed};

use crate::api::bodies;
use crate::api::query::Query;
use crate::error::Refusal;
use crate::harness::codex::protocol::{ApprovalPolicy, SandboxMode};
use crate::harness::codex::talk::Opening;
use crate::harness::refusal::{Unread, Unreadable};
use crate::harness::speech::{self, Answer, Heard, Out, Said};
use crate::harness::talk::{Read, Talker};
use crate::harness::Harness;
use crate::journal::{
    nests_deeper, Journal, Journalled, NewEvent, Unservable, DEPTH_MAX, MAX_PAGE,
};
use crate::procfs;
use crate::supervise::output::{Line, LineSplitter, CHUNK, HEAD};
use crate::supervise::process;

/// One fuzz target: its name (its file in `fuzz/fuzz_targets/` and its
/// folder in `fuzz/corpus/`) and its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every fuzz target.
pub const TARGETS: &[Target] = &[
    ("status_mark", status_mark),
    ("cli_command", cli_command),
    ("api_bodies", api_bodies),
    ("api_query", api_query),
    ("harness_claude", harness_claude),
    ("harness_codex", harness_codex),
    ("harness_acp", harness_acp),
    ("agent_frame", agent_frame),
    ("journal_restore", journal_restore),
    ("proc_reads", proc_reads),
    ("snapshot_answer", snapshot_answer),
];

/// The project copy's status file, `<folder>.cloudroom-files`, which the
/// agent account can write: `CopyMark::parse` and `Observation::from_file`.
pub fn status_mark(data: &[u8]) {
    match CopyMark::parse(data) {
        Ok(mark) => {
            assert!(data.len() <= MAX_MARK_BYTES);
            let text = std::str::from_utf8(data).expect("a mark is UTF-8");
            if let CopyMark::Failed(reason) = &mark {
                assert_eq!(reason.trim(), reason, "a reason is trimmed");
                assert!(text.contains(reason.as_str()));
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    let seen = Observation::from_file(data, 7);
    assert_eq!(seen.age, Some(7));
    assert!(
        seen.mark.is_some() != seen.malformed.is_some(),
        "a status file is a mark or malformed: {seen:?}"
    );
}

/// room-cli's argv as the agent socket hands it to the grammar (the bytes
/// split at NUL, one argument each): `Command::parse`, then the website
/// request a forwarded command becomes, which must never name another
/// session than the caller's.
pub fn cli_command(data: &[u8]) {
    let argv: Vec<String> = if data.is_empty() {
        Vec::new()
    } else {
        data.split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    };
    let command = match Command::parse(&argv) {
        Ok(Parsed::Run(command)) => command,
        Ok(Parsed::Help(text)) => return assert!(!text.is_empty()),
        Err(e) => return assert!(!e.to_string().is_empty()),
    };
    assert!(!command.name().is_empty());
    let scope = Scope::Session("the-caller".into());
    let request = room_machines::website_request(&command, &scope, || "fresh".into());
    assert_eq!(request.endpoint, command.endpoint());
    assert_eq!(
        request.body.get("session"),
        Some(&BodyValue::Str("the-caller".into())),
        "{argv:?}"
    );
    assert_eq!(request.body.get("automation"), None, "{argv:?}");
    let keys: Vec<&str> = request.body.0.iter().map(|(k, _)| k.as_str()).collect();
    for reserved in RESERVED_KEYS {
        assert!(
            keys.iter().filter(|k| *k == reserved).count() <= 1,
            "{keys:?}"
        );
    }
    serde_json::to_vec(&request).expect("a website request serialises");
}

/// A request body as every route reads it: `bodies::create` (`POST
/// /v1/sessions`), `message`, `relaunch` and `none` (the routes that take
/// no body). Every refusal is a 400 or 422 with a code and a sentence.
pub fn api_bodies(data: &[u8]) {
    let _ = bodies::none(data).map_err(refused);
    if let Ok((m, images)) = bodies::message(data).map_err(refused) {
        assert!(!m.prompt.trim().is_empty() && !m.prompt.contains('\0'));
        images_within_caps(&images);
    }
    let _ = bodies::relaunch(data).map_err(refused);
    if let Ok((start, images)) = bodies::create(data).map_err(refused) {
        use std::os::unix::ffi::OsStrExt;
        images_within_caps(&images);
        assert_eq!(start.attachments.len(), images.len());
        let folder = start.folder.as_os_str().as_bytes();
        assert!(start.folder.is_absolute() && !folder.contains(&0));
        assert!(start.folder.to_string_lossy().chars().count() <= bodies::MAX_FOLDER);
        assert!(!start.workspace.trim().is_empty());
    }
}

/// Images the API took keep its caps, and are what their bytes say.
fn images_within_caps(images: &[crate::attachments::check::Checked]) {
    use crate::attachments::check::{sniff, MAX_IMAGES, MAX_IMAGE_BYTES, MAX_TOTAL_BYTES};
    assert!(images.len() <= MAX_IMAGES);
    let total: usize = images.iter().map(|i| i.data.len()).sum();
    assert!(total <= MAX_TOTAL_BYTES);
    for i in images {
        assert!(i.data.len() <= MAX_IMAGE_BYTES);
        assert_eq!(sniff(&i.data), Some(i.attachment.media_type));
        assert_eq!(i.attachment.bytes, i.data.len() as u64);
    }
}

/// A query string as every route that takes one reads it (`Query::parse`
/// with the route's parameters, then its numbers), and as the routes that
/// take none refuse it. A URI's query is ASCII, so other bytes are taken
/// lossily (hyper refuses them before the parser).
pub fn api_query(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for known in [
        &["workspace", "state", "after", "limit"][..],
        &["after", "limit"],
        &["after"],
        &[],
    ] {
        let Ok(query) = Query::parse(Some(&text), known).map_err(refused) else {
            continue;
        };
        for name in known {
            let _ = query.get(name);
        }
        let _ = query.number("after").map_err(refused);
        if let Ok(n) = query.limit("limit", 256, 1024).map_err(refused) {
            assert!((1..=1024).contains(&n));
        }
    }
    assert_eq!(Query::parse(None, &[]).ok(), Some(Query::default()));
}

/// A claude turn's stdout (stream-json), as the turn reader takes it.
pub fn harness_claude(data: &[u8]) {
    harness_output(Harness::Claude, data);
}

/// A codex process's stdout (its app server), as the turn reader takes it.
pub fn harness_codex(data: &[u8]) {
    harness_output(Harness::Codex, data);
}

/// An ACP agent's stdout, as the turn reader takes it.
pub fn harness_acp(data: &[u8]) {
    harness_output(Harness::Acp, data);
}

/// A talker whose turn runs: claude's, codex's once its thread is open
/// and its turn's ID known, or an ACP agent's once its session is open
/// (an agent that offers steering) and its prompt sent, so that answers
/// are worded as a running turn's.
fn talking(harness: Harness) -> Talker {
    let opening = Opening {
        cwd: "/w".into(),
        resume: None,
        revert_before: None,
        fork_through: None,
        approval_policy: ApprovalPolicy::Untrusted,
        sandbox: SandboxMode::WorkspaceWrite,
        model: None,
        instructions: None,
        effort: None,
        config: None,
    };
    let mut talker = Talker::new(harness, opening);
    talker.say(Said::prompt("p".into()));
    match harness {
        Harness::Codex => {
            talker.hear(r#"{"id":2,"result":{"thread":{"id":"t"}}}"#);
            talker.hear(r#"{"id":3,"result":{"turn":{"id":"u"}}}"#);
        }
        Harness::Acp => {
            talker.hear(r#"{"jsonrpc":"2.0","id":1,"result":{"agentCapabilities":{},"_meta":{"steering":{"supported":true}}}}"#);
            talker.hear(r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s"}}"#);
        }
        Harness::Claude => {}
    }
    talker
}

/// What a harness's line says to the session, and every line room-core
/// would write back for it: a request's fields within their caps (its
/// input still JSON), each line one JSON line that the CLI can read, a
/// refusal answered exactly when it says so, and (claude) an allow that
/// carries the input asked about.
fn protocol_line(talker: &mut Talker, read: Read, text: &str) {
    let one_line = |out: &Out| {
        let body = out
            .line
            .strip_suffix('\n')
            .expect("a line ends in a newline");
        assert!(!body.contains('\n'), "one line: {:?}", out.line);
        serde_json::from_str::<serde_json::Value>(body).expect("JSON")
    };
    let hearing = talker.heard(read);
    hearing.writes.iter().for_each(|out| drop(one_line(out)));
    if let Some(refused) = &hearing.refused {
        assert_eq!(refused.answered, !hearing.writes.is_empty(), "{refused:?}");
        assert!(hearing.heard.is_none());
    }
    if let Some(Heard::Asked(req)) = hearing.heard {
        assert!(req.harness_ref.len() <= 256 && req.tool.len() <= 1024);
        assert!(!req.reason.as_ref().is_some_and(|r| r.len() > 1024));
        assert!(req.input.len() <= speech::INPUT_MAX, "{}", req.input.len());
        serde_json::from_str::<serde_json::Value>(&req.input).expect("the input is JSON");
        for decision in [Decision::Allow, Decision::Deny, Decision::AllowForSession] {
            let answer = Said::Answer(Answer {
                harness_ref: req.harness_ref.clone(),
                tool: req.tool.clone(),
                decision,
                by: DecidedBy::App,
                message: Some(text.to_string()),
            });
            let said = talker.say(answer);
            let first = said.iter().map(one_line).next();
            if let (Harness::Claude, Decision::Allow, Some(v)) = (talker.harness(), decision, first)
            {
                assert!(v["response"]["response"]["updatedInput"].is_object(), "{v}");
            }
        }
    }
}

/// The longest line the harness targets keep: small, so that inputs of a
/// fuzzer's size reach the reader's over-the-cap path (the service's is
/// `LINE_CAP`, 1 MiB; the code is the same).
const HARNESS_LINE_CAP: usize = 512;

/// Splits `data` into lines as the poller does (what each read gives, at
/// most a chunk, pushed through a [`LineSplitter`]), finds the native ID,
/// makes each servable JSON line its journal event, which must be one line
/// of the journal that restores to the same data byte for byte and parses
/// in a page with serde_json's recursion limit, and hands every other line
/// (over the cap, not UTF-8, not servable) to the talker as a line not read
/// whole, whose requests are refused.
fn harness_output(harness: Harness, data: &[u8]) {
    let mut split = LineSplitter::new(HARNESS_LINE_CAP);
    let mut talker = talking(harness);
    let mut count = 0;
    let mut lines = Vec::new();
    for read in data.chunks(CHUNK) {
        split.push(read, &mut |line| lines.push(line));
    }
    lines.extend(split.finish());
    for line in lines {
        count += 1;
        assert!(count <= data.len() + 1, "more lines than bytes");
        let (why, bytes, head) = match &line {
            Line::Text(text) => {
                assert!(text.len() <= HARNESS_LINE_CAP && !text.contains('\n'));
                match NewEvent::harness(text) {
                    Ok(event) => {
                        protocol_line(&mut talker, Talker::read(harness, text), text);
                        journal_line(event);
                        continue;
                    }
                    Err(Unservable::Blank) => continue,
                    Err(why) => {
                        let deep = nests_deeper(text.trim().as_bytes(), DEPTH_MAX);
                        assert_eq!(deep, why == Unservable::TooDeep, "{why:?}");
                        let head = &text.as_bytes()[..text.len().min(HEAD)];
                        (Unreadable::Unservable(why), text.len() as u64, head)
                    }
                }
            }
            Line::TooLong { bytes, head } => {
                assert!(*bytes > HARNESS_LINE_CAP as u64 && head.len() <= HEAD);
                let why = Unreadable::OverCap {
                    cap: HARNESS_LINE_CAP,
                };
                (why, *bytes, &head[..])
            }
            Line::NotUtf8 { bytes, head } => {
                assert!(head.len() <= HEAD && head.len() <= *bytes);
                (Unreadable::NotUtf8, *bytes as u64, &head[..])
            }
        };
        let unread = Unread { why, bytes, head };
        protocol_line(&mut talker, Talker::read_unread(harness, unread), "");
    }
    assert!(
        split.peak_buffer() + CHUNK <= HARNESS_LINE_CAP + (64 << 10),
        "the reader's memory is capped"
    );
}

/// A harness's journal event as its journal line: one line, restored byte
/// for byte, and a page holding it parses in serde_json (recursion limit
/// 128).
fn journal_line(event: NewEvent) {
    let journalled = Journalled {
        seq: 1,
        at_ms: 1,
        kind: event.kind,
        data: event.data,
    };
    let line = serde_json::to_vec(&journalled).expect("an event serialises");
    assert!(!line.contains(&b'\n'), "a journal line holds no newline");
    let back: Journalled = serde_json::from_slice(&line).expect("a journal line is an event");
    assert_eq!(back.data.get(), journalled.data.get());
    assert_eq!(back.kind, "harness");
    let page = format!(
        r#"{{"events":[{}],"next_after":1}}"#,
        String::from_utf8_lossy(&line)
    );
    serde_json::from_str::<serde_json::Value>(&page).expect("a page parses");
}

/// One room-cli request as the agent socket reads it (`conn::read_request`,
/// a JSON value under the size cap and the deadline), sent whole over a
/// socket pair, then its argv through the command grammar.
pub fn agent_frame(data: &[u8]) {
    let (mut client, server) = UnixStream::pair().expect("a socket pair");
    // Larger than a socket's buffer: written from another thread.
    let writer = if data.len() > 32 << 10 {
        let bytes = data.to_vec();
        Some(std::thread::spawn(move || {
            let _ = client.write_all(&bytes);
        }))
    } else {
        client
            .write_all(data)
            .expect("the socket takes a small request");
        drop(client);
        None
    };
    let deadline = Instant::now() + crate::agent::REQUEST_DEADLINE;
    let read = crate::agent::conn::read_request(&server, deadline, live_peer().as_fd());
    drop(server);
    if let Some(writer) = writer {
        writer.join().expect("the writer ends");
    }
    match read {
        Ok(request) => {
            let argv: Vec<u8> = request.argv.join("\0").into_bytes();
            cli_command(&argv);
        }
        Err(crate::agent::ReadError::Bad(why)) => assert!(!why.is_empty()),
        Err(crate::agent::ReadError::Gone) => panic!("the peer never exits here"),
    }
}

/// A descriptor that stands for a peer that is still running: the read end
/// of a pipe whose write end stays open, never readable (a pidfd is
/// readable once its process exits).
fn live_peer() -> &'static OwnedFd {
    static PIPE: OnceLock<(OwnedFd, OwnedFd)> = OnceLock::new();
    &PIPE.get_or_init(|| nix::unistd::pipe().expect("a pipe")).0
}

/// A session's event journal as restore finds it on disk: the scan that
/// indexes it (and repairs a torn end), every page served from it, an
/// append after it and a second restore, which must serve the append.
pub fn journal_restore(data: &[u8]) {
    let dir = Scratch::new();
    let events = dir.0.join("events");
    std::fs::create_dir(&events).expect("the events folder");
    std::fs::write(events.join("fuzz.jsonl"), data).expect("the journal file");
    let journal = Journal::new(&events, "fuzz");
    let last = journal.last_seq().expect("a journal restores");
    let mut after = 0;
    let mut served = 0;
    loop {
        let lines = journal
            .lines(after, MAX_PAGE)
            .expect("a restored journal serves");
        let Some(end) = lines.last() else { break };
        for line in &lines {
            assert!(line.seq > after, "seqs rise");
            after = line.seq;
            served += 1;
            let event: Journalled =
                serde_json::from_str(&line.json).expect("a served line is an event");
            assert_eq!((event.seq, &event.kind), (line.seq, &line.kind));
        }
        assert_eq!(after, end.seq);
    }
    assert_eq!(after, last, "every event up to the last is served");
    assert!(served <= data.len() / 2);
    let probe = journal
        .append(vec![NewEvent::new("fuzz_probe", &served)], 1)
        .expect("a restored journal appends");
    let seq = probe[0].seq;
    assert!(seq > last);
    let again = Journal::new(&events, "fuzz");
    assert_eq!(again.last_seq().expect("a second restore"), seq);
    let found = again.last_of("fuzz_probe").expect("the probe reads back");
    assert_eq!(
        found.map(|e| e.seq),
        Some(seq),
        "an acknowledged append survives"
    );
}

/// A snapshot walker's answer, as the service reads it (the walker runs as
/// the agent account, so its answer is hostile): it ends whatever the
/// bytes, and every object it stored holds the bytes its name is the
/// sha256 of.
pub fn snapshot_answer(data: &[u8]) {
    let dir = Scratch::new();
    let store = dir.0.join("objects");
    let _ = crate::snapshot::read_answer(data, &store);
    let mut folders = vec![store];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            let name: String = [&folder, &path]
                .iter()
                .filter_map(|p| p.file_name()?.to_str())
                .collect();
            if folder.file_name().is_some_and(|f| f == "tmp") {
                continue;
            }
            let bytes = std::fs::read(&path).expect("a stored object reads");
            let sha = format!("{:x}", <sha2::Sha256 as sha2::Digest>::digest(&bytes));
            assert_eq!(sha, name, "object {} holds other bytes", path.display());
        }
    }
}

/// A new private folder (mode 0700) for one journal, removed when dropped:
/// in /dev/shm where there is one (a journal's fsyncs cost nothing there),
/// else the temp folder. Made with `mkdir`, which fails on any name that
/// exists (a link another account left included), so nothing is written
/// where another account points it.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        use std::os::unix::fs::DirBuilderExt;
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = base.join(format!("room-core-fuzz-{}-{n}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => return Scratch(dir),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => panic!("cannot make {}: {e}", dir.display()),
            }
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a process shows of itself in `/proc`, which the agent account
/// controls: its name (comm, up to 15 bytes but NUL, printed raw inside
/// `/proc/PID/stat`) and its environment (`/proc/PID/environ`, the loop
/// marker). The input's first bytes are a name: in a stat line as the
/// kernel prints it, read as both readers read it, it must not move a
/// field. The whole input is also read as a stat line, an environment and
/// a `/proc/PID/cgroup`.
pub fn proc_reads(data: &[u8]) {
    let comm: Vec<u8> = data.iter().copied().filter(|b| *b != 0).take(15).collect();
    let mut line = b"4242 (".to_vec();
    line.extend(&comm);
    line.extend(b") S 17 4243 4244 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 8192 200");
    line.extend(b" 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n");
    let text = String::from_utf8_lossy(&line);
    let seen = procfs::parse_stat(&text).expect("the caller walk reads any name");
    assert_eq!((seen.ppid, seen.start_time), (17, 987654), "{comm:?}");
    let seen = process::parse_stat(&text).expect("the supervisor reads any name");
    assert_eq!(
        (
            seen.pid,
            seen.state,
            seen.ppid,
            seen.pgid,
            seen.sid,
            seen.start_time
        ),
        (4242, b'S', 17, 4243, 4244, 987654),
        "{comm:?}"
    );
    let text = String::from_utf8_lossy(data);
    let _ = procfs::parse_stat(&text);
    let _ = process::parse_stat(&text);
    if let Some(path) = process::parse_cgroup_v2(&text) {
        assert!(!path.contains('\n'));
    }
    if let Some(marker) = procfs::parse_marker(data) {
        assert!(!marker.contains('\0'));
    }
}

/// Checks a refusal is one the API documents for a bad request.
fn refused(r: Refusal) {
    assert!(matches!(r.status, 400 | 422), "{r:?}");
    assert!(!r.message.is_empty(), "{r:?}");
    assert!(
        !r.code.is_empty() && r.code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
        "{r:?}"
    );
}
