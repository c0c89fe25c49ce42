//! JSON request bodies. Fields are checked against the struct's field list
//! first, so an unknown field is a 422 that names it (serde's
//! `deny_unknown_fields` would say the same, but inside a longer message).

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeOwned, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use room_machines::session::Decision;

use crate::attachments::check::{self, Checked};
use crate::error::Refusal;
use crate::harness::options::{check_model, Effort};
use crate::harness::Harness;
use crate::runtime::{Fork, RelaunchMode, Rewind, Start};
use crate::sessions::Kind;

/// The largest body accepted (1 MiB), but for the two that may carry a
/// prompt's images.
pub(crate) const MAX_BODY: usize = 1 << 20;

/// The largest body of `POST /v1/sessions` and `POST …/messages` (28 MiB):
/// a prompt's images (20 MiB decoded, a third more in base64) and the rest
/// of the body.
pub(crate) const MAX_IMAGES_BODY: usize = 28 << 20;

/// The fields of `POST /v1/sessions` (checked first, to name an unknown one).
const CREATE_FIELDS: &[&str] = &[
    "workspace",
    "folder",
    "harness",
    "agent",
    "kind",
    "parent",
    "shared_sandbox",
    "request_id",
    "plan_only",
    "project_copy",
    "prompt",
    "approvals",
    "max_cost_usd",
    "max_tokens",
    "model",
    "effort",
    "instructions",
    "mcp_servers",
    "attachments",
];

/// `POST /v1/sessions/{id}/messages`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Message {
    /// The prompt to queue.
    pub prompt: String,
    /// `queue` (the default) or `steer`.
    #[serde(default)]
    pub deliver: Deliver,
    /// The model from this message's turn on.
    #[serde(default)]
    pub model: Option<String>,
    /// The effort from this message's turn on.
    #[serde(default)]
    pub effort: Option<Effort>,
    /// Its images, as the API takes them ([`check::images`]).
    #[serde(default)]
    pub attachments: Option<Value>,
}

/// Where a message goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Deliver {
    /// To the back of the queue.
    #[default]
    Queue,
    /// To the running turn, when it can take it; else to the queue.
    Steer,
}

/// `POST /v1/sessions/{id}/approvals/{approval}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Decide {
    /// `allow`, `deny` or `allow_for_session`.
    pub decision: Decision,
    /// What the model is told with a denial.
    #[serde(default)]
    pub message: Option<String>,
}

/// The longest message an approval's answer carries, in characters.
pub(crate) const DECISION_MESSAGE_MAX: usize = 4096;

/// `POST /v1/sessions/{id}/relaunch`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Relaunch {
    /// `resume`, `wake` or `restart`.
    pub mode: RelaunchMode,
}

/// Parses a body: 400 for bad JSON, 422 for a non-object, an unknown field
/// (named) or an invalid value.
pub(crate) fn parse<T: DeserializeOwned>(body: &[u8], fields: &[&str]) -> Result<T, Refusal> {
    typed(object(body, fields)?)
}

/// `value` as a `T`; 422 for an invalid value.
fn typed<T: DeserializeOwned>(value: Value) -> Result<T, Refusal> {
    serde_json::from_value(value)
        .map_err(|e| Refusal::new(422, "invalid_field", format!("Invalid body: {e}.")))
}

