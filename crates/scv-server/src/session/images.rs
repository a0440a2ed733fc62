//! The images of a `turn.start` (capability `images`): decoded, bounded
//! and typed by their own bytes before anything is kept
//! (`scv_protocol::images` has the bounds), and refused in words when the
//! session's model cannot take them.

use super::reject::{invalid, Reject};
use crate::model::{Image, Text};
use base64::Engine as _;
use scv_protocol::images::{check_image, check_prompt_images, PromptImage};
use scv_protocol::ErrorCode;

/// Models known to take text only, by the start of their name (after any
/// `vendor/` prefix); a name that also says `vl` or `vision` is not one.
/// Any other model is sent the images; if it refuses them, its provider's
/// words fail the turn (`provider_error`).
const TEXT_ONLY_MODELS: &[&str] = &[
    "deepseek-chat",
    "deepseek-reasoner",
    "gpt-3.5",
    "o1-mini",
    "o3-mini",
    "codestral",
    "gpt-oss",
    "qwen3",
    "qwen2.5-coder",
];

/// Whether `model` is known not to take images.
pub(super) fn text_only(model: &str) -> bool {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    TEXT_ONLY_MODELS.iter().any(|p| name.starts_with(p))
        && !name.contains("vl")
        && !name.contains("vision")
}

/// The prompt's images as the history keeps them, or why they are refused.
pub(super) fn accept(
    images: Vec<PromptImage>,
    provider: &str,
    model: &str,
) -> Result<Vec<Image>, Reject> {
    if images.is_empty() {
        return Ok(Vec::new());
    }
    if text_only(model) {
        return Err(Reject::new(
            ErrorCode::Unsupported,
            format!(
                "model {model} (provider {provider}) does not take images; choose a model that does, or send the prompt without them"
            ),
        ));
    }
    // Counted before anything is decoded.
    check_prompt_images(images.len(), 0).map_err(invalid)?;
    let mut total = 0usize;
    let mut kept = Vec::with_capacity(images.len());
    for (index, image) in images.into_iter().enumerate() {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(image.data.as_bytes())
            .map_err(|err| invalid(format!("image {} is not standard base64: {err}", index + 1)))?;
        let mime = check_image(index, &bytes, Some(&image.mime_type)).map_err(invalid)?;
        total = total.saturating_add(bytes.len());
        check_prompt_images(index + 1, total).map_err(invalid)?;
        kept.push(Image {
            mime_type: mime.to_string(),
            data: Text::new(&image.data),
        });
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use scv_protocol::images::MAX_PROMPT_IMAGES;

    fn image(bytes: &[u8], mime: &str) -> PromptImage {
        PromptImage {
            mime_type: mime.into(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    #[test]
    fn images_are_checked_by_their_bytes() {
        let png = b"\x89PNG\r\n\x1a\nrest";
        let Ok(kept) = accept(vec![image(png, "image/png")], "p", "gpt-4.1-mini") else {
            panic!("refused")
        };
        assert_eq!(kept[0].mime_type, "image/png");
        assert_eq!(kept[0].decoded_len(), png.len());
        let refused = accept(vec![image(b"hello", "image/png")], "p", "m")
            .err()
            .unwrap();
        assert_eq!(refused.code, ErrorCode::InvalidRequest);
        assert!(refused.message.contains("not a PNG, JPEG, GIF or WebP"));
        let bad = PromptImage {
            mime_type: "image/png".into(),
            data: "not base64!".into(),
        };
        assert!(accept(vec![bad], "p", "m")
            .err()
            .unwrap()
            .message
            .contains("base64"));
        let many = vec![image(png, "image/png"); MAX_PROMPT_IMAGES + 1];
        assert!(accept(many, "p", "m")
            .err()
            .unwrap()
            .message
            .contains("at most 8"));
        let refused = accept(vec![image(png, "image/png")], "deepseek", "deepseek-chat")
            .err()
            .unwrap();
        assert_eq!(refused.code, ErrorCode::Unsupported);
        assert!(refused.message.contains("does not take images"));
    }

    #[test]
    fn text_only_models() {
        assert!(text_only("deepseek-chat"));
        assert!(text_only("openrouter/qwen3-coder"));
        assert!(!text_only("qwen3-vl-8b"));
        assert!(!text_only("gpt-4.1-mini"));
        assert!(!text_only("claude-sonnet-4-5"));
    }
}
