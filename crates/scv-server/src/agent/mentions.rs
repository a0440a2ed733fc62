//! `@SERVER:URI` in a prompt attaches that MCP resource: the turn reads
//! it (`resources/read`) before the prompt goes to the model, and appends
//! its text below the prompt, as a file's would be. Only a word naming a
//! configured MCP server counts (so `@user:pass` or an e-mail stays
//! text); at most [`MAX_MENTIONS`] resources a prompt, each cut at
//! [`MAX_RESOURCE_BYTES`]; a resource that cannot be read is said so in
//! the prompt instead. Every client gets this, whatever it sends.

use tokio_util::sync::CancellationToken;

/// Resources attached to one prompt at most (the rest stay text).
pub(crate) const MAX_MENTIONS: usize = 8;
/// A resource's text attached at most.
pub(crate) const MAX_RESOURCE_BYTES: usize = 64 * 1024;

/// The `(server, uri)` mentions of `prompt` whose server is one of
/// `servers`, in order, without repeats, at most [`MAX_MENTIONS`].
pub(crate) fn mentions(prompt: &str, servers: &[String]) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    for word in prompt.split_whitespace() {
        let Some(rest) = word.strip_prefix('@') else {
            continue;
        };
        let Some((server, uri)) = rest.split_once(':') else {
            continue;
        };
        // Trailing punctuation of a sentence is not part of the URI.
        let uri = uri.trim_end_matches(['.', ',', ';', ')', '!', '?']);
        if uri.is_empty() || !servers.iter().any(|s| s == server) {
            continue;
        }
        let pair = (server.to_string(), uri.to_string());
        if !found.contains(&pair) {
            found.push(pair);
        }
        if found.len() == MAX_MENTIONS {
            break;
        }
    }
    found
}

/// `prompt` with its mentioned resources appended.
pub(crate) async fn attach(
    hub: &scv_mcp::Hub,
    prompt: String,
    cancel: &CancellationToken,
) -> String {
    if !prompt.contains('@') {
        return prompt;
    }
    let servers: Vec<String> = hub.status().await.into_iter().map(|s| s.name).collect();
    let wanted = mentions(&prompt, &servers);
    if wanted.is_empty() {
        return prompt;
    }
    hub.wait_started().await;
    let mut out = prompt;
    for (server, uri) in wanted {
        let read = tokio::select! {
            read = hub.read_resource(&server, &uri, MAX_RESOURCE_BYTES) => read,
            () = cancel.cancelled() => return out,
        };
        let attr = |s: &str| s.replace('"', "&quot;");
        match read {
            Ok(text) => out.push_str(&format!(
                "\n\n<mcp-resource server=\"{}\" uri=\"{}\">\n{text}\n</mcp-resource>",
                attr(&server),
                attr(&uri)
            )),
            Err(err) => out.push_str(&format!(
                "\n\n(@{server}:{uri} could not be attached: {err})"
            )),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_configured_servers_are_mentions() {
        let servers = vec!["docs".to_string(), "fake".to_string()];
        let found = mentions(
            "see @docs:guide://intro, and @fake:file:///a.txt. not @me:x nor a@docs:y @docs:guide://intro",
            &servers,
        );
        assert_eq!(
            found,
            vec![
                ("docs".to_string(), "guide://intro".to_string()),
                ("fake".to_string(), "file:///a.txt".to_string())
            ]
        );
        let many: String = (0..20).map(|i| format!("@docs:r{i} ")).collect();
        assert_eq!(mentions(&many, &servers).len(), MAX_MENTIONS);
    }
}