/// A body as a JSON object of the fields `fields` names: 400 for bad JSON,
/// 422 for a non-object, a field named twice or an unknown field (named).
fn object(body: &[u8], fields: &[&str]) -> Result<Value, Refusal> {
    let text = if body.iter().all(u8::is_ascii_whitespace) {
        "{}"
    } else {
        std::str::from_utf8(body)
            .map_err(|_| Refusal::new(400, "bad_json", "The body is not UTF-8 JSON."))?
    };
    let value: Value = serde_json::from_str(text)
        .map_err(|e| Refusal::new(400, "bad_json", format!("The body is not valid JSON: {e}.")))?;
    if let Err(e) = serde_json::from_str::<NoDuplicateKeys>(text) {
        // serde_json adds where it stopped; the sentence is the visitor's.
        let text = e.to_string();
        let sentence = text.split(" at line ").next().unwrap_or(&text);
        return Err(Refusal::new(422, "duplicate_field", sentence));
    }
    let Value::Object(map) = &value else {
        return Err(Refusal::new(
            422,
            "invalid_body",
            "The body must be a JSON object.",
        ));
    };
    if let Some(unknown) = map.keys().find(|k| !fields.contains(&k.as_str())) {
        return Err(Refusal::new(
            422,
            "unknown_field",
            format!(
                "Unknown field \"{unknown}\". Known fields: {}.",
                fields.join(", ")
            ),
        ));
    }
    Ok(value)
}

/// A JSON text walked only to find an object that names a key twice, which
/// `Value` would take silently (the last value winning).
struct NoDuplicateKeys;

impl<'de> Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoDuplicateKeys)
    }
}

impl<'de> Visitor<'de> for NoDuplicateKeys {
    type Value = NoDuplicateKeys;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_unit<E>(self) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<NoDuplicateKeys>()?.is_some() {}
        Ok(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self, A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format!(
                    "The body names the field \"{key}\" twice."
                )));
            }
            map.next_value::<NoDuplicateKeys>()?;
        }
        Ok(self)
    }
}

/// The body of a route that takes none: empty, or `{}`.
pub(crate) fn none(body: &[u8]) -> Result<(), Refusal> {
    parse::<serde::de::IgnoredAny>(body, &[]).map(drop)
}

/// Parses and validates a start, with its first prompt's images.
pub(crate) fn create(body: &[u8]) -> Result<(Start, Vec<Checked>), Refusal> {
    let mut value = object(body, CREATE_FIELDS)?;
    let attachments = value.as_object_mut().and_then(|m| m.remove("attachments"));
    let given = attachments.is_some();
    let images = attachments.map(images).transpose()?.unwrap_or_default();
    let mut c: Start = typed(value)?;
    if given && c.prompt.is_none() {
        return Err(Refusal::new(
            422,
            "invalid_field",
            "attachments go with a first prompt: this start has none.",
        ));
    }
    c.attachments = check::named(&images);
    let invalid = |m: &str| Err(Refusal::new(422, "invalid_field", m));
    if c.workspace.trim().is_empty() {
        return invalid("The workspace must not be empty.");
    }
    folder(&c.folder)?;
    if c.project_copy && c.kind == Kind::SideChat {
        return Err(Refusal::new(
            422,
            "project_copy_refused",
            "A side chat works in its parent's folder, so it cannot take a project copy.",
        ));
    }
    if c.project_copy && c.kind == Kind::Child && c.shared_sandbox {
        return Err(Refusal::new(
            422,
            "project_copy_refused",
            "A shared-sandbox child works in its parent's folder, so it cannot take a project copy.",
        ));
    }
    if c.kind != Kind::Thread && c.parent.as_deref().map_or(true, str::is_empty) {
        return invalid("A side chat or child needs its parent session.");
    }
    if let Some(p) = c.prompt.as_deref() {
        prompt(p)?;
    }
    limits(c.max_cost_usd, c.max_tokens)?;
    acp_start(&c)?;
    harness_options(&c)?;
    Ok((c, images))
}

/// A prompt's images, checked ([`check::images`]); 422 naming the rule.
fn images(value: Value) -> Result<Vec<Checked>, Refusal> {
    check::images(value).map_err(|why| Refusal::new(422, "invalid_field", why))
}

