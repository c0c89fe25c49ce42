// What a harness's own JSON line says, as parts of a conversation: claude's
// stream-json (`system`, `assistant`, `user`, `result`) and codex exec
// --json (`thread.started`, `item.*`, `turn.*`). Everything here is the
// harness's and untrusted: the parts hold values, which the page shows as
// text. A line this does not know is one `raw` part.

const str = (v) => (typeof v === "string" ? v : v === undefined || v === null ? "" : JSON.stringify(v));

/** A tool result's content (a string, or claude's blocks) as text. */
function resultText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((b) => (b && b.type === "text" ? str(b.text) : str(b))).join("\n");
  }
  return str(content);
}

function claude(d) {
  switch (d.type) {
    case "system":
      if (d.subtype === "init") {
        return [{ type: "note", text: `claude started${d.model ? ` (${d.model})` : ""}` }];
      }
      return [{ type: "raw", label: `system ${str(d.subtype)}`, value: d }];
    case "assistant": {
      const blocks = d.message && Array.isArray(d.message.content) ? d.message.content : null;
      if (!blocks) return null;
      return blocks.map((b) => {
        if (b && b.type === "text") return { type: "text", text: str(b.text) };
        if (b && b.type === "tool_use") {
          return { type: "call", id: str(b.id), name: str(b.name) || "tool", input: b.input };
        }
        if (b && b.type === "thinking") return { type: "raw", label: "thinking", value: str(b.thinking) };
        return { type: "raw", label: `assistant ${str(b && b.type)}`, value: b };
      });
    }
    case "user": {
      const content = d.message && d.message.content;
      if (typeof content === "string") return [{ type: "note", text: content }];
      if (!Array.isArray(content)) return null;
      return content.map((b) =>
        b && b.type === "tool_result"
          ? { type: "result", id: str(b.tool_use_id), text: resultText(b.content), error: b.is_error === true }
          : { type: "raw", label: `user ${str(b && b.type)}`, value: b },
      );
    }
    case "result": {
      const parts = [{ type: "note", text: `claude's turn: ${str(d.subtype) || "result"}` }];
      if (d.is_error) parts.push({ type: "error", text: str(d.result) || "the turn failed" });
      return parts;
    }
    default:
      return null;
  }
}

function codexItem(started, item) {
  const id = str(item.id);
  switch (item.type) {
    case "agent_message":
      return started ? [] : [{ type: "text", text: str(item.text) }];
    case "reasoning":
      return started ? [] : [{ type: "raw", label: "reasoning", value: str(item.text) }];
    case "command_execution":
      return started
        ? [{ type: "call", id, name: "command", input: str(item.command) }]
        : [
            { type: "call", id, name: "command", input: str(item.command), once: true },
            {
              type: "result",
              id,
              text: str(item.aggregated_output),
              error: typeof item.exit_code === "number" && item.exit_code !== 0,
              status: item.exit_code === undefined || item.exit_code === null ? str(item.status) : `exit ${item.exit_code}`,
            },
          ];
    case "file_change":
      return started
        ? [{ type: "call", id, name: "file change", input: item.changes }]
        : [
            { type: "call", id, name: "file change", input: item.changes, once: true },
            { type: "result", id, text: str(item.status), error: item.status === "failed" },
          ];
    case "mcp_tool_call":
      return started
        ? [{ type: "call", id, name: `${str(item.server)} ${str(item.tool)}`, input: item.arguments }]
        : [
            { type: "call", id, name: `${str(item.server)} ${str(item.tool)}`, input: item.arguments, once: true },
            { type: "result", id, text: resultText(item.result ?? item.error ?? item.status), error: !!item.error },
          ];
    case "error":
      return [{ type: "error", text: str(item.message) }];
    default:
      return [{ type: "raw", label: `${started ? "started" : "completed"} ${str(item.type)}`, value: item }];
  }
}

function codex(d) {
  switch (d.type) {
    case "thread.started":
      return [{ type: "note", text: "codex started" }];
    case "turn.started":
      return [{ type: "note", text: "codex's turn began" }];
    case "turn.completed":
      return [{ type: "note", text: "codex's turn: completed" }];
    case "turn.failed":
      return [{ type: "error", text: str(d.error && d.error.message) || "the turn failed" }];
    case "error":
      return [{ type: "error", text: str(d.message) }];
    case "item.started":
    case "item.updated":
    case "item.completed":
      return d.item && typeof d.item === "object" ? codexItem(d.type !== "item.completed", d.item) : null;
    default:
      return null;
  }
}

/** The parts of one harness line `d`. */
export function parts(d) {
  if (!d || typeof d !== "object" || Array.isArray(d)) {
    return [{ type: "raw", label: "harness", value: d }];
  }
  let out = null;
  try {
    out = claude(d) || codex(d);
  } catch {
    out = null;
  }
  return out || [{ type: "raw", label: `harness ${str(d.type) || "event"}`, value: d }];
}
