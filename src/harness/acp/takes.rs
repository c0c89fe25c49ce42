//! What an ACP agent said it cannot take, as its probe read it at start
//! (`GET /v1/capabilities`' `initialize`): images in a prompt, HTTP MCP
//! servers. A start or message that gives one is refused before it is
//! accepted, not failed in a turn later; where the probe has not answered,
//! the turn's own `initialize` decides (talk.rs).

use serde_json::Value;

use crate::harness::mcp::McpServers;

/// Why agent `name`, whose probe reported `offers`, cannot take a prompt
/// with images (`images`) or the MCP servers `servers`: the refusal's
/// code and message, or `None` where it can.
pub fn not_taken(
    name: &str,
    offers: &Value,
    images: bool,
    servers: Option<&McpServers>,
) -> Option<(&'static str, String)> {
    if images && offers["images"] == false {
        return Some((
            "images_not_taken",
            format!(
                "The ACP agent {name} takes no images in a prompt (its initialize said no promptCapabilities.image)."
            ),
        ));
    }
    let http: Vec<&str> = servers
        .into_iter()
        .flatten()
        .filter(|(_, s)| s.url.is_some())
        .map(|(n, _)| n.as_str())
        .collect();
    if !http.is_empty() && offers["mcp"]["http"] == false {
        return Some((
            "mcp_http_not_taken",
            format!(
                "The ACP agent {name} takes no HTTP MCP servers (its initialize said no mcpCapabilities.http); mcp_servers gives it {}.",
                http.join(", ")
            ),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn images_and_http_servers_are_refused_only_where_the_agent_said_it_takes_none() {
        let servers: McpServers = serde_json::from_value(json!({
            "files": {"command": "mcp-files"},
            "web": {"url": "http://127.0.0.1:9/mcp"},
        }))
        .unwrap();
        let stdio: McpServers =
            serde_json::from_value(json!({"files": {"command": "mcp-files"}})).unwrap();
        let none = json!({"images": false, "mcp": {"http": false, "sse": false}});
        let all = json!({"images": true, "mcp": {"http": true, "sse": false}});
        assert_eq!(
            not_taken("a", &none, true, None),
            Some((
                "images_not_taken",
                "The ACP agent a takes no images in a prompt (its initialize said no promptCapabilities.image).".into()
            ))
        );
        assert_eq!(
            not_taken("a", &none, false, Some(&servers)),
            Some((
                "mcp_http_not_taken",
                "The ACP agent a takes no HTTP MCP servers (its initialize said no mcpCapabilities.http); mcp_servers gives it web.".into()
            ))
        );
        assert_eq!(not_taken("a", &none, false, Some(&stdio)), None);
        assert_eq!(not_taken("a", &all, true, Some(&servers)), None);
        // Not known yet (no answer, or an error): the turn decides.
        assert_eq!(not_taken("a", &Value::Null, true, Some(&servers)), None);
    }
}
