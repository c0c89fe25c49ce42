//! docs/openapi.json is kept true: every route the router serves (its one
//! table, `room_core::api::routes::ROUTES`) is in the spec with the same
//! query parameters, and every route in the spec is served by the real
//! binary with answers valid against the spec (the stream's events too);
//! the routes served without the token (the console's files) are exactly
//! those the spec marks `security: []`;
//! each JSON example in docs/api.md is valid against the schema its comment
//! names; each request schema allows exactly the bodies the server takes.
//! The validator below covers the JSON Schema the spec uses (`CHECKED`;
//! patterns through a table of the spec's own, `pattern_ok`), and the test
//! fails on any other keyword or pattern, so the spec cannot outgrow it
//! unnoticed. CI also runs schemathesis against it (tests/schemathesis).

use std::collections::BTreeSet;
use std::path::Path;

use room_core::api::routes::ROUTES;
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

fn spec() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/openapi.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).expect("openapi.json is JSON")
}

/// Keywords the validator checks, and keywords that only describe.
const CHECKED: &[&str] = &[
    "$ref",
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "maxItems",
    "oneOf",
    "anyOf",
    "allOf",
    "if",
    "then",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "contentMediaType",
    "contentSchema",
];
const DESCRIPTIVE: &[&str] = &["description", "example"];

/// The regular expressions the spec uses, each with the rule it states
/// written out here (the test has no regex engine); a pattern not listed
/// fails the test, so each new one gets its rule.
fn pattern_ok(pattern: &str, s: &str) -> bool {
    let id = |s: &str| {
        s.strip_prefix("cr_").is_some_and(|hex| {
            hex.len() == 32 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        })
    };
    let some_text = |s: &str| s.chars().any(|c| !c.is_whitespace());
    match pattern {
        r"\S" => some_text(s),
        r"^[^\x00]*[^\s\x00][^\x00]*$" => !s.contains('\0') && some_text(s),
        r"^(/+([^/\x00.][^/\x00]*|\.[^/\x00.][^/\x00]*|\.\.[^/\x00]+))+/*$" => {
            s.starts_with('/')
                && !s.contains('\0')
                && s.split('/').all(|c| c != "." && c != "..")
                && s.split('/').any(|c| !c.is_empty())
        }
        "^cr_[0-9a-f]{32}$" => id(s),
        "^[1-9][0-9]*$" => {
            !s.starts_with('0') && !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
        }
        "^[a-z_]+$" => !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
        other => panic!("the validator has no rule for the pattern {other}"),
    }
}

fn resolve<'a>(spec: &'a Value, r: &str) -> &'a Value {
    let pointer = r
        .strip_prefix('#')
        .unwrap_or_else(|| panic!("a local $ref: {r}"));
    spec.pointer(pointer)
        .unwrap_or_else(|| panic!("$ref {r} resolves to nothing"))
}

fn type_ok(ty: &str, v: &Value) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_u64() || v.is_i64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        other => panic!("unknown type {other}"),
    }
}

