// How times, durations, counts and money read on the page.

/** "4 s", "3 min 5 s", "2 h 10 min", "3 d 4 h". */
export function duration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours} h ${m % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/** The local clock time of a Unix ms. */
export function clock(ms) {
  return new Date(ms).toLocaleTimeString([], { hour12: false });
}

/** A cost in USD, or an em dash for none. */
export function usd(cost) {
  if (cost === null || cost === undefined) return "—";
  return `$${Number(cost).toFixed(cost < 0.01 ? 5 : 2)}`;
}

/** A token count with thousands marked. */
export function count(n) {
  return Number(n || 0).toLocaleString("en-US");
}

/** JSON for people: indented, whatever the value. */
export function json(value) {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** At most `n` characters of `text`, marked when cut. */
export function cut(text, n) {
  const s = String(text ?? "");
  return s.length > n ? `${s.slice(0, n)}…` : s;
}
