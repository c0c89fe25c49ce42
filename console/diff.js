// What a turn changed in its session's folder: the files of a `turn_diff`
// (and of a `folder_changed`, the changes made between turns by someone
// else) as a list, each with its status, line counts, binary, mode change
// and old name, what the snapshot could not record, and a "Show diff"
// button that fetches the turn's unified diff (GET …/turns/{turn}/diff) and
// shows it as text, a class per line; "Rewind to here", which shows the
// rewind's dry run (what would change, the conflicts) before it asks to
// confirm; and a `rewound` entry. Built from text only, as dom.js.

import { ApiError, call, sessionPath } from "./api.js";
import { h, replace } from "./dom.js";
import { count } from "./format.js";

const STATUS = { added: "added", deleted: "deleted", modified: "modified", renamed: "renamed", type_changed: "type changed" };

/** "+3 −1", "binary", or why there is no count. */
function counts(f) {
  if (f.binary) return h("span", { class: "binary" }, "binary");
  if (f.added === null || f.added === undefined || f.removed === null || f.removed === undefined) {
    return h("span", { class: "uncounted" }, "lines not counted");
  }
  return [h("span", { class: "added" }, `+${count(f.added)}`), " ", h("span", { class: "removed" }, `−${count(f.removed)}`)];
}

function file(f) {
  const kind = f.kind && f.kind !== "file" ? ` (${f.kind})` : "";
  return h("li", { class: "file", "data-path": f.path, "data-status": f.status },
    h("code", { class: "path" }, f.path), kind, " ",
    h("span", { class: "status" }, STATUS[f.status] || String(f.status)),
    f.from !== undefined && [" from ", h("code", { class: "from" }, f.from)],
    " ", counts(f),
    f.mode && [" ", h("span", { class: "mode" }, `mode ${f.mode.from} → ${f.mode.to}`)]);
}

/** "3 files, +10 −2". */
function totals(d) {
  const n = d.files_total ?? (d.files || []).length;
  return `${count(n)} file${n === 1 ? "" : "s"}, +${count(d.added)} −${count(d.removed)}`;
}

/** The list of files `d` names, with a line for those left out. */
function files(d) {
  const list = d.files || [];
  const more = (d.files_total ?? list.length) - list.length;
  return h("ul", { class: "files" }, list.map(file),
    more > 0 && h("li", { class: "more" }, `and ${count(more)} more not listed`));
}

/** What the snapshot did not record, each named with why. */
function skipped(d) {
  const list = d.skipped || [];
  if (!list.length) return null;
  const more = (d.skipped_total ?? list.length) - list.length;
  return h("div", { class: "skipped" },
    h("p", { class: "note" }, "Not recorded:"),
    h("ul", {}, list.map((s) => h("li", { "data-path": s.path }, h("code", {}, s.path), ` (${s.why})`)),
      more > 0 && h("li", { class: "more" }, `and ${count(more)} more`)));
}

/** "1 MiB", or the bytes. */
function cap(bytes) {
  const n = Number(bytes || 0);
  return n && n % 1048576 === 0 ? `${n / 1048576} MiB` : `${count(n)} bytes`;
}

/**
 * The unified diff's text, one element a line, each with its class: `file`
 * for a file's header (`diff --git` up to its first hunk), `hunk` for `@@`,
 * `add` and `del` for `+` and `-` lines, `ctx` for the others.
 */
export function diffText(text) {
  const pre = h("pre", { class: "diff" });
  let inHunk = false;
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  for (const l of lines) {
    let cls;
    if (l.startsWith("diff --git ")) {
      inHunk = false;
      cls = "file";
    } else if (l.startsWith("@@")) {
      inHunk = true;
      cls = "hunk";
    } else if (!inHunk) {
      cls = "file";
    } else {
      cls = l[0] === "+" ? "add" : l[0] === "-" ? "del" : "ctx";
    }
    pre.append(h("span", { class: cls }, l));
  }
  return pre;
}

