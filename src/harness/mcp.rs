//! The MCP servers a session's harness gets: a map of name to a stdio
//! server (`command`, `args`, `env`) or an HTTP server (`url`, `headers`).
//! The values under `env` and `headers` are secrets: they go to the CLI
//! (claude in a file only it reads, codex in its thread's config, never
//! on a command line) and nowhere else: a view shows their names, an error
//! names the server and the variable, never a value.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// One MCP server, as the app gives it. Its `Debug` shows no secret.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    /// A stdio server's program: an absolute path, or a name on `PATH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Its environment (secret values).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// An HTTP server's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent to it (secret values).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

impl std::fmt::Debug for McpServer {
    /// The names of its variables and headers, never their values.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A session's MCP servers, by name.
pub type McpServers = BTreeMap<String, McpServer>;

/// The most servers a session may have.
pub const MAX_SERVERS: usize = 32;
/// The most arguments, variables or headers one server may have.
pub const MAX_ITEMS: usize = 64;
/// The longest command, argument, value or URL, in characters.
pub const MAX_TEXT: usize = 4096;

/// Whether `name` has a shell variable's shape (what both CLIs take as a
/// server's and an environment variable's name): a letter or `_`, then
/// letters, digits and `_`, at most 64 characters.
fn shell_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `name` is an HTTP header's name (RFC 9110's token).
fn header_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 256
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}

/// Text a CLI can take as one value: at most [`MAX_TEXT`] characters, no
/// NUL byte, and (`line`) no line break, which a header cannot hold.
fn text(value: &str, line: bool) -> bool {
    value.chars().count() <= MAX_TEXT
        && !value.contains('\0')
        && !(line && value.contains(['\r', '\n']))
}

/// Why `servers` cannot be given to a CLI, naming the server and the field
/// (never a value under `env` or `headers`). A bare command name is taken
/// as it is: the CLI looks it up on the harness's `PATH` when it starts the
/// server (a rule the API could state only against the service's own
/// `PATH`, which no spec can).
pub fn check(servers: &McpServers) -> Result<(), String> {
    if servers.len() > MAX_SERVERS {
        return Err(format!(
            "mcp_servers may name at most {MAX_SERVERS} servers; this names {}.",
            servers.len()
        ));
    }
    for (name, s) in servers {
        if !shell_name(name) {
            return Err(format!(
                "MCP server name {name:?} must be a letter or _ then letters, digits and _, at most 64 characters."
            ));
        }
        let fail = |what: String| Err(format!("MCP server {name}: {what}"));
        match (&s.command, &s.url) {
            (Some(command), None) => {
                if !s.headers.is_empty() {
                    return fail("headers are for an HTTP server (url), not a command.".into());
                }
                if command.is_empty() || !text(command, true) {
                    return fail(format!(
                        "command must be 1 to {MAX_TEXT} characters on one line, without a NUL byte."
                    ));
                }
                if !command.starts_with('/') && command.contains('/') {
                    return fail(format!(
                        "command {command:?} must be an absolute path or a program's name (found on PATH)."
                    ));
                }
                if s.args.len() > MAX_ITEMS || s.args.iter().any(|a| !text(a, false)) {
                    return fail(format!(
                        "args must be at most {MAX_ITEMS}, each at most {MAX_TEXT} characters without a NUL byte."
                    ));
                }
                if s.env.len() > MAX_ITEMS {
                    return fail(format!("env may hold at most {MAX_ITEMS} variables."));
                }
                for (var, value) in &s.env {
                    if !shell_name(var) {
                        return fail(format!(
                            "env name {var:?} must be a letter or _ then letters, digits and _."
                        ));
                    }
                    if !text(value, false) {
                        return fail(format!(
                            "the value of {var} must be at most {MAX_TEXT} characters without a NUL byte."
                        ));
                    }
                }
            }
            (None, Some(url)) => {
                if !s.args.is_empty() || !s.env.is_empty() {
                    return fail(
                        "args and env are for a stdio server (command), not a url.".into(),
                    );
                }
                let scheme = url.starts_with("http://") || url.starts_with("https://");
                // No space or control character: the spec's pattern, exactly.
                if !scheme || !text(url, true) || url.chars().any(|c| c <= ' ') {
                    return fail(format!(
                        "url must be an http:// or https:// URL of at most {MAX_TEXT} characters, without spaces."
                    ));
                }
                if s.headers.len() > MAX_ITEMS {
                    return fail(format!("headers may hold at most {MAX_ITEMS} headers."));
                }
                for (header, value) in &s.headers {
                    if !header_name(header) {
                        return fail(format!(
                            "header name {header:?} is not an HTTP header's name."
                        ));
                    }
                    if !text(value, true) {
                        return fail(format!(
                            "the value of header {header} must be at most {MAX_TEXT} characters on one line."
                        ));
                    }
                }
            }
            _ => {
                return fail("give either command (a stdio server) or url (an HTTP server).".into())
            }
        }
    }
    Ok(())
}

