// The session list, live: the list is asked again every few seconds, one
// bounded request however many sessions (following each session's stream
// would hold one of the service's 256 streams per row). Each entry carries
// what its row shows (folder, pending approvals, cost), so one request a
// refresh is all the list makes. One loop: at most one load in flight and
// one timer; a load wanted while one is awaited ("More") is folded into the
// next, and loads start at least a period apart, however often the tab is
// hidden and shown.

import { call } from "./api.js";
import { h, replace } from "./dom.js";
import { duration, usd } from "./format.js";

/** How often the list is asked again, and the least time between two loads. */
const EVERY_MS = 2000;
const STATES = ["", "pending", "running", "idle", "closed", "failed"];

/** The filters in the page's address: `#/?workspace=…&state=…`. */
function filters() {
  const q = new URLSearchParams(location.hash.split("?")[1] || "");
  return { workspace: q.get("workspace") || "", state: q.get("state") || "" };
}

/** Whether the tab is seen: the list is asked again only then. */
const seen = () => document.visibilityState === "visible";

/** Shows the session list in `main`; returns what ends the page. */
export function listPage(main, setStatus) {
  let alive = true;
  const f = filters();
  document.title = "Sessions · room-core";
  const workspace = h("input", { id: "workspace", name: "workspace", value: f.workspace, placeholder: "any", autocomplete: "off" });
  const state = h("select", { id: "state", name: "state" }, STATES.map((s) => h("option", { value: s, selected: s === f.state }, s || "any")));
  const form = h("form", { class: "filters", role: "search", "aria-label": "Filter sessions" },
    h("label", { for: "workspace" }, "Workspace"), workspace,
    h("label", { for: "state" }, "State"), state,
    h("button", { type: "submit" }, "Filter"));
  const count = h("p", { class: "count", role: "status" });
  const body = h("tbody", {});
  const more = h("button", { type: "button", id: "more", hidden: true }, "More sessions");
  const head = ["session", "state", "harness", "folder", "age", "queue", "approvals", "cost"];
  replace(main, h("section", { class: "list" },
    h("div", { class: "head" }, h("h1", {}, "Sessions"), h("a", { href: "#/new", id: "new-session" }, "New session")),
    form, count,
    h("div", { class: "scroll" }, h("table", { class: "sessions" }, h("thead", {}, h("tr", {}, head.map((c) => h("th", { scope: "col" }, c)))), body)),
    more));

  let limit = 100;
  const apply = (e) => {
    e.preventDefault();
    const q = new URLSearchParams();
    if (workspace.value.trim()) q.set("workspace", workspace.value.trim());
    if (state.value) q.set("state", state.value);
    location.hash = `#/${q.toString() ? `?${q}` : ""}`;
  };
  form.addEventListener("submit", apply);
  state.addEventListener("change", apply);

  const row = (s) => {
    const approvals = Number(s.pending_approval_count) || 0;
    const queue = `${s.queue.length}${s.queue.paused ? " paused" : ""}`;
    const cell = (label, attrs, ...content) => h("td", { "data-label": label, ...attrs }, ...content);
    return h("tr", { "data-id": s.id, "data-state": s.state },
      cell("session", {}, h("a", { href: `#/sessions/${encodeURIComponent(s.id)}` }, s.id)),
      cell("state", {}, h("span", { class: "state", "data-state": s.state }, s.state), s.waiting_for ? h("span", { class: "note" }, " waiting for the copy") : null),
      cell("harness", {}, s.harness),
      cell("folder", { class: "folder" }, s.folder ?? "—"),
      cell("age", {}, duration(Date.now() - s.created_ms)),
      cell("queue", {}, queue),
      cell("approvals", { class: approvals ? "pending" : "" }, String(approvals)),
      cell("cost", {}, usd(s.usage && s.usage.cost_usd)));
  };

  // The loop's whole state: its one timer, whether a load is awaited,
  // whether one more is wanted once it is, and when the last one began.
  let timer = null;
  let busy = false;
  let again = false;
  let last = -Infinity;

  /** The next load in `ms`, replacing any other; none while the tab is hidden. */
  const schedule = (ms) => {
    clearTimeout(timer);
    timer = alive && seen() ? setTimeout(load, ms) : null;
  };
  /** A load as soon as one may start: at once, or a period after the last began. */
  const soon = () => {
    if (busy) {
      again = true;
      return;
    }
    schedule(Math.max(0, last + EVERY_MS - Date.now()));
  };

  const load = async () => {
    timer = null;
    if (busy || !alive) return;
    busy = true;
    again = false;
    last = Date.now();
    const q = new URLSearchParams({ limit: String(limit) });
    if (f.workspace) q.set("workspace", f.workspace);
    if (f.state) q.set("state", f.state);
    let refused = false;
    try {
      const list = await call("GET", `/v1/sessions?${q}`);
      if (alive) {
        replace(body, list.sessions.map(row));
        count.textContent = `${list.sessions.length} session${list.sessions.length === 1 ? "" : "s"}${list.next_after ? " (more below)" : ""}`;
        more.hidden = !list.next_after || limit >= 1024;
        setStatus("");
      }
    } catch (e) {
      // A refused token ends the page (app.js asks for another).
      refused = e.status === 401;
      if (alive && !refused) setStatus(`Cannot list the sessions: ${e.message}`, true);
    } finally {
      busy = false;
    }
    if (refused) return;
    // What was wanted meanwhile comes a period after this load began; the
    // usual refresh, a period after it ended.
    if (again) soon();
    else schedule(EVERY_MS);
  };

  more.addEventListener("click", () => {
    limit = Math.min(1024, limit * 2);
    soon();
  });
  const onVisible = () => {
    if (seen()) {
      soon();
    } else {
      clearTimeout(timer);
      timer = null;
    }
  };
  document.addEventListener("visibilitychange", onVisible);
  schedule(0);
  return () => {
    alive = false;
    clearTimeout(timer);
    document.removeEventListener("visibilitychange", onVisible);
  };
}
