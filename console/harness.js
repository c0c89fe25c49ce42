// What a harness's own JSON line says, as parts of a conversation: claude's
// stream-json (`system`, `assistant`, `user`, `result`), codex
// app-server's JSON-RPC (`turn/*` and `item/*` notifications, the answers to
// room-core's requests) and an ACP agent's (`session/update` notifications,
// the answers to room-core's requests). Everything here is the harness's and untrusted: the
// parts hold values, which the page shows as text. A line this does not know
// is one `raw` part; what only room-core needs (deltas, usage, approvals,
// status) is no part at all.

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

const obj = (v) => (v && typeof v === "object" && !Array.isArray(v) ? v : null);

/** The text of a `userMessage` item's content (codex's user inputs). */
function inputText(content) {
  if (!Array.isArray(content)) return str(content);
  return content.map((c) => (obj(c) && c.type === "text" ? str(c.text) : str(c))).join("\n");
}

/** A command's result: its output, and its exit code or, without one, its status. */
function commandResult(id, item) {
  const code = typeof item.exitCode === "number" ? item.exitCode : null;
  const status = str(item.status);
  const said = code === null ? status : status && status !== "completed" ? `${status}, exit ${code}` : `exit ${code}`;
  return {
    type: "result",
    id,
    text: str(item.aggregatedOutput),
    error: (code !== null && code !== 0) || status === "declined" || status === "failed",
    status: said,
  };
}

/** The parts of an app-server item, as `item/started` (`started`) or `item/completed` says it. */
function codexItem(started, item) {
  const id = str(item.id);
  switch (item.type) {
    case "agentMessage":
      return started ? [] : [{ type: "text", text: str(item.text) }];
    case "userMessage":
      // A turn's prompt, and each prompt steered into it, as codex read them.
      return started ? [] : [{ type: "note", text: `codex read: ${inputText(item.content)}` }];
    case "reasoning": {
      if (started) return [];
      const said = [item.summary, item.content].filter(Array.isArray).flat().map(str).join("\n");
      return [{ type: "raw", label: "reasoning", value: said }];
    }
    case "commandExecution": {
      const call = { type: "call", id, name: "command", input: str(item.command) };
      return started ? [call] : [{ ...call, once: true }, commandResult(id, item)];
    }
    case "fileChange": {
      const call = { type: "call", id, name: "file change", input: item.changes };
      if (started) return [call];
      const status = str(item.status);
      return [{ ...call, once: true }, { type: "result", id, text: status, status, error: status === "failed" || status === "declined" }];
    }
    case "mcpToolCall": {
      const call = { type: "call", id, name: `${str(item.server)} ${str(item.tool)}`, input: item.arguments };
      if (started) return [call];
      const error = obj(item.error);
      const result = obj(item.result);
      const text = error ? str(error.message) : result ? resultText(result.content) : str(item.status);
      return [{ ...call, once: true }, { type: "result", id, text, status: str(item.status), error: !!error || item.status === "failed" }];
    }
    default:
      return [{ type: "raw", label: `${started ? "started" : "completed"} ${str(item.type)}`, value: item }];
  }
}

/** What the app-server says as it runs a turn, or only for room-core, which shows nothing. */
const QUIET = new Set([
  "item/agentMessage/delta",
  "item/commandExecution/outputDelta",
  "thread/tokenUsage/updated",
  "thread/status/changed",
  "thread/started",
  "turn/diff/updated",
  "account/rateLimits/updated",
  "configWarning",
  "remoteControl/status/changed",
  "serverRequest/resolved",
  // room-core shows its approvals from its own events.
  "item/commandExecution/requestApproval",
  "item/fileChange/requestApproval",
]);

/** A notification or a request from codex app-server (JSON-RPC with a `method`). */
function codexMethod(d) {
  if (QUIET.has(d.method)) return [];
  const p = obj(d.params) || {};
  switch (d.method) {
    case "turn/started":
      return [{ type: "note", text: "codex's turn began" }];
    case "turn/completed": {
      const turn = obj(p.turn) || {};
      const status = str(turn.status) || "ended";
      const parts = [{ type: "note", text: `codex's turn: ${status}` }];
      if (status === "failed") {
        parts.push({ type: "error", text: str(obj(turn.error) && turn.error.message) || "the turn failed" });
      }
      return parts;
    }
    case "error": {
      const error = obj(p.error);
      const text = str(error ? error.message : p.message) || "an error";
      return [{ type: "error", text: p.willRetry === true ? `${text} (codex retries)` : text }];
    }
    case "item/started":
    case "item/completed":
      return obj(p.item) ? codexItem(d.method === "item/started", p.item) : null;
    default:
      return null;
  }
}

