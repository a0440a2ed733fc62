//! iLink wire types. Unknown fields are ignored; ids that may exceed 2^53
//! are read as numbers or strings and kept as strings.

use serde::{Deserialize, Deserializer, Serialize};

/// A u64 id that may arrive as a number or a string.
pub fn id_string<'de, D: Deserializer<'de>>(de: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        N(u64),
        S(String),
    }
    Ok(match Option::<Id>::deserialize(de)? {
        Some(Id::N(n)) => n.to_string(),
        Some(Id::S(s)) => s,
        None => String::new(),
    })
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WireMessage {
    #[serde(default)]
    pub seq: Option<u64>,
    #[serde(default, deserialize_with = "id_string")]
    pub message_id: String,
    #[serde(default)]
    pub from_user_id: String,
    #[serde(default)]
    pub to_user_id: String,
    #[serde(default)]
    pub client_id: String,
    #[serde(default)]
    pub create_time_ms: u64,
    #[serde(default)]
    pub session_id: String,
    #[serde(default)]
    pub group_id: String,
    /// 1 from a user, 2 from a bot.
    #[serde(default)]
    pub message_type: u32,
    #[serde(default)]
    pub message_state: u32,
    #[serde(default)]
    pub item_list: Vec<Item>,
    #[serde(default)]
    pub context_token: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Item {
    #[serde(rename = "type", default)]
    pub kind: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_item: Option<TextItem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice_item: Option<TextItem>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TextItem {
    #[serde(default)]
    pub text: String,
}

pub const ITEM_TEXT: u32 = 1;
pub const ITEM_IMAGE: u32 = 2;
pub const ITEM_VOICE: u32 = 3;

impl WireMessage {
    /// The message carries an image item. The protocol notes name the
    /// item type but not how its bytes are fetched (nor any key to
    /// decrypt them), so SCV cannot pass one on to a model.
    pub fn has_images(&self) -> bool {
        self.item_list.iter().any(|item| item.kind == ITEM_IMAGE)
    }

    /// The text of a message: its text items and voice transcripts.
    /// `None` when it carries nothing SCV understands.
    pub fn text(&self) -> Option<String> {
        let parts: Vec<&str> = self
            .item_list
            .iter()
            .filter_map(|item| match item.kind {
                ITEM_TEXT => item.text_item.as_ref().map(|t| t.text.as_str()),
                ITEM_VOICE => item
                    .voice_item
                    .as_ref()
                    .or(item.text_item.as_ref())
                    .map(|t| t.text.as_str()),
                _ => None,
            })
            .filter(|t| !t.trim().is_empty())
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n"))
    }
}

/// A `getupdates` reply, once its `ret`/`errcode` were checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Updates {
    pub msgs: Vec<WireMessage>,
    /// Empty when the server did not move the cursor.
    pub cursor: String,
    pub longpolling_timeout_ms: Option<u64>,
}

/// The QR code to show at login.
#[derive(Debug, Clone, PartialEq)]
pub struct QrCode {
    pub qrcode: String,
    /// A URL to render as a QR code.
    pub url: String,
}

/// One answer of the login status poll.
#[derive(Debug, Clone, PartialEq)]
pub enum QrStatus {
    Wait,
    Scanned,
    NeedVerifyCode,
    VerifyCodeBlocked,
    Expired,
    Redirect {
        host: String,
    },
    AlreadyBound,
    Confirmed {
        bot_token: String,
        bot_id: String,
        user_id: Option<String>,
        base_url: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_voice_transcripts_become_prompts_and_big_ids_survive() {
        let msg: WireMessage = serde_json::from_str(
            r#"{"message_id": 9007199254740993, "from_user_id": "u", "item_list": [
                {"type": 1, "text_item": {"text": "hello"}},
                {"type": 3, "voice_item": {"text": "and a voice note"}},
                {"type": 2}]}"#,
        )
        .unwrap();
        assert_eq!(msg.message_id, "9007199254740993");
        assert_eq!(msg.text().as_deref(), Some("hello\nand a voice note"));
        let image_only: WireMessage =
            serde_json::from_str(r#"{"message_id": "42", "item_list": [{"type": 2}]}"#).unwrap();
        assert_eq!(image_only.message_id, "42");
        assert_eq!(image_only.text(), None);
        assert!(image_only.has_images() && msg.has_images());
    }
}
