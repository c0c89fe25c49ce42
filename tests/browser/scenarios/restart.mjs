// The service restarts while the page follows a session: the stream drops,
// the page reconnects with Last-Event-ID set to the last seq it shows, and
// the events after the restart follow with none missed or doubled.

import { api, check, open, restartService, shownSeqs, start, session, until, withPage } from "../lib.mjs";

export default async function () {
  const s = await start("restart", { prompt: "stamps: 30 10" });
  await session(s.id, "idle", (v) => v.state === "idle");
  const resumedFrom = [];
  await withPage(async (page) => {
    page.on("request", (r) => {
      if (r.url().endsWith("/stream")) resumedFrom.push(r.headers()["last-event-id"]);
    });
    await open(page, `#/sessions/${s.id}`);
    await page.waitForSelector(".conv article[data-kind=turn_ended]");
    await page.waitForSelector(".link[data-link=live]");
    const before = await shownSeqs(page);
    const last = before[before.length - 1];
    const asked = resumedFrom.length;
    await restartService();
    await until("the page to reconnect", async () => resumedFrom.length > asked && (await page.$(".link[data-link=live]")), 30000);
    check(resumedFrom.slice(asked).every((id) => id === String(last)), `reconnected after seq ${last}: ${resumedFrom.slice(asked)}`);
    const sent = await api("POST", `/v1/sessions/${s.id}/messages`, { prompt: "stamps: 30 10" });
    check(sent.status === 200, `sent: ${sent.status}`);
    await page.waitForFunction(() => document.querySelectorAll(".conv article[data-kind=turn_ended]").length === 2, null, { timeout: 20000 });
    const end = (await api("GET", `/v1/sessions/${s.id}/events?limit=1`)).body.last_seq;
    const seqs = await until("every event", async () => {
      const seen = await shownSeqs(page);
      return seen[seen.length - 1] === end && seen;
    });
    const want = Array.from({ length: end }, (_, i) => i + 1);
    check(JSON.stringify(seqs) === JSON.stringify(want), `the page shows ${seqs.join(",")}, not 1..${end} once each`);
  }, /ERR_CONNECTION_REFUSED|ERR_EMPTY_RESPONSE|ERR_INCOMPLETE_CHUNKED_ENCODING|ERR_CONNECTION_RESET/);
}
