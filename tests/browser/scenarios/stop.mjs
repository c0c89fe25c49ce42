// Stop ends the running turn and pauses the queue (a queued prompt waits);
// Resume runs it; Close ends the session.

import { check, open, start, session, api, withPage } from "../lib.mjs";

export default async function () {
  const s = await start("stop", { prompt: "sleep: 30" });
  await session(s.id, "running", (v) => v.state === "running");
  const queued = await api("POST", `/v1/sessions/${s.id}/messages`, { prompt: "after the stop" });
  check(queued.status === 200, `queued: ${queued.status}`);
  await withPage(async (page) => {
    await open(page, `#/sessions/${s.id}`);
    await page.waitForSelector(".state[data-state=running]");
    await page.click("#stop");
    await page.waitForSelector(".conv article[data-kind=stopped]", { timeout: 10000 });
    const ended = await page.waitForSelector(".conv article[data-kind=turn_ended]", { timeout: 10000 });
    check((await ended.textContent()).includes("ended by stop"), "the turn says it was stopped");
    await page.waitForSelector(".state[data-state=idle]");
    await page.waitForFunction(() => document.querySelector(".meta").textContent.includes("1 queued (paused)"));
    await page.waitForSelector("#resume:not([disabled])");
    await page.click("#resume");
    await page.waitForSelector(".conv article[data-kind=resumed]");
    await page.waitForFunction(() => document.querySelectorAll(".conv article[data-kind=turn_ended]").length === 2, null, { timeout: 15000 });
    const last = await page.$$eval(".conv article[data-kind=turn_ended]", (els) => els[1].textContent);
    check(last.includes("Turn 2 ended (exit 0)"), `the queued prompt ran: ${last}`);
    // Close, once confirmed: the stream ends and the controls with it.
    await page.click("#close");
    await page.waitForSelector(".conv article[data-kind=closed]");
    await page.waitForSelector(".state[data-state=closed]");
    await page.waitForSelector(".link[data-link=ended]");
    check(await page.isDisabled("#send"), "nothing more can be sent");
  });
}
