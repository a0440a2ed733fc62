//! An ACP prompt (content blocks) as one SCV prompt (text). Text is kept
//! as is; an embedded text resource becomes a fenced block whose info
//! string names its URI; a resource link becomes a Markdown link the
//! model can follow with its file tools; a binary resource is named, not
//! included. Images and audio are refused: `initialize` says the prompt
//! capabilities do not include them.

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use scv_protocol::limits::MAX_PROMPT_BYTES;

/// Why a prompt cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    #[error("{0} content is not supported (see promptCapabilities)")]
    Unsupported(&'static str),
    #[error("the prompt is empty")]
    Empty,
    #[error("the prompt is {0} bytes; SCV takes at most {MAX_PROMPT_BYTES}")]
    TooLong(usize),
}

/// The prompt's blocks, in order, separated by blank lines.
pub fn render(blocks: &[ContentBlock]) -> Result<String, PromptError> {
    let mut parts: Vec<String> = Vec::with_capacity(blocks.len());
    for block in blocks {
        let part = match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(text) => {
                    fenced(&text.uri, &text.text)
                }
                EmbeddedResourceResource::BlobResourceContents(blob) => format!(
                    "(binary resource {}{} not included)",
                    blob.uri,
                    blob.mime_type
                        .as_deref()
                        .map(|m| format!(", {m},"))
                        .unwrap_or_default()
                ),
                _ => return Err(PromptError::Unsupported("this resource")),
            },
            ContentBlock::ResourceLink(link) => format!("[{}]({})", link.name, link.uri),
            ContentBlock::Image(_) => return Err(PromptError::Unsupported("image")),
            ContentBlock::Audio(_) => return Err(PromptError::Unsupported("audio")),
            _ => return Err(PromptError::Unsupported("this kind of")),
        };
        if !part.trim().is_empty() {
            parts.push(part);
        }
    }
    let prompt = parts.join("\n\n");
    if prompt.trim().is_empty() {
        return Err(PromptError::Empty);
    }
    if prompt.len() > MAX_PROMPT_BYTES {
        return Err(PromptError::TooLong(prompt.len()));
    }
    Ok(prompt)
}

/// `text` in a code fence longer than any backtick run inside it, the
/// info string naming `uri`.
fn fenced(uri: &str, text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let newline = if text.ends_with('\n') { "" } else { "\n" };
    format!("{fence}{uri}\n{text}{newline}{fence}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    fn blocks(value: serde_json::Value) -> Vec<ContentBlock> {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_and_resources() {
        let prompt = render(&blocks(json!([
            {"type": "text", "text": "Fix the bug in"},
            {"type": "resource", "resource": {"uri": "file:///p/src/lib.rs", "mimeType": "text/x-rust", "text": "fn main() {}\n"}},
            {"type": "resource_link", "name": "main.rs", "uri": "file:///p/src/main.rs"},
            {"type": "resource", "resource": {"uri": "file:///p/a.png", "mimeType": "image/png", "blob": "iVBORw0KGgo="}},
        ])))
        .unwrap();
        assert_eq!(
            prompt,
            "Fix the bug in\n\n```file:///p/src/lib.rs\nfn main() {}\n```\n\n[main.rs](file:///p/src/main.rs)\n\n(binary resource file:///p/a.png, image/png, not included)"
        );
    }

    #[test]
    fn a_fence_outgrows_backticks_inside() {
        assert_eq!(fenced("u", "a ```` b"), "`````u\na ```` b\n`````");
        assert_eq!(fenced("u", "x"), "```u\nx\n```");
    }

    #[test]
    fn refusals() {
        let image = blocks(json!([{"type": "image", "mimeType": "image/png", "data": "AA=="}]));
        assert_eq!(render(&image), Err(PromptError::Unsupported("image")));
        assert_eq!(
            render(&blocks(json!([{"type": "text", "text": "  "}]))),
            Err(PromptError::Empty)
        );
        let long = "x".repeat(MAX_PROMPT_BYTES + 1);
        assert!(matches!(
            render(&blocks(json!([{"type": "text", "text": long}]))),
            Err(PromptError::TooLong(_))
        ));
    }
}
