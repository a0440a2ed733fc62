//! A `tools/call` result as text for the model: text parts joined; images,
//! audio and resources one line each; structured content when there is no
//! text.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// The text and whether the server said the call failed (`isError`).
pub(crate) fn render(result: &CallToolResult) -> (String, bool) {
    let mut parts: Vec<String> = Vec::new();
    for block in &result.content {
        parts.push(match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Image(image) => format!(
                "[image {}, {} bytes]",
                image.mime_type,
                decoded_len(&image.data)
            ),
            ContentBlock::Audio(audio) => format!(
                "[audio {}, {} bytes]",
                audio.mime_type,
                decoded_len(&audio.data)
            ),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    format!("[resource {uri}, {} bytes of text]\n{text}", text.len())
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => format!(
                    "[resource {uri}, {}, {} bytes]",
                    mime_type.as_deref().unwrap_or("binary"),
                    decoded_len(blob)
                ),
                _ => "[resource]".to_string(),
            },
            ContentBlock::ResourceLink(link) => {
                format!("[resource link {} ({})]", link.uri, link.name)
            }
            _ => "[content SCV does not show]".to_string(),
        });
    }
    if parts.is_empty() {
        if let Some(structured) = &result.structured_content {
            parts.push(structured.to_string());
        }
    }
    (parts.join("\n"), result.is_error.unwrap_or(false))
}

/// The size base64 `data` decodes to.
fn decoded_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_of_content_becomes_text() {
        let result: CallToolResult = serde_json::from_value(json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "body"}},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA", "mimeType": "application/zip"}},
            {"type": "resource_link", "uri": "file:///c", "name": "c"},
        ], "isError": true}))
        .unwrap();
        let (text, error) = render(&result);
        assert!(error);
        assert_eq!(
            text,
            "hello\n[image image/png, 8 bytes]\n[audio audio/wav, 3 bytes]\n[resource file:///a.txt, 4 bytes of text]\nbody\n[resource file:///b.bin, application/zip, 3 bytes]\n[resource link file:///c (c)]"
        );
        let structured: CallToolResult =
            serde_json::from_value(json!({"content": [], "structuredContent": {"n": 1}})).unwrap();
        assert_eq!(render(&structured), ("{\"n\":1}".into(), false));
    }
}
