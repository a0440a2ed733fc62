//! Extension (capability `images`): images sent with a prompt.
//!
//! `turn.start` gains `images`: a list of `{mime_type, data}`, `data` the
//! image's bytes in standard base64 (RFC 4648, padded, no line breaks).
//! Only a connection that asked for capability `images` has the field
//! honoured (and may send the larger frames it needs); for any other the
//! field is an unknown one and, as protocol version 2 says, ignored.
//!
//! The bounds, checked by the server and by SCV's own clients before
//! sending: at most [`MAX_PROMPT_IMAGES`] images per prompt, each at most
//! [`MAX_IMAGE_BYTES`] decoded and all of a prompt's together at most
//! [`MAX_PROMPT_IMAGE_BYTES`]; the type is read from the bytes' own
//! signature (PNG, JPEG, GIF, WebP: what all three provider wires take),
//! and a `mime_type` that says otherwise is refused.

use serde::{Deserialize, Serialize};

const MIB: usize = 1024 * 1024;

/// Largest image, decoded (Anthropic's Messages API takes at most 5 MB
/// per image; OpenAI's wires take more).
pub const MAX_IMAGE_BYTES: usize = 5 * MIB;
/// Images one prompt may carry.
pub const MAX_PROMPT_IMAGES: usize = 8;
/// All images of one prompt together, decoded.
pub const MAX_PROMPT_IMAGE_BYTES: usize = 20 * MIB;
/// Images whose bytes a session's history keeps: when a prompt brings
/// more, the oldest are replaced by a line of text naming them (the model
/// no longer sees them; the journal keeps what the history keeps).
pub const MAX_SESSION_IMAGES: usize = 16;
/// The bytes (decoded) of the images a session's history keeps, as
/// [`MAX_SESSION_IMAGES`] bounds their count.
pub const MAX_SESSION_IMAGE_BYTES: usize = 32 * MIB;
/// The client frame limit of a connection with capability `images`: the
/// ordinary limit plus the base64 of a prompt's images at their bound.
pub const MAX_IMAGES_CLIENT_FRAME_BYTES: usize =
    crate::limits::MAX_CLIENT_FRAME_BYTES + base64_len(MAX_PROMPT_IMAGE_BYTES) + 64 * 1024;

/// The image types SCV sends to providers.
pub const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// One image of a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptImage {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime_type: String,
    /// The bytes, standard base64.
    pub data: String,
}

/// Bytes of the base64 of `bytes` bytes (padded).
pub const fn base64_len(bytes: usize) -> usize {
    bytes.div_ceil(3) * 4
}

/// The image type the bytes' signature names, if it is one SCV takes.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Why an image is refused, in words for the user.
pub fn check_image(
    index: usize,
    bytes: &[u8],
    claimed: Option<&str>,
) -> Result<&'static str, String> {
    let number = index + 1;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(format!(
            "image {number} is {} bytes; an image may have at most {MAX_IMAGE_BYTES} ({} MiB)",
            bytes.len(),
            MAX_IMAGE_BYTES / MIB
        ));
    }
    let Some(found) = sniff(bytes) else {
        return Err(format!(
            "image {number} is not a PNG, JPEG, GIF or WebP image (by its first bytes)"
        ));
    };
    match claimed {
        Some(claimed) if !claimed.eq_ignore_ascii_case(found) => Err(format!(
            "image {number} says {claimed} but its bytes are {found}"
        )),
        _ => Ok(found),
    }
}

/// Checks a prompt's count and total size.
pub fn check_prompt_images(count: usize, total_bytes: usize) -> Result<(), String> {
    if count > MAX_PROMPT_IMAGES {
        return Err(format!(
            "the prompt has {count} images; a prompt may have at most {MAX_PROMPT_IMAGES}"
        ));
    }
    if total_bytes > MAX_PROMPT_IMAGE_BYTES {
        return Err(format!(
            "the prompt's images are {total_bytes} bytes together; at most {MAX_PROMPT_IMAGE_BYTES} ({} MiB)",
            MAX_PROMPT_IMAGE_BYTES / MIB
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_name_the_type() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF89a.."), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WAVEfmt "), None);
        assert_eq!(sniff(b"<svg"), None);
        assert_eq!(
            check_image(0, b"GIF89a", Some("image/GIF")),
            Ok("image/gif")
        );
        assert!(check_image(1, b"GIF89a", Some("image/png"))
            .unwrap_err()
            .contains("image 2 says image/png but its bytes are image/gif"));
        assert!(check_prompt_images(MAX_PROMPT_IMAGES + 1, 0).is_err());
        assert!(check_prompt_images(1, MAX_PROMPT_IMAGE_BYTES + 1).is_err());
        assert!(check_prompt_images(MAX_PROMPT_IMAGES, MAX_PROMPT_IMAGE_BYTES).is_ok());
    }

    #[test]
    fn the_frame_limit_holds_a_prompt_at_its_bounds() {
        assert_eq!(base64_len(3), 4);
        assert_eq!(base64_len(4), 8);
        assert!(MAX_IMAGES_CLIENT_FRAME_BYTES > base64_len(MAX_PROMPT_IMAGE_BYTES) + MIB);
    }
}
