// Turns recorded from the real CLIs (fixtures/oneshot/) read as a person
// reads them: the prompt, the model's text, each tool call with its result
// folded in; a file change; a harness error; markup a harness prints is
// text, and a kind the console does not know is shown as it is.

import { check, open, shot, start, session, withPage } from "../lib.mjs";

async function read(page, id) {
  await page.evaluate((h) => { location.hash = h; }, `#/sessions/${id}`);
  await page.waitForSelector(".conv article[data-kind=turn_ended]");
  check(!(await page.$("#injected")) && !(await page.$(".conv b, .conv i, .conv script")), "harness markup is not parsed");
  const text = await page.textContent(".conv");
  check(text.includes("<b>not bold</b>"), "harness markup shows as text");
  check(text.includes("harness mystery") && text.includes("<script>alert(2)</script>"), "an unknown kind shows as it is");
  check(text.includes("FAKE_MODEL_DONE"), "the model's text shows");
  const change = await page.textContent("details.tool:has(strong:text-is('file change'))");
  check(change.includes("notes/<i>x</i>.md") && change.includes("completed"), `a file change and its status: ${change}`);
  const error = await page.textContent(".conv article.error:has-text('stream disconnected')");
  check(error.includes("<b>mid-turn</b>"), `a harness error, as text: ${error}`);
  const call = await page.$("details.tool");
  check(call, "a tool call");
  check((await call.getAttribute("open")) === null, "folded");
  await page.click("details.tool > summary");
  check((await call.getAttribute("open")) !== null, "unfolded by a click");
  return call;
}

export default async function () {
  const claude = await start("transcript-claude", { prompt: "make x.txt" });
  const codex = await start("transcript-codex", { harness: "codex", prompt: "make x.txt" });
  await session(claude.id, "idle", (v) => v.state === "idle");
  await session(codex.id, "idle", (v) => v.state === "idle");
  await withPage(async (page) => {
    await open(page);
    const call = await read(page, claude.id);
    const folded = await call.textContent();
    check(folded.includes("Bash") && folded.includes("echo hi") && folded.includes("(Bash completed with no output)"), `the call holds its input and result: ${folded}`);
    // The picture and the usage table are drawn a moment after the events.
    await page.waitForSelector(".timeline rect.turn:not(.open)");
    await page.waitForSelector("table.usage tbody tr");
    await shot(page, "session-transcript");
    const codexCall = await read(page, codex.id);
    const codexText = await codexCall.textContent();
    check(codexText.includes("command") && codexText.includes("echo hi") && codexText.includes("exit 0"), `codex's command and its exit: ${codexText}`);
  });
}
