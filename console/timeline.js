// A session on one time axis, drawn as SVG from its events: the copy wait,
// each turn, each approval, and marks for interrupts, stops, closes and
// errors. `Summary` takes events in any order, each once.

import { svg } from "./dom.js";
import { clock, duration } from "./format.js";

const MARKS = new Set(["interrupted", "stopped", "resumed", "closed", "service_stopped", "error", "relaunched"]);

/** What the picture and the usage table need of a session's events. */
export class Summary {
  constructor() {
    this.wait = null;
    this.turns = new Map();
    this.approvals = new Map();
    // By seq, so an event taken twice marks once.
    this.marks = new Map();
    this.first = Infinity;
    this.last = 0;
  }

  /**
   * Takes events (one taken again changes nothing). Nothing is kept per
   * event but what the picture draws, so a session's chatter costs no
   * memory here.
   */
  add(events) {
    for (const ev of events) {
      this.first = Math.min(this.first, ev.at_ms);
      this.last = Math.max(this.last, ev.at_ms);
      const d = ev.data || {};
      const turn = (n) => {
        if (!this.turns.has(n)) this.turns.set(n, { turn: n });
        return this.turns.get(n);
      };
      const approval = (n) => {
        if (!this.approvals.has(n)) this.approvals.set(n, { id: n });
        return this.approvals.get(n);
      };
      if (ev.kind === "copy_wait_began") this.wait = { ...this.wait, start: ev.at_ms, on: d.on };
      else if (ev.kind === "copy_wait_ended") this.wait = { start: ev.at_ms - (d.waited_ms || 0), ...this.wait, end: ev.at_ms };
      else if (ev.kind === "turn_started") Object.assign(turn(d.turn), { start: ev.at_ms, prompt: d.prompt });
      else if (ev.kind === "turn_ended") Object.assign(turn(d.turn), { end: ev.at_ms, by: d.by, usage: d.usage, exit: d.exit });
      else if (ev.kind === "approval_requested") Object.assign(approval(d.id), { start: ev.at_ms, tool: d.tool });
      else if (ev.kind === "approval_resolved") Object.assign(approval(d.id), { end: ev.at_ms, decision: d.decision });
      else if (MARKS.has(ev.kind)) this.marks.set(ev.seq, { at: ev.at_ms, kind: ev.kind });
    }
  }
}

const LANES = ["copy wait", "turns", "approvals", "marks"];
const LEFT = 78;
const LANE = 24;

/** The picture of `s` from `from` to `to` (Unix ms), `width` pixels wide. */
export function draw(s, from, to, width) {
  const w = Math.max(240, Math.floor(width));
  const height = LANES.length * LANE + 28;
  const span = Math.max(1000, to - from);
  const x = (t) => LEFT + ((Math.min(Math.max(t, from), to) - from) / span) * (w - LEFT - 8);
  const root = svg("svg", {
    class: "timeline",
    width: w,
    height,
    viewBox: `0 0 ${w} ${height}`,
    role: "img",
    "aria-label": `Timeline from ${clock(from)} to ${clock(to)}: ${s.turns.size} turns, ${s.approvals.size} approvals, ${s.marks.size} marks`,
  });
  LANES.forEach((name, i) => {
    root.append(svg("text", { x: 4, y: i * LANE + 16, class: "lane" }, name));
    root.append(svg("line", { x1: LEFT, x2: w - 8, y1: i * LANE + 12, y2: i * LANE + 12, class: "rule" }));
  });
  const bar = (lane, start, end, cls, title) => {
    const x0 = x(start);
    const x1 = x(end ?? to);
    root.append(svg("rect", { x: x0, y: lane * LANE + 4, width: Math.max(2, x1 - x0), height: 16, class: `${cls}${end === undefined ? " open" : ""}` }, svg("title", {}, title)));
  };
  if (s.wait && s.wait.start !== undefined) {
    bar(0, s.wait.start, s.wait.end, "wait", `copy wait ${duration((s.wait.end ?? to) - s.wait.start)}`);
  }
  for (const t of s.turns.values()) {
    if (t.start === undefined && t.end === undefined) continue;
    // A turn whose start is not read yet (history still paging in) is drawn at its end.
    const start = t.start ?? t.end;
    const cls = `turn${t.by ? ` by-${t.by}` : ""}${t.start === undefined ? " unknown-start" : ""}`;
    bar(1, start, t.end, cls, `turn ${t.turn}: ${duration((t.end ?? to) - start)}${t.by ? `, ended by ${t.by}` : ""}`);
  }
  for (const a of s.approvals.values()) {
    if (a.start === undefined) continue;
    bar(2, a.start, a.end, `approval ${a.decision || "pending"}`, `approval ${a.id} (${a.tool}): ${a.decision || "pending"}`);
  }
  for (const m of s.marks.values()) {
    const mx = x(m.at);
    root.append(svg("line", { x1: mx, x2: mx, y1: 3 * LANE + 2, y2: 3 * LANE + 22, class: `mark ${m.kind}` }, svg("title", {}, `${m.kind} at ${clock(m.at)}`)));
  }
  const axis = LANES.length * LANE + 16;
  root.append(svg("text", { x: LEFT, y: axis, class: "tick" }, clock(from)));
  root.append(svg("text", { x: w - 8, y: axis, class: "tick end" }, clock(to)));
  return root;
}
