//! An ACP prompt (content blocks) as one SCV prompt (text). Text is kept
//! as is; an embedded text resource becomes a fenced block whose info
//! string names its URI; a resource link becomes a Markdown link the
//! model can follow with its file tools; a binary resource is named, not
//! included. Image blocks go with the prompt as its images (capability
//! `images` of the SCV protocol), checked here as the daemon checks them
//! (type by the bytes' signature, size, count) so an editor hears why at
//! once; audio is refused: `initialize` says the prompt capabilities do
//! not include it.

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use base64::Engine as _;
use scv_protocol::images::{check_image, check_prompt_images};
use scv_protocol::limits::MAX_PROMPT_BYTES;
use scv_protocol::PromptImage;

/// Why a prompt cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    #[error("{0} content is not supported (see promptCapabilities)")]
    Unsupported(&'static str),
    #[error("the prompt is empty")]
    Empty,
    #[error("the prompt is {0} bytes; SCV takes at most {MAX_PROMPT_BYTES}")]
    TooLong(usize),
    #[error("{0}")]
    Image(String),
}

/// A prompt as SCV sends it: its text and its images.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Rendered {
    pub text: String,
    pub images: Vec<PromptImage>,
}

/// The prompt's text (as [`render`] writes it) and its image blocks,
/// each checked.
pub fn render_with_images(blocks: &[ContentBlock]) -> Result<Rendered, PromptError> {
    let mut images = Vec::new();
    let mut total = 0usize;
    let mut rest = Vec::with_capacity(blocks.len());
    for block in blocks {
        let ContentBlock::Image(image) = block else {
            rest.push(block.clone());
            continue;
        };
        check_prompt_images(images.len() + 1, 0).map_err(PromptError::Image)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(image.data.as_bytes())
            .map_err(|err| {
                PromptError::Image(format!(
                    "image {} is not standard base64: {err}",
                    images.len() + 1
                ))
            })?;
        let mime = check_image(images.len(), &bytes, Some(&image.mime_type))
            .map_err(PromptError::Image)?;
        total += bytes.len();
        check_prompt_images(images.len() + 1, total).map_err(PromptError::Image)?;
        images.push(PromptImage {
            mime_type: mime.to_string(),
            data: image.data.clone(),
        });
    }
    let text = match render(&rest) {
        Err(PromptError::Empty) if !images.is_empty() => String::new(),
        other => other?,
    };
    Ok(Rendered { text, images })
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
    fn images_go_with_the_text() {
        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\nxyz");
        let rendered = render_with_images(&blocks(json!([
            {"type": "text", "text": "what is this?"},
            {"type": "image", "mimeType": "image/png", "data": png},
        ])))
        .unwrap();
        assert_eq!(rendered.text, "what is this?");
        assert_eq!(rendered.images[0].data, png);
        let only = render_with_images(&blocks(
            json!([{"type": "image", "mimeType": "image/png", "data": png}]),
        ))
        .unwrap();
        assert_eq!((only.text.as_str(), only.images.len()), ("", 1));
        let wrong = render_with_images(&blocks(
            json!([{"type": "image", "mimeType": "image/jpeg", "data": png}]),
        ));
        assert!(matches!(wrong, Err(PromptError::Image(m)) if m.contains("says image/jpeg")));
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