/// Each server's shape for a reader, by name: `stdio(command, server)`
/// for a stdio server, `http(url, server)` for an HTTP one.
fn by_name(
    servers: &McpServers,
    stdio: impl Fn(&str, &McpServer) -> Value,
    http: impl Fn(&str, &McpServer) -> Value,
) -> Value {
    let shaped: serde_json::Map<String, Value> = servers
        .iter()
        .map(|(name, s)| {
            let v = match (&s.command, &s.url) {
                (Some(command), _) => stdio(command, s),
                (None, url) => http(url.as_deref().unwrap_or_default(), s),
            };
            (name.clone(), v)
        })
        .collect();
    Value::Object(shaped)
}

/// What a view shows of `servers`: everything but the secret values (the
/// names of its variables and headers only).
pub fn shown(servers: &McpServers) -> Value {
    let names = |m: &BTreeMap<String, String>| m.keys().cloned().collect::<Vec<_>>();
    by_name(
        servers,
        |command, s| json!({"command": command, "args": s.args, "env": names(&s.env)}),
        |url, s| json!({"url": url, "headers": names(&s.headers)}),
    )
}

/// claude's `--mcp-config` file: `{"mcpServers": {name: {type, …}}}`.
pub fn claude_config(servers: &McpServers) -> Value {
    let servers = by_name(
        servers,
        |command, s| json!({"type": "stdio", "command": command, "args": s.args, "env": s.env}),
        |url, s| json!({"type": "http", "url": url, "headers": s.headers}),
    );
    json!({ "mcpServers": servers })
}

/// codex's thread `config` for them: its `mcp_servers` table, as its
/// config.toml writes it (`command`, `args`, `env`; `url`,
/// `http_headers`). With `unasked`, their tools run without asking
/// (`default_tools_approval_mode: approve`), as claude's do through
/// `--allowedTools`; otherwise codex asks, as it does for any tool.
pub fn codex_config(servers: &McpServers, unasked: bool) -> Value {
    let approve = |mut server: Value| {
        if unasked {
            server["default_tools_approval_mode"] = json!("approve");
        }
        server
    };
    let servers = by_name(
        servers,
        |command, s| approve(json!({"command": command, "args": s.args, "env": s.env})),
        |url, s| approve(json!({"url": url, "http_headers": s.headers})),
    );
    json!({ "mcp_servers": servers })
}

