// A session whose harness prints thousands of events the page has nothing
// to show for (codex streaming a message in deltas) leaves a bounded page,
// in its tail, live and paged in from before: each run of such events is
// one hidden element that counts them, so every seq is still accounted for
// once, in order, and the page grows only with what it shows.

import { api, check, open, shownSeqs, start, session, until, withPage } from "../lib.mjs";

/** Deltas per turn. */
const DELTAS = 3000;
/** The most elements the page may hold: a few per shown event, not one per delta. */
const MAX_ELEMENTS = 600;

/** The page's elements, its conversation's, and the events its hidden runs count. */
function measure(page) {
  return page.evaluate(() => ({
    elements: document.getElementsByTagName("*").length,
    articles: document.querySelectorAll(".conv article").length,
    counted: [...document.querySelectorAll(".conv article.quiet")].reduce((n, e) => n + Number(e.dataset.count), 0),
  }));
}

/** Every seq the page accounts for is there once, from its first to `last`. */
async function each(page, last) {
  const seqs = await until(`every seq to ${last}`, async () => {
    const seen = await shownSeqs(page);
    return seen[seen.length - 1] === last && seen;
  });
  check(seqs.every((q, i) => i === 0 || q === seqs[i - 1] + 1), `seqs in order, each once: ${seqs.length} from ${seqs[0]} to ${last}`);
  return seqs;
}

export default async function () {
  const s = await start("chatter", { harness: "codex", prompt: `chatter: ${DELTAS}` });
  await session(s.id, "idle", (v) => v.state === "idle", 60000);
  await withPage(async (page) => {
    await open(page, `#/sessions/${s.id}`);
    await page.waitForSelector(".conv article[data-kind=turn_ended]");
    let last = (await api("GET", `/v1/sessions/${s.id}/events?limit=1`)).body.last_seq;
    check(last > DELTAS, `the session has ${last} events`);
    await each(page, last);
    const tail = await measure(page);

    // Live: another turn of deltas while the page follows.
    const sent = await api("POST", `/v1/sessions/${s.id}/messages`, { prompt: `chatter: ${DELTAS}` });
    check(sent.status === 200, `sent: ${sent.status}`);
    await page.waitForFunction(() => document.querySelectorAll(".conv article[data-kind=turn_ended]").length === 2, null, { timeout: 30000 });
    last = (await api("GET", `/v1/sessions/${s.id}/events?limit=1`)).body.last_seq;
    await each(page, last);
    const live = await measure(page);
    check(live.counted >= DELTAS, `the hidden runs count the live turn's ${DELTAS} deltas: ${live.counted}`);

    // Paged in from before the tail: still one element per run.
    const first = (await shownSeqs(page))[0];
    await page.click("#earlier");
    await until("earlier events", async () => (await shownSeqs(page))[0] < first);
    const seqs = await each(page, last);
    const paged = await measure(page);
    console.log(`chatter: ${last} events, ${seqs.length} accounted for; elements ${tail.elements} (tail), ${live.elements} (live), ${paged.elements} (paged); articles ${paged.articles}`);
    for (const [when, m] of [["tail", tail], ["live", live], ["paged", paged]]) {
      check(m.elements <= MAX_ELEMENTS, `${when}: the page holds ${m.elements} elements`);
    }
    check(paged.articles < 100, `the conversation holds ${paged.articles} elements for ${seqs.length} events`);
  });
}
