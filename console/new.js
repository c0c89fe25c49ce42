// The "New session" form: a start (`POST /v1/sessions`) from the person,
// with the choices the service offers for the chosen CLI (its efforts, from
// `GET /v1/capabilities`; an ACP agent of the config's, which chooses its
// own model, effort and instructions) and images for the first prompt. What the service refuses shows as its own
// sentence and starts nothing; a start it takes opens its session.

import { call } from "./api.js";
import { h, replace } from "./dom.js";
import { imagePicker } from "./images.js";

/** A labelled field: its label, the input, and a hint under it. */
function field(input, label, hint) {
  return h("div", { class: "field" },
    h("label", { for: input.id }, label), input,
    hint ? h("span", { class: "note", id: `${input.id}-hint` }, hint) : null);
}

/** The prefix of an ACP agent's value in the harness list. */
const ACP = "acp:";

/** The body of the start the form holds: only what the person filled in. */
function startBody(f) {
  const body = {
    workspace: f.workspace.value.trim(),
    folder: f.folder.value.trim(),
    harness: f.harness.value,
    approvals: f.approvals.value,
  };
  if (body.harness.startsWith(ACP)) {
    body.agent = body.harness.slice(ACP.length);
    body.harness = "acp";
  } else {
    if (f.model.value.trim()) body.model = f.model.value.trim();
    if (f.effort.value) body.effort = f.effort.value;
    if (f.instructions.value.trim()) body.instructions = f.instructions.value;
  }
  if (f.prompt.value.trim()) body.prompt = f.prompt.value;
  return body;
}

/** Shows the form in `main`; returns what ends the page. */
export function newPage(main, setStatus) {
  let alive = true;
  document.title = "New session · room-core";
  const f = {
    workspace: h("input", { id: "new-workspace", name: "workspace", required: true, autocomplete: "off" }),
    folder: h("input", { id: "new-folder", name: "folder", required: true, autocomplete: "off", placeholder: "/home/agent/code/project" }),
    harness: h("select", { id: "new-harness", name: "harness" },
      h("option", { value: "claude" }, "claude"), h("option", { value: "codex" }, "codex")),
    model: h("input", { id: "new-model", name: "model", autocomplete: "off", placeholder: "the CLI's default" }),
    effort: h("select", { id: "new-effort", name: "effort" }, h("option", { value: "" }, "the CLI's default")),
    approvals: h("select", { id: "new-approvals", name: "approvals" },
      h("option", { value: "auto" }, "auto"), h("option", { value: "app" }, "app (asked here)")),
    instructions: h("textarea", { id: "new-instructions", name: "instructions", rows: 3 }),
    prompt: h("textarea", { id: "new-prompt", name: "prompt", rows: 4 }),
  };
  const images = imagePicker("new-images", f.prompt);
  const said = h("p", { class: "said", id: "new-said", role: "status" });
  const start = h("button", { type: "submit", id: "new-start" }, "Start");
  const form = h("form", { class: "new-session", "aria-label": "New session" },
    field(f.workspace, "Workspace", "the app's workspace ID"),
    field(f.folder, "Folder", "an absolute path; the harness runs there"),
    field(f.harness, "Harness"),
    field(f.model, "Model", "in the CLI's own naming, such as opus or gpt-5.5"),
    field(f.effort, "Effort"),
    field(f.approvals, "Approvals", "auto: the service's modes answer; app: each request waits for an answer here"),
    field(f.instructions, "Instructions", "added to the harness's system prompt"),
    field(f.prompt, "First prompt"),
    images.el,
    h("div", { class: "buttons" }, start), said);
  replace(main, h("section", { class: "new" }, h("h1", {}, "New session"), form));

  // The efforts the chosen CLI takes, as the service lists them; an ACP
  // agent takes no model, effort or instructions from the form.
  let offered = {};
  const efforts = () => {
    const chosen = f.effort.value;
    const agent = f.harness.value.startsWith(ACP);
    const names = (offered[f.harness.value] && offered[f.harness.value].effort) || [];
    replace(f.effort, h("option", { value: "" }, agent ? "the agent's own" : "the CLI's default"),
      names.map((e) => h("option", { value: e, selected: e === chosen }, e)));
    for (const input of [f.model, f.effort, f.instructions]) input.disabled = agent;
  };
  f.harness.addEventListener("change", efforts);
  call("GET", "/v1/capabilities").then((c) => {
    if (!alive) return;
    offered = c.options || {};
    for (const option of f.harness.options) {
      const program = c.harnesses && c.harnesses[option.value];
      if (program && !program.installed) option.textContent = `${option.value} (not installed)`;
    }
    // The config's ACP agents, each with why it cannot be asked, if so.
    for (const [name, agent] of Object.entries(c.acp_agents || {})) {
      const label = agent.error ? `acp: ${name} (${agent.error})` : `acp: ${name}`;
      f.harness.append(h("option", { value: ACP + name }, label));
    }
    efforts();
  }, (e) => alive && setStatus(`Cannot read the service's capabilities: ${e.message}`, true));

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    start.disabled = true;
    said.classList.remove("bad");
    said.textContent = "Starting…";
    try {
      const body = startBody(f);
      const attachments = await images.attachments();
      if (attachments) body.attachments = attachments;
      const s = await call("POST", "/v1/sessions", body);
      if (alive) location.hash = `#/sessions/${encodeURIComponent(s.id)}`;
    } catch (err) {
      if (!alive) return;
      said.textContent = `Not started: ${err.message}`;
      said.classList.add("bad");
      start.disabled = false;
    }
  });
  f.workspace.focus();
  return () => {
    alive = false;
  };
}
