//! Elicitation: a server asking the user something in the middle of a
//! tool call (`elicitation/create`, form or URL mode). The call's session
//! passes an [`Elicitor`] with the call; while the call runs, the server's
//! requests go to the elicitor of the latest call still running on that
//! server. With none (no call running, or a session whose client did not
//! ask for elicitation) SCV declines at once. Every question is bounded:
//! [`ELICITATION_TIMEOUT`] to answer (then it is cancelled), a message of
//! at most [`MAX_ELICITATION_MESSAGE_BYTES`], a schema of at most
//! [`MAX_ELICITATION_SCHEMA_BYTES`].

use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a question waits for its answer before it is cancelled.
pub const ELICITATION_TIMEOUT: Duration = Duration::from_secs(600);
/// The longest message passed on (longer ones are cut).
pub const MAX_ELICITATION_MESSAGE_BYTES: usize = 4096;
/// The largest requested schema passed on (a larger one is declined).
pub const MAX_ELICITATION_SCHEMA_BYTES: usize = 64 * 1024;

/// What a server asks.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationRequest {
    pub server: String,
    pub message: String,
    /// Form mode: the requested schema (an object of primitive fields).
    pub schema: Option<Value>,
    /// URL mode: the page the user opens.
    pub url: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElicitAction {
    Accept,
    Decline,
    Cancel,
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitAnswer {
    pub action: ElicitAction,
    /// Form mode, accepted: the content (checked against the schema).
    pub content: Option<Value>,
}

impl ElicitAnswer {
    pub fn decline() -> ElicitAnswer {
        ElicitAnswer {
            action: ElicitAction::Decline,
            content: None,
        }
    }

    pub fn cancel() -> ElicitAnswer {
        ElicitAnswer {
            action: ElicitAction::Cancel,
            content: None,
        }
    }
}

/// Asks the user on behalf of one call.
pub type Elicitor = Arc<
    dyn Fn(ElicitationRequest) -> Pin<Box<dyn Future<Output = ElicitAnswer> + Send>> + Send + Sync,
>;

/// The elicitors of a server's running calls, latest last.
#[derive(Default)]
pub(crate) struct Askers {
    next: AtomicU64,
    list: Mutex<Vec<(u64, Elicitor)>>,
}

/// Removes its elicitor when the call ends.
pub(crate) struct Asking {
    askers: Arc<Askers>,
    id: u64,
}

impl Askers {
    pub(crate) fn register(self: &Arc<Self>, elicitor: Elicitor) -> Asking {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.list).push((id, elicitor));
        Asking {
            askers: self.clone(),
            id,
        }
    }

    /// The elicitor of the latest running call, if any.
    pub(crate) fn current(&self) -> Option<Elicitor> {
        lock(&self.list).last().map(|(_, e)| e.clone())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Drop for Asking {
    fn drop(&mut self) {
        lock(&self.askers.list).retain(|(id, _)| *id != self.id);
    }
}

/// Whether `content` is what `schema` (MCP's restricted elicitation
/// schema: an object whose properties are strings, numbers, integers,
/// booleans, or enums of strings) asks for; the error says what is not.
pub fn check_content(schema: &Value, content: &Value) -> Result<(), String> {
    let Some(object) = content.as_object() else {
        return Err("the content must be an object".into());
    };
    let empty = serde_json::Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !object.contains_key(required) {
            return Err(format!("`{required}` is required"));
        }
    }
    for (key, value) in object {
        let Some(field) = properties.get(key) else {
            return Err(format!("`{key}` is not a field of the form"));
        };
        check_field(key, field, value)?;
    }
    Ok(())
}

fn check_field(key: &str, field: &Value, value: &Value) -> Result<(), String> {
    let kind = field.get("type").and_then(Value::as_str).unwrap_or("");
    let number = |name: &str| field.get(name).and_then(Value::as_f64);
    match kind {
        "string" => {
            let Some(text) = value.as_str() else {
                return Err(format!("`{key}` must be a string"));
            };
            let chars = text.chars().count() as u64;
            if let Some(min) = field.get("minLength").and_then(Value::as_u64) {
                if chars < min {
                    return Err(format!("`{key}` must be at least {min} characters"));
                }
            }
            if let Some(max) = field.get("maxLength").and_then(Value::as_u64) {
                if chars > max {
                    return Err(format!("`{key}` must be at most {max} characters"));
                }
            }
            let allowed = field
                .get("enum")
                .or_else(|| field.get("oneOf"))
                .and_then(Value::as_array);
            if let Some(allowed) = allowed {
                let ok = allowed.iter().any(|option| {
                    option.as_str() == Some(text)
                        || option.get("const").and_then(Value::as_str) == Some(text)
                });
                if !ok {
                    return Err(format!("`{key}` must be one of the offered values"));
                }
            }
            Ok(())
        }
        "number" | "integer" => {
            let Some(n) = value.as_f64() else {
                return Err(format!("`{key}` must be a number"));
            };
            if kind == "integer" && !(value.is_i64() || value.is_u64()) {
                return Err(format!("`{key}` must be an integer"));
            }
            if number("minimum").is_some_and(|min| n < min) {
                return Err(format!("`{key}` is below its minimum"));
            }
            if number("maximum").is_some_and(|max| n > max) {
                return Err(format!("`{key}` is above its maximum"));
            }
            Ok(())
        }
        "boolean" if value.is_boolean() => Ok(()),
        "boolean" => Err(format!("`{key}` must be true or false")),
        "array" => {
            // Multi-select: strings from the offered items.
            let Some(items) = value.as_array() else {
                return Err(format!("`{key}` must be a list"));
            };
            if items.iter().all(Value::is_string) {
                Ok(())
            } else {
                Err(format!("`{key}` must be a list of strings"))
            }
        }
        _ => Err(format!("`{key}` has a type SCV does not fill in")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_is_checked_against_the_form() {
        let schema = json!({"type":"object","properties":{
            "name":{"type":"string","minLength":2},
            "age":{"type":"integer","minimum":0,"maximum":150},
            "color":{"type":"string","enum":["red","green"]},
            "ok":{"type":"boolean"}},"required":["name"]});
        assert!(check_content(
            &schema,
            &json!({"name":"Ada","age":36,"color":"red","ok":true})
        )
        .is_ok());
        let refused = [
            (json!({"age":3}), "`name` is required"),
            (json!({"name":"A"}), "at least 2"),
            (json!({"name":"Ada","age":1.5}), "integer"),
            (json!({"name":"Ada","age":200}), "maximum"),
            (json!({"name":"Ada","color":"blue"}), "offered values"),
            (json!({"name":"Ada","ok":"yes"}), "true or false"),
            (json!({"name":"Ada","extra":1}), "not a field"),
            (json!("Ada"), "an object"),
        ];
        for (content, why) in refused {
            let err = check_content(&schema, &content).unwrap_err();
            assert!(err.contains(why), "{content}: {err}");
        }
    }

    #[test]
    fn the_latest_running_call_is_asked_and_a_finished_one_no_longer() {
        let askers = Arc::new(Askers::default());
        assert!(askers.current().is_none());
        let first: Elicitor = Arc::new(|_| Box::pin(async { ElicitAnswer::decline() }));
        let second: Elicitor = Arc::new(|_| Box::pin(async { ElicitAnswer::cancel() }));
        let a = askers.register(first.clone());
        let b = askers.register(second.clone());
        assert!(Arc::ptr_eq(&askers.current().unwrap(), &second));
        drop(b);
        assert!(Arc::ptr_eq(&askers.current().unwrap(), &first));
        drop(a);
        assert!(askers.current().is_none());
    }
}
