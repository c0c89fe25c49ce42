// The conversation as a person reads it: one element per event, each with
// its seq in `data-seq` (in order, each once), built from text only. A
// tool call is a <details> its result folds into when both are shown. A run
// of events with nothing to show (protocol chatter: deltas, usage, status)
// is one hidden element that counts them (`data-seq` the first, `data-last`
// the last, `data-count`), so chatter never grows the page.

import { folderChanged, forked, rewound, turnDiff } from "./diff.js";
import { h } from "./dom.js";
import { clock, count, cut, duration, json, usd } from "./format.js";
import { parts } from "./harness.js";

const LIMIT = 20000;

function folded(label, value, cls) {
  const text = typeof value === "string" ? value : json(value);
  return h("details", { class: cls || "raw" }, h("summary", {}, label), h("pre", {}, cut(text, LIMIT)));
}

function line(text, cls) {
  return h("p", { class: cls || "line" }, text);
}

/** A tool input in one line: its command or path when it has one. */
function gist(input) {
  if (input && typeof input === "object" && !Array.isArray(input)) {
    const main = input.command ?? input.file_path ?? input.path ?? input.pattern ?? input.url;
    if (typeof main === "string") return main;
  }
  const text = typeof input === "string" ? input : JSON.stringify(input) ?? "";
  return text.replace(/\s+/g, " ");
}

function usageText(u) {
  if (!u) return "";
  return ` · ${count(u.input_tokens)} in, ${count(u.output_tokens)} out, ${count(u.cache_read_tokens)} cache read, ${count(u.cache_write_tokens)} cache write, ${usd(u.cost_usd)}`;
}

function ended(d) {
  const exit = d.exit ? ("code" in d.exit ? `exit ${d.exit.code}` : `signal ${d.exit.signal}`) : "no exit status";
  const by = d.by ? `, ended by ${d.by}` : "";
  return `Turn ${d.turn} ended (${exit}${by})${usageText(d.usage)}`;
}

/** "1.5 MB" and the like: how much a harness printed. */
function size(bytes) {
  const n = Number(bytes || 0);
  if (n < 1000) return `${n} bytes`;
  const [value, unit] = n < 1e6 ? [n / 1e3, "kB"] : n < 1e9 ? [n / 1e6, "MB"] : [n / 1e9, "GB"];
  return `${value.toFixed(1)} ${unit}`;
}

/** "1 line" or "3 lines" of `bytes`. */
function lines(d) {
  return `${count(d.lines)} line${d.lines === 1 ? "" : "s"} (${size(d.bytes)})`;
}

const DROPPED = { over_cap: "over the 1 MiB cap", not_utf8: "not UTF-8" };
const REJECTED = { too_deep: "nested too deep", not_json: "not JSON", not_portable: "JSON that strict parsers refuse" };

function copyEnded(d) {
  const after = `after ${duration(d.waited_ms || 0)}`;
  if (d.why && typeof d.why === "object") return `The project copy failed (${d.why.copy_failed ?? json(d.why)}) ${after}`;
  const said = {
    landed: `The project copy landed ${after}`,
    no_copy: "No project copy to wait for",
    mark_too_old: "A copying mark too old to wait for",
    mark_in_future: "A copying mark dated in the future, not waited for",
    limit: `The copy wait reached its limit ${after}; the harness starts without it`,
  }[d.why];
  return said || `The copy wait is over: ${String(d.why)} ${after}`;
}

/** The parts of a harness event, or null for another kind. */
function partsOf(ev) {
  return ev.kind === "harness" ? parts(ev.data) : null;
}

/** The kind of chunk (an ACP agent's message or thought) parts `p` are, if one. */
function chunkOf(p) {
  return p && p.length === 1 && p[0].chunk ? p[0].chunk : null;
}

/**
 * Renders session `id`'s events; `calls` keeps each tool call's element by
 * its ID, `run` the hidden element of the run of chatter the last event
 * joined, if it did, and `chunk` the element of the last chunk of an ACP
 * agent's message or thought, which the next chunk of it joins.
 */
