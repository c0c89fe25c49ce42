// A prompt typed and sent from the keyboard runs as the next turn and shows
// as the person's words, then the model's.

import { check, open, start, session, withPage } from "../lib.mjs";

export default async function () {
  const s = await start("send", { prompt: "first" });
  await session(s.id, "idle", (v) => v.state === "idle");
  await withPage(async (page) => {
    await open(page, `#/sessions/${s.id}`);
    await page.waitForSelector(".conv article[data-kind=turn_ended]");
    await page.focus("#prompt");
    await page.keyboard.type("hello from the console");
    // Tab to the queue choice, then to Send.
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    check((await page.evaluate(() => document.activeElement.id)) === "send", "Send is reached with Tab");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => [...document.querySelectorAll(".conv article[data-kind=prompt_queued]")].some((e) => e.textContent.includes("hello from the console")));
    await page.waitForFunction(() => document.querySelectorAll(".conv article[data-kind=turn_ended]").length === 2, null, { timeout: 15000 });
    check((await page.inputValue("#prompt")) === "", "the box is emptied once the prompt is queued");
    const said = await page.textContent(".said");
    check(/Send: (done|queued)\./.test(said), `the controls say so: ${said}`);
  });
}
