// Fork from the console with the real claude (against the loopback fake
// model): turn 1 writes a file, turn 2 another; turn 1's "Fork from here"
// asks for a folder and a workspace, forks, and opens the new session,
// whose entry names its parent and whose folder holds turn 1's file and
// not turn 2's. The parent's folder is as turn 2 left it.

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { api, check, env, open, session, start, until, withPage } from "../lib.mjs";

const turn = (n) => `.conv article[data-kind=turn_diff][data-turn="${n}"]`;

export default async function () {
  const parent = join(env.work, "fork-parent");
  const s = await start("fork-parent", { prompt: `TOOL_WRITE ${join(parent, "a.txt")} alpha-one` });
  await session(s.id, "idle after turn 1", (v) => v.state === "idle", 30000);
  const r = await api("POST", `/v1/sessions/${s.id}/messages`, { prompt: `TOOL_RUN cd ${parent} && echo bravo-two > b.txt` });
  check(r.status === 200, `turn 2 sent: ${r.status}`);
  await session(s.id, "idle after turn 2", (v) => v.state === "idle" && v.queue.length === 0, 30000);
  const fork = join(env.work, "fork-child");
  await withPage(async (page) => {
    await open(page, `#/sessions/${s.id}`);
    await page.waitForSelector(turn(2), { timeout: 30000 });
    await page.click(`${turn(1)} button.fork`);
    await page.fill(`${turn(1)} .fork-box input.fork-folder`, fork);
    await page.fill(`${turn(1)} .fork-box input.fork-workspace`, "ws-fork");
    await page.click(`${turn(1)} .fork-box button.confirm-fork`);
    await page.waitForSelector(".conv article[data-kind=forked]", { timeout: 30000 });
    const line = await page.textContent(".conv article[data-kind=forked] p.line");
    check(line === `Forked from session ${s.id} after its turn 1`, `the forked entry: ${line}`);
    check(!page.url().includes(s.id), `the new session is open: ${page.url()}`);
  });
  await until("the fork's folder", () => existsSync(join(fork, "a.txt")), 15000);
  check(readFileSync(join(fork, "a.txt"), "utf8") === "alpha-one\n", "turn 1's file");
  check(!existsSync(join(fork, "b.txt")), "nothing of turn 2 in the fork");
  check(existsSync(join(parent, "b.txt")), "the parent's folder is as turn 2 left it");
}