/// An `acp` start names its agent and chooses none of what the agent
/// chooses itself (model, effort, instructions, MCP servers); another
/// names none.
fn acp_start(c: &Start) -> Result<(), Refusal> {
    let invalid = |m: &str| Err(Refusal::new(422, "invalid_field", m));
    match (c.harness, c.agent.as_deref()) {
        (Harness::Acp, None) => {
            return invalid(
                "An acp session names its agent: \"agent\", one of the config's acp_agents.",
            )
        }
        (Harness::Acp, Some(_)) => {}
        (_, Some(_)) => {
            return invalid("\"agent\" names an ACP agent: it goes with \"harness\": \"acp\".")
        }
        (_, None) => return Ok(()),
    }
    if c.plan_only {
        return invalid(
            "An ACP agent's own config decides what it may change: room-core cannot make it plan only.",
        );
    }
    let chosen = [
        ("model", c.model.is_some()),
        ("effort", c.effort.is_some()),
        ("instructions", c.instructions.is_some()),
    ];
    match chosen.iter().find(|(_, given)| *given) {
        Some((field, _)) => invalid(&format!(
            "An ACP agent takes no {field} from room-core: its own config chooses it."
        )),
        None => Ok(()),
    }
}

/// The model, effort and instructions a start chose, as its CLI can take
/// them.
fn harness_options(c: &Start) -> Result<(), Refusal> {
    use crate::harness::options::check_instructions;
    let o = c.harness_options();
    let checked = [
        o.model.map(check_model),
        o.effort.map(|e| c.harness.check_effort(e)),
        o.instructions.map(check_instructions),
    ];
    let mcp = c.mcp_servers.as_ref().map(crate::harness::mcp::check);
    match checked
        .into_iter()
        .chain([mcp])
        .flatten()
        .find_map(Result::err)
    {
        Some(why) => Err(Refusal::new(422, "invalid_field", why)),
        None => Ok(()),
    }
}

/// `POST /v1/sessions/{id}/budget`: the new budget (a field left out is
/// no limit).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SetBudget {
    /// The most the session's turns may cost in all (USD).
    #[serde(default)]
    pub max_cost_usd: Option<f64>,
    /// The most tokens they may use in all.
    #[serde(default)]
    pub max_tokens: Option<f64>,
}

/// Parses a new budget: a JSON object (an empty body is refused, so no
/// limit is lifted by a request that says nothing); the tokens as a whole
/// number.
pub(crate) fn budget(body: &[u8]) -> Result<(Option<f64>, Option<u64>), Refusal> {
    required(
        body,
        "The body must be a JSON object: {\"max_cost_usd\": …, \"max_tokens\": …}.",
    )?;
    let b: SetBudget = parse(body, &["max_cost_usd", "max_tokens"])?;
    let tokens = whole_tokens(b.max_tokens)?;
    limits(b.max_cost_usd, tokens)?;
    Ok((b.max_cost_usd, tokens))
}

/// The most tokens a budget may hold (as a harness's counts are read).
pub(crate) const MAX_TOKENS: u64 = 1_000_000_000_000;

/// `max_tokens` as JSON gives it: any number that is whole (`1.0` too, as
/// JSON Schema's integers are) from 1 to [`MAX_TOKENS`].
pub(crate) fn whole_tokens(n: Option<f64>) -> Result<Option<u64>, Refusal> {
    match n {
        None => Ok(None),
        Some(n) if n.fract() == 0.0 && (1.0..=MAX_TOKENS as f64).contains(&n) => Ok(Some(n as u64)),
        Some(_) => Err(Refusal::new(
            422,
            "invalid_field",
            "max_tokens must be a whole number from 1 to 1000000000000.",
        )),
    }
}

/// The most a budget's cost may be (USD), as a harness's costs are read.
pub(crate) const MAX_COST_USD: f64 = 1_000_000.0;

