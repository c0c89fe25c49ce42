// The real claude (against the loopback fake model), in a session whose app
// answers approvals, asks before it writes a file: the request shows on the
// page with its tool and path, nothing is written before Allow, and the
// file is there after it.

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { check, env, open, start, session, until, withPage } from "../lib.mjs";

export default async function () {
  const file = join(env.work, "approve-real", "approved.txt");
  const s = await start("approve-real", { approvals: "app", prompt: `TOOL_WRITE ${file} yes` });
  await session(s.id, "asking", (v) => v.pending_approvals.length === 1);
  await withPage(async (page) => {
    await open(page, `#/sessions/${s.id}`);
    const pending = await page.waitForSelector(".approval[data-approval='1']");
    const text = await pending.textContent();
    check(text.includes("Write") && text.includes(file), `the request shows its tool and path: ${text}`);
    check(!existsSync(file), "nothing written before the answer");
    await page.click("button[aria-label='Allow: Write (approval 1)']");
    await until("the write", () => existsSync(file), 30000);
    check(readFileSync(file, "utf8") === "yes\n", "what the model wrote");
    await page.waitForSelector(".conv article[data-kind=turn_ended]", { timeout: 30000 });
  });
}