export class Conversation {
  constructor(id) {
    this.id = id;
    this.calls = new Map();
    this.run = null;
    this.chunk = null;
  }

  /** Appends the elements of `events` (in seq order) to `parent`. */
  addTo(parent, events) {
    for (const ev of events) {
      const p = partsOf(ev);
      if (p && !p.length) {
        this.chatter(parent, ev);
        continue;
      }
      const chunk = chunkOf(p);
      if (chunk && this.chunk && this.chunk.kind === chunk) {
        // One message, however many chunks it came in.
        this.chunk.text.append(p[0].text);
        this.chunk.el.dataset.last = ev.seq;
        continue;
      }
      this.run = null;
      const el = this.render(ev, p);
      parent.append(el);
      const text = chunk && el.querySelector(":scope > .text");
      this.chunk = text ? { kind: chunk, text, el } : null;
    }
  }

  /** Counts `ev` into the run it continues, or starts a run with it. */
  chatter(parent, ev) {
    const run = this.run;
    if (run && Number(run.dataset.last) === ev.seq - 1) {
      run.dataset.last = ev.seq;
      run.dataset.count = Number(run.dataset.count) + 1;
      return;
    }
    this.run = h("article", { class: "ev quiet", hidden: true, "data-seq": ev.seq, "data-last": ev.seq, "data-count": 1, "data-kind": ev.kind });
    parent.append(this.run);
  }

  /** The element for one event; `p`: its harness parts, when known. */
  render(ev, p) {
    const el = h("article", { class: `ev ev-${String(ev.kind).replace(/[^a-z_]/g, "")}`, "data-seq": ev.seq, "data-kind": ev.kind });
    el.append(h("span", { class: "at", title: new Date(ev.at_ms).toISOString() }, `#${ev.seq} ${clock(ev.at_ms)}`));
    try {
      this.body(el, ev, p);
    } catch {
      el.append(folded(String(ev.kind), ev.data));
    }
    return el;
  }

