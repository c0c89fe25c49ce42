// The API, always with the token, which lives in sessionStorage only.

const KEY = "room-core-token";

/** The token, if the page has one. */
export function token() {
  return sessionStorage.getItem(KEY);
}

/** Keeps `t` for this tab. */
export function setToken(t) {
  sessionStorage.setItem(KEY, t);
}

/** Forgets the token. */
export function clearToken() {
  sessionStorage.removeItem(KEY);
}

/** An answer that was not a 2xx: its status, the API's sentence and code. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.error ? body.error : `HTTP ${status}`);
    this.status = status;
    this.code = body && body.code;
  }
}

/** The headers every call sends. */
export function headers(extra) {
  return { Authorization: `Bearer ${token()}`, ...extra };
}

/** A 401: the page asks for a token again (app.js listens). */
export function refused() {
  window.dispatchEvent(new CustomEvent("room-unauthorized"));
}

/** Calls the API; the answer's JSON, or an ApiError. */
export async function call(method, path, body, signal) {
  const init = { method, headers: headers(), signal };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const r = await fetch(path, init);
  const text = await r.text();
  let value = null;
  try {
    value = text ? JSON.parse(text) : null;
  } catch {
    value = null;
  }
  if (r.status === 401) refused();
  if (!r.ok) throw new ApiError(r.status, value);
  return value;
}

/** `/v1/sessions/<id>` with the id escaped. */
export function sessionPath(id, rest = "") {
  return `/v1/sessions/${encodeURIComponent(id)}${rest}`;
}
