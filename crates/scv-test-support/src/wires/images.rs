//! Images in provider requests: each wire's shape for an image in a user
//! message, read back to the exact bytes a provider would decode.
//!
//! - Chat Completions: a content part `{"type": "image_url", "image_url":
//!   {"url": "data:MIME;base64,DATA"}}` (OpenAI API reference, "Create
//!   chat completion": `ChatCompletionContentPartImageParam`, whose
//!   `image_url.url` is "either a URL of the image or the base64 encoded
//!   image data"; `detail` optional).
//! - Responses: a content part `{"type": "input_image", "image_url":
//!   "data:MIME;base64,DATA", "detail": "auto"}` (OpenAI API reference,
//!   "Create a model response": `ResponseInputImage`, `detail` one of
//!   `low`, `high`, `auto` and required).
//! - Anthropic Messages: a content block `{"type": "image", "source":
//!   {"type": "base64", "media_type": MIME, "data": DATA}}` (Anthropic's
//!   Messages API reference, `ImageBlockParam` / `Base64ImageSource`,
//!   `media_type` one of `image/jpeg`, `image/png`, `image/gif`,
//!   `image/webp`; the "Vision" guide).

use crate::reply::Wire;
use base64::Engine as _;
use serde_json::Value;

/// The media types all three wires take.
pub const MEDIA_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// One image a request carried, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentImage {
    pub mime_type: String,
    pub bytes: Vec<u8>,
}

/// The images in `body`'s user messages, in order, each read by its
/// wire's shape; the first malformed one is an error naming where it is.
pub fn images(wire: Wire, body: &Value) -> Result<Vec<SentImage>, String> {
    let mut out = Vec::new();
    for (at, part) in parts(wire, body) {
        let image = match wire {
            Wire::Chat => data_url(at.clone(), &part["image_url"]["url"]),
            Wire::Responses => {
                let detail = part["detail"].as_str().unwrap_or("");
                if !["low", "high", "auto"].contains(&detail) {
                    return Err(format!("{at}: `detail` must be low, high or auto"));
                }
                data_url(at.clone(), &part["image_url"])
            }
            Wire::Anthropic => {
                let source = &part["source"];
                if source["type"] != "base64" {
                    return Err(format!("{at}: source.type must be \"base64\""));
                }
                let mime = source["media_type"].as_str().unwrap_or("").to_string();
                decode(&at, source["data"].as_str().unwrap_or("")).map(|bytes| SentImage {
                    mime_type: mime,
                    bytes,
                })
            }
        }?;
        if !MEDIA_TYPES.contains(&image.mime_type.as_str()) {
            return Err(format!(
                "{at}: media type {:?} is not one the API takes",
                image.mime_type
            ));
        }
        out.push(image);
    }
    Ok(out)
}

/// The image parts of the user messages, with where each is.
fn parts(wire: Wire, body: &Value) -> Vec<(String, Value)> {
    let (list, kind) = match wire {
        Wire::Chat => (&body["messages"], "image_url"),
        Wire::Responses => (&body["input"], "input_image"),
        Wire::Anthropic => (&body["messages"], "image"),
    };
    let mut out = Vec::new();
    for (index, message) in list.as_array().into_iter().flatten().enumerate() {
        if message["role"] != "user" {
            continue;
        }
        for (i, part) in message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            if part["type"] == kind {
                out.push((format!("message {index} part {i}"), part.clone()));
            }
        }
    }
    out
}

fn data_url(at: String, url: &Value) -> Result<SentImage, String> {
    let url = url.as_str().unwrap_or("");
    let rest = url
        .strip_prefix("data:")
        .ok_or_else(|| format!("{at}: the image URL is not a data: URL"))?;
    let (mime, data) = rest
        .split_once(";base64,")
        .ok_or_else(|| format!("{at}: the data: URL is not `MIME;base64,DATA`"))?;
    Ok(SentImage {
        mime_type: mime.to_string(),
        bytes: decode(&at, data)?,
    })
}

fn decode(at: &str, data: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|err| format!("{at}: the image data is not standard base64: {err}"))
}

/// The image rules `body` breaks (for `check_request`).
pub fn check(wire: Wire, body: &Value) -> Vec<String> {
    images(wire, body).err().into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_wire_reads_back_its_shape() {
        let chat = json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
        ]}]});
        let got = images(Wire::Chat, &chat).unwrap();
        assert_eq!(got[0].mime_type, "image/png");
        assert_eq!(got[0].bytes, [0x89, b'P', b'N', b'G']);
        let responses = json!({"input": [{"type": "message", "role": "user", "content": [
            {"type": "input_image", "image_url": "data:image/gif;base64,R0lG"},
        ]}]});
        assert!(check(Wire::Responses, &responses)[0].contains("detail"));
        let anthropic = json!({"messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": "Qk0="}},
        ]}]});
        assert!(check(Wire::Anthropic, &anthropic)[0].contains("image/bmp"));
    }
}
