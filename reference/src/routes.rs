//! The website's routes: `Website::handle` takes each request to its own.
//!
//! - `POST /api/core/automation`, `POST /api/core/launch`: Core's calls,
//!   signed with the sandbox's `signin_token`. Exactly one of `session` and
//!   `automation`; `automation` only for a loop whose script runs in this
//!   Core's sandbox, `session` only for a thread that runs there (else 403).
//! - `POST /api/hooks/<loop>/<secret>`: a loop's hook, runs it.
//! - `/api/app/…` (the `admin_token`): what the signed-in user's pages do:
//!   start a thread, make a loop, list them, run one (app_routes.rs).

use room_machines::Body;
use serde_json::Value;

use super::automation;
use super::http::{Request, Response};
use super::launch;
use super::website::{same, Website};

impl Website {
    /// Answers one request. A success never carries a top-level `error`
    /// field (room-cli would take it for a failure): one that would is
    /// answered 500 instead.
    pub fn handle(&self, req: &Request) -> Response {
        let seg = req.segments();
        let resp = match (req.method.as_str(), seg.as_slice()) {
            ("POST", ["api", "core", endpoint]) => self.core_call(req, endpoint),
            ("POST", ["api", "hooks", id, secret]) => self.hook(id, secret),
            (_, ["api", "app", rest @ ..]) => self.app_call(req, rest),
            _ => Response::error(
                404,
                "not_found",
                format!("No route {} {}.", req.method, req.path),
            ),
        };
        let shown = match seg.as_slice() {
            ["api", "hooks", id, _] => format!("/api/hooks/{id}/…"),
            _ => req.path.clone(),
        };
        let resp = if (200..300).contains(&resp.status)
            && serde_json::from_slice::<Value>(&resp.body).is_ok_and(|v| v.get("error").is_some())
        {
            log::error!("{} {shown}: a success carried an error field", req.method);
            Response::error(500, "internal", "The website built a bad answer.")
        } else {
            resp
        };
        log::info!("{} {shown} -> {}", req.method, resp.status);
        resp
    }

    fn core_call(&self, req: &Request, endpoint: &str) -> Response {
        let Some(sandbox) = self.signed_in(req) else {
            return Response::error(401, "unauthorized", "unauthorized");
        };
        let body: Body = match serde_json::from_slice(&req.body) {
            Ok(b) => b,
            Err(e) => {
                return Response::error(
                    400,
                    "bad_json",
                    format!("The body is not a room-cli request: {e}."),
                )
            }
        };
        let actor = match self.actor(&sandbox.config.name, &body) {
            Ok(a) => a,
            Err(r) => return r,
        };
        match endpoint {
            "automation" => automation::act(self, &actor, &body),
            "launch" => launch::launch(self, &actor, &body),
            other => Response::error(
                501,
                "not_implemented",
                format!("The reference website does not implement /api/core/{other}."),
            ),
        }
    }

    fn hook(&self, id: &str, secret: &str) -> Response {
        match self.loops.get(id) {
            Some(l) if l.hook_secret.as_deref().is_some_and(|s| same(s, secret)) => {
                Response::json(202, &self.trigger_view(id))
            }
            _ => Response::error(404, "not_found", "No such hook."),
        }
    }
}
