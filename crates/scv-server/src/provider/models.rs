//! The models a provider offers: `GET {base_url}/models` with the
//! request's own authentication (OpenAI, Anthropic, Gemini's OpenAI
//! endpoint, OpenRouter, Ollama and LM Studio all answer
//! `{"data": [{"id": …}, …]}`). Bounded in time, body and count.

use super::settings::Provider;
use std::time::Duration;

/// How long the list may take.
pub(crate) const MODELS_TIMEOUT: Duration = Duration::from_secs(5);
/// Most of the answer read.
const MAX_BODY: usize = 1024 * 1024;
/// Most ids kept (sorted).
pub(crate) const MAX_MODELS: usize = 500;

impl Provider {
    /// The ids of the models the provider lists, sorted; or why not, in
    /// words (never the key).
    pub(crate) async fn list_models(&self) -> Result<Vec<String>, String> {
        if let Some(message) = self.missing_key_message("the models were not asked for") {
            return Err(message);
        }
        let url = format!("{}/models", self.base_url.trim_end_matches('/'));
        let request =
            super::http::authorized(self, self.http.get(&url), super::spec(self.wire).auth);
        let answer = async {
            let mut response = request
                .send()
                .await
                .map_err(|err| format!("cannot reach {url}: {}", super::http::describe(&err)))?;
            let status = response.status();
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|err| err.to_string())? {
                body.extend_from_slice(&chunk);
                if body.len() > MAX_BODY {
                    return Err(format!("the model list of {url} is over 1 MiB"));
                }
            }
            if !status.is_success() {
                return Err(format!("{url} answered HTTP {status}"));
            }
            Ok(body)
        };
        let body = tokio::time::timeout(MODELS_TIMEOUT, answer)
            .await
            .map_err(|_| format!("{url} did not answer within {} s", MODELS_TIMEOUT.as_secs()))??;
        parse(&body).ok_or_else(|| format!("{url} did not answer with a model list"))
    }
}

/// `{"data": [{"id": …}]}` → the ids, sorted, at most [`MAX_MODELS`].
fn parse(body: &[u8]) -> Option<Vec<String>> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let mut ids: Vec<String> = value
        .get("data")?
        .as_array()?
        .iter()
        .filter_map(|m| m.get("id")?.as_str())
        .filter(|id| !id.is_empty() && id.len() <= 256)
        .map(String::from)
        .collect();
    ids.sort();
    ids.dedup();
    ids.truncate(MAX_MODELS);
    Some(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_read_sorted_and_bounded() {
        let body =
            br#"{"object":"list","data":[{"id":"b"},{"id":"a"},{"id":""},{"x":1},{"id":"a"}]}"#;
        assert_eq!(parse(body), Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(parse(b"{}"), None);
        assert_eq!(parse(b"not json"), None);
    }
}
