//! Images in a prompt: an `@path` mention of an image file in the
//! workspace (PNG, JPEG, GIF, WebP) sends the file with the prompt
//! (capability `images`), the mention staying in the text; a pasted path
//! of an image file (as a terminal pastes a dropped file) becomes such a
//! mention. Files are read and checked before sending
//! (`scv_client::images`); what is wrong is said on the hint line and the
//! prompt stays in the box.

use super::outgoing;
use super::{App, Outgoing};
use scv_protocol::PromptImage;
use std::path::Path;

impl App {
    /// The images `prompt` mentions, read and checked; `Err`: why not, in
    /// words.
    pub(super) fn prompt_images(&self, prompt: &str) -> Result<Vec<PromptImage>, String> {
        let Some(session) = self.session.as_ref() else {
            return Ok(Vec::new());
        };
        let paths = scv_client::images::mentioned(prompt, Path::new(&session.cwd));
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        scv_client::images::read_files(&paths)
    }

    /// `turn.start` for `prompt` with its `images`.
    pub(super) fn start_turn_with_images(
        &mut self,
        session_id: String,
        prompt: String,
        images: Vec<PromptImage>,
    ) -> Outgoing {
        if self.book.client.session_id().is_none() {
            self.book.client.set_session(session_id);
        }
        outgoing(self.book.client.submit_with_images(prompt, images))
    }
}

/// A paste that is one image file's path (absolute, possibly quoted or a
/// `file://` URL, without spaces) as the `@path ` mention that sends it.
pub(super) fn pasted_image(text: &str) -> Option<String> {
    let trimmed = text.trim().trim_matches(|c| c == '\'' || c == '"');
    let path = trimmed.strip_prefix("file://").unwrap_or(trimmed);
    let plain = path.starts_with('/') && !path.contains(char::is_whitespace);
    (plain && scv_client::images::is_image_name(path) && Path::new(path).is_file())
        .then(|| format!("@{path} "))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_pasted_image_path_becomes_a_mention() {
        let dir = tempfile::tempdir().unwrap();
        let shot = dir.path().join("shot.png");
        std::fs::write(&shot, b"\x89PNG\r\n\x1a\n").unwrap();
        let shown = shot.display().to_string();
        assert_eq!(
            super::pasted_image(&format!("'{shown}'\n")),
            Some(format!("@{shown} "))
        );
        assert_eq!(
            super::pasted_image(&format!("file://{shown}")),
            Some(format!("@{shown} "))
        );
        assert_eq!(super::pasted_image("some text"), None);
        assert_eq!(super::pasted_image("/no/such/file.png"), None);
    }
}