/// Errors of `v` against `schema` (empty when valid), each with its path.
fn validate(spec: &Value, schema: &Value, v: &Value, at: &str) -> Vec<String> {
    let Some(schema) = schema.as_object() else {
        panic!("a schema is an object at {at}: {schema}");
    };
    for key in schema.keys() {
        assert!(
            CHECKED.contains(&key.as_str()) || DESCRIPTIVE.contains(&key.as_str()),
            "the validator does not check {key} (at {at})"
        );
    }
    let mut errors = Vec::new();
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return validate(spec, resolve(spec, r), v, at);
    }
    if let Some(ty) = schema.get("type") {
        let ok = match ty {
            Value::String(t) => type_ok(t, v),
            Value::Array(ts) => ts.iter().any(|t| type_ok(t.as_str().unwrap(), v)),
            _ => panic!("type at {at}"),
        };
        if !ok {
            return vec![format!("{at}: {v} is not {ty}")];
        }
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        if !options.contains(v) {
            errors.push(format!("{at}: {v} is not one of {options:?}"));
        }
    }
    if let Some(n) = v.as_f64() {
        if schema
            .get("minimum")
            .and_then(Value::as_f64)
            .is_some_and(|m| n < m)
        {
            errors.push(format!("{at}: {n} is under the minimum"));
        }
        if schema
            .get("maximum")
            .and_then(Value::as_f64)
            .is_some_and(|m| n > m)
        {
            errors.push(format!("{at}: {n} is over the maximum"));
        }
    }
    if let Some(c) = schema.get("const") {
        if c != v {
            errors.push(format!("{at}: {v} is not {c}"));
        }
    }
    if let Some(s) = v.as_str() {
        let chars = s.chars().count() as u64;
        if schema
            .get("minLength")
            .and_then(Value::as_u64)
            .is_some_and(|m| chars < m)
        {
            errors.push(format!("{at}: {v} is shorter than minLength"));
        }
        if schema
            .get("maxLength")
            .and_then(Value::as_u64)
            .is_some_and(|m| chars > m)
        {
            errors.push(format!("{at}: {v} is longer than maxLength"));
        }
        if let Some(p) = schema.get("pattern").and_then(Value::as_str) {
            if !pattern_ok(p, s) {
                errors.push(format!("{at}: {v} does not match {p}"));
            }
        }
        if let Some(media) = schema.get("contentMediaType").and_then(Value::as_str) {
            assert_eq!(media, "application/json", "{at}");
            match serde_json::from_str::<Value>(s) {
                Ok(inner) => {
                    if let Some(c) = schema.get("contentSchema") {
                        errors.extend(validate(spec, c, &inner, &format!("{at}(json)")));
                    }
                }
                Err(e) => errors.push(format!("{at}: not JSON: {e}")),
            }
        }
    }
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for s in all {
            errors.extend(validate(spec, s, v, at));
        }
    }
    if let Some(options) = schema.get("anyOf").and_then(Value::as_array) {
        if !options.iter().any(|o| validate(spec, o, v, at).is_empty()) {
            errors.push(format!("{at}: {v} matches none of anyOf"));
        }
    }
    if let Some(cond) = schema.get("if") {
        if validate(spec, cond, v, at).is_empty() {
            if let Some(then) = schema.get("then") {
                errors.extend(validate(spec, then, v, at));
            }
        }
    }
    if let Some(options) = schema.get("oneOf").and_then(Value::as_array) {
        let matching = options
            .iter()
            .filter(|o| validate(spec, o, v, at).is_empty())
            .count();
        if matching != 1 {
            errors.push(format!("{at}: {v} matches {matching} of oneOf, not 1"));
        }
    }
    if let (Some(items), Some(array)) = (schema.get("items"), v.as_array()) {
        for (i, item) in array.iter().enumerate() {
            errors.extend(validate(spec, items, item, &format!("{at}[{i}]")));
        }
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
            if array.len() as u64 > max {
                errors.push(format!("{at}: more than {max} items"));
            }
        }
    }
    if let Some(object) = v.as_object() {
        let props = schema.get("properties").and_then(Value::as_object);
        for name in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !object.contains_key(name.as_str().unwrap()) {
                errors.push(format!("{at}: {name} is missing"));
            }
        }
        for (k, field) in object {
            let path = format!("{at}.{k}");
            match props.and_then(|p| p.get(k)) {
                Some(s) => errors.extend(validate(spec, s, field, &path)),
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => errors.push(format!("{path} is not in the schema")),
                    Some(Value::Bool(true)) | None => {}
                    Some(s) => errors.extend(validate(spec, s, field, &path)),
                },
            }
        }
    }
    errors
}

/// (METHOD, path) → the spec's operation.
fn operations(spec: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in spec["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            out.push((method.to_uppercase(), path.clone(), op.clone()));
        }
    }
    out
}

