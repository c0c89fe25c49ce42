// A session waiting for its project copy shows the wait (mark, since,
// until); once the status file says `ready` its turn's events arrive live,
// and the timeline draws the wait and the turn.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { allNamed, check, env, open, shot, start, until, withPage } from "../lib.mjs";

export default async function () {
  const s = await start("copy-wait", { project_copy: true, prompt: "stamps: 20 100" });
  await withPage(async (page) => {
    await open(page, `#/sessions/${s.id}`);
    await page.waitForSelector(".state[data-state=pending]");
    const wait = await until("the copy wait", async () => {
      const t = await page.textContent(".wait.waiting").catch(() => "");
      return /until/.test(t) && t;
    });
    check(/no mark yet/.test(wait) && /since/.test(wait) && /in \d+ min/.test(wait), `the wait says mark, since and until: ${wait}`);
    await page.waitForSelector(".timeline rect.wait.open");
    await shot(page, "session-waiting");

    writeFileSync(join(env.work, "copy-wait.cloudroom-files"), "ready\n");
    await page.waitForSelector(".state[data-state=running]", { timeout: 10000 });
    // The turn's stamps come one by one while it runs.
    const some = await until("the first stamps", async () => {
      const n = await page.$$eval(".conv article[data-kind=harness]", (els) => els.length);
      return n >= 3 && n;
    });
    check(some < 20, `the stamps arrived live, not all at once (${some} seen while running)`);
    await page.waitForSelector(".conv article[data-kind=turn_ended]", { timeout: 15000 });
    await page.waitForSelector(".state[data-state=idle]");
    const text = await page.textContent(".conv");
    check(text.includes("You · prompt 1") && text.includes("stamps: 20 100"), "the prompt is shown");
    check(text.includes("The project copy landed after"), "the wait's end is shown");
    check(text.includes("ok"), "the model's text is shown");
    // The timeline draws the wait and the ended turn.
    await page.waitForSelector(".timeline rect.wait:not(.open)");
    await page.waitForSelector(".timeline rect.turn:not(.open)");
    const usage = await page.textContent("table.usage");
    check(usage.includes("turn 1") && usage.includes("$0.00018"), `usage per turn and in total: ${usage}`);
    await shot(page, "session");
    await allNamed(page);
    await page.setViewportSize({ width: 390, height: 844 });
    // Once the timeline is drawn again for the new width.
    await page.waitForFunction(() => Number(document.querySelector(".timeline").getAttribute("width")) < 390);
    const wide = await page.evaluate(() => {
      const over = [...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > 390.5);
      return [document.documentElement.scrollWidth, over.map((e) => e.tagName + "." + e.className.baseVal + e.className).slice(0, 5).join(" ")];
    });
    check(wide[0] <= 390, `the session page is ${wide[0]} px wide at 390: ${wide[1]}`);
    await shot(page, "session-phone");
  });
}
