// A session's live events: `GET /v1/sessions/{id}/stream` read with fetch
// (an EventSource cannot send the Authorization header), parsed as
// Server-Sent Events, and resumed with `Last-Event-ID` after a drop, so no
// event is missed or given twice. It ends at the stream's `end` event.

import { headers, refused, sessionPath } from "./api.js";

/** The SSE blocks complete in `buffer`, and what is left of it. */
function blocks(buffer) {
  const out = [];
  let at;
  while ((at = buffer.search(/\r?\n\r?\n/)) >= 0) {
    out.push(buffer.slice(0, at));
    buffer = buffer.slice(at).replace(/^\r?\n\r?\n/, "");
  }
  return [out, buffer];
}

/** One block's `event` and `data` (data lines joined with LF); null for a comment. */
function parse(block) {
  let event = "message";
  const data = [];
  for (const line of block.split(/\r?\n/)) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  return data.length ? { event, data: data.join("\n") } : null;
}

/**
 * Follows session `id`'s events after seq `after`: `onEvents(events)` with
 * each batch (in seq order, each once), `onLink(state)` with "live",
 * "reconnecting" or "ended". Returns a function that stops it.
 */
export function follow(id, after, onEvents, onLink) {
  const abort = new AbortController();
  let last = after;
  let delay = 500;
  const run = async () => {
    while (!abort.signal.aborted) {
      let ended = false;
      try {
        const r = await fetch(sessionPath(id, "/stream"), {
          headers: headers({ "Last-Event-ID": String(last), Accept: "text/event-stream" }),
          signal: abort.signal,
          cache: "no-store",
        });
        if (r.status === 401) {
          refused();
          return;
        }
        if (r.status === 404) {
          onLink("ended");
          return;
        }
        if (!r.ok || !r.body) throw new Error(`HTTP ${r.status}`);
        onLink("live");
        delay = 500;
        const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          let complete;
          [complete, buffer] = blocks(buffer + value);
          const batch = [];
          for (const b of complete) {
            const e = parse(b);
            if (!e) continue;
            if (e.event === "end") {
              ended = true;
              break;
            }
            let event;
            try {
              event = JSON.parse(e.data);
            } catch {
              // Not an event this page can read; the next ones still are.
              continue;
            }
            if (event && event.seq > last) {
              last = event.seq;
              batch.push(event);
            }
          }
          if (batch.length) onEvents(batch);
          if (ended) break;
        }
      } catch (e) {
        if (abort.signal.aborted) return;
      }
      if (ended) {
        onLink("ended");
        return;
      }
      // The service stopped or the connection dropped: resume after `last`.
      onLink("reconnecting");
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 8000);
    }
  };
  run();
  return () => abort.abort();
}
