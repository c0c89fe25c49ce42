// "New session" with an ACP agent of the config's: the form lists it
// beside the CLIs, takes no model, effort or instructions for it, and the
// session it starts shows the agent's message whole, however many chunks
// it came in.

import { check, env, open, session, withPage } from "../lib.mjs";
import { join } from "node:path";

export default async function () {
  await withPage(async (page) => {
    await open(page);
    await page.click("#new-session");
    await page.waitForSelector("#new-harness option[value='acp:fake']", { state: "attached" });
    const label = await page.textContent("#new-harness option[value='acp:fake']");
    check(label === "acp: fake", `the agent's option: ${label}`);
    await page.selectOption("#new-harness", "acp:fake");
    const disabled = await page.$$eval(["#new-model", "#new-effort", "#new-instructions"].join(","), (es) => es.map((e) => e.disabled));
    check(disabled.every(Boolean), `model, effort and instructions are the agent's own: ${disabled}`);

    await page.fill("#new-workspace", "ws-acp");
    await page.fill("#new-folder", join(env.work, "acp-session"));
    await page.fill("#new-prompt", "hello acp");
    await page.click("#new-start");
    await page.waitForFunction(() => /^#\/sessions\/cr_/.test(location.hash));
    const id = decodeURIComponent(await page.evaluate(() => location.hash.slice("#/sessions/".length)));
    const v = await session(id, "idle", (s) => s.state === "idle");
    check(v.harness === "acp" && v.agent === "fake" && v.model === null, `the session: ${JSON.stringify(v)}`);
    // Three chunks, one message.
    await page.waitForFunction(() => [...document.querySelectorAll(".conv article.model")].some((e) => e.textContent.includes("fake-acp heard: hello acp")));
    const messages = await page.$$eval(".conv article.model .text", (es) => es.map((e) => e.textContent));
    check(JSON.stringify(messages) === JSON.stringify(["fake-acp heard: hello acp"]), `the agent's messages: ${JSON.stringify(messages)}`);
    const notes = await page.$$eval(".conv article .note", (es) => es.map((e) => e.textContent));
    check(notes.includes("the agent's session opened") && notes.includes("the agent's turn: end_turn"), `the notes: ${JSON.stringify(notes)}`);
    const raw = await page.$$eval(".conv details summary", (es) => es.map((e) => e.textContent).filter((t) => t.startsWith("harness")));
    check(raw.length === 0, `no line shown raw: ${JSON.stringify(raw)}`);
  });
}