/// An ACP agent's `mcpServers` list: `{name, command, args, env}` for a
/// stdio server, `{type: "http", name, url, headers}` for an HTTP one,
/// variables and headers as `{name, value}` lists.
pub fn acp_servers(servers: &McpServers) -> Value {
    let pairs = |m: &BTreeMap<String, String>| {
        m.iter()
            .map(|(name, value)| json!({"name": name, "value": value}))
            .collect::<Vec<_>>()
    };
    let shaped = by_name(
        servers,
        |command, s| json!({"command": command, "args": s.args, "env": pairs(&s.env)}),
        |url, s| json!({"type": "http", "url": url, "headers": pairs(&s.headers)}),
    );
    let Value::Object(shaped) = shaped else {
        return json!([]);
    };
    let list = shaped.into_iter().map(|(name, mut server)| {
        server["name"] = json!(name);
        server
    });
    Value::Array(list.collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers(v: Value) -> McpServers {
        serde_json::from_value(v).unwrap()
    }

    fn checked(v: Value) -> Result<(), String> {
        check(&servers(v))
    }

    #[test]
    fn stdio_and_http_servers_are_taken() {
        let ok = json!({
            "files": {"command": "/usr/bin/mcp-files", "args": ["--root", "/code"], "env": {"TOKEN": "s3cret"}},
            "npm": {"command": "npx", "args": ["-y", "server"]},
            "web": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer s3cret"}},
        });
        assert_eq!(checked(ok), Ok(()));
    }

    #[test]
    fn a_refusal_names_the_server_and_field_and_never_a_secret() {
        let cases = [
            (json!({"1bad": {"command": "/x"}}), "MCP server name \"1bad\" must be a letter or _ then letters, digits and _, at most 64 characters."),
            (json!({"s": {}}), "MCP server s: give either command (a stdio server) or url (an HTTP server)."),
            (json!({"s": {"command": "/x", "url": "https://x"}}), "MCP server s: give either command (a stdio server) or url (an HTTP server)."),
            (json!({"s": {"command": "./rel"}}), "MCP server s: command \"./rel\" must be an absolute path or a program's name (found on PATH)."),
            (json!({"s": {"command": "/x", "env": {"A-B": "s3cret"}}}), "MCP server s: env name \"A-B\" must be a letter or _ then letters, digits and _."),
            (json!({"s": {"command": "/x", "env": {"A": "s3cret\u{0}"}}}), "MCP server s: the value of A must be at most 4096 characters without a NUL byte."),
            (json!({"s": {"url": "ftp://x"}}), "MCP server s: url must be an http:// or https:// URL of at most 4096 characters, without spaces."),
            (json!({"s": {"url": "https://x", "headers": {"X": "s3cret\nInjected: 1"}}}), "MCP server s: the value of header X must be at most 4096 characters on one line."),
            (json!({"s": {"url": "https://x", "headers": {"Bad Name": "v"}}}), "MCP server s: header name \"Bad Name\" is not an HTTP header's name."),
            (json!({"s": {"url": "https://x", "env": {"A": "s3cret"}}}), "MCP server s: args and env are for a stdio server (command), not a url."),
        ];
        for (v, want) in cases {
            let got = checked(v.clone()).unwrap_err();
            assert_eq!(got, want, "{v}");
            assert!(!got.contains("s3cret"), "{got}");
        }
        let many: serde_json::Map<String, Value> = (0..=MAX_SERVERS)
            .map(|i| (format!("s{i}"), json!({"command": "/x"})))
            .collect();
        assert_eq!(
            checked(Value::Object(many)),
            Err("mcp_servers may name at most 32 servers; this names 33.".into())
        );
    }

    #[test]
    fn a_view_shows_names_and_each_cli_gets_its_own_shape() {
        let s = servers(json!({
            "files": {"command": "/usr/bin/mcp-files", "args": ["-v"], "env": {"TOKEN": "s3cret"}},
            "web": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer s3cret"}},
        }));
        let shown = shown(&s);
        assert_eq!(
            shown,
            json!({
                "files": {"command": "/usr/bin/mcp-files", "args": ["-v"], "env": ["TOKEN"]},
                "web": {"url": "https://mcp.example.com/mcp", "headers": ["Authorization"]},
            })
        );
        assert!(!shown.to_string().contains("s3cret"));
        assert!(!format!("{s:?}").contains("s3cret"), "{s:?}");
        assert_eq!(
            claude_config(&s),
            json!({"mcpServers": {
                "files": {"type": "stdio", "command": "/usr/bin/mcp-files", "args": ["-v"], "env": {"TOKEN": "s3cret"}},
                "web": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer s3cret"}},
            }})
        );
        assert_eq!(
            codex_config(&s, false),
            json!({"mcp_servers": {
                "files": {"command": "/usr/bin/mcp-files", "args": ["-v"], "env": {"TOKEN": "s3cret"}},
                "web": {"url": "https://mcp.example.com/mcp", "http_headers": {"Authorization": "Bearer s3cret"}},
            }})
        );
        assert_eq!(
            acp_servers(&s),
            json!([
                {"name": "files", "command": "/usr/bin/mcp-files", "args": ["-v"], "env": [{"name": "TOKEN", "value": "s3cret"}]},
                {"type": "http", "name": "web", "url": "https://mcp.example.com/mcp", "headers": [{"name": "Authorization", "value": "Bearer s3cret"}]},
            ])
        );
        let unasked = codex_config(&s, true);
        assert_eq!(
            unasked["mcp_servers"]["files"]["default_tools_approval_mode"],
            "approve"
        );
        assert_eq!(
            unasked["mcp_servers"]["web"]["default_tools_approval_mode"],
            "approve"
        );
    }
}
