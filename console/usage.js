// What the session used: each turn's figures (`turn_ended.usage`) and the
// view's totals.

import { h } from "./dom.js";
import { count, usd } from "./format.js";

const COLUMNS = ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"];

function row(label, u, cls) {
  return h("tr", { class: cls }, h("th", { scope: "row" }, label), COLUMNS.map((c) => h("td", {}, count(u && u[c]))), h("td", {}, usd(u && u.cost_usd)));
}

/** The table for the turns in `summary` and the view's `total` (absent: none). */
export function usageTable(summary, total) {
  const turns = [...summary.turns.values()].filter((t) => t.end !== undefined).sort((a, b) => a.turn - b.turn);
  return h("table", { class: "usage" },
    h("caption", {}, "Usage"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "turn"), h("th", { scope: "col" }, "input"), h("th", { scope: "col" }, "output"), h("th", { scope: "col" }, "cache read"), h("th", { scope: "col" }, "cache write"), h("th", { scope: "col" }, "cost"))),
    h("tbody", {}, turns.map((t) => row(`turn ${t.turn}`, t.usage, t.usage ? "" : "none"))),
    h("tfoot", {}, row("total", total || {}, "total")));
}
