//! `turn.start.images` on the host's side (capability `images`): checked
//! for the session's model before anything else happens
//! (`session::images`), and never queued.

use super::SessionHost;
use crate::model::Image;
use crate::session::reject::{check_prompt, Reject};
use scv_protocol::{ErrorCode, PromptImage};

impl SessionHost {
    /// The prompt's images, checked; none for a connection without the
    /// capability (the field is an unknown one there, ignored).
    pub(super) fn accept_images(
        &mut self,
        session_id: &str,
        images: Vec<PromptImage>,
    ) -> Result<Vec<Image>, Reject> {
        if !crate::gate::Capability::Images.granted(&self.caps) || images.is_empty() {
            return Ok(Vec::new());
        }
        let provider = &self.session(session_id)?.settings.provider;
        crate::session::images::accept(images, &provider.name, &provider.model)
    }
}

/// The prompt's text checked; with images it may be empty.
pub(super) fn check_text(prompt: &str, images: &[Image]) -> Result<(), Reject> {
    match images.is_empty() || !prompt.trim().is_empty() {
        true => check_prompt(prompt),
        false => Ok(()),
    }
}

/// A prompt with images does not wait in the queue.
pub(super) fn queueable(images: &[Image]) -> Result<(), Reject> {
    match images.is_empty() {
        true => Ok(()),
        false => Err(Reject::new(
            ErrorCode::TurnActive,
            "a prompt with images does not wait in the queue: send it when the running turn ends",
        )),
    }
}
