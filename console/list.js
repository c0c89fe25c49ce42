// The session list, live: the list is asked again every few seconds (one
// bounded request, however many sessions, where following each session's
// stream would hold one of the service's 256 streams per row), and a row's
// full view (folder, cost, pending approvals, which the list does not carry)
// is asked only when its state changed, or at most every 5 s while it has
// new events.

import { call, sessionPath } from "./api.js";
import { h, replace } from "./dom.js";
import { duration, usd } from "./format.js";

/** How often the list is asked again. */
const EVERY_MS = 2000;
/** How often a busy row's view is asked again (its state changes show at once). */
const VIEW_EVERY_MS = 5000;
const STATES = ["", "pending", "running", "idle", "closed", "failed"];

/** The filters in the page's address: `#/?workspace=…&state=…`. */
function filters() {
  const q = new URLSearchParams(location.hash.split("?")[1] || "");
  return { workspace: q.get("workspace") || "", state: q.get("state") || "" };
}

/** Shows the session list in `main`; returns what ends the page. */
export function listPage(main, setStatus) {
  let alive = true;
  const views = new Map();
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
  replace(main, h("section", { class: "list" }, h("h1", {}, "Sessions"), form, count,
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
  more.addEventListener("click", () => {
    limit = Math.min(1024, limit * 2);
    load();
  });

  const row = (s) => {
    const v = views.get(s.id)?.view;
    const approvals = v && Array.isArray(v.pending_approvals) ? v.pending_approvals.length : 0;
    const queue = `${s.queue.length}${s.queue.paused ? " paused" : ""}`;
    const cell = (label, attrs, ...content) => h("td", { "data-label": label, ...attrs }, ...content);
    return h("tr", { "data-id": s.id, "data-state": s.state },
      cell("session", {}, h("a", { href: `#/sessions/${encodeURIComponent(s.id)}` }, s.id)),
      cell("state", {}, h("span", { class: "state", "data-state": s.state }, s.state), s.waiting_for ? h("span", { class: "note" }, " waiting for the copy") : null),
      cell("harness", {}, s.harness),
      cell("folder", { class: "folder" }, v ? v.folder : "…"),
      cell("age", {}, duration(Date.now() - s.created_ms)),
      cell("queue", {}, queue),
      cell("approvals", { class: approvals ? "pending" : "" }, String(approvals)),
      cell("cost", {}, v ? usd(v.usage && v.usage.cost_usd) : "…"));
  };

  let timer = null;
  const load = async () => {
    clearTimeout(timer);
    const q = new URLSearchParams({ limit: String(limit) });
    if (f.workspace) q.set("workspace", f.workspace);
    if (f.state) q.set("state", f.state);
    try {
      const list = await call("GET", `/v1/sessions?${q}`);
      if (!alive) return;
      // A row's view again only when it changed since the last one: at
      // once for a new state, at most every VIEW_EVERY_MS for new events.
      await Promise.all(list.sessions.map(async (s) => {
        const known = views.get(s.id);
        const now = Date.now();
        if (known && known.state === s.state && (known.activity === s.last_activity_ms || now - known.at < VIEW_EVERY_MS)) return;
        try {
          const view = await call("GET", sessionPath(s.id));
          views.set(s.id, { state: s.state, activity: s.last_activity_ms, at: now, view });
        } catch {
          // Shown without it; asked again next time.
        }
      }));
      if (!alive) return;
      replace(body, list.sessions.map(row));
      count.textContent = `${list.sessions.length} session${list.sessions.length === 1 ? "" : "s"}${list.next_after ? " (more below)" : ""}`;
      more.hidden = !list.next_after || limit >= 1024;
      setStatus("");
    } catch (e) {
      // A refused token ends the page (app.js asks for another).
      if (e.status === 401) return;
      if (alive) setStatus(`Cannot list the sessions: ${e.message}`, true);
    }
    // Asked again only while the tab is seen.
    if (alive && document.visibilityState === "visible") timer = setTimeout(load, EVERY_MS);
  };
  const onVisible = () => {
    if (document.visibilityState === "visible") load();
  };
  document.addEventListener("visibilitychange", onVisible);
  load();
  return () => {
    alive = false;
    clearTimeout(timer);
    document.removeEventListener("visibilitychange", onVisible);
  };
}
