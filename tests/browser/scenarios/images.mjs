// Images go with a message: one chosen with the file picker, one pasted
// into the prompt's box, listed until sent; the harness gets both, in that
// order. One whose bytes are not an image is refused with the service's
// sentence, and nothing is queued.

import { api, check, open, records, start, session, withPage } from "../lib.mjs";

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const GIF = "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7";

export default async function () {
  const s = await start("images", { prompt: "first" });
  await session(s.id, "idle", (v) => v.state === "idle");
  await withPage(async (page) => {
    await open(page, `#/sessions/${s.id}`);
    await page.waitForSelector(".conv article[data-kind=turn_ended]");

    // Not an image: the service says so, nothing is queued.
    await page.setInputFiles("#send-images", { name: "notes.png", mimeType: "image/png", buffer: Buffer.from("hello") });
    await page.fill("#prompt", "look");
    await page.click("#send");
    await page.waitForFunction(() => document.querySelector(".said").textContent.includes("(422)"));
    const said = await page.textContent(".said");
    check(said === "Send: attachments[0]: the data is not a PNG, JPEG, GIF or WebP image (its first bytes say none of them). (422)", `the refusal: ${said}`);
    const queued = (await api("GET", `/v1/sessions/${s.id}`)).body.queue.length;
    check(queued === 0, "nothing was queued");
    await page.click("#send-images-list button.remove");

    await page.setInputFiles("#send-images", { name: "dot.png", mimeType: "image/png", buffer: Buffer.from(PNG, "base64") });
    await page.evaluate((gif) => {
      const bytes = Uint8Array.from(atob(gif), (c) => c.charCodeAt(0));
      const data = new DataTransfer();
      data.items.add(new File([bytes], "pasted.gif", { type: "image/gif" }));
      document.querySelector("#prompt").dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
    }, GIF);
    const listed = await page.$$eval("#send-images-list li", (li) => li.map((l) => l.textContent));
    check(listed.length === 2 && listed[0].startsWith("dot.png (image/png, 70 bytes)") && listed[1].startsWith("pasted.gif (image/gif, 42 bytes)"), `listed: ${listed}`);
    await page.fill("#prompt", "what are these?");
    await page.click("#send");
    await page.waitForFunction(() => document.querySelectorAll(".conv article[data-kind=turn_ended]").length === 2, null, { timeout: 15000 });
    check((await page.$$("#send-images-list li")).length === 0, "the list is emptied once sent");
    const seen = (await records("images")).flatMap((r) => r.images || []);
    const kinds = JSON.stringify(seen.map((l) => l.map((i) => i.media_type)));
    // The second turn is a process of its own here (no linger): its one prompt.
    check(kinds === JSON.stringify([["image/png", "image/gif"]]), `the harness saw: ${kinds}`);
  }, /status of 422/);
}
