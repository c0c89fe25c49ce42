//! What Core sends the website for a forwarded command: the route and the
//! JSON body. Pure: the runtime supplies a fresh request ID for a top-level
//! spawn that has none and does the HTTP call.
//!
//! The body is `{"action": <action, omitted for action-less groups>,
//! "<session|automation>": id, <each --flag as snake_case key: value string or
//! true>, "args": [positionals] (omitted when empty)}`. A top-level spawn goes
//! to `launch`, always carries `request_id`, and has no `top_level` key.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use crate::body_keys::{snake_case, RESERVED_KEYS};
use crate::command::Command;
use crate::policy::Scope;

/// One value in a website request body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    /// A string (`--flag value`, the action, the scope ID).
    Str(String),
    /// `true`, for a flag given without a value.
    Bool(bool),
    /// The positional arguments.
    List(Vec<String>),
}

/// A request body: keys in the order they are sent, each at most once.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(from = "std::collections::BTreeMap<String, Value>")]
pub struct Body(pub Vec<(String, Value)>);

impl From<std::collections::BTreeMap<String, Value>> for Body {
    fn from(m: std::collections::BTreeMap<String, Value>) -> Self {
        Body(m.into_iter().collect())
    }
}

impl Body {
    /// Sets `key`, replacing an earlier value in place (a repeated flag: the
    /// last one wins).
    fn set(&mut self, key: &str, value: Value) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value,
            None => self.0.push((key.to_string(), value)),
        }
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl Serialize for Body {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// A website call: `POST /api/core/<endpoint>` with `body`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The route under `/api/core/`.
    pub endpoint: String,
    /// The JSON body.
    pub body: Body,
}

/// Builds the website request for a command the policy forwarded with
/// `scope`. `fresh_request_id` is called only for a top-level spawn without
/// `--request-id` (the runtime returns a new UUID v4).
pub fn build(cmd: &Command, scope: &Scope, fresh_request_id: impl FnOnce() -> String) -> Request {
    let top_level = cmd.is_top_level_spawn();
    let mut body = Body::default();
    if let Some(action) = &cmd.action {
        body.set("action", Value::Str(action.clone()));
    }
    let (scope_key, id) = scope.field();
    body.set(scope_key, Value::Str(id.to_string()));
    for (flag, value) in &cmd.flags {
        let key = snake_case(flag);
        // The parser refuses reserved flags; this keeps the scope exactly one
        // of the two even if a caller of `build` did not parse.
        if RESERVED_KEYS.contains(&key.as_str()) || (top_level && key == "top_level") {
            continue;
        }
        let value = match value {
            Some(v) => Value::Str(v.clone()),
            None => Value::Bool(true),
        };
        body.set(&key, value);
    }
    if top_level && body.get("request_id").is_none() {
        body.set("request_id", Value::Str(fresh_request_id()));
    }
    if !cmd.args.is_empty() {
        body.set("args", Value::List(cmd.args.clone()));
    }
    Request {
        endpoint: cmd.endpoint().to_string(),
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::test_command as cmd;

    const ID: &str = "0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b";

    fn json(r: &Request) -> String {
        serde_json::to_string(&r.body).unwrap()
    }

    #[test]
    fn a_loop_list_from_a_script_is_exactly_action_and_automation() {
        let r = build(
            &cmd(&["loop", "list"]),
            &Scope::Automation(ID.into()),
            || unreachable!(),
        );
        assert_eq!(r.endpoint, "automation");
        assert_eq!(
            json(&r),
            format!(r#"{{"action":"list","automation":"{ID}"}}"#)
        );
    }

    #[test]
    fn a_top_level_spawn_goes_to_launch_with_a_request_id_and_no_top_level() {
        let r = build(
            &cmd(&["thread", "spawn", "--top-level", "fix", "it"]),
            &Scope::Automation(ID.into()),
            || "fresh".into(),
        );
        assert_eq!(r.endpoint, "launch");
        assert_eq!(
            json(&r),
            format!(
                r#"{{"action":"spawn","automation":"{ID}","request_id":"fresh","args":["fix","it"]}}"#
            )
        );
        let r = build(
            &cmd(&["thread", "spawn", "--request-id", "r1", "--top-level", "go"]),
            &Scope::Session("cr_seed".into()),
            || unreachable!(),
        );
        assert_eq!(
            json(&r),
            r#"{"action":"spawn","session":"cr_seed","request_id":"r1","args":["go"]}"#
        );
    }

    #[test]
    fn flags_become_snake_case_keys_and_bools_are_true() {
        let r = build(
            &cmd(&[
                "loop",
                "create",
                "--cron",
                "* * * * *",
                "--new-thread",
                "--script-file=c.sh",
            ]),
            &Scope::Session("s".into()),
            || unreachable!(),
        );
        assert_eq!(
            json(&r),
            r#"{"action":"create","session":"s","cron":"* * * * *","new_thread":true,"script_file":"c.sh"}"#
        );
        let r = build(
            &cmd(&["fork"]),
            &Scope::Session("s".into()),
            || unreachable!(),
        );
        assert_eq!(r.endpoint, "fork");
        assert_eq!(json(&r), r#"{"session":"s"}"#);
        // A child spawn keeps its flags and goes to the thread route.
        let r = build(
            &cmd(&["thread", "spawn", "--shared-sandbox", "x"]),
            &Scope::Session("s".into()),
            || unreachable!(),
        );
        assert_eq!(r.endpoint, "thread");
        assert_eq!(
            json(&r),
            r#"{"action":"spawn","session":"s","shared_sandbox":true,"args":["x"]}"#
        );
    }

    #[test]
    fn a_body_never_carries_both_scopes() {
        let c = Command {
            flags: vec![
                ("session".into(), Some("other".into())),
                ("automation".into(), Some("other".into())),
            ],
            ..cmd(&["loop", "list"])
        };
        let r = build(&c, &Scope::Automation(ID.into()), || unreachable!());
        assert_eq!(
            json(&r),
            format!(r#"{{"action":"list","automation":"{ID}"}}"#)
        );
    }
}
