//! Prompts and resources of the connected servers: a server's prompt run
//! as a command (`/mcp__SERVER__PROMPT args`), and a resource attached to
//! a prompt (`@SERVER:URI`). Both are fetched when asked for, so a
//! server's `prompts/list_changed` and `resources/list_changed` never
//! leave a stale copy behind. Bounded: [`CONTENT_TIMEOUT`] a request,
//! [`MAX_PROMPT_TEXT_BYTES`] of a prompt's text, the caller's cap on a
//! resource's text; `prompts/list` read for at most 16 pages.

use crate::hub::{CallError, Hub};
use rmcp::model::{
    ClientRequest, GetPromptRequest, GetPromptRequestParams, ListPromptsRequest,
    PaginatedRequestParams, ReadResourceRequest, ReadResourceRequestParams, ServerResult,
};
use rmcp::{Peer, RoleClient};
use serde_json::{Map, Value};
use std::time::Duration;

/// How long a prompt or resource request waits for its answer.
pub const CONTENT_TIMEOUT: Duration = Duration::from_secs(15);
/// A prompt's text (its messages together) kept at most.
pub const MAX_PROMPT_TEXT_BYTES: usize = 256 * 1024;
const MAX_PAGES: usize = 16;

/// `/mcp__SERVER__PROMPT rest` split: the server, the prompt, the rest.
pub fn prompt_command(text: &str) -> Option<(&str, &str, &str)> {
    let rest = text.strip_prefix("/mcp__")?;
    let (server, rest) = rest.split_once("__")?;
    let (prompt, args) = match rest.split_once(char::is_whitespace) {
        Some((prompt, args)) => (prompt, args.trim()),
        None => (rest, ""),
    };
    (!server.is_empty() && !prompt.is_empty()).then_some((server, prompt, args))
}

impl Hub {
    /// Runs prompt `name` of `server` with `args` (`key=value` words, or
    /// words given to the declared arguments in order; with one declared
    /// argument, all of `args`); its messages' text.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        args: &str,
    ) -> Result<String, CallError> {
        let (peer, _) = self.link(server).await?;
        let declared = bounded(declared_arguments(&peer, name)).await??;
        let Some(declared) = declared else {
            return Err(CallError::Failed(format!(
                "MCP server `{server}` has no prompt `{name}`"
            )));
        };
        let arguments = arguments(&declared, args)?;
        let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(
            GetPromptRequestParams::new(name).with_arguments(arguments),
        ));
        let result = bounded(peer.send_request(request)).await?;
        let value = match result {
            Ok(ServerResult::GetPromptResult(result)) => {
                serde_json::to_value(&result).unwrap_or_default()
            }
            Ok(ServerResult::CustomResult(custom)) => custom.0,
            Ok(_) => {
                return Err(CallError::Failed(
                    "prompts/get answered something else".into(),
                ))
            }
            Err(err) => return Err(CallError::Failed(crate::errors::service(&err))),
        };
        let mut text = String::new();
        for message in value["messages"].as_array().into_iter().flatten() {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(&block_text(&message["content"]));
        }
        Ok(cut(text, MAX_PROMPT_TEXT_BYTES))
    }

    /// The text of resource `uri` of `server`, at most `cap` bytes (a
    /// binary resource is described, not included).
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
        cap: usize,
    ) -> Result<String, CallError> {
        let (peer, _) = self.link(server).await?;
        let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
            ReadResourceRequestParams::new(uri),
        ));
        let value = match bounded(peer.send_request(request)).await? {
            Ok(ServerResult::ReadResourceResult(result)) => {
                serde_json::to_value(&result).unwrap_or_default()
            }
            Ok(ServerResult::CustomResult(custom)) => custom.0,
            Ok(_) => {
                return Err(CallError::Failed(
                    "resources/read answered something else".into(),
                ))
            }
            Err(err) => return Err(CallError::Failed(crate::errors::service(&err))),
        };
        let parts: Vec<String> = value["contents"]
            .as_array()
            .into_iter()
            .flatten()
            .map(contents_text)
            .collect();
        Ok(cut(parts.join("\n"), cap))
    }
}

async fn bounded<T>(work: impl std::future::Future<Output = T>) -> Result<T, CallError> {
    tokio::time::timeout(CONTENT_TIMEOUT, work)
        .await
        .map_err(|_| CallError::TimedOut(CONTENT_TIMEOUT))
}