fn query_params(op: &Value) -> BTreeSet<String> {
    op["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["in"] == "query")
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_route_served_is_in_the_spec_with_its_parameters_and_no_other() {
    let spec = spec();
    let served: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|r| (r.method.to_string(), r.path.to_string()))
        .collect();
    let ops = operations(&spec);
    let described: BTreeSet<(String, String)> =
        ops.iter().map(|(m, p, _)| (m.clone(), p.clone())).collect();
    assert_eq!(
        served.difference(&described).collect::<Vec<_>>(),
        Vec::<&(String, String)>::new(),
        "served but not in docs/openapi.json"
    );
    assert_eq!(
        described.difference(&served).collect::<Vec<_>>(),
        Vec::<&(String, String)>::new(),
        "in docs/openapi.json but not served"
    );
    for r in ROUTES {
        let (_, _, op) = ops
            .iter()
            .find(|(m, p, _)| m == r.method && p == r.path)
            .unwrap();
        let want: BTreeSet<String> = r.params.iter().map(|p| p.to_string()).collect();
        assert_eq!(query_params(op), want, "{} {}", r.method, r.path);
    }
}

#[test]
fn the_spec_is_whole_every_ref_resolves_and_every_error_is_the_error_body() {
    let spec = spec();
    assert_eq!(spec["openapi"], "3.1.0");
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                    out.push(r.to_string());
                }
                m.values().for_each(|x| refs(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(&spec, &mut all);
    for r in &all {
        resolve(&spec, r);
    }
    for (method, path, op) in operations(&spec) {
        let responses = op["responses"].as_object().unwrap();
        // Only the console's files are served without the token, and the
        // spec says so of exactly those (`security: []`).
        let public = ROUTES
            .iter()
            .any(|r| r.public && r.method == method && r.path == path);
        assert_eq!(
            op.get("security") == Some(&json!([])),
            public,
            "{method} {path}: security"
        );
        assert_eq!(
            !responses.contains_key("401"),
            public,
            "{method} {path}: 401"
        );
        assert!(
            responses.keys().any(|k| k.starts_with('2')),
            "{method} {path}: a success"
        );
        for (status, r) in responses {
            let r = match r.get("$ref").and_then(Value::as_str) {
                Some(x) => resolve(&spec, x),
                None => r,
            };
            if status.starts_with('4') || status.starts_with('5') {
                let schema = &r["content"]["application/json"]["schema"]["$ref"];
                let want = if status == "401" {
                    "#/components/schemas/Unauthorized"
                } else {
                    "#/components/schemas/Error"
                };
                assert_eq!(schema, want, "{method} {path} {status}");
            }
        }
    }
}

/// The JSON examples of docs/api.md, each with the schema its
/// `<!-- schema: X -->` comment names (every example needs one).
fn api_md_examples() -> Vec<(String, Value)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/api.md");
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() == "```json" {
            let schema = i
                .checked_sub(1)
                .and_then(|j| lines[j].trim().strip_prefix("<!-- schema: "))
                .and_then(|s| s.strip_suffix(" -->"))
                .unwrap_or_else(|| {
                    panic!(
                        "docs/api.md line {}: a JSON example without <!-- schema: X -->",
                        i + 1
                    )
                });
            let end = (i + 1..lines.len())
                .find(|j| lines[*j].trim() == "```")
                .unwrap();
            let json = lines[i + 1..end].join("\n");
            let value = serde_json::from_str(&json)
                .unwrap_or_else(|e| panic!("docs/api.md line {}: not JSON: {e}", i + 1));
            out.push((schema.to_string(), value));
            i = end;
        }
        i += 1;
    }
    out
}

#[test]
fn the_json_examples_in_api_md_are_valid_against_the_spec() {
    let spec = spec();
    let examples = api_md_examples();
    assert!(examples.len() >= 7, "{examples:?}");
    for (schema, example) in &examples {
        let s = json!({"$ref": format!("#/components/schemas/{schema}")});
        let errors = validate(&spec, &s, example, schema);
        assert!(errors.is_empty(), "{schema}: {errors:#?}\n{example:#}");
    }
    // And the validator does refuse what it should.
    let bad = json!({"error": "x"});
    assert!(!validate(
        &spec,
        &json!({"$ref": "#/components/schemas/Error"}),
        &bad,
        ""
    )
    .is_empty());
    let extra = json!({"error": "x", "code": "y", "more": 1});
    assert!(!validate(
        &spec,
        &json!({"$ref": "#/components/schemas/Error"}),
        &extra,
        ""
    )
    .is_empty());
}

