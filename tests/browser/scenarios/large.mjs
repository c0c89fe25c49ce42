// A session of 10,000 events opens within a second: the last events render
// at once, the earlier ones page in on request.

import { api, check, open, shownSeqs, start, session, until, withPage } from "../lib.mjs";

export default async function () {
  const s = await start("large", { prompt: "stamps: 10000 0" });
  await session(s.id, "idle", (v) => v.state === "idle", 60000);
  await withPage(async (page) => {
    await open(page);
    const first = await api("GET", `/v1/sessions/${s.id}/events?limit=1`);
    const last = first.body.last_seq;
    check(last >= 10000, `the session has ${last} events`);
    await page.evaluate((h) => { location.hash = h; }, `#/sessions/${s.id}`);
    await page.waitForSelector(`.conv article[data-seq="${last}"]`);
    // A whole page load, from the request to the last event on screen.
    const t0 = Date.now();
    await page.reload();
    await page.waitForSelector(`.conv article[data-seq="${last}"]`, { timeout: 10000 });
    await page.waitForSelector(".state[data-state=idle]");
    const ms = Date.now() - t0;
    const inPage = await page.evaluate(() => {
      const at = (name) => Math.round(performance.getEntriesByName(name)[0]?.startTime ?? -1);
      const res = (part) => Math.round(performance.getEntriesByType("resource").find((e) => e.name.includes(part))?.responseEnd ?? -1);
      return `on the page's clock: its scripts in at ${res("timeline.js")} ms, its first calls answered at ${res("events?limit=1")} ms, the events shown at ${at("console-events-shown")} ms`;
    });
    console.log(`large: ${last} events, the page opened with the last one shown in ${ms} ms (${inPage})`);
    check(ms < 1000, `the page took ${ms} ms`);
    const shown = await shownSeqs(page);
    check(shown.length <= 250, `only the tail is rendered (${shown.length})`);
    // The timeline reads the history behind the tail: the turn's start
    // (long before the tail, so never rendered) comes from there.
    const startSeq = await until("the turn's start", async () => {
      const p = await api("GET", `/v1/sessions/${s.id}/events?limit=10`);
      return p.body.events.find((e) => e.kind === "turn_started")?.seq;
    });
    check(!shown.includes(startSeq), "the turn's start is not in the tail");
    await page.waitForSelector(".timeline rect.turn:not(.unknown-start)");
    await page.click("#earlier");
    await until("earlier events", async () => (await shownSeqs(page)).length > shown.length);
    const more = await shownSeqs(page);
    check(more[more.length - 1] === last && more.every((q, i) => i === 0 || q === more[i - 1] + 1), "earlier events go before, in order");
  });
}
