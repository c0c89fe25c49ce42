// A reload in the middle of a turn's output misses and doubles nothing:
// the page shows every seq from 1 to the journal's last, once, in order.

import { api, check, open, shownSeqs, start, session, until, withPage } from "../lib.mjs";

export default async function () {
  const s = await start("reload", { prompt: "stamps: 150 20" });
  await session(s.id, "running", (v) => v.state === "running");
  await withPage(async (page) => {
    await open(page, `#/sessions/${s.id}`);
    await until("some stamps", async () => (await shownSeqs(page)).length > 20);
    await page.reload();
    await until("a few more stamps after the reload", async () => (await shownSeqs(page)).length > 60);
    await page.waitForSelector(".conv article[data-kind=turn_ended]", { timeout: 20000 });
    const page1 = await api("GET", `/v1/sessions/${s.id}/events?limit=1`);
    const last = page1.body.last_seq;
    const seqs = await until("every event", async () => {
      const seen = await shownSeqs(page);
      return seen[seen.length - 1] === last && seen;
    });
    const want = Array.from({ length: last }, (_, i) => i + 1);
    check(JSON.stringify(seqs) === JSON.stringify(want), `the page shows ${seqs.length} events, not 1..${last} once each: ${seqs.join(",")}`);
    check(new Set(seqs).size === seqs.length, "no event twice");
    console.log(`reload: ${seqs.length} events shown, seq 1 to ${last}, each once`);
  });
}