/** The "Show diff" button of turn `turn` of session `id`, and where it shows. */
function showDiff(id, turn) {
  const label = (verb) => ({ "aria-label": `${verb} diff of turn ${turn}` });
  const button = h("button", { type: "button", class: "show-diff", "data-turn": turn, ...label("Show") }, "Show diff");
  const out = h("div", { class: "diff-box", hidden: true });
  let loaded = false;
  const toggle = (open) => {
    out.hidden = !open;
    button.textContent = open ? "Hide diff" : "Show diff";
    button.setAttribute("aria-label", label(open ? "Hide" : "Show")["aria-label"]);
    button.setAttribute("aria-expanded", String(open));
  };
  button.addEventListener("click", async () => {
    if (loaded) return toggle(out.hidden);
    button.disabled = true;
    try {
      const d = await call("GET", sessionPath(id, `/turns/${encodeURIComponent(turn)}/diff`));
      if (d.missing !== undefined) replace(out, h("p", { class: "missing" }, `No diff: ${d.missing}`));
      else {
        replace(out, d.diff ? diffText(d.diff) : h("p", { class: "note" }, "(nothing to show as text)"),
          d.truncated && h("p", { class: "note cut" }, `(cut at ${cap(d.max_bytes)})`));
      }
      loaded = true;
      toggle(true);
    } catch (e) {
      replace(out, h("p", { class: "bad" }, `Cannot show the diff: ${why(e)}`));
      out.hidden = false;
    } finally {
      button.disabled = false;
    }
  });
  return [button, out];
}

/** An error's sentence for the page. */
function why(e) {
  return e instanceof ApiError ? `${e.message} (${e.status})` : e.message;
}

/** Paths as a list, at most `total` said. */
function pathList(cls, paths, total) {
  const more = (total ?? paths.length) - paths.length;
  return h("ul", { class: cls }, paths.map((p) => h("li", { "data-path": p }, h("code", {}, p))),
    more > 0 && h("li", { class: "more" }, `and ${count(more)} more`));
}

/** The sentence for a rewind's `conversation`. */
const CONVERSATION = {
  cut: (turn) => `The conversation is cut after turn ${turn}: the next message continues from there.`,
  unchanged: (turn) => `The conversation holds nothing after turn ${turn}.`,
  kept: () => "Only the folder: the conversation is kept.",
  uncut: () => "Only the folder: the conversation is kept.",
};

/**
 * The "Rewind to here" button of turn `turn` of session `id`: it asks for
 * the dry run first (POST …/rewind with dry_run) of the folder and the
 * conversation (the folder alone, saying why, when the conversation cannot
 * be cut) and shows what would change and the conflicts (changes since the
 * turn by anyone but a turn, which the rewind overwrites); only "Rewind"
 * there rewinds.
 */
function rewindButton(id, turn) {
  const button = h("button", { type: "button", class: "rewind", "data-turn": turn, "aria-label": `Rewind the folder to turn ${turn}` }, "Rewind to here");
  const out = h("div", { class: "rewind-box", hidden: true });
  const path = sessionPath(id, "/rewind");
  const show = (...nodes) => {
    replace(out, ...nodes);
    out.hidden = false;
  };
  const confirm = async (go, conversation) => {
    go.disabled = true;
    try {
      const d = await call("POST", path, { to_turn: turn, conversation });
      const failed = d.failed || [];
      show(h("p", { class: "line done" }, `Rewound to turn ${turn}: ${count((d.written || []).length)} written, ${count((d.deleted || []).length)} removed`),
        failed.length > 0 && h("ul", { class: "failed" }, failed.map((f) => h("li", { "data-path": f.path }, h("code", {}, f.path), ` (${f.why})`))));
    } catch (e) {
      show(h("p", { class: "bad" }, `Cannot rewind: ${why(e)}`));
    }
  };
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const d = await call("POST", path, { to_turn: turn, dry_run: true });
      const conversation = d.conversation !== "uncut";
      const uncut = conversation ? null : d.conversation_why;
      if (!(d.files_total ?? 0) && d.conversation !== "cut") {
        show(h("p", { class: "note" }, `The folder and conversation are as turn ${turn} left them: nothing to rewind.`));
        return;
      }
      const go = h("button", { type: "button", class: "confirm-rewind", "aria-label": `Confirm the rewind to turn ${turn}` }, "Rewind");
      const cancel = h("button", { type: "button", class: "cancel-rewind", "aria-label": `Cancel the rewind to turn ${turn}` }, "Cancel");
      go.addEventListener("click", () => confirm(go, conversation));
      cancel.addEventListener("click", () => { out.hidden = true; });
      const conflicts = d.conflicts || [];
      show(h("p", { class: "line" }, `Rewinding to turn ${turn} changes ${totals(d)}:`), files(d),
        conflicts.length > 0 && [h("p", { class: "warn" }, "Changed since by someone other than a turn, and overwritten by the rewind:"),
          pathList("conflicts", conflicts, d.conflicts_total)],
        d.conflicts_complete === false && h("p", { class: "warn" }, "A snapshot in between is missing: a change may not be listed."),
        h("p", { class: "note conversation" }, (CONVERSATION[d.conversation] || CONVERSATION.kept)(turn)),
        uncut && h("p", { class: "warn uncut" }, uncut),
        go, " ", cancel);
    } catch (e) {
      show(h("p", { class: "bad" }, `Cannot rewind: ${why(e)}`));
    } finally {
      button.disabled = false;
    }
  });
  return [button, out];
}

