// Turns recorded from the real CLIs (claude's stream-json in
// fixtures/oneshot/claude/, codex app-server's JSON-RPC in
// fixtures/protocols/codex/) read as a person reads them: the prompt, the
// model's text, each tool call with its result folded in; markup a harness
// prints is text, a kind the console does not know is shown as it is, and
// a line that is not JSON is reported with its start as text.
// codex's replay adds a file change and a harness error in its own shape.

import { check, open, shot, start, session, withPage } from "../lib.mjs";

async function read(page, id, said, last) {
  await page.evaluate((h) => { location.hash = h; }, `#/sessions/${id}`);
  await page.waitForSelector(".conv article[data-kind=turn_ended]");
  // The replay prints its hostile lines after the turn's result: the
  // session is idle before they are journalled, so the last is awaited.
  await page.waitForFunction((l) => document.querySelector(".conv").textContent.includes(l), last);
  check(!(await page.$("#injected")) && !(await page.$(".conv b, .conv i, .conv script")), "harness markup is not parsed");
  const text = await page.textContent(".conv");
  check(text.includes("<b>not bold</b>"), "harness markup shows as text");
  check(text.includes("harness mystery") && text.includes("<script>alert(2)</script>"), "an unknown kind shows as it is");
  check(text.includes(said), `the model's text shows: ${said}`);
  const call = await page.$("details.tool");
  check(call, "a tool call");
  check((await call.getAttribute("open")) === null, "folded");
  await page.click("details.tool > summary");
  check((await call.getAttribute("open")) !== null, "unfolded by a click");
  return { call, text };
}

export default async function () {
  const claude = await start("transcript-claude", { prompt: "make x.txt" });
  const codex = await start("transcript-codex", { harness: "codex", prompt: "make x.txt" });
  await session(claude.id, "idle", (v) => v.state === "idle");
  await session(codex.id, "idle", (v) => v.state === "idle");
  await withPage(async (page) => {
    await open(page);
    const { call, text } = await read(page, claude.id, "FAKE_MODEL_DONE", "of output not shown");
    check(text.includes("1 line (49 bytes) of output not shown, not JSON") && text.includes("<img src=x id=injected onerror=alert(3)> not json"), "a line that is not JSON is reported, its start as text");
    const folded = await call.textContent();
    check(folded.includes("Bash") && folded.includes("echo hi") && folded.includes("(Bash completed with no output)"), `the call holds its input and result: ${folded}`);
    // The picture and the usage table are drawn a moment after the events.
    await page.waitForSelector(".timeline rect.turn:not(.open)");
    await page.waitForSelector("table.usage tbody tr");
    await shot(page, "session-transcript");

    const codexRead = await read(page, codex.id, "FAKE_MODEL_REPLY", "mid-turn");
    const codexText = await codexRead.call.textContent();
    check(codexText.includes("command") && codexText.includes("sleep 3; echo slept") && codexText.includes("slept\n") && codexText.includes("exit 0"), `codex's command, its output and its exit: ${codexText}`);
    check(codexRead.text.includes("codex read: make x.txt") && codexRead.text.includes("codex read: STEER_MID_TOOL other file"), "the prompt and a steered one, as codex read them");
    check(codexRead.text.includes("codex's turn: completed"), "codex's turn and how it ended");
    const change = await page.textContent("details.tool:has(strong:text-is('file change'))");
    check(change.includes("notes/<i>x</i>.md") && change.includes("completed"), `a file change and its status: ${change}`);
    const error = await page.textContent(".conv article.error:has-text('stream disconnected')");
    check(error.includes("<b>mid-turn</b>"), `a harness error, as text: ${error}`);
  });
}
