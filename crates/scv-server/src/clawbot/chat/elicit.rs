//! An MCP server's question (capability `elicitation`, asked only by the
//! owner's sessions, the ones with tools) asked of the owner in chat, and
//! only the owner's reply answers it. One question at a time: the next
//! ([`MAX_QUESTIONS`] wait at most; past it they are declined) is asked
//! once this one is answered.
//!
//! A form is answered in one message, one line per field in the order
//! listed (an empty line leaves a field empty: its default, if any);
//! each line is checked against its field and the whole against the
//! schema before it is sent, and what is wrong is said (the question
//! stays open). A link is shown, never opened; `done` says the owner
//! finished there. `decline` or `cancel` answer either. While a question
//! waits, the owner's messages (other than `/` commands) are its answer,
//! not prompts. The answers typed are the owner's own chat; nothing else
//! carries them.

use super::Chat;
use scv_client::text::visible;
use scv_protocol::elicit_form::{self, Kind};
use scv_protocol::{ClientMessage, ElicitationAction, ElicitationRequested, ElicitationResolve};
use serde_json::Value;

/// Questions waiting in one chat, the one asked included.
pub(super) const MAX_QUESTIONS: usize = 16;

impl Chat {
    /// A server asks: the text to send the chat now (`None`: it waits
    /// behind the one asked, or was declined).
    pub(super) async fn question(
        &mut self,
        asked: ElicitationRequested,
        owner: bool,
    ) -> Option<String> {
        if !owner || self.questions.len() >= MAX_QUESTIONS {
            self.resolve_question(&asked.elicitation_id, ElicitationAction::Decline, None)
                .await;
            return None;
        }
        self.questions.push_back(asked);
        (self.questions.len() == 1).then(|| self.questions.front().map(question_text))?
    }

    /// The owner's message `text` as the answer to the question asked:
    /// `None` when none waits; else what to tell the chat (what was wrong,
    /// or that it was sent and the next question).
    pub(super) async fn answer_question(&mut self, text: &str) -> Option<String> {
        let asked = self.questions.front()?.clone();
        let (action, content) = match reply(&asked, text) {
            Ok(answer) => answer,
            Err(why) => {
                return Some(format!(
                    "Not sent: {why}. Reply again, or decline / cancel."
                ))
            }
        };
        self.questions.pop_front();
        self.resolve_question(&asked.elicitation_id, action, content)
            .await;
        let how = match action {
            ElicitationAction::Accept => "Sent.",
            ElicitationAction::Decline => "Declined.",
            ElicitationAction::Cancel => "Cancelled.",
        };
        Some(match self.questions.front() {
            Some(next) => format!("{how}\n\n{}", question_text(next)),
            None => how.to_string(),
        })
    }

    async fn resolve_question(
        &mut self,
        elicitation_id: &str,
        action: ElicitationAction,
        content: Option<Value>,
    ) {
        let session_id = self.client.session_id().unwrap_or_default().to_string();
        let resolve = self
            .client
            .request(ClientMessage::ElicitationResolve(ElicitationResolve {
                session_id,
                elicitation_id: elicitation_id.to_string(),
                action,
                content,
            }));
        self.send(&resolve).await;
    }
}

/// The question as the chat shows it.
fn question_text(asked: &ElicitationRequested) -> String {
    let mut text = format!(
        "MCP server `{}` asks: {}",
        visible(&asked.server),
        visible(&asked.message)
    );
    if let Some(url) = &asked.url {
        text.push_str(&format!(
            "\n\nOpen this link yourself (SCV does not open it):\n{}\n\nReply done once you have finished there, or decline / cancel.",
            visible(url)
        ));
        return text;
    }
    let fields = asked
        .schema
        .as_ref()
        .map(elicit_form::fields)
        .unwrap_or_default();
    if fields.is_empty() {
        text.push_str("\n\nReply yes to accept, or decline / cancel.");
        return text;
    }
    text.push_str("\n\nReply with one line per field, in this order:");
    for (n, field) in fields.iter().enumerate() {
        let required = if field.required { ", required" } else { "" };
        text.push_str(&format!(
            "\n{}. {} — {}{required}",
            n + 1,
            visible(&field.title),
            field.takes()
        ));
        if let Some(description) = &field.description {
            text.push_str(&format!(" ({})", visible(description)));
        }
    }
    text.push_str("\nOr reply decline / cancel.");
    text
}

