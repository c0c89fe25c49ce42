// What every scenario shares: the service under test (from the environment
// tests/console.rs sets), its API, deadlines, and a page in headless
// Chromium that fails the scenario on any script error or CSP violation.

import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

/** The service: its base URL, token, work folder and where screenshots go. */
export const env = {
  url: process.env.CONSOLE_URL,
  token: process.env.CONSOLE_TOKEN,
  work: process.env.CONSOLE_WORK,
  shots: process.env.CONSOLE_SHOTS,
  chromium: process.env.CONSOLE_CHROMIUM || "/usr/bin/chromium",
  control: process.env.CONSOLE_CONTROL,
  records: process.env.CONSOLE_RECORDS,
};

/** Has tests/console.rs restart the service (SIGTERM, start again). */
export async function restartService() {
  const file = join(env.control, "restart");
  writeFileSync(file, "");
  await until("the service's restart", () => !existsSync(file), 60000);
}

/** Calls the API with the token: `{status, body}`. */
export async function api(method, path, body) {
  const init = { method, headers: { Authorization: `Bearer ${env.token}` } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const r = await fetch(env.url + path, init);
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

/** Starts a session in `<work>/<name>` with the fake claude; its view. */
export async function start(name, extra) {
  const r = await api("POST", "/v1/sessions", { workspace: "ws-console", folder: join(env.work, name), harness: "claude", ...extra });
  if (r.status !== 201) throw new Error(`start ${name}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** What the fake harnesses recorded for the sessions in `<work>/<name>`,
 * oldest process first (fixtures/fake_harness.py). */
export async function records(name) {
  const folder = join(env.work, name);
  return readdirSync(env.records)
    .filter((f) => /^[0-9]+\.json$/.test(f))
    .map((f) => JSON.parse(readFileSync(join(env.records, f), "utf8")))
    .filter((r) => r.cwd === folder)
    .sort((a, b) => a.started_ms - b.started_ms);
}

/** Waits (at most `ms`) until `f()` gives something truthy; that value. */
export async function until(what, f, ms = 15000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits until session `id`'s view satisfies `f`. */
export function session(id, what, f, ms) {
  return until(`session ${id}: ${what}`, async () => {
    const r = await api("GET", `/v1/sessions/${id}`);
    return f(r.body) && r.body;
  }, ms);
}

/** Fails with `message` unless `ok`. */
export function check(ok, message) {
  if (!ok) throw new Error(message);
}

/** A screenshot to `<shots>/<name>.png`. */
export async function shot(page, name) {
  mkdirSync(env.shots, { recursive: true });
  await page.screenshot({ path: join(env.shots, `${name}.png`), fullPage: false });
}

/**
 * Runs `scenario(page, browser)` in a fresh headless Chromium at 1280x800;
 * any page error, console error or CSP violation fails it, but console
 * errors that match `allowed`.
 */
export async function withPage(scenario, allowed = /^$/) {
  const browser = await chromium.launch({ executablePath: env.chromium, args: ["--no-sandbox"] });
  const problems = [];
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    // Said at once too, so a scenario that times out shows them.
    const problem = (p) => {
      problems.push(p);
      console.error(p);
    };
    page.on("pageerror", (e) => problem(`page error: ${e.message}\n${e.stack}`));
    page.on("console", (m) => {
      const expected = /status of 40[14]/.test(m.text()) || allowed.test(m.text());
      if (m.type() === "error" && !expected) problem(`console error: ${m.text()}`);
    });
    page.on("dialog", (d) => d.accept());
    await scenario(page, context);
  } finally {
    await browser.close();
  }
  check(problems.length === 0, problems.join("\n"));
}

/**
 * The seqs of the events the page accounts for, in page order: each
 * event's element has its seq (`data-seq`), and a hidden run of events with
 * nothing to show has its first and last (`data-seq`, `data-last`).
 */
export function shownSeqs(page) {
  return page.$$eval(".conv article[data-seq]", (els) => els.flatMap((e) => {
    const first = Number(e.dataset.seq);
    const last = e.dataset.last === undefined ? first : Number(e.dataset.last);
    return Array.from({ length: Math.max(0, last - first + 1) }, (_, i) => first + i);
  }));
}

/** Opens the console with the token in the fragment, at `hash` after. */
export async function open(page, hash = "#/") {
  await page.goto(`${env.url}/#token=${encodeURIComponent(env.token)}`);
  await page.waitForSelector("table.sessions");
  if (hash !== "#/") await page.evaluate((h) => { location.hash = h; }, hash);
}

/** Fails unless every control on the page has a name (a label, an aria-label or text). */
export async function allNamed(page) {
  const unnamed = await page.$$eval("button, input, select, textarea, a, summary", (els) =>
    els.filter((e) => !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.textContent.trim()).map((e) => e.outerHTML));
  check(unnamed.length === 0, `controls without a name: ${unnamed.join(", ")}`);
}
