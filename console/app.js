// The console's entry: the token (from the URL's fragment, which is never
// sent to the server, or pasted; kept in sessionStorage only and taken out
// of the address bar at once), then the page the fragment names:
// `#/` the session list, `#/new` the form that starts a session,
// `#/sessions/<id>` a session.

import { clearToken, setToken, token } from "./api.js";
import { h, replace } from "./dom.js";
import { listPage } from "./list.js";
import { newPage } from "./new.js";
import { sessionPage } from "./session.js";

const main = document.getElementById("main");
const status = document.getElementById("status");
const forget = document.getElementById("forget");

function setStatus(text, bad) {
  status.textContent = text || "";
  status.classList.toggle("bad", !!bad);
}

/** Takes a token from `#token=…` and leaves the address without it. */
function takeToken() {
  const m = /^#token=([^&]*)/.exec(location.hash);
  if (!m) return;
  try {
    setToken(decodeURIComponent(m[1]));
  } catch {
    setToken(m[1]);
  }
  history.replaceState(null, "", `${location.pathname}#/`);
}

let leave = () => {};

/** Asks for the token; `why` says what was wrong with the last one. */
function askToken(why) {
  leave();
  leave = () => {};
  forget.hidden = true;
  const input = h("input", { id: "token", name: "token", type: "password", autocomplete: "off", required: true });
  const form = h("form", { class: "token", "aria-label": "API token" },
    h("label", { for: "token" }, "API token"), input, h("button", { type: "submit" }, "Open"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    route();
  });
  replace(main, h("section", { class: "login" },
    h("h1", {}, "room-core console"),
    why ? h("p", { class: "alert", role: "alert", id: "token-refused" }, why) : null,
    h("p", {}, "Open the URL that ", h("code", {}, "room-core --console-url"), " prints, or paste the API token (",
      h("code", {}, "token"), " in the config, or ", h("code", {}, "<state_dir>/token"), "). The page keeps it in this tab only."),
    form));
  input.focus();
}

function route() {
  if (!token()) return askToken(null);
  leave();
  forget.hidden = false;
  setStatus("");
  const m = /^#\/sessions\/([^/?]+)/.exec(location.hash);
  let id = null;
  try {
    id = m && decodeURIComponent(m[1]);
  } catch {
    id = m && m[1];
  }
  if (id) leave = sessionPage(main, id, setStatus);
  else if (/^#\/new(\?|$)/.test(location.hash)) leave = newPage(main, setStatus);
  else leave = listPage(main, setStatus);
}

window.addEventListener("room-unauthorized", () => {
  clearToken();
  askToken("The service refused this token (401 unauthorized). Paste the right one, or open the URL room-core --console-url prints.");
});
window.addEventListener("hashchange", () => {
  takeToken();
  route();
});
forget.addEventListener("click", () => {
  clearToken();
  askToken(null);
});

// A wrong token shows in the page's first call: its 401 brings the form
// back with the reason (`room-unauthorized` above).
takeToken();
route();
