// Beside Send, a message chooses the model and effort from its turn on: the
// session's CLI's efforts are offered, a steer cannot choose them, and a
// message that does runs its turn with them (the harness's command line
// says so) and the page then names them as the ones in force.

import { check, open, records, start, session, withPage } from "../lib.mjs";

export default async function () {
  const s = await start("switch_model", { prompt: "first", model: "claude-fake-2", effort: "low" });
  await session(s.id, "idle", (v) => v.state === "idle");
  await withPage(async (page) => {
    await open(page, `#/sessions/${s.id}`);
    await page.waitForSelector(".conv article[data-kind=turn_ended]");
    await page.click("#send-choice summary");
    await page.waitForFunction(() => document.querySelectorAll("#send-effort option").length > 1);
    const efforts = await page.$$eval("#send-effort option", (os) => os.map((o) => o.value));
    check(JSON.stringify(efforts) === JSON.stringify(["", "low", "medium", "high", "xhigh", "max"]), `claude's efforts: ${efforts}`);
    const placeholder = await page.getAttribute("#send-model", "placeholder");
    check(placeholder === "claude-fake-2 (in force)", `the model in force: ${placeholder}`);
    await page.check("#deliver-steer");
    check(await page.isDisabled("#send-model") && await page.isDisabled("#send-effort"), "a steer chooses neither");
    await page.check("#deliver-queue");

    await page.fill("#prompt", "now harder");
    await page.fill("#send-model", "opus");
    await page.selectOption("#send-effort", "max");
    await page.click("#send");
    await page.waitForFunction(() => document.querySelectorAll(".conv article[data-kind=turn_ended]").length === 2, null, { timeout: 15000 });
    await page.waitForFunction(() => document.querySelector(".meta").textContent.startsWith("claude (opus, max effort)"));
    check((await page.inputValue("#send-model")) === "" && (await page.inputValue("#send-effort")) === "", "the choice is cleared once sent");
    const v = await session(s.id, "idle", (x) => x.state === "idle");
    check(v.model === "opus" && v.effort === "max", `the session: ${JSON.stringify(v)}`);
    // The effort needs a new claude: its command line carries both.
    const argv = (await records("switch_model")).map((r) => r.argv.join(" "));
    check(argv.length === 2 && argv[1].includes("--model opus") && argv[1].includes("--effort max"), `the processes: ${argv}`);
  });
}
