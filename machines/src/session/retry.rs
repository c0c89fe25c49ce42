//! Whether a repeated start (same `request_id`) is the same start. The app
//! retries a start it did not hear back from; a retry may plan its copy
//! differently (`project_copy`) or ask for planning (`plan_only`), which are
//! ignored, so it still gets the session the first start made. Any other
//! difference is a conflict that names the first differing field.

use std::path::Path;

use super::attachment::Attachment;

/// The fields of a start that a retry is compared on, in the order a
/// conflict names them (`harness`, `kind` and `mcp_servers` are the
/// runtime's own types).
#[derive(Debug, Clone, Copy)]
pub struct StartFields<'a, H, K, M> {
    /// `workspace`.
    pub workspace: &'a str,
    /// `folder`.
    pub folder: &'a Path,
    /// `harness`.
    pub harness: &'a H,
    /// `kind`.
    pub kind: &'a K,
    /// `parent`.
    pub parent: Option<&'a str>,
    /// `shared_sandbox`.
    pub shared_sandbox: bool,
    /// `prompt`: the first prompt.
    pub prompt: Option<&'a str>,
    /// `attachments`: the first prompt's images.
    pub attachments: &'a [Attachment],
    /// `model`.
    pub model: Option<&'a str>,
    /// `effort`, by its wire name.
    pub effort: Option<&'a str>,
    /// `instructions`.
    pub instructions: Option<&'a str>,
    /// `mcp_servers`.
    pub mcp_servers: Option<&'a M>,
    /// `project_copy`: a retry may change it.
    pub project_copy: bool,
    /// `plan_only`: a retry may change it.
    pub plan_only: bool,
}

/// The fields a conflict can name, in the order they are compared.
pub const COMPARED: [&str; 12] = [
    "workspace",
    "folder",
    "harness",
    "kind",
    "parent",
    "shared_sandbox",
    "prompt",
    "attachments",
    "model",
    "effort",
    "instructions",
    "mcp_servers",
];

/// The first field (other than `project_copy` and `plan_only`) in which
/// `retry` differs from the start it repeats; `None` when it is the same start.
pub fn retry_difference<H: PartialEq, K: PartialEq, M: PartialEq>(
    was: &StartFields<'_, H, K, M>,
    retry: &StartFields<'_, H, K, M>,
) -> Option<&'static str> {
    let same = [
        was.workspace == retry.workspace,
        was.folder == retry.folder,
        was.harness == retry.harness,
        was.kind == retry.kind,
        was.parent == retry.parent,
        was.shared_sandbox == retry.shared_sandbox,
        was.prompt == retry.prompt,
        was.attachments == retry.attachments,
        was.model == retry.model,
        was.effort == retry.effort,
        was.instructions == retry.instructions,
        was.mcp_servers == retry.mcp_servers,
    ];
    COMPARED
        .iter()
        .zip(same)
        .find(|(_, same)| !same)
        .map(|(field, _)| *field)
}
