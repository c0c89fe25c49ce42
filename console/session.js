// A session's page: its state and copy wait, its controls, a timeline, the
// conversation and its usage. The latest events render at once (the stream
// from a few hundred before the end); earlier ones page in on request, and
// the timeline and usage take the whole history in pages behind that.

import { call, sessionPath } from "./api.js";
import { controls } from "./controls.js";
import { Conversation } from "./conversation.js";
import { h, replace } from "./dom.js";
import { clock, duration, usd } from "./format.js";
import { follow } from "./stream.js";
import { Summary, draw } from "./timeline.js";
import { usageTable } from "./usage.js";

/** Events rendered when the page opens: the journal's last ones. */
const TAIL = 200;
/** Events per page when reading the history. */
const PAGE = 1024;

/** Pages of session `id`'s events after `after` up to seq `before`, each to `take`. */
async function pages(id, after, before, take, alive) {
  while (after < before - 1 && alive()) {
    const p = await call("GET", sessionPath(id, `/events?after=${after}&limit=${PAGE}`));
    const events = p.events.filter((e) => e.seq < before);
    if (events.length) take(events);
    if (!p.events.length || p.events.length > events.length || p.next_after <= after) return;
    after = p.next_after;
  }
}

function waitText(w, now) {
  const mark = w.mark === "missing" ? "no mark yet" : `the mark says ${w.mark}`;
  return [
    h("strong", {}, "Waiting for the project copy"), ` (${w.what}): `,
    h("span", { class: "mark" }, mark), "; since ",
    h("span", { class: "since" }, `${clock(w.since_ms)} (${duration(now - w.since_ms)} ago)`), "; at most until ",
    h("span", { class: "until" }, `${clock(w.until_ms)} (in ${duration(w.until_ms - now)})`),
  ];
}

const OUTCOMES = {
  landed: "The project copy landed.",
  failed: "The project copy failed",
  no_copy: "No project copy was awaited.",
  mark_too_old: "A copying mark was too old to hold the start.",
  mark_in_future: "A copying mark dated in the future did not hold the start.",
  limit: "The copy wait reached its limit; the harness started without it.",
};

function copyText(copy) {
  if (!copy) return null;
  const said = OUTCOMES[copy.outcome] || `Project copy: ${copy.outcome}.`;
  return copy.reason ? `${said}: ${copy.reason}` : said;
}