/// A budget's limits: a cost above 0 and at most [`MAX_COST_USD`], at
/// least one token.
fn limits(max_cost_usd: Option<f64>, max_tokens: Option<u64>) -> Result<(), Refusal> {
    if max_cost_usd.is_some_and(|c| !(c > 0.0 && c <= MAX_COST_USD)) {
        return Err(Refusal::new(
            422,
            "invalid_field",
            "max_cost_usd must be above 0 and at most 1000000.",
        ));
    }
    whole_tokens(max_tokens.map(|n| n as f64))?;
    Ok(())
}

/// The longest folder path accepted, in characters: at most 4 bytes each,
/// so within Linux's `PATH_MAX` (4096 bytes) with room for the status
/// file's suffix, and a limit the OpenAPI schema can state exactly.
pub(crate) const MAX_FOLDER: usize = 1000;

/// A folder room-core can walk without following a link: an absolute,
/// normal path (no `.` or `..` component, which would make the folder the
/// harness runs in differ from the one named), no NUL byte, not `/` itself
/// (its status file would be `/.cloudroom-files`), at most `MAX_FOLDER`
/// characters. Whether a component is a link is checked when the folder is used
/// (the spawn), where it cannot change under the check.
fn folder(f: &std::path::Path) -> Result<(), Refusal> {
    use std::os::unix::ffi::OsStrExt;
    let invalid = |m: &str| Err(Refusal::new(422, "invalid_field", m));
    let bytes = f.as_os_str().as_bytes();
    if bytes.contains(&0) {
        return invalid("The folder must not contain a NUL byte (\\u0000).");
    }
    let chars = f.as_os_str().to_string_lossy().chars().count();
    if chars > MAX_FOLDER {
        return invalid(&format!(
            "The folder must be at most {MAX_FOLDER} characters; this one has {chars}."
        ));
    }
    if !f.is_absolute() {
        return invalid("The folder must be an absolute path.");
    }
    if bytes.split(|b| *b == b'/').any(|s| s == b"." || s == b"..") {
        return invalid("The folder must not have . or .. components.");
    }
    if bytes.iter().all(|b| *b == b'/') {
        return invalid("The folder must not be / itself.");
    }
    Ok(())
}

/// A prompt a harness can take: some text (both CLIs fail a turn whose
/// prompt has none), and no NUL byte (a C string ends at one, so the CLI
/// would see less than was sent).
fn prompt(p: &str) -> Result<(), Refusal> {
    let invalid = |m: &str| Err(Refusal::new(422, "invalid_field", m));
    if p.trim().is_empty() {
        return invalid("The prompt must not be empty or only whitespace.");
    }
    if p.contains('\0') {
        return invalid("The prompt must not contain a NUL byte (\\u0000).");
    }
    Ok(())
}

/// Parses a message.
pub(crate) fn message(body: &[u8]) -> Result<(Message, Vec<Checked>), Refusal> {
    let mut m: Message = parse(
        body,
        &["prompt", "deliver", "model", "effort", "attachments"],
    )?;
    prompt(&m.prompt)?;
    if let Some(why) = m.model.as_deref().map(check_model).and_then(Result::err) {
        return Err(Refusal::new(422, "invalid_field", why));
    }
    let attachments = m.attachments.take().filter(|a| !a.is_null());
    if m.deliver == Deliver::Steer
        && (m.model.is_some() || m.effort.is_some() || attachments.is_some())
    {
        return Err(Refusal::new(
            422,
            "invalid_field",
            "A steered message joins the running turn as text: model, effort and attachments \
             go with a queued message.",
        ));
    }
    let images = attachments.map(images).transpose()?.unwrap_or_default();
    Ok((m, images))
}

/// Parses an approval's answer.
pub(crate) fn decide(body: &[u8]) -> Result<Decide, Refusal> {
    let d: Decide = parse(body, &["decision", "message"])?;
    if let Some(m) = &d.message {
        if m.chars().count() > DECISION_MESSAGE_MAX {
            return Err(Refusal::new(
                422,
                "invalid_field",
                format!("The message must be at most {DECISION_MESSAGE_MAX} characters."),
            ));
        }
        if m.contains('\0') {
            return Err(Refusal::new(
                422,
                "invalid_field",
                "The message must not contain a NUL byte (\\u0000).",
            ));
        }
    }
    Ok(d)
}