  body(el, ev, p) {
    const d = ev.data;
    switch (ev.kind) {
      case "harness":
        return this.harness(el, p || parts(d));
      case "prompt_queued":
        el.classList.add("user");
        el.append(h("div", { class: "who" }, `You · prompt ${d.prompt}`), h("div", { class: "text" }, d.text ?? ""));
        if (d.text_truncated) el.append(line("(the text is cut here; the harness got all of it)", "note"));
        return;
      case "prompt_steered":
        el.classList.add("user");
        el.append(h("div", { class: "who" }, `You · prompt ${d.prompt}, steered into turn ${d.turn}`), h("div", { class: "text" }, d.text ?? ""));
        if (d.text_truncated) el.append(line("(the text is cut here; the harness got all of it)", "note"));
        return;
      case "state":
        return el.append(line(`State: ${d.state}`));
      case "turn_started":
        return el.append(line(`Turn ${d.turn} began · prompt ${d.prompt}${d.resume ? " · resumed" : ""}`, "turn"));
      case "turn_ended":
        return el.append(line(ended(d), "turn"));
      case "turn_diff":
        return turnDiff(el, d, this.id);
      case "folder_changed":
        return folderChanged(el, d);
      case "rewound":
        return rewound(el, d);
      case "forked":
        return forked(el, d);
      case "copy_wait_began":
        return el.append(line(`Waiting for the project copy (${d.on === "copying" ? "the mark says copying" : "no mark yet"}), at most ${duration(d.limit_ms)}`));
      case "copy_wait_ended":
        return el.append(line(copyEnded(d)));
      case "native_id":
        return el.append(line(`The harness named its session ${d.native_id}`, "note"));
      case "prompt_requeued":
        return el.append(line(`Prompt ${d.prompt} went back to the queue (turn ${d.turn} could not run it)`));
      case "unresponsive":
        el.classList.add("error");
        return el.append(line(`Turn ${d.turn} showed no sign of life within ${duration(d.within_ms || 0)} of getting prompt ${d.prompt}; its process was ended${d.retried ? " and the prompt runs once more in a new process" : ""}`));
      case "prompt_failed":
        el.classList.add("error");
        return el.append(line(`Prompt ${d.prompt} failed: ${d.error}`));
      case "stopped":
      case "resumed":
      case "closed":
      case "service_stopped":
        return el.append(line({ stopped: "Stopped (the queue is paused)", resumed: "Resumed", closed: "Closed", service_stopped: "The service stopped" }[ev.kind]));
      case "interrupted":
        return el.append(line(`Interrupted turn ${d.turn}`));
      case "relaunched":
        return el.append(line(`Relaunched (${d.mode})`));
      case "error":
        el.classList.add("error");
        return el.append(line(`Error: ${d.message}`));
      case "approval_requested":
        el.classList.add("approval");
        el.append(line(`Approval ${d.id} asked in turn ${d.turn}: ${d.tool}${d.reason ? ` (${d.reason})` : ""}`));
        return el.append(folded("input", d.input, "tool-input"));
      case "approval_resolved":
        return el.append(line(`Approval ${d.id}: ${d.decision}${d.by ? ` by ${d.by}` : ""}${d.message ? ` (${d.message})` : ""}`));
      case "output_dropped":
        el.classList.add("error");
        return el.append(line(`Turn ${d.turn}: ${lines(d)} of output dropped, ${DROPPED[d.why] || String(d.why)}`));
      case "harness_line_rejected":
        el.classList.add("error");
        el.append(line(`Turn ${d.turn}: ${lines(d)} of output not shown, ${REJECTED[d.why] || String(d.why)}; the first began:`));
        return el.append(h("pre", { class: "prefix" }, String(d.prefix ?? "")));
      case "request_refused": {
        el.classList.add("error");
        const what = `${d.request ? String(d.request) : "a"} request${d.tool ? ` for ${d.tool}` : ""}`;
        const answered = d.answered ? "room-core answered" : "room-core could not answer";
        return el.append(line(`Turn ${d.turn}: ${what} refused (${String(d.reason)}, ${size(d.bytes)}); ${answered}: ${d.message}`));
      }
      case "journal_repaired":
        el.classList.add("error");
        return el.append(line(`The journal was repaired: ${d.lines} damaged lines skipped`));
      default:
        return el.append(folded(String(ev.kind), d));
    }
  }

  harness(el, list) {
    for (const p of list) {
      if (p.type === "text") {
        el.classList.add(p.chunk === "thought" ? "thought" : "model");
        el.append(h("div", { class: "text" }, p.text));
      } else if (p.type === "note") {
        el.append(line(p.text, "note"));
      } else if (p.type === "error") {
        el.classList.add("error");
        el.append(line(`Error: ${p.text}`));
      } else if (p.type === "call") {
        if (this.calls.has(p.id) && p.id) continue;
        const input = typeof p.input === "string" ? p.input : json(p.input);
        const call = h("details", { class: "tool", "data-tool": p.id },
          h("summary", {}, h("strong", {}, p.name), " ", cut(gist(p.input), 120)),
          h("pre", { class: "tool-input" }, cut(input, LIMIT)));
        if (p.id) this.calls.set(p.id, call);
        el.append(call);
      } else if (p.type === "result") {
        const result = h("div", { class: p.error ? "result error" : "result" },
          h("div", { class: "who" }, `result${p.status ? ` (${p.status})` : ""}${p.error ? " · error" : ""}`),
          h("pre", {}, cut(p.text, LIMIT)));
        const call = this.calls.get(p.id);
        if (call && !call.contains(result) && !el.contains(call)) {
          // Folded into its call; this event's element says where it went.
          call.append(result);
          call.closest("article")?.classList.toggle("failed", p.error);
          el.classList.add("folded");
          el.append(line(`the result of ${call.querySelector("strong")?.textContent || "a tool"} (folded into its call)`, "note"));
        } else if (call) {
          call.append(result);
        } else {
          el.append(h("details", { class: "tool" }, h("summary", {}, "tool result"), result));
        }
      } else {
        el.append(folded(p.label, p.value));
      }
    }
    if (!el.querySelector(":scope > :not(.at)")) el.append(line("harness event", "note"));
  }
}