#[test]
fn every_route_in_the_spec_is_served_and_answers_as_it_says() {
    let spec = spec();
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("spec");
    let mut start = spec["paths"]["/v1/sessions"]["post"]["requestBody"]["content"]
        ["application/json"]["example"]
        .clone();
    start["folder"] = json!(folder);
    start["project_copy"] = json!(false);
    let s = svc.start_session(start.clone());
    let id = s["id"].as_str().unwrap().to_string();
    svc.await_session(&id, "idle", |v| v["state"] == "idle");
    let workspace = start["workspace"].as_str().unwrap().to_string();

    // Closing comes last but for the stream, which then replays and ends.
    let mut ops = operations(&spec);
    let rank = |m: &str, p: &str| match (m, p) {
        (_, p) if p.ends_with("/close") => 2,
        (_, p) if p.ends_with("/stream") => 3,
        ("GET", _) => 0,
        _ => 1,
    };
    ops.sort_by_key(|(m, p, _)| rank(m, p));
    for (method, path, op) in ops {
        let id = if path.starts_with("/v1/workspaces") {
            &workspace
        } else {
            &id
        };
        // Other path parameters take the spec's example.
        let mut path_here = path.replace("{id}", id);
        for p in op["parameters"].as_array().into_iter().flatten() {
            if let (Some("path"), Some(name), Some(example)) =
                (p["in"].as_str(), p["name"].as_str(), p["example"].as_str())
            {
                path_here = path_here.replace(&format!("{{{name}}}"), example);
            }
        }
        let url = format!("{}{}", svc.base, path_here);
        let mut body = op["requestBody"]["content"]["application/json"]["example"].clone();
        if path == "/v1/sessions" {
            // The example's folder, in the test's own work dir.
            body = start.clone();
        }
        let mut req = ureq::request(&method, &url)
            .set("Authorization", &format!("Bearer {TOKEN}"))
            .timeout(std::time::Duration::from_secs(10));
        let result = if body.is_null() {
            req.call()
        } else {
            req = req.set("Content-Type", "application/json");
            req.send_string(&body.to_string())
        };
        let resp = match result {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("{method} {path}: {e}"),
        };
        let status = resp.status().to_string();
        let content_type = resp.content_type().to_string();
        let text = resp.into_string().unwrap();
        let declared = op["responses"].get(&status).unwrap_or_else(|| {
            panic!("{method} {path} answered {status}, which the spec does not list: {text}")
        });
        let declared = match declared.get("$ref").and_then(Value::as_str) {
            Some(r) => resolve(&spec, r).clone(),
            None => declared.clone(),
        };
        let content = declared["content"].as_object().unwrap();
        let (media, media_spec) = content
            .iter()
            .find(|(media, _)| media.starts_with(&content_type))
            .unwrap_or_else(|| {
                panic!(
                    "{method} {path}: {content_type}, the spec says {:?}",
                    content.keys().collect::<Vec<_>>()
                )
            });
        if media == "application/json" {
            let value: Value = serde_json::from_str(&text).unwrap();
            let errors = validate(
                &spec,
                &media_spec["schema"],
                &value,
                &format!("{method} {path}"),
            );
            assert!(errors.is_empty(), "{errors:#?}\n{value:#}");
        }
        if media == "text/event-stream" {
            let events = sse_events(&text);
            assert!(events.last().is_some_and(|e| e["event"] == "end"), "{text}");
            for event in events {
                let errors = validate(&spec, &media_spec["schema"], &event, "stream");
                assert!(errors.is_empty(), "{errors:#?}\n{event:#}");
            }
        }
        eprintln!("{method} {path}: {status}");
    }
}

