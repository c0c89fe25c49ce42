// Interrupt ends a long turn (the fake harness sleeps 30 s) and the page
// shows the turn ended by the interrupt; the session is idle again.

import { check, open, start, session, withPage } from "../lib.mjs";

export default async function () {
  const s = await start("interrupt", { prompt: "sleep: 30" });
  await session(s.id, "running", (v) => v.state === "running");
  await withPage(async (page) => {
    await open(page, `#/sessions/${s.id}`);
    await page.waitForSelector(".state[data-state=running]");
    await page.waitForSelector("#interrupt:not([disabled])");
    const t0 = Date.now();
    await page.click("#interrupt");
    await page.waitForSelector(".conv article[data-kind=interrupted]", { timeout: 10000 });
    const ended = await page.waitForSelector(".conv article[data-kind=turn_ended]", { timeout: 10000 });
    check((await ended.textContent()).includes("ended by interrupt"), "the turn says it was interrupted");
    await page.waitForSelector(".state[data-state=idle]");
    check(Date.now() - t0 < 10000, "well before the 30 s sleep");
    // The timeline marks the interrupted turn and the interrupt.
    await page.waitForSelector(".timeline rect.turn.by-interrupt");
    await page.waitForSelector(".timeline line.mark.interrupted", { state: "attached" });
  });
}
