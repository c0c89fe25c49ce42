// A session's controls: send (queue or steer, with a model and effort for
// the turn on), interrupt, stop, resume, close, and allow or deny for each
// pending approval. Each is one API call
// whose answer (the session's view) `onView` takes; a refusal is said in
// words beside the controls.

import { ApiError, call, sessionPath } from "./api.js";
import { h, replace } from "./dom.js";
import { duration, json } from "./format.js";
import { imagePicker } from "./images.js";

/** The controls of session `id`; `update(view)` keeps them in step with it. */
export function controls(id, onView) {
  const said = h("p", { class: "said", role: "alert", "aria-live": "assertive" });
  const say = (text, bad) => {
    said.textContent = text;
    said.classList.toggle("bad", !!bad);
  };
  const act = async (button, label, method, path, body) => {
    button.disabled = true;
    say(`${label}…`);
    try {
      const view = await call(method, sessionPath(id, path), body);
      // A message's answer says how it was delivered, where the core says so.
      say(`${label}: ${view && typeof view.delivered === "string" ? view.delivered : "done"}.`);
      if (view && view.id) onView(view);
      return true;
    } catch (e) {
      say(e instanceof ApiError ? `${label}: ${e.message} (${e.status})` : `${label}: ${e.message}`, true);
      return false;
    } finally {
      button.disabled = false;
    }
  };

  const prompt = h("textarea", { id: "prompt", name: "prompt", rows: 3, placeholder: "A prompt for the harness" });
  const queue = h("input", { type: "radio", name: "deliver", id: "deliver-queue", value: "queue", checked: true });
  const steer = h("input", { type: "radio", name: "deliver", id: "deliver-steer", value: "steer" });
  const send = h("button", { type: "submit", id: "send" }, "Send");
  // A queued message may change the model and effort from its turn on;
  // after Send, so the keyboard goes prompt, deliver, Send as before.
  const model = h("input", { id: "send-model", name: "model", autocomplete: "off", placeholder: "the one in force" });
  const effort = h("select", { id: "send-effort", name: "effort" }, h("option", { value: "" }, "the one in force"));
  const images = imagePicker("send-images", prompt);
  const choice = h("details", { class: "choice", id: "send-choice" },
    h("summary", {}, "Model and effort from this turn on"),
    h("label", { for: "send-model" }, "Model"), model,
    h("label", { for: "send-effort" }, "Effort"), effort);
  const form = h("form", { class: "send", "aria-label": "Send a prompt" },
    h("label", { for: "prompt" }, "Message"),
    prompt,
    h("fieldset", {}, h("legend", {}, "Deliver"),
      h("label", {}, queue, " queue (after the running turn)"),
      h("label", {}, steer, " steer (into the running turn)")),
    send, choice, images.el);
  // A steer joins the running turn as text: its model and effort are set.
  const steering = () => {
    model.disabled = steer.checked;
    effort.disabled = steer.checked;
    images.el.querySelector("input").disabled = steer.checked;
  };
  queue.addEventListener("change", steering);
  steer.addEventListener("change", steering);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = prompt.value;
    // `deliver` only when chosen: a core without steering refuses the field.
    const body = steer.checked ? { prompt: text, deliver: "steer" } : { prompt: text };
    if (!steer.checked && model.value.trim()) body.model = model.value.trim();
    if (!steer.checked && effort.value) body.effort = effort.value;
    const attachments = steer.checked ? undefined : await images.attachments();
    if (attachments) body.attachments = attachments;
    if (await act(send, steer.checked ? "Steer" : "Send", "POST", "/messages", body)) {
      prompt.value = "";
      model.value = "";
      effort.value = "";
      images.clear();
    }
  });

  // The efforts the session's CLI takes, as the service lists them: asked
  // once the view names the CLI.
  let offered = null;
  const offer = (harness) => {
    if (offered) return;
    offered = harness;
    call("GET", "/v1/capabilities").then((c) => {
      const names = (c.options && c.options[harness] && c.options[harness].effort) || [];
      replace(effort, h("option", { value: "" }, "the one in force"), names.map((n) => h("option", { value: n }, n)));
    }, () => { offered = null; });
  };

  const button = (name, label, title) => {
    const b = h("button", { type: "button", id: name, title }, label);
    b.addEventListener("click", () => {
      if (name === "close" && !window.confirm("Close this session? Its harness stops and it takes no more prompts.")) return;
      act(b, label, "POST", `/${name}`);
    });
    return b;
  };
  const buttons = {
    interrupt: button("interrupt", "Interrupt", "End the running turn; the queue goes on"),
    stop: button("stop", "Stop", "End the running turn and pause the queue"),
    resume: button("resume", "Resume", "Unpause the queue"),
    close: button("close", "Close", "End the session"),
  };
  const approvals = h("section", { class: "approvals", "aria-label": "Pending approvals" });
  const el = h("section", { class: "controls", "aria-label": "Controls" }, form, h("div", { class: "buttons" }, Object.values(buttons)), approvals, said);

  const answer = (approval, decision, label, b) =>
    act(b, `${label} approval ${approval.id}`, "POST", `/approvals/${encodeURIComponent(approval.id)}`, { decision });

  let shown = null;
  const update = (view) => {
    const over = view.state === "closed" || view.state === "failed";
    send.disabled = over;
    prompt.disabled = over;
    if (view.harness) offer(view.harness);
    model.placeholder = view.model ? `${view.model} (in force)` : "the CLI's default (in force)";
    buttons.interrupt.disabled = view.state !== "running";
    buttons.stop.disabled = over;
    buttons.resume.disabled = view.state === "closed" || !(view.queue && view.queue.paused);
    buttons.close.disabled = view.state === "closed";
    // No `pending_approvals` (a core without approvals) means none.
    const pending = Array.isArray(view.pending_approvals) ? view.pending_approvals : [];
    // Rebuilt only when the set changes, so focus stays on a button.
    const key = pending.map((a) => a.id).join(",");
    if (key === shown) return;
    shown = key;
    replace(approvals, pending.length ? h("h3", {}, `Pending approvals (${pending.length})`) : null,
      pending.map((a) => {
        const buttonsFor = [["allow", "Allow"], ["deny", "Deny"], ["allow_for_session", "Allow for the session"]].map(([decision, label]) => {
          const b = h("button", { type: "button", class: `approve ${decision}`, "aria-label": `${label}: ${a.tool} (approval ${a.id})` }, label);
          b.addEventListener("click", () => answer(a, decision, label, b));
          return b;
        });
        return h("div", { class: "approval", "data-approval": a.id },
          h("p", {}, h("strong", {}, String(a.tool)), ` in turn ${a.turn}`, a.reason ? ` — ${a.reason}` : "",
            a.until_ms ? ` · answer within ${duration(a.until_ms - Date.now())}` : ""),
          h("pre", {}, json(a.input)),
          h("div", { class: "buttons" }, buttonsFor));
      }));
  };
  return { el, update };
}