/**
 * The "Fork from here" button of turn `turn` of session `id`: it asks for
 * the new session's folder and workspace (and, if wanted, its first
 * message), forks (POST …/fork) and opens the new session.
 */
function forkButton(id, turn) {
  const button = h("button", { type: "button", class: "fork", "data-turn": turn, "aria-label": `Fork a new session from turn ${turn}` }, "Fork from here");
  const n = `${turn}-${Math.random().toString(36).slice(2, 8)}`;
  const folder = h("input", { id: `fork-folder-${n}`, class: "fork-folder", required: true, autocomplete: "off", placeholder: "/home/agent/code/fork" });
  const workspace = h("input", { id: `fork-workspace-${n}`, class: "fork-workspace", required: true, autocomplete: "off" });
  const prompt = h("input", { id: `fork-prompt-${n}`, class: "fork-prompt", autocomplete: "off", placeholder: "(none: it waits for a message)" });
  const go = h("button", { type: "submit", class: "confirm-fork" }, "Fork");
  const said = h("p", { class: "note" });
  const form = h("form", { class: "fork-box", hidden: true, "aria-label": `Fork from turn ${turn}` },
    h("p", { class: "line" }, `A new session with turn ${turn}'s folder (written to a new or empty folder) and its conversation through turn ${turn}; this session does not change.`),
    h("label", { for: folder.id }, "Folder"), folder,
    h("label", { for: workspace.id }, "Workspace"), workspace,
    h("label", { for: prompt.id }, "First message"), prompt,
    go, said);
  button.addEventListener("click", () => {
    form.hidden = !form.hidden;
    if (!form.hidden) folder.focus();
  });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    go.disabled = true;
    const body = { at_turn: turn, folder: folder.value.trim(), workspace: workspace.value.trim() };
    if (prompt.value.trim()) body.prompt = prompt.value;
    try {
      const s = await call("POST", sessionPath(id, "/fork"), body);
      location.hash = `#/sessions/${encodeURIComponent(s.id)}`;
    } catch (err) {
      replace(said, h("span", { class: "bad" }, `Cannot fork: ${why(err)}`));
    } finally {
      go.disabled = false;
    }
  });
  return [button, form];
}

/** Fills `el` with turn `d.turn`'s `turn_diff` (session `id`). */
export function turnDiff(el, d, id) {
  el.dataset.turn = d.turn;
  if (d.missing !== undefined) {
    el.append(h("p", { class: "line missing" }, `Turn ${d.turn}: no record of its files: ${d.missing}`));
  } else if (!(d.files_total ?? (d.files || []).length)) {
    el.append(h("p", { class: "line" }, `Turn ${d.turn} changed no files`));
  } else {
    el.append(h("p", { class: "line" }, `Turn ${d.turn} changed ${totals(d)}`), files(d));
    if (id) el.append(...showDiff(id, d.turn));
  }
  if (id && d.missing === undefined) el.append(" ", ...rewindButton(id, d.turn), " ", ...forkButton(id, d.turn));
  const s = skipped(d);
  if (s) el.append(s);
}

/** Fills `el` with a `rewound`: the folder put back as a turn left it. */
export function rewound(el, d) {
  el.dataset.toTurn = d.to_turn;
  const n = (d.written || []).length + (d.deleted || []).length;
  el.append(h("p", { class: "line" }, `Folder rewound to turn ${d.to_turn}: ${count(n)} path${n === 1 ? "" : "s"} put back`),
    d.error !== undefined && h("p", { class: "bad" }, `It stopped part way: ${d.error}`));
}

/** Fills `el` with a `forked`: where the session's folder and conversation came from. */
export function forked(el, d) {
  el.append(h("p", { class: "line" }, "Forked from session ", h("a", { href: `#/sessions/${encodeURIComponent(d.parent)}` }, d.parent), ` after its turn ${d.after_turn}`));
}

/** Fills `el` with a `folder_changed`: changes made between turns. */
export function folderChanged(el, d) {
  el.classList.add("between");
  el.dataset.beforeTurn = d.before_turn;
  const head = `Changed between turns, before turn ${d.before_turn}`;
  if (d.missing !== undefined) return el.append(h("p", { class: "line missing" }, `${head}: ${d.missing}`));
  el.append(h("p", { class: "line" }, `${head}: ${totals(d)}`), files(d));
}
