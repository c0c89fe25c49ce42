// A prompt sent with "steer" while a turn runs goes into that turn: the
// controls say it was steered, and the conversation shows it as the
// person's words in that turn.

import { check, open, start, session, withPage } from "../lib.mjs";

export default async function () {
  const s = await start("steer", { prompt: "sleep: 30" });
  await session(s.id, "running, named", (v) => v.state === "running" && v.native_id);
  await withPage(async (page) => {
    await open(page, `#/sessions/${s.id}`);
    await page.waitForSelector(".conv article[data-kind=turn_started]");
    await page.fill("#prompt", "use the other file");
    await page.check("#deliver-steer");
    await page.click("#send");
    await page.waitForFunction(() => [...document.querySelectorAll(".conv article[data-kind=prompt_steered]")].some((e) => e.textContent.includes("use the other file")));
    // The event can reach the page before the POST's answer does.
    await page.waitForFunction(() => !document.querySelector(".said")?.textContent.endsWith("…"));
    const said = await page.textContent(".said");
    check(said === "Steer: steered.", `the controls say it went into the turn: ${said}`);
    const shown = await page.textContent(".conv article[data-kind=prompt_steered]");
    check(shown.includes("steered into turn 1"), `it names its turn: ${shown}`);
    const queued = await session(s.id, "still running", (v) => v.state === "running" && v);
    check(queued.queue.length === 0, "nothing was queued");
    await page.click("button:text-is('Interrupt')");
    await page.waitForSelector(".conv article[data-kind=turn_ended]");
  });
}