/// 422 for an empty body, where one is required: `shape` says what it
/// must be.
fn required(body: &[u8], shape: &'static str) -> Result<(), Refusal> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(Refusal::new(422, "invalid_body", shape));
    }
    Ok(())
}

/// Parses a relaunch.
pub(crate) fn relaunch(body: &[u8]) -> Result<Relaunch, Refusal> {
    parse(body, &["mode"])
}

/// `POST /v1/sessions/{id}/fork`, as sent.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ForkBody {
    at_turn: f64,
    folder: std::path::PathBuf,
    workspace: String,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    effort: Option<Effort>,
    #[serde(default)]
    approvals: Option<room_machines::session::ApprovalMode>,
    #[serde(default)]
    max_cost_usd: Option<f64>,
    #[serde(default)]
    max_tokens: Option<f64>,
}

/// Parses a fork: the turn, the new session's folder and workspace, and
/// what it chooses over the parent's options.
pub(crate) fn fork(body: &[u8]) -> Result<Fork, Refusal> {
    required(
        body,
        "The body must be a JSON object: {\"at_turn\": …, \"folder\": …, \"workspace\": …}.",
    )?;
    let fields = [
        "at_turn",
        "folder",
        "workspace",
        "prompt",
        "model",
        "effort",
        "approvals",
        "max_cost_usd",
        "max_tokens",
    ];
    let b: ForkBody = parse(body, &fields)?;
    let at_turn = turn_number(b.at_turn, "at_turn")?;
    let invalid = |m: &str| Err(Refusal::new(422, "invalid_field", m));
    if b.workspace.trim().is_empty() {
        return invalid("The workspace must not be empty.");
    }
    folder(&b.folder)?;
    if let Some(p) = b.prompt.as_deref() {
        prompt(p)?;
    }
    if let Some(Err(why)) = b.model.as_deref().map(check_model) {
        return invalid(&why);
    }
    let max_tokens = whole_tokens(b.max_tokens)?;
    limits(b.max_cost_usd, max_tokens)?;
    Ok(Fork {
        at_turn,
        folder: b.folder,
        workspace: b.workspace,
        prompt: b.prompt,
        model: b.model,
        effort: b.effort,
        approvals: b.approvals,
        max_cost_usd: b.max_cost_usd,
        max_tokens,
    })
}

/// A turn's number as JSON gives it: a whole number from 1 (`1.0` too, as
/// JSON Schema's integers are) to `u32::MAX`.
fn turn_number(n: f64, field: &str) -> Result<u64, Refusal> {
    if n.fract() != 0.0 || !(1.0..=u32::MAX as f64).contains(&n) {
        return Err(Refusal::new(
            422,
            "invalid_field",
            format!(
                "{field} must be a turn's number, a whole number from 1 to {}.",
                u32::MAX
            ),
        ));
    }
    Ok(n as u64)
}

/// `POST /v1/sessions/{id}/rewind`, as sent.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RewindBody {
    to_turn: f64,
    #[serde(default = "yes")]
    files: bool,
    #[serde(default = "yes")]
    conversation: bool,
    #[serde(default)]
    dry_run: bool,
}

fn yes() -> bool {
    true
}

