// The session list keeps one loop, however the tab's visibility flips and
// "More" is clicked while a slow answer is awaited: at most one
// GET /v1/sessions in flight and at most one per refresh period, one each
// period while the tab is seen and none while it is hidden, a "More" asked
// mid-load served by the next load alone, and never a session's own view.

import { check, open, session, start, until, withPage } from "../lib.mjs";

/** console/list.js's refresh period. */
const EVERY_MS = 2000;
/** How long each list answer is held back: a slow service. */
const SLOW_MS = 800;
/** What timers and the event's way to this process may add. */
const SLACK_MS = 150;
/** The first page list.js asks for. */
const FIRST_PAGE = 100;

/** The page says its tab is hidden or seen, as a browser does. */
function setVisible(page, visible) {
  return page.evaluate((v) => {
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => (v ? "visible" : "hidden") });
    Object.defineProperty(document, "hidden", { configurable: true, get: () => !v });
    window.dispatchEvent(new Event(v ? "focus" : "blur"));
    document.dispatchEvent(new Event("visibilitychange"));
  }, visible);
}

export default async function () {
  // A session that ran a turn, first in the list, then as many more as
  // the first page holds, so "More" shows; waiting for a copy, they start
  // no harness.
  const done = await start("many-done", { prompt: "hello" });
  await session(done.id, "idle", (v) => v.state === "idle");
  for (let n = 0; n < FIRST_PAGE; n++) await start(`many-${n}`, { project_copy: true });
  const total = FIRST_PAGE + 1;

  await withPage(async (page) => {
    // Every request the page makes from the start, and each list load's
    // start and end on this process's clock.
    const views = [];
    const loads = [];
    const isList = (r) => new URL(r.url()).pathname === "/v1/sessions" && r.method() === "GET";
    page.on("request", (r) => {
      const path = new URL(r.url()).pathname;
      if (/^\/v1\/sessions\/[^/]+$/.test(path) && r.method() === "GET") views.push(path);
      if (isList(r)) loads.push({ r, at: Date.now(), end: null, limit: Number(new URL(r.url()).searchParams.get("limit")) });
    });
    const ended = (r) => {
      const l = loads.find((x) => x.r === r);
      if (l) l.end = Date.now();
    };
    page.on("requestfinished", ended);
    page.on("requestfailed", ended);
    // A slow service: each list answer is held back.
    await page.route((url) => url.pathname === "/v1/sessions", async (route) => {
      await new Promise((resolve) => setTimeout(resolve, SLOW_MS));
      await route.continue();
    });
    const inFlight = () => loads.filter((l) => l.end === null).length;
    const nextLoad = (after) => until("a list load", () => loads.length > after && loads[after], 3 * (EVERY_MS + SLOW_MS));
    const loadEnded = (l) => until("a list load's end", () => l.end !== null, 3 * SLOW_MS + 1000);

    await open(page);
    await page.waitForSelector(`tr[data-id="${done.id}"][data-state="idle"]`);
    await page.waitForSelector("#more:not([hidden])");
    const row = await page.textContent(`tr[data-id="${done.id}"]`);
    check(row.includes("many-done") && row.includes("$0.0"), `the row shows its folder and cost from the list alone: ${row}`);

    // While a load is awaited: "More" three times, and the tab hidden and
    // seen again, twice.
    let l = await nextLoad(loads.length);
    check(l.end === null, "a load is in flight");
    const before = loads.length;
    await page.evaluate(() => {
      for (let i = 0; i < 3; i++) document.getElementById("more").click();
    });
    await setVisible(page, false);
    await setVisible(page, true);
    await setVisible(page, false);
    await setVisible(page, true);
    check(loads.length === before, `nothing more started while it was awaited: ${loads.length - before} more`);
    await loadEnded(l);
    // The next load is the one "More" asked for, alone.
    const more = await nextLoad(before);
    check(more.limit === FIRST_PAGE * 8, `the load after the clicks asks ${more.limit}, not ${FIRST_PAGE * 8}`);
    await loadEnded(more);
    await until("every session listed", async () => (await page.$$("tbody tr")).length === total);
    check(await page.$eval("#more", (b) => b.hidden), "no More once all are shown");

    // Between loads: hidden, seen, hidden again at once.
    await nextLoad(loads.length);
    await loadEnded(loads[loads.length - 1]);
    await setVisible(page, false);
    await setVisible(page, true);
    await setVisible(page, false);
    // Hidden for two periods: nothing is asked.
    const hiddenFrom = loads.length;
    await page.waitForTimeout(2 * (EVERY_MS + SLOW_MS));
    check(loads.length === hiddenFrom, `${loads.length - hiddenFrom} loads while hidden`);
    // Seen again: one load at once, then one a period, for three periods.
    const seenAt = Date.now();
    await setVisible(page, true);
    const seenFrom = loads.length;
    const back = await nextLoad(seenFrom);
    check(back.at - seenAt < SLACK_MS + 500, `a load as soon as the tab is seen again, not ${back.at - seenAt} ms later`);
    await until("three more periods", () => loads.length >= seenFrom + 4, 4 * (EVERY_MS + SLOW_MS) + 2000);
    await loadEnded(loads[loads.length - 1]);

    // One loop: never two loads at once, never two in one period, and one
    // each period while seen; and no session's view, ever.
    const starts = loads.map((x) => x.at);
    const gaps = starts.slice(1).map((t, i) => t - starts[i]);
    console.log(`list_requests: ${loads.length} list loads, gaps ${gaps.join(", ")} ms; ${views.length} view requests`);
    check(views.length === 0, `the list asked sessions' views: ${views.join(", ")}`);
    check(gaps.every((g) => g >= EVERY_MS - SLACK_MS), `two loads in one period: gaps ${gaps.join(", ")}`);
    const overlapping = loads.filter((a, i) => loads.some((b, j) => j > i && a.end !== null && b.at < a.end));
    check(overlapping.length === 0, "a load started while another was awaited");
    check(inFlight() <= 1, "at most one load in flight");
    const seenGaps = starts.slice(seenFrom + 1).map((t, i) => t - starts[seenFrom + i]);
    check(seenGaps.every((g) => g <= EVERY_MS + SLOW_MS + 1000), `a period without a load while seen: ${seenGaps.join(", ")}`);
    // Still live: a new session shows by itself.
    const later = await start("many-later", { project_copy: true });
    await page.waitForSelector(`tr[data-id="${later.id}"]`, { timeout: 3 * (EVERY_MS + SLOW_MS) });
  });
}
