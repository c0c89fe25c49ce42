// "New session" starts a session from the list: the form offers the chosen
// CLI's efforts as the service lists them, a start the service refuses
// shows its sentence and starts nothing, and one it takes opens the
// session, which runs with the model, effort and instructions chosen.

import { api, check, env, open, session, shot, withPage } from "../lib.mjs";
import { join } from "node:path";

export default async function () {
  await withPage(async (page) => {
    await open(page);
    await page.click("#new-session");
    await page.waitForSelector("form.new-session");
    check((await page.evaluate(() => document.activeElement.id)) === "new-workspace", "the form opens on its first field");
    // claude's efforts, then codex's, as the capabilities list them.
    const efforts = () => page.$$eval("#new-effort option", (os) => os.map((o) => o.value));
    await page.waitForFunction(() => document.querySelectorAll("#new-effort option").length > 1);
    check(JSON.stringify(await efforts()) === JSON.stringify(["", "low", "medium", "high", "xhigh", "max"]), `claude's efforts: ${await efforts()}`);
    await page.selectOption("#new-harness", "codex");
    check(JSON.stringify(await efforts()) === JSON.stringify(["", "minimal", "low", "medium", "high", "xhigh"]), `codex's efforts: ${await efforts()}`);
    await page.selectOption("#new-harness", "claude");

    // A relative folder: the service's sentence, nothing started.
    await page.fill("#new-workspace", "ws-new");
    await page.fill("#new-folder", "relative/path");
    await page.click("#new-start");
    await page.waitForFunction(() => document.querySelector("#new-said").textContent.startsWith("Not started"));
    const refused = await page.textContent("#new-said");
    check(refused === "Not started: The folder must be an absolute path.", `the refusal: ${refused}`);
    const listed = await api("GET", "/v1/sessions?workspace=ws-new");
    check(listed.body.sessions.length === 0, "nothing was started");

    // A start it takes opens its session.
    await page.fill("#new-folder", join(env.work, "new-session"));
    await page.fill("#new-model", "claude-fake-2");
    await page.selectOption("#new-effort", "high");
    await page.fill("#new-instructions", "Answer in one line.");
    await page.fill("#new-prompt", "hello from the form");
    await shot(page, "new-session");
    await page.click("#new-start");
    await page.waitForFunction(() => /^#\/sessions\/cr_/.test(location.hash));
    const id = decodeURIComponent(await page.evaluate(() => location.hash.slice("#/sessions/".length)));
    await page.waitForFunction(() => [...document.querySelectorAll(".conv article[data-kind=prompt_queued]")].some((e) => e.textContent.includes("hello from the form")));
    const v = await session(id, "idle", (s) => s.state === "idle");
    await page.waitForFunction(() => document.querySelector(".meta").textContent.startsWith("claude (claude-fake-2, high effort)"));
    check(v.workspace === "ws-new" && v.model === "claude-fake-2" && v.effort === "high"
      && v.instructions === "Answer in one line." && v.approvals === "auto", `the session: ${JSON.stringify(v)}`);
    // The refused start's answer is the one error the browser logs.
  }, /status of 422/);
}
