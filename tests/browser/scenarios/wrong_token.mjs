// A wrong token says so, and the right one pasted opens the list.

import { check, env, withPage } from "../lib.mjs";

export default async function () {
  await withPage(async (page) => {
    await page.goto(`${env.url}/#token=not-the-token`);
    const said = await page.textContent("#token-refused", { timeout: 5000 });
    check(/refused this token \(401/.test(said), `the message: ${said}`);
    check(!page.url().includes("not-the-token"), "the token left the address");
    check((await page.evaluate(() => sessionStorage.getItem("room-core-token"))) === null, "the wrong token is forgotten");
    await page.fill("#token", env.token);
    await page.keyboard.press("Enter");
    await page.waitForSelector("table.sessions");
  });
}