/// What the owner's `text` answers to `asked`.
fn reply(
    asked: &ElicitationRequested,
    text: &str,
) -> Result<(ElicitationAction, Option<Value>), String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "decline" => return Ok((ElicitationAction::Decline, None)),
        "cancel" => return Ok((ElicitationAction::Cancel, None)),
        _ => {}
    }
    if asked.url.is_some() {
        return match text.trim().to_ascii_lowercase().as_str() {
            "done" | "yes" | "y" => Ok((ElicitationAction::Accept, None)),
            _ => Err("reply done, decline or cancel".into()),
        };
    }
    let schema = asked.schema.clone().unwrap_or(Value::Null);
    let fields = elicit_form::fields(&schema);
    if fields.is_empty() {
        return match text.trim().to_ascii_lowercase().as_str() {
            "yes" | "y" => Ok((ElicitationAction::Accept, Some(serde_json::json!({})))),
            _ => Err("reply yes, decline or cancel".into()),
        };
    }
    // Missing last lines leave their fields empty.
    let mut lines: Vec<&str> = text.trim_end().lines().collect();
    if lines.len() > fields.len() {
        return Err(format!(
            "{} line(s) are needed, one per field; that was {}",
            fields.len(),
            lines.len()
        ));
    }
    lines.resize(fields.len(), "");
    let mut values = Vec::with_capacity(fields.len());
    for (field, line) in fields.iter().zip(&lines) {
        if field.kind == Kind::Other {
            return Err(format!("`{}` cannot be filled in here", field.key));
        }
        values.push(field.parse(line)?);
    }
    let content = elicit_form::content(&fields, &values);
    elicit_form::check_content(&schema, &content)?;
    Ok((ElicitationAction::Accept, Some(content)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn form() -> ElicitationRequested {
        ElicitationRequested {
            elicitation_id: "e".into(),
            server: "fake".into(),
            message: "Who?".into(),
            schema: Some(json!({"type":"object","properties":{
                "name":{"type":"string","minLength":2},
                "age":{"type":"integer"}},"required":["name"]})),
            url: None,
        }
    }

    #[test]
    fn a_form_is_one_line_per_field_checked_before_it_is_sent() {
        let asked = form();
        let text = question_text(&asked);
        assert!(text.contains("1. age — a whole number\n"), "{text}");
        assert!(text.contains("2. name — text, required"), "{text}");
        assert_eq!(
            reply(&asked, "36\nAda").unwrap(),
            (
                ElicitationAction::Accept,
                Some(json!({"name":"Ada","age":36}))
            )
        );
        assert_eq!(
            reply(&asked, "\nAda").unwrap().1,
            Some(json!({"name":"Ada"})),
            "an empty line leaves its field empty"
        );
        assert!(reply(&asked, "3\nA").unwrap_err().contains("at least 2"));
        assert!(reply(&asked, "3").unwrap_err().contains("required"));
        assert!(reply(&asked, "old\nAda").unwrap_err().contains("whole"));
        assert!(reply(&asked, "Ada\n1\n2")
            .unwrap_err()
            .contains("2 line(s)"));
        assert_eq!(
            reply(&asked, " Decline ").unwrap().0,
            ElicitationAction::Decline
        );
        let mut link = form();
        link.schema = None;
        link.url = Some("https://example.com/x".into());
        assert!(question_text(&link).contains("https://example.com/x"));
        assert_eq!(
            reply(&link, "done").unwrap(),
            (ElicitationAction::Accept, None)
        );
        assert!(reply(&link, "Ada").is_err());
    }
}