/** Shows session `id` in `main`; returns what ends the page. */
export function sessionPage(main, id, setStatus) {
  let alive = true;
  let view = null;
  const summary = new Summary();
  const conversation = new Conversation(id);
  const state = h("span", { class: "state", "data-state": "" });
  const meta = h("p", { class: "meta" });
  const wait = h("p", { class: "wait", hidden: true, role: "status" });
  const link = h("span", { class: "link", "data-link": "connecting" }, "connecting");
  const picture = h("figure", { class: "picture" }, h("figcaption", {}, "Timeline"));
  const usage = h("div", { class: "usage-box" });
  const conv = h("div", { class: "conv", role: "log", "aria-label": "Conversation", tabindex: 0 });
  const earlier = h("button", { type: "button", id: "earlier", hidden: true }, "Show earlier events");
  const ctl = controls(id, (v) => show(v));
  document.title = `${id} · room-core`;
  replace(main, h("section", { class: "session" },
    h("header", { class: "head" }, h("h1", {}, "Session ", h("code", {}, id)), state, link), meta, wait,
    h("div", { class: "grid" },
      h("div", { class: "side" }, ctl.el, usage),
      h("div", { class: "story" }, picture, earlier, conv))));

  const redraw = () => {
    if (!view) return;
    const live = view.state !== "closed" && view.state !== "failed";
    const from = Math.min(view.created_ms, summary.first);
    const to = live ? Math.max(Date.now(), summary.last) : Math.max(summary.last, from + 1000);
    picture.querySelector("svg")?.remove();
    picture.append(draw(summary, from, to, picture.clientWidth || 600));
    replace(usage, usageTable(summary, view.usage));
  };
  let drawn = 0;
  let drawTimer = null;
  const scheduleDraw = () => {
    if (drawTimer) return;
    drawTimer = setTimeout(() => {
      drawTimer = null;
      drawn = Date.now();
      redraw();
    }, Math.max(0, 250 - (Date.now() - drawn)));
  };

  const show = (v) => {
    view = v;
    state.textContent = v.state;
    state.dataset.state = v.state;
    const queue = v.queue ? `${v.queue.length} queued${v.queue.paused ? " (paused)" : ""}` : "";
    const cost = v.usage ? usd(v.usage.cost_usd) : "—";
    const runs = [v.model, v.effort && `${v.effort} effort`].filter(Boolean).join(", ");
    meta.textContent = `${v.harness}${runs ? ` (${runs})` : ""} · ${v.kind} in ${v.workspace} · ${v.folder} · started ${clock(v.created_ms)} · ${queue} · cost ${cost}${v.error ? ` · error: ${v.error}` : ""}`;
    const now = Date.now();
    if (v.waiting_for) {
      wait.hidden = false;
      wait.classList.add("waiting");
      replace(wait, waitText(v.waiting_for, now));
    } else {
      wait.classList.remove("waiting");
      wait.hidden = !v.copy;
      replace(wait, copyText(v.copy));
    }
    ctl.update(v);
    scheduleDraw();
  };

  let viewTimer = null;
  const refresh = () => {
    clearTimeout(viewTimer);
    viewTimer = setTimeout(async () => {
      try {
        if (alive) show(await call("GET", sessionPath(id)));
      } catch {
        // The next event or tick tries again.
      }
    }, 150);
  };

  const nearEnd = () => conv.scrollHeight - conv.scrollTop - conv.clientHeight < 48;
  let first = true;
  let shown;
  const firstShown = new Promise((resolve) => {
    shown = resolve;
  });
  const onEvents = (events) => {
    summary.add(events);
    const stick = first || nearEnd();
    first = false;
    const frag = document.createDocumentFragment();
    conversation.addTo(frag, events);
    conv.append(frag);
    if (stick) conv.scrollTop = conv.scrollHeight;
    // When the page first showed events, for whoever measures it.
    if (!performance.getEntriesByName("console-events-shown").length) performance.mark("console-events-shown");
    shown();
    if (events.some((e) => e.kind !== "harness")) refresh();
    scheduleDraw();
  };
  const onLink = (s) => {
    link.dataset.link = s;
    link.textContent = s;
  };

  let lowest = Infinity;
  earlier.addEventListener("click", async () => {
    earlier.disabled = true;
    const before = lowest;
    const from = Math.max(0, before - 1 - TAIL);
    const chunk = new Conversation(id);
    const frag = document.createDocumentFragment();
    try {
      await pages(id, from, before, (events) => chunk.addTo(frag, events), () => alive);
      const height = conv.scrollHeight;
      conv.prepend(frag);
      conv.scrollTop += conv.scrollHeight - height;
      lowest = from + 1;
      earlier.hidden = from === 0;
    } catch (e) {
      setStatus(`Cannot read the earlier events: ${e.message}`, true);
    } finally {
      earlier.disabled = false;
    }
  });

  let stop = () => {};
  const tick = setInterval(() => {
    if (view && view.waiting_for) show(view);
    else if (view && view.state === "running") scheduleDraw();
  }, 1000);
  const onResize = () => scheduleDraw();
  window.addEventListener("resize", onResize);

  (async () => {
    try {
      const [v, probe] = await Promise.all([call("GET", sessionPath(id)), call("GET", sessionPath(id, "/events?limit=1"))]);
      if (!alive) return;
      show(v);
      const start = Math.max(0, probe.last_seq - TAIL);
      lowest = start + 1;
      earlier.hidden = start === 0;
      stop = follow(id, start, onEvents, onLink);
      // The whole history for the timeline and the usage, behind the tail
      // and once it shows, so the two do not share the first moments.
      await Promise.race([firstShown, new Promise((resolve) => setTimeout(resolve, 1000))]);
      await pages(id, 0, start + 1, (events) => {
        summary.add(events);
        scheduleDraw();
      }, () => alive);
    } catch (e) {
      if (alive) replace(main, h("p", { class: "alert", role: "alert" }, e.status === 404 ? `No session ${id}.` : `Cannot open session ${id}: ${e.message}`));
    }
  })();

  return () => {
    alive = false;
    stop();
    clearInterval(tick);
    clearTimeout(viewTimer);
    clearTimeout(drawTimer);
    window.removeEventListener("resize", onResize);
  };
}
