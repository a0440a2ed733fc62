//! An image the user sent with a prompt (capability `images`), as the
//! history keeps it: its type and its bytes in standard base64, kept as a
//! [`Text`] so a wire's rendering can share the bytes rather than copy them.

use super::Text;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Image {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`, read from
    /// the bytes themselves (`scv_protocol::images::sniff`).
    pub mime_type: String,
    /// The bytes, standard base64.
    pub data: Text,
}

/// What an image counts for in the history's size and token estimates:
/// about what providers bill for one (Anthropic: width × height / 750
/// tokens, about 1,600 for a 1.15 megapixel image), not its bytes.
pub(crate) const IMAGE_WEIGHT: usize = 6 * 1024;

impl Image {
    /// `data:MIME;base64,DATA`, the URL both OpenAI wires take.
    pub(crate) fn data_url(&self) -> String {
        let data = self.data.as_str();
        let mut url = String::with_capacity(data.len() + self.mime_type.len() + 13);
        url.push_str("data:");
        url.push_str(&self.mime_type);
        url.push_str(";base64,");
        url.push_str(&data);
        url
    }

    /// Decoded size in bytes (from the base64's length).
    pub(crate) fn decoded_len(&self) -> usize {
        let data = self.data.as_str();
        let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
        (data.len() / 4 * 3).saturating_sub(padding)
    }

    /// The line that stands for an image whose bytes the history let go.
    pub(crate) fn dropped_note(&self) -> String {
        format!(
            "[an image ({}, {} KiB) was here; SCV keeps a session's last {} images, {} MiB at most]",
            self.mime_type,
            self.decoded_len().div_ceil(1024),
            scv_protocol::images::MAX_SESSION_IMAGES,
            scv_protocol::images::MAX_SESSION_IMAGE_BYTES / (1024 * 1024)
        )
    }
}