/// Parses a rewind: the turn (a whole number from 1, as JSON Schema's
/// integers are, `1.0` too), which halves (both unless one is false) and
/// whether it is a dry run.
pub(crate) fn rewind(body: &[u8]) -> Result<Rewind, Refusal> {
    required(body, "The body must be a JSON object: {\"to_turn\": …, \"files\": …, \"conversation\": …, \"dry_run\": …}.")?;
    let b: RewindBody = parse(body, &["to_turn", "files", "conversation", "dry_run"])?;
    if !b.files && !b.conversation {
        return Err(Refusal::new(
            422,
            "invalid_body",
            "Nothing to rewind: files and conversation are both false.",
        ));
    }
    Ok(Rewind {
        to_turn: turn_number(b.to_turn, "to_turn")?,
        files: b.files,
        conversation: b.conversation,
        dry_run: b.dry_run,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_with_a_nul_byte_is_refused_and_a_long_one_taken() {
        let e = message(br#"{"prompt": "a\u0000b"}"#).unwrap_err();
        assert_eq!((e.status, e.code), (422, "invalid_field"));
        assert!(e.message.contains("NUL"), "{}", e.message);
        let body = serde_json::json!({
            "workspace": "w", "folder": "/w", "harness": "claude", "prompt": "x\u{0}"
        });
        let e = create(body.to_string().as_bytes()).unwrap_err();
        assert!(e.message.contains("NUL"), "{}", e.message);
        let long = "y".repeat(200 << 10);
        let (m, _) = message(serde_json::json!({ "prompt": long }).to_string().as_bytes()).unwrap();
        assert_eq!(m.prompt.len(), 200 << 10);
    }

    #[test]
    fn folders_that_cannot_be_walked_as_named_are_refused() {
        let start = |folder: &str| {
            let body = serde_json::json!({"workspace": "w", "folder": folder, "harness": "claude"});
            create(body.to_string().as_bytes())
                .map(|_| ())
                .map_err(|e| {
                    assert_eq!((e.status, e.code), (422, "invalid_field"), "{folder:?}");
                    e.message
                })
        };
        let long = format!("/{}", "a".repeat(MAX_FOLDER));
        for (folder, message) in [
            (
                "/w/a\0b",
                "The folder must not contain a NUL byte (\\u0000).",
            ),
            (
                long.as_str(),
                "The folder must be at most 1000 characters; this one has 1001.",
            ),
            ("w/code", "The folder must be an absolute path."),
            ("/w/../etc", "The folder must not have . or .. components."),
            ("/w/./code", "The folder must not have . or .. components."),
            ("/", "The folder must not be / itself."),
            ("//", "The folder must not be / itself."),
        ] {
            assert_eq!(start(folder), Err(message.to_string()), "{folder:?}");
        }
        let longest = format!("/{}", "\u{1F600}".repeat(MAX_FOLDER - 1));
        for ok in ["/w/code", "/w/code/", "/w/a b", "/w/..x", longest.as_str()] {
            assert_eq!(start(ok), Ok(()), "{ok:?}");
        }
    }

    #[test]
    fn a_field_named_twice_is_refused_at_any_depth() {
        for body in [
            r#"{"prompt": "a", "prompt": "b"}"#,
            r#"{"prompt": "a", "x": {"prompt": 1, "prompt": 2}}"#,
        ] {
            let e = message(body.as_bytes()).unwrap_err();
            assert_eq!((e.status, e.code), (422, "duplicate_field"), "{body}");
            assert_eq!(e.message, "The body names the field \"prompt\" twice.");
        }
    }

    #[test]
    fn a_route_without_a_body_takes_only_nothing_or_an_empty_object() {
        for ok in ["", " \n", "{}", " { } "] {
            assert!(none(ok.as_bytes()).is_ok(), "{ok:?}");
        }
        for (body, status, code) in [
            ("null", 422, "invalid_body"),
            ("[]", 422, "invalid_body"),
            ("\u{0}", 400, "bad_json"),
            ("\u{ff}garbage", 400, "bad_json"),
            (r#"{"force": true}"#, 422, "unknown_field"),
            (r#"{"a": 1, "a": 1}"#, 422, "duplicate_field"),
        ] {
            let e = none(body.as_bytes()).unwrap_err();
            assert_eq!(
                (e.status, e.code),
                (status, code),
                "{body:?}: {}",
                e.message
            );
        }
    }
}
