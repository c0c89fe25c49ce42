// A session whose app answers approvals: its harness's request shows with
// its tool and input under the controls; Allow lets the tool run (the file
// it makes is there), and the request is then shown as answered.

import { existsSync } from "node:fs";
import { join } from "node:path";
import { check, env, open, shot, start, session, until, withPage } from "../lib.mjs";

export default async function () {
  const s = await start("approve", { approvals: "app", prompt: "ask: touch approved.txt" });
  await session(s.id, "asking", (v) => v.pending_approvals.length === 1);
  await withPage(async (page) => {
    await open(page, `#/sessions/${s.id}`);
    const pending = await page.waitForSelector(".approval[data-approval='1']");
    const text = await pending.textContent();
    check(text.includes("Bash") && text.includes("touch approved.txt"), `the request shows its tool and input: ${text}`);
    check(!existsSync(join(env.work, "approve", "approved.txt")), "nothing ran before the answer");
    await shot(page, "approval");
    await page.click("button[aria-label='Allow: Bash (approval 1)']");
    await page.waitForFunction(() => [...document.querySelectorAll(".conv article[data-kind=approval_resolved]")].some((e) => e.textContent.includes("allow by app")));
    await until("the tool's file", () => existsSync(join(env.work, "approve", "approved.txt")));
    await page.waitForSelector(".conv article[data-kind=turn_ended]");
    check(!(await page.$(".approval[data-approval='1']")), "no longer pending");
  });
}
