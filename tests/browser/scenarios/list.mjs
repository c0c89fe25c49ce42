// The token URL opens the list: the token leaves the address bar for
// sessionStorage; the rows show each session; the state filter narrows
// them; a new session appears by itself; it fits a phone's width.

import { allNamed, check, env, open, shot, start, session, until, withPage } from "../lib.mjs";

export default async function () {
  const idle = await start("list-idle", { prompt: "hello" });
  await session(idle.id, "idle", (v) => v.state === "idle");
  const waiting = await start("list-waiting", { project_copy: true });
  await withPage(async (page) => {
    await open(page);
    const address = page.url();
    check(!address.includes(env.token) && !address.includes("token="), `the token is still in the address: ${address}`);
    check((await page.evaluate(() => sessionStorage.getItem("room-core-token"))) === env.token, "the token is in sessionStorage");
    check((await page.evaluate(() => localStorage.length)) === 0, "nothing in localStorage");
    await page.waitForSelector(`tr[data-id="${idle.id}"][data-state="idle"]`);
    await page.waitForSelector(`tr[data-id="${waiting.id}"][data-state="pending"]`);
    await until("the cost column", async () => (await page.textContent(`tr[data-id="${idle.id}"] td:last-child`)).startsWith("$"));
    const row = await page.textContent(`tr[data-id="${idle.id}"]`);
    check(row.includes("claude") && row.includes("list-idle") && row.includes("$0.0"), `the row shows harness, folder and cost: ${row}`);
    await shot(page, "list");

    // The state filter, from the keyboard.
    await page.focus("#state");
    await page.selectOption("#state", "pending");
    await page.waitForFunction(() => location.hash.includes("state=pending"));
    await until("only the pending row", async () => (await page.$$("tbody tr")).length === 1 && (await page.$(`tr[data-id="${waiting.id}"]`)));
    await page.selectOption("#state", "");

    // Live: a new session shows without a reload.
    const later = await start("list-later", { project_copy: true });
    await page.waitForSelector(`tr[data-id="${later.id}"]`, { timeout: 8000 });

    // A phone's width: nothing wider than the screen but the table's own scroller.
    await page.setViewportSize({ width: 390, height: 844 });
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    check(wide <= 390, `the page is ${wide} px wide at 390`);
    const rows = await page.$$eval("tbody tr", (els) => els.map((e) => e.getBoundingClientRect().right));
    check(rows.every((r) => r <= 390), `each row fits the screen: ${rows}`);
    await shot(page, "list-phone");

    await allNamed(page);
  });
}