/** codex app-server's answer to one of room-core's requests. */
function codexResponse(d) {
  if ("error" in d) {
    const error = obj(d.error);
    return [{ type: "error", text: str(error ? error.message : d.error) || "codex refused a request" }];
  }
  const result = obj(d.result);
  if (!result) return null;
  if (obj(result.thread) && typeof result.thread.id === "string") return [{ type: "note", text: "codex thread started" }];
  // The handshake's, a turn's start, a steer's and an interrupt's answers: room-core's business.
  if ("userAgent" in result || "turn" in result || "turnId" in result || Object.keys(result).length === 0) return [];
  return null;
}

/** A line of codex app-server's JSON-RPC (without the `jsonrpc` field, as codex writes it). */
function codex(d) {
  if (typeof d.method === "string") return codexMethod(d);
  if ("id" in d && ("result" in d || "error" in d)) return codexResponse(d);
  return null;
}

/** The text of ACP content blocks (one, or a list). */
function acpText(content) {
  const blocks = Array.isArray(content) ? content : [content];
  return blocks
    .map((b) => {
      const c = obj(b) && b.type === "content" ? b.content : b;
      return obj(c) && c.type === "text" ? str(c.text) : str(c);
    })
    .join("\n");
}

/** What an ACP agent says as it runs a prompt that only room-core needs. */
const ACP_QUIET = new Set([
  "usage_update",
  "available_commands_update",
  "current_mode_update",
  "config_option_update",
  "session_info_update",
]);

/** An ACP `session/update`: a chunk of the agent's message or thought
 *  (`chunk`: the page joins a run of them), a tool call and its result. */
function acpUpdate(u) {
  const kind = str(u.sessionUpdate);
  if (ACP_QUIET.has(kind)) return [];
  const id = str(u.toolCallId);
  switch (kind) {
    case "agent_message_chunk":
      return [{ type: "text", text: acpText(u.content), chunk: "message" }];
    case "agent_thought_chunk":
      return [{ type: "text", text: acpText(u.content), chunk: "thought" }];
    case "user_message_chunk":
      return [{ type: "note", text: `the agent read: ${acpText(u.content)}` }];
    case "tool_call":
      return [{ type: "call", id, name: str(u.title) || str(u.kind) || "tool", input: u.rawInput ?? u.title }];
    case "tool_call_update": {
      const status = str(u.status);
      if (status !== "completed" && status !== "failed") return [];
      const text = u.content ? acpText(u.content) : str(u.rawOutput);
      return [{ type: "result", id, text, status, error: status === "failed" }];
    }
    default:
      return null;
  }
}

/** A line of an ACP agent's JSON-RPC. */
function acp(d) {
  if (d.method === "session/update") return acpUpdate(obj(obj(d.params) && d.params.update) || {});
  // room-core shows its approvals from its own events.
  if (d.method === "session/request_permission") return [];
  const result = "id" in d ? obj(d.result) : null;
  if (!result) return null;
  if (typeof result.sessionId === "string") return [{ type: "note", text: "the agent's session opened" }];
  if (typeof result.stopReason === "string") return [{ type: "note", text: `the agent's turn: ${result.stopReason}` }];
  // The handshake's, a load's, a resume's and a steer's answers: room-core's business.
  if ("protocolVersion" in result || "outcome" in result) return [];
  return null;
}

/** The parts of one harness line `d`. */
export function parts(d) {
  if (!d || typeof d !== "object" || Array.isArray(d)) {
    return [{ type: "raw", label: "harness", value: d }];
  }
  let out = null;
  try {
    out = claude(d) || codex(d) || acp(d);
  } catch {
    out = null;
  }
  return out || [{ type: "raw", label: `harness ${str(d.type) || str(d.method) || "event"}`, value: d }];
}
