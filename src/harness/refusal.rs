//! Requests of the harness's that room-core answers itself, at once and
//! without the app: one it cannot take (its line not read whole or not
//! servable, its shape wrong, its ID too long, more waiting than a talker
//! holds) or does not serve. The talker answers it in the CLI's protocol
//! so the harness never waits for an answer that cannot come (claude: a
//! denial, or an error for another kind of request; codex: a decline, or
//! a JSON-RPC error), and the turn's output worker journals a `request_refused`
//! event so the app sees it.

use super::bounds::{cut, REF_MAX, TEXT_MAX};
use super::head::Scalar;
use crate::journal::{Unservable, DEPTH_MAX};

/// What the model reads when a request is denied because too many wait.
pub(crate) const TOO_MANY: &str = "Denied: too many approval requests are waiting in this session.";

/// The most bytes of approval requests' inputs a claude talker holds for
/// their answers (each is at most a line, 1 MiB).
pub(crate) const INPUTS_MAX: usize = 8 << 20;

/// Why a line was not read whole, or not served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// It was longer than `cap` bytes.
    OverCap {
        /// The cap on a line.
        cap: usize,
    },
    /// It was not UTF-8.
    NotUtf8,
    /// It was read and cannot be served (journal/servable.rs).
    Unservable(Unservable),
}

/// A line of the harness's not read whole, or not servable: why, its size
/// and its start.
#[derive(Debug, Clone, Copy)]
pub struct Unread<'a> {
    /// Why.
    pub why: Unreadable,
    /// Its bytes, newline excluded.
    pub bytes: u64,
    /// Its first bytes (a few KiB at most).
    pub head: &'a [u8],
}

/// A request as the start of a line not read whole names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// Its ID, when read whole (claude's `request_id`, codex's `id`).
    pub id: Option<Scalar>,
    /// Its kind, when read whole: claude's `subtype`, codex's method.
    pub kind: Option<String>,
    /// The tool, when the start names it (claude's `tool_name`).
    pub tool: Option<String>,
}

/// Why room-core refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// Its line could not be read whole, or served.
    Unreadable(Unreadable),
    /// It has no ID room-core can answer with (none, or not a string for
    /// claude, not a whole number or a string for codex).
    NoId,
    /// Its ID is longer than room-core keeps.
    IdTooLong,
    /// A `can_use_tool` without a tool name.
    NoTool,
    /// A `can_use_tool` whose input is not a JSON object.
    InputNotObject,
    /// An approval request whose params are not a JSON object.
    ParamsNotObject,
    /// The talker holds the most requests waiting for answers already.
    TooManyWaiting,
    /// The inputs of the requests waiting would pass [`INPUTS_MAX`].
    InputsOverBudget,
    /// room-core does not serve this kind of request.
    NotServed,
}

impl Why {
    /// Its name in `request_refused`: `over_cap`, `not_utf8`, `too_deep`,
    /// `not_json`, `not_portable`, `no_id`, `id_too_long`, `no_tool`,
    /// `input_not_object`, `params_not_object`, `too_many_waiting`,
    /// `inputs_over_budget`, `not_served`.
    pub fn code(self) -> &'static str {
        match self {
            Why::Unreadable(Unreadable::OverCap { .. }) => "over_cap",
            Why::Unreadable(Unreadable::NotUtf8) => "not_utf8",
            Why::Unreadable(Unreadable::Unservable(u)) => u.code(),
            Why::NoId => "no_id",
            Why::IdTooLong => "id_too_long",
            Why::NoTool => "no_tool",
            Why::InputNotObject => "input_not_object",
            Why::ParamsNotObject => "params_not_object",
            Why::TooManyWaiting => "too_many_waiting",
            Why::InputsOverBudget => "inputs_over_budget",
            Why::NotServed => "not_served",
        }
    }

    /// What the harness is told, in a sentence (the model reads it as the
    /// tool's result where the protocol has room for it), for a request of
    /// `kind` whose line holds `bytes`.
    pub fn sentence(self, kind: Option<&str>, bytes: u64) -> String {
        let unread = "Denied: room-core cannot read this request";
        match self {
            Why::Unreadable(Unreadable::OverCap { cap }) => format!(
                "{unread}: its line is {bytes} bytes, over the {cap} bytes a line of a \
                 harness's output may take."
            ),
            Why::Unreadable(Unreadable::NotUtf8) => format!("{unread}: its line is not UTF-8."),
            Why::Unreadable(Unreadable::Unservable(u)) => match u {
                Unservable::TooDeep => {
                    format!("{unread}: it nests deeper than {DEPTH_MAX} levels.")
                }
                Unservable::NotPortable => format!(
                    "{unread}: it holds JSON that strict parsers refuse (a lone surrogate \
                     escape, or a number out of range)."
                ),
                _ => format!("{unread}: its line is not JSON."),
            },
            Why::NoId => "room-core cannot answer this request: it has no request ID to \
                          answer."
                .into(),
            Why::IdTooLong => format!("Denied: the request's ID is longer than {REF_MAX} bytes."),
            Why::NoTool => "Denied: the request names no tool.".into(),
            Why::InputNotObject => "Denied: the tool's input is not a JSON object.".into(),
            Why::ParamsNotObject => "Denied: the request's params are not a JSON object.".into(),
            Why::TooManyWaiting => TOO_MANY.into(),
            Why::InputsOverBudget => format!(
                "Denied: the inputs of the approval requests waiting would take more than \
                 {} MiB.",
                INPUTS_MAX >> 20
            ),
            Why::NotServed => format!(
                "room-core does not serve {} requests",
                cut(kind.unwrap_or("these"), 64)
            ),
        }
    }
}

/// A request refused, as the turn's output worker journals it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// Its kind, when known: claude's `subtype` (`can_use_tool`, ...),
    /// codex's method.
    pub request: Option<String>,
    /// The tool asked about, when known.
    pub tool: Option<String>,
    /// The bytes of its line.
    pub bytes: u64,
    /// Why.
    pub why: Why,
    /// What the harness was told (or would have been).
    pub message: String,
    /// Whether an answer went back (none without an ID to answer).
    pub answered: bool,
}

impl Refused {
    /// A refusal of a request of `request` about `tool`, `bytes` long.
    pub fn new(
        request: Option<&str>,
        tool: Option<&str>,
        bytes: u64,
        why: Why,
        answered: bool,
    ) -> Refused {
        let keep = |s: &str| cut(s, TEXT_MAX);
        Refused {
            request: request.map(keep),
            tool: tool.map(keep),
            bytes,
            why,
            message: why.sentence(request, bytes),
            answered,
        }
    }
}