/// Server-Sent Events as a client parses them (the WHATWG rules the stream
/// uses): `id`, `event` and `data` (lines joined with LF) per event,
/// comments skipped, the last `id` carried over to an event without one.
fn sse_events(text: &str) -> Vec<Value> {
    let mut events = Vec::new();
    let mut last_id: Option<String> = None;
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let (mut event, mut data) = (None, Vec::new());
        for line in block.lines().filter(|l| !l.starts_with(':')) {
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => last_id = Some(value.to_string()),
                "event" => event = Some(value.to_string()),
                "data" => data.push(value),
                other => panic!("an SSE field the stream does not send: {other}"),
            }
        }
        let mut e =
            json!({"event": event.unwrap_or_else(|| "message".into()), "data": data.join("\n")});
        if let Some(id) = &last_id {
            e["id"] = json!(id);
        }
        events.push(e);
    }
    events
}

/// A request body's verdict by the spec's schema and by the server agree:
/// a body the schema allows is taken (2xx), one it forbids is refused with
/// a 4xx, so a client generated from the spec sends nothing the server
/// refuses and the spec states every rule the server holds a body to.
#[test]
fn the_request_schemas_allow_exactly_what_the_server_takes() {
    let spec = spec();
    let svc = Service::start(ROOM_CORE, json!({"copy_wait_ms": 600_000}));
    let folder = svc.folder("schema");
    let folder = folder.to_str().unwrap();
    let parent = "cr_00000000000000000000000000000001";
    let start = |extra: Value| {
        let mut body =
            json!({"workspace": "ws", "folder": folder, "harness": "claude", "project_copy": true});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let long = format!("/{}", "a".repeat(999));
    let too_long = format!("/{}", "a".repeat(1000));
    let starts = [
        start(json!({})),
        start(json!({"workspace": " \t"})),
        start(json!({"workspace": ""})),
        start(json!({"folder": "/"})),
        start(json!({"folder": "//"})),
        start(json!({"folder": "relative"})),
        start(json!({"folder": "/w/../x"})),
        start(json!({"folder": "/w/./x"})),
        start(json!({"folder": "/w/..x/.y/"})),
        start(json!({"folder": "/w/a\u{0}b"})),
        start(json!({"folder": long})),
        start(json!({"folder": too_long})),
        start(json!({"kind": "child"})),
        start(json!({"kind": "child", "parent": null})),
        start(json!({"kind": "side_chat", "parent": ""})),
        start(json!({"kind": "side_chat", "parent": parent})),
        start(json!({"kind": "side_chat", "parent": parent, "project_copy": false})),
        start(json!({"kind": "child", "parent": parent, "shared_sandbox": true})),
        start(
            json!({"kind": "child", "parent": parent, "shared_sandbox": true, "project_copy": false}),
        ),
        start(json!({"kind": "child", "parent": parent, "shared_sandbox": false})),
        start(json!({"kind": "thread", "parent": null, "prompt": null})),
        start(json!({"prompt": ""})),
        start(json!({"prompt": " \n"})),
        start(json!({"prompt": "go\u{0}"})),
        start(json!({"prompt": " go "})),
        start(json!({"bogus": 1})),
        start(json!({"harness": "gemini"})),
    ];
    let schema = json!({"$ref": "#/components/schemas/StartRequest"});
    for body in &starts {
        let allowed = validate(&spec, &schema, body, "start").is_empty();
        let (status, v) = svc.call("POST", "/v1/sessions", Some(&body.to_string()));
        assert_eq!(
            allowed,
            (200..300).contains(&status),
            "the spec {} {body}, the server answered {status} {v}",
            if allowed { "allows" } else { "forbids" }
        );
        if !allowed {
            assert_eq!(status, 422, "{body}: {v}");
        }
    }
    let s = svc.start_session(start(json!({})));
    let id = s["id"].as_str().unwrap();
    let schema = json!({"$ref": "#/components/schemas/MessageRequest"});
    for body in [
        json!({"prompt": "next"}),
        json!({"prompt": ""}),
        json!({"prompt": "\u{3000}\t"}),
        json!({"prompt": "a\u{0}"}),
        json!({"prompt": null}),
        json!({}),
    ] {
        let allowed = validate(&spec, &schema, &body, "message").is_empty();
        let (status, v) = svc.call(
            "POST",
            &format!("/v1/sessions/{id}/messages"),
            Some(&body.to_string()),
        );
        assert_eq!(allowed, status == 200, "{body}: {status} {v}");
    }
}