/// The declared arguments of prompt `name` (name, required), or `None`
/// when the server lists no such prompt.
async fn declared_arguments(
    peer: &Peer<RoleClient>,
    name: &str,
) -> Result<Option<Vec<(String, bool)>>, CallError> {
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let request = ClientRequest::ListPromptsRequest(ListPromptsRequest::with_param(
            PaginatedRequestParams::default().with_cursor(cursor.take()),
        ));
        let page = match peer.send_request(request).await {
            Ok(ServerResult::ListPromptsResult(result)) => {
                serde_json::to_value(&result).unwrap_or_default()
            }
            Ok(ServerResult::CustomResult(custom)) => custom.0,
            Ok(_) => {
                return Err(CallError::Failed(
                    "prompts/list answered something else".into(),
                ))
            }
            Err(err) => {
                return Err(CallError::Failed(format!(
                    "prompts/list failed: {}",
                    crate::errors::service(&err)
                )))
            }
        };
        let found = page["prompts"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"] == name);
        if let Some(prompt) = found {
            let declared = prompt["arguments"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|a| Some((a["name"].as_str()?.to_string(), a["required"] == true)))
                .collect();
            return Ok(Some(declared));
        }
        cursor = page["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    Ok(None)
}

/// `args` given to the declared arguments.
fn arguments(declared: &[(String, bool)], args: &str) -> Result<Map<String, Value>, CallError> {
    let mut given = Map::new();
    fn named<'w>(declared: &[(String, bool)], word: &'w str) -> Option<(&'w str, &'w str)> {
        word.split_once('=')
            .filter(|(key, _)| declared.iter().any(|(name, _)| name == key))
    }
    let words: Vec<&str> = args.split_whitespace().collect();
    if declared.len() == 1
        && !args.is_empty()
        && !words.iter().all(|w| named(declared, w).is_some())
    {
        given.insert(declared[0].0.clone(), Value::String(args.to_string()));
    } else {
        let mut positional = declared.iter().map(|(name, _)| name);
        for word in words {
            match named(declared, word) {
                Some((key, value)) => {
                    given.insert(key.to_string(), Value::String(value.to_string()));
                }
                None => match positional.find(|name| !given.contains_key(name.as_str())) {
                    Some(name) => {
                        given.insert(name.clone(), Value::String(word.to_string()));
                    }
                    None => {
                        return Err(CallError::Failed(format!(
                            "too many arguments: `{word}` (the prompt takes {})",
                            names(declared)
                        )))
                    }
                },
            }
        }
    }
    let missing: Vec<&str> = declared
        .iter()
        .filter(|(name, required)| *required && !given.contains_key(name))
        .map(|(name, _)| name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(CallError::Failed(format!(
            "missing {} (the prompt takes {})",
            missing.join(", "),
            names(declared)
        )));
    }
    Ok(given)
}

fn names(declared: &[(String, bool)]) -> String {
    if declared.is_empty() {
        return "no arguments".into();
    }
    declared
        .iter()
        .map(|(name, required)| {
            if *required {
                name.clone()
            } else {
                format!("[{name}]")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A content block as text.
fn block_text(block: &Value) -> String {
    match block["type"].as_str() {
        Some("text") => block["text"].as_str().unwrap_or_default().to_string(),
        Some("resource") => contents_text(&block["resource"]),
        Some(kind) => format!("[{kind} content]"),
        None => String::new(),
    }
}

/// A resource's contents as text.
fn contents_text(contents: &Value) -> String {
    if let Some(text) = contents["text"].as_str() {
        return text.to_string();
    }
    let mime = contents["mimeType"].as_str().unwrap_or("binary");
    let bytes = contents["blob"].as_str().map_or(0, |b| b.len() / 4 * 3);
    format!("[{mime} resource of about {bytes} bytes, not included]")
}

fn cut(mut text: String, cap: usize) -> String {
    if text.len() > cap {
        let mut end = cap;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let more = text.len() - end;
        text.truncate(end);
        text.push_str(&format!("\n… ({more} more bytes cut)"));
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn commands_and_arguments_are_read() {
        assert_eq!(
            prompt_command("/mcp__fake__review  src/main.rs "),
            Some(("fake", "review", "src/main.rs"))
        );
        assert_eq!(
            prompt_command("/mcp__fake__greet"),
            Some(("fake", "greet", ""))
        );
        assert_eq!(prompt_command("/mcp__fake"), None);
        assert_eq!(prompt_command("/review"), None);
        let one = [("topic".to_string(), true)];
        assert_eq!(arguments(&one, "two words").unwrap()["topic"], "two words");
        let two = [("name".to_string(), true), ("tone".to_string(), false)];
        let given = arguments(&two, "tone=warm Ada").unwrap();
        assert_eq!(
            (given["name"].as_str(), given["tone"].as_str()),
            (Some("Ada"), Some("warm"))
        );
        assert!(arguments(&two, "")
            .unwrap_err()
            .to_string()
            .contains("missing name"));
        assert!(arguments(&two, "a b c")
            .unwrap_err()
            .to_string()
            .contains("too many"));
    }
}
