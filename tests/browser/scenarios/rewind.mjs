// Rewind from the console: a turn's "Rewind to here" shows the dry run
// first (what would change, the file a person wrote since as a conflict,
// and why the fake harness's conversation cannot be cut) and changes
// nothing; Cancel closes it; "Rewind" puts the
// folder back as turn 1 left it and a `rewound` entry says so.

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { check, env, allNamed, open, session, shot, start, withPage } from "../lib.mjs";

const turn = (n) => `.conv article[data-kind=turn_diff][data-turn="${n}"]`;

export default async function () {
  const folder = join(env.work, "rewind");
  const s = await start("rewind", { prompt: "run: echo v1 > a.txt" });
  await session(s.id, "idle after turn 1", (v) => v.state === "idle");
  const dialogs = [];
  await withPage(async (page) => {
    page.on("dialog", (d) => dialogs.push(d.message()));
    await open(page, `#/sessions/${s.id}`);
    await page.waitForSelector(turn(1));
    await page.fill("#prompt", "run: echo v2 > a.txt && echo b > b.txt");
    await page.click("#send");
    await page.waitForSelector(turn(2), { timeout: 15000 });
    writeFileSync(join(folder, "by-hand.txt"), "mine\n");

    // The dry run: what would change and the conflict; nothing changes.
    await page.click(`${turn(1)} button.rewind`);
    await page.waitForSelector(`${turn(1)} .rewind-box button.confirm-rewind`);
    const listed = await page.$$eval(`${turn(1)} .rewind-box ul.files li.file`, (li) => li.map((l) => `${l.dataset.path} ${l.dataset.status}`));
    check(JSON.stringify(listed) === JSON.stringify(["a.txt modified", "b.txt deleted", "by-hand.txt deleted"]), `the dry run's files: ${JSON.stringify(listed)}`);
    const conflicts = await page.$$eval(`${turn(1)} .rewind-box ul.conflicts li`, (li) => li.map((l) => l.dataset.path));
    check(JSON.stringify(conflicts) === JSON.stringify(["by-hand.txt"]), `the conflicts: ${JSON.stringify(conflicts)}`);
    check(readFileSync(join(folder, "a.txt"), "utf8") === "v2\n" && existsSync(join(folder, "by-hand.txt")), "the dry run changed nothing");
    // The fake harness writes no message a conversation can be cut at: the
    // folder alone, and why.
    const uncut = await page.textContent(`${turn(1)} .rewind-box p.uncut`);
    check(uncut.includes("cannot be cut after turn 1") && uncut.includes("claude wrote no message in turn 1"), `why the conversation stays: ${uncut}`);
    const said = await page.textContent(`${turn(1)} .rewind-box p.conversation`);
    check(said === "Only the folder: the conversation is kept.", `the conversation line: ${said}`);
    await allNamed(page);
    await shot(page, "rewind");
    await page.click(`${turn(1)} .rewind-box button.cancel-rewind`);
    check(!(await page.isVisible(`${turn(1)} .rewind-box`)), "Cancel closes the dry run");
    check(existsSync(join(folder, "b.txt")), "Cancel changed nothing");

    // Confirmed: the folder is as turn 1 left it.
    await page.click(`${turn(1)} button.rewind`);
    await page.click(`${turn(1)} .rewind-box button.confirm-rewind`);
    await page.waitForSelector(`${turn(1)} .rewind-box p.done`);
    const done = await page.textContent(`${turn(1)} .rewind-box p.done`);
    check(done === "Rewound to turn 1: 1 written, 2 removed", `the answer: ${done}`);
    check(readFileSync(join(folder, "a.txt"), "utf8") === "v1\n", "a.txt is turn 1's");
    check(!existsSync(join(folder, "b.txt")) && !existsSync(join(folder, "by-hand.txt")), "what came after turn 1 is gone");
    await page.waitForSelector(".conv article[data-kind=rewound]");
    const entry = await page.textContent(".conv article[data-kind=rewound] p.line");
    check(entry === "Folder rewound to turn 1: 3 paths put back", `the rewound entry: ${entry}`);
    check(dialogs.length === 0, `no dialog: ${dialogs}`);
  });
}
