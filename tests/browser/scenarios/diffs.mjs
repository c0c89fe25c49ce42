// Each turn lists the files it changed in the session's folder (its
// `turn_diff`): a turn whose shell edits one, deletes one and adds one
// shows the three with their statuses and line counts, and Show diff
// shows its unified diff as text, each line classed. A file the test
// writes between turns is listed under the between-turns entry
// (`folder_changed`), not under the next turn. A diff over 1 MiB says it
// is cut. Markup in a file is text.

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { check, env, allNamed, open, session, shot, start, withPage } from "../lib.mjs";

const MARKUP = "<img src=x onerror=alert(1)>";

/** The files listed in the entry `sel`, as `path status counts`. */
function listed(page, sel) {
  return page.$$eval(`${sel} ul.files li.file`, (li) => li.map((l) => `${l.dataset.path} ${l.dataset.status} ${l.querySelector(".added")?.textContent} ${l.querySelector(".removed")?.textContent}`));
}

const turn = (n) => `.conv article[data-kind=turn_diff][data-turn="${n}"]`;

export default async function () {
  const folder = join(env.work, "diffs");
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, "edit.txt"), "keep\nold\n");
  writeFileSync(join(folder, "gone.txt"), "bye\n");
  const s = await start("diffs", { prompt: `run: sed -i s/old/new/ edit.txt && rm gone.txt && echo '${MARKUP}' > added.txt` });
  await session(s.id, "idle after turn 1", (v) => v.state === "idle");
  // Someone else's change between turns.
  writeFileSync(join(folder, "between.txt"), "from the test\n");

  const dialogs = [];
  await withPage(async (page) => {
    page.on("dialog", (d) => dialogs.push(d.message()));
    await open(page, `#/sessions/${s.id}`);
    await page.waitForSelector(turn(1));
    const one = await listed(page, turn(1));
    check(JSON.stringify(one) === JSON.stringify(["added.txt added +1 −0", "edit.txt modified +1 −1", "gone.txt deleted +0 −1"]), `turn 1's files: ${JSON.stringify(one)}`);
    const said = await page.textContent(`${turn(1)} p.line`);
    check(said === "Turn 1 changed 3 files, +2 −2", `turn 1's line: ${said}`);

    // Its diff, a class per line; the markup in added.txt is text.
    await page.click(`${turn(1)} button.show-diff`);
    await page.waitForSelector(`${turn(1)} pre.diff`);
    const lines = await page.$$eval(`${turn(1)} pre.diff span`, (s) => s.map((e) => [e.className, e.textContent]));
    const has = (cls, text) => lines.some(([c, t]) => c === cls && t === text);
    check(has("del", "-old") && has("add", "+new"), `edit.txt's lines: ${JSON.stringify(lines)}`);
    check(has("file", "diff --git a/edit.txt b/edit.txt") && has("file", "--- a/edit.txt") && has("file", "+++ b/edit.txt"), `file headers: ${JSON.stringify(lines)}`);
    check(lines.some(([c, t]) => c === "hunk" && t.startsWith("@@ ")), `a hunk header: ${JSON.stringify(lines)}`);
    check(has("add", `+${MARKUP}`) && has("del", "-bye"), `added.txt and gone.txt: ${JSON.stringify(lines)}`);
    check(lines.every(([c, t]) => c !== "ctx" || t.startsWith(" ")), `context lines: ${JSON.stringify(lines)}`);
    check((await page.$$("img")).length === 0, "the markup made no img element");
    check(!(await page.isVisible(`${turn(1)} .cut`)), "a whole diff is not marked cut");
    check((await page.textContent(`${turn(1)} button.show-diff`)) === "Hide diff", "the button hides it now");
    await allNamed(page);
    await page.$eval(`${turn(1)} pre.diff`, (e) => e.scrollIntoView());
    await shot(page, "diffs");

    // Turn 2 adds a file over 1 MiB; between.txt is listed before it, apart.
    await page.fill("#prompt", "run: yes 0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789 | head -n 12000 > big.txt");
    await page.click("#send");
    await page.waitForSelector(turn(2), { timeout: 15000 });
    const between = ".conv article[data-kind=folder_changed]";
    const head = await page.textContent(`${between} p.line`);
    check(head === "Changed between turns, before turn 2: 1 file, +1 −0", `the between-turns entry: ${head}`);
    const changed = await listed(page, between);
    check(JSON.stringify(changed) === JSON.stringify(["between.txt added +1 −0"]), `between turns: ${JSON.stringify(changed)}`);
    check(!(await page.$(`${between} button.show-diff`)), "no diff button between turns");
    const two = await listed(page, turn(2));
    check(JSON.stringify(two) === JSON.stringify(["big.txt added +12,000 −0"]), `turn 2's files: ${JSON.stringify(two)}`);
    // The between-turns entry comes before turn 2 begins.
    const order = await page.$$eval(".conv article[data-kind]:not([hidden])", (els) => els.map((e) => e.dataset.kind).filter((k) => ["folder_changed", "turn_started", "turn_diff"].includes(k)));
    check(JSON.stringify(order) === JSON.stringify(["turn_started", "turn_diff", "folder_changed", "turn_started", "turn_diff"]), `the order: ${order}`);

    await page.click(`${turn(2)} button.show-diff`);
    await page.waitForSelector(`${turn(2)} .cut`);
    const cut = await page.textContent(`${turn(2)} .cut`);
    check(cut === "(cut at 1 MiB)", `the cut: ${cut}`);
    const big = await page.$$eval(`${turn(2)} pre.diff span.add`, (s) => s.length);
    check(big > 9000 && big < 12000, `turn 2's diff shows ${big} added lines`);
    // Hide and show again without asking again.
    await page.click(`${turn(2)} button.show-diff`);
    check(!(await page.isVisible(`${turn(2)} pre.diff`)), "Hide diff hides it");
    check(dialogs.length === 0, `no dialog: ${dialogs}`);
  });
  await session(s.id, "idle after turn 2", (v) => v.state === "idle");
}
