// Runs one scenario: `node run.mjs <name>` runs scenarios/<name>.mjs with
// the service tests/console.rs started (CONSOLE_URL, CONSOLE_TOKEN,
// CONSOLE_WORK, CONSOLE_SHOTS). It prints what it measured and `ok`, and
// exits 1 on a failure, 2 when it outlasts CONSOLE_LIMIT_MS.

const name = process.argv[2];
const limit = Number(process.env.CONSOLE_LIMIT_MS || 90000);
setTimeout(() => {
  console.error(`${name}: still running after ${limit} ms`);
  process.exit(2);
}, limit).unref();

try {
  const { default: scenario } = await import(`./scenarios/${name}.mjs`);
  await scenario();
  console.log(`${name}: ok`);
  process.exit(0);
} catch (e) {
  console.error(`${name}: FAILED: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
}
