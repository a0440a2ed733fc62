//! The form of an `elicitation.requested` (MCP's restricted elicitation
//! schema: an object whose properties are strings, numbers, integers,
//! booleans, single-choice enums of strings and multi-choice lists of
//! them) as the front ends fill it in, and the check of an answer against
//! it. The daemon checks every `elicitation.resolve` with
//! [`check_content`]; front ends check with it before they send, so the
//! user hears what is wrong while still answering.
//!
//! [`fields`] reads the schema into [`Field`]s (by key, at most
//! [`MAX_FORM_FIELDS`]); [`Field::parse`] turns what the user typed into
//! the field's value, checked against the field.

use serde_json::{Map, Value};

/// Fields read from one schema; a form with more is shown with these.
pub const MAX_FORM_FIELDS: usize = 64;

/// One offered value of a choice: what is sent, and what is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub value: String,
    pub label: String,
}

/// What a field takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Text,
    Number,
    Integer,
    Boolean,
    /// One of these.
    Choice(Vec<Choice>),
    /// Any of these (a list).
    Choices(Vec<Choice>),
    /// A type the restricted schema does not have: never filled in.
    Other,
}

/// One field of the form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The property's name (what the answer's key is).
    pub key: String,
    /// Its `title`, else its key.
    pub title: String,
    pub description: Option<String>,
    pub kind: Kind,
    pub required: bool,
    /// Its `default`, taken when the answer is left empty.
    pub default: Option<Value>,
    /// The property's schema, for the check.
    schema: Value,
}

/// The fields of `schema` by their keys' alphabetical order (a JSON
/// object's order is not kept by every reader on the way, so this is the
/// one order every front end shows alike), at most [`MAX_FORM_FIELDS`].
pub fn fields(schema: &Value) -> Vec<Field> {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut keys: Vec<&String> = properties.keys().collect();
    keys.sort();
    keys.into_iter()
        .take(MAX_FORM_FIELDS)
        .filter_map(|key| Some((key, properties.get(key)?)))
        .map(|(key, property)| {
            let text = |name: &str| property.get(name).and_then(Value::as_str);
            Field {
                key: key.clone(),
                title: text("title").unwrap_or(key).to_string(),
                description: text("description").map(str::to_string),
                kind: kind(property),
                required: required.contains(&key.as_str()),
                default: property.get("default").cloned(),
                schema: property.clone(),
            }
        })
        .collect()
}

/// The choices of an `enum` (with `enumNames`) or a `oneOf`/`anyOf` of
/// `const`s (with `title`s), if `schema` offers any.
fn choices(schema: &Value) -> Option<Vec<Choice>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .filter_map(|(n, value)| {
                    let value = value.as_str()?.to_string();
                    let label = names
                        .and_then(|names| names.get(n))
                        .and_then(Value::as_str)
                        .map_or_else(|| value.clone(), str::to_string);
                    Some(Choice { value, label })
                })
                .collect(),
        );
    }
    let options = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)?;
    Some(
        options
            .iter()
            .filter_map(|option| {
                let value = option.get("const")?.as_str()?.to_string();
                let label = option
                    .get("title")
                    .and_then(Value::as_str)
                    .map_or_else(|| value.clone(), str::to_string);
                Some(Choice { value, label })
            })
            .collect(),
    )
}

fn kind(property: &Value) -> Kind {
    match property.get("type").and_then(Value::as_str).unwrap_or("") {
        "string" => choices(property).map_or(Kind::Text, Kind::Choice),
        "number" => Kind::Number,
        "integer" => Kind::Integer,
        "boolean" => Kind::Boolean,
        "array" => property
            .get("items")
            .and_then(choices)
            .map_or(Kind::Other, Kind::Choices),
        _ => Kind::Other,
    }
}

impl Field {
    /// What the field takes, in words: `text`, `a whole number`, `yes or
    /// no`, `one of: 1 red, 2 green`.
    pub fn takes(&self) -> String {
        let listed = |choices: &[Choice]| {
            choices
                .iter()
                .enumerate()
                .map(|(n, c)| format!("{} {}", n + 1, c.label))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match &self.kind {
            Kind::Text => "text".into(),
            Kind::Number => "a number".into(),
            Kind::Integer => "a whole number".into(),
            Kind::Boolean => "yes or no".into(),
            Kind::Choice(choices) => format!("one of: {}", listed(choices)),
            Kind::Choices(choices) => format!("any of (comma-separated): {}", listed(choices)),
            Kind::Other => "a value SCV cannot fill in".into(),
        }
    }

    /// What the user typed as this field's value, checked against the
    /// field; `None`: left empty (and not required, no default). A choice
    /// is its number, its value or its label.
    pub fn parse(&self, typed: &str) -> Result<Option<Value>, String> {
        let text = typed.trim();
        let key = &self.key;
        if text.is_empty() && !matches!(self.kind, Kind::Choices(_)) {
            return match (&self.default, self.required) {
                (Some(default), _) => Ok(Some(default.clone())),
                (None, true) => Err(format!("`{key}` is required")),
                (None, false) => Ok(None),
            };
        }
        let value = match &self.kind {
            Kind::Text => Value::String(typed.trim_end_matches(['\r', '\n']).to_string()),
            Kind::Number => text
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| format!("`{key}` must be a number"))?,
            Kind::Integer => text
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("`{key}` must be a whole number"))?,
            Kind::Boolean => match text.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" | "on" | "1" => Value::Bool(true),
                "n" | "no" | "false" | "off" | "0" => Value::Bool(false),
                _ => return Err(format!("`{key}` must be yes or no")),
            },
            Kind::Choice(choices) => Value::String(pick(choices, text, key)?),
            Kind::Choices(choices) => Value::Array(
                text.split(',')
                    .map(str::trim)
                    .filter(|item| !item.is_empty())
                    .map(|item| pick(choices, item, key).map(Value::String))
                    .collect::<Result<_, _>>()?,
            ),
            Kind::Other => return Err(format!("`{key}` has a type SCV does not fill in")),
        };
        check_field(key, &self.schema, &value)?;
        Ok(Some(value))
    }
}

/// The choice `typed` names: its number (from 1), its value or its label.
fn pick(choices: &[Choice], typed: &str, key: &str) -> Result<String, String> {
    if let Ok(n) = typed.parse::<usize>() {
        if let Some(choice) = n.checked_sub(1).and_then(|i| choices.get(i)) {
            return Ok(choice.value.clone());
        }
    }
    choices
        .iter()
        .find(|c| c.value == typed || c.label.eq_ignore_ascii_case(typed))
        .map(|c| c.value.clone())
        .ok_or_else(|| format!("`{key}` must be one of the offered values"))
}

/// The answer's content: each field that has a value.
pub fn content(fields: &[Field], values: &[Option<Value>]) -> Value {
    Value::Object(
        fields
            .iter()
            .zip(values)
            .filter_map(|(field, value)| Some((field.key.clone(), value.clone()?)))
            .collect(),
    )
}

/// `content` with each field of the form it leaves out that has a
/// `default` set to it: a client that accepts without touching a field
/// accepts what the form offered (SEP-1034), whatever its front end.
pub fn with_defaults(schema: &Value, mut content: Value) -> Value {
    if let (Some(fields), Some(given)) = (schema["properties"].as_object(), content.as_object_mut())
    {
        for (name, field) in fields {
            if let Some(default) = field.get("default") {
                given.entry(name.clone()).or_insert_with(|| default.clone());
            }
        }
    }
    content
}

/// Whether `content` is what `schema` asks for; the error says what is
/// not.
pub fn check_content(schema: &Value, content: &Value) -> Result<(), String> {
    let Some(object) = content.as_object() else {
        return Err("the content must be an object".into());
    };
    let empty = Map::new();
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

fn check_string(key: &str, field: &Value, text: &str) -> Result<(), String> {
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
    if let Some(allowed) = choices(field) {
        if !allowed.iter().any(|c| c.value == text) {
            return Err(format!("`{key}` must be one of the offered values"));
        }
    }
    Ok(())
}

fn check_field(key: &str, field: &Value, value: &Value) -> Result<(), String> {
    let kind = field.get("type").and_then(Value::as_str).unwrap_or("");
    let number = |name: &str| field.get(name).and_then(Value::as_f64);
    match kind {
        "string" => match value.as_str() {
            Some(text) => check_string(key, field, text),
            None => Err(format!("`{key}` must be a string")),
        },
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
            if !items.iter().all(Value::is_string) {
                return Err(format!("`{key}` must be a list of strings"));
            }
            let offered = field.get("items").and_then(choices);
            let known = |item: &Value| {
                offered.as_ref().is_none_or(|offered| {
                    offered
                        .iter()
                        .any(|c| Some(c.value.as_str()) == item.as_str())
                })
            };
            if !items.iter().all(known) {
                return Err(format!("`{key}` must be among the offered values"));
            }
            let count = items.len() as u64;
            if field
                .get("minItems")
                .and_then(Value::as_u64)
                .is_some_and(|min| count < min)
            {
                return Err(format!("`{key}` needs more choices"));
            }
            if field
                .get("maxItems")
                .and_then(Value::as_u64)
                .is_some_and(|max| count > max)
            {
                return Err(format!("`{key}` has too many choices"));
            }
            Ok(())
        }
        _ => Err(format!("`{key}` has a type SCV does not fill in")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type":"object","properties":{
            "name":{"type":"string","minLength":2,"title":"Your name"},
            "age":{"type":"integer","minimum":0,"maximum":150},
            "color":{"type":"string","enum":["red","green"],"enumNames":["Red","Green"]},
            "size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]},
            "tags":{"type":"array","items":{"type":"string","enum":["a","b"]}},
            "ok":{"type":"boolean","default":true}},"required":["name"]})
    }

    #[test]
    fn content_is_checked_against_the_form() {
        let schema = schema();
        assert!(check_content(
            &schema,
            &json!({"name":"Ada","age":36,"color":"red","ok":true,"size":"s","tags":["a"]})
        )
        .is_ok());
        let refused = [
            (json!({"age":3}), "`name` is required"),
            (json!({"name":"A"}), "at least 2"),
            (json!({"name":"Ada","age":1.5}), "integer"),
            (json!({"name":"Ada","age":200}), "maximum"),
            (json!({"name":"Ada","color":"blue"}), "offered values"),
            (json!({"name":"Ada","size":"m"}), "offered values"),
            (json!({"name":"Ada","tags":["c"]}), "offered values"),
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
    fn typed_answers_become_checked_values() {
        let fields = fields(&schema());
        let field = |key: &str| fields.iter().find(|f| f.key == key).unwrap();
        assert_eq!(field("name").title, "Your name");
        assert!(field("name").required && !field("age").required);
        assert_eq!(field("color").takes(), "one of: 1 Red, 2 Green");
        assert_eq!(field("name").parse("Ada\n").unwrap(), Some(json!("Ada")));
        assert!(field("name").parse("A").unwrap_err().contains("at least 2"));
        assert!(field("name").parse("  ").unwrap_err().contains("required"));
        assert_eq!(field("age").parse(" 36 ").unwrap(), Some(json!(36)));
        assert!(field("age")
            .parse("old")
            .unwrap_err()
            .contains("whole number"));
        assert!(field("age").parse("200").unwrap_err().contains("maximum"));
        assert_eq!(field("age").parse("").unwrap(), None);
        assert_eq!(field("color").parse("2").unwrap(), Some(json!("green")));
        assert_eq!(field("color").parse("Red").unwrap(), Some(json!("red")));
        assert!(field("color").parse("blue").is_err());
        assert_eq!(field("size").parse("large").unwrap(), Some(json!("l")));
        assert_eq!(
            field("tags").parse("1, b").unwrap(),
            Some(json!(["a", "b"]))
        );
        assert_eq!(field("ok").parse("no").unwrap(), Some(json!(false)));
        assert_eq!(
            field("ok").parse("").unwrap(),
            Some(json!(true)),
            "its default"
        );
        let values: Vec<Option<Value>> = vec![None; fields.len()];
        assert_eq!(content(&fields, &values), json!({}));
    }

    #[test]
    fn omitted_fields_take_their_default_and_given_ones_stay() {
        let schema = json!({"type":"object","properties":{
            "name":{"type":"string","default":"John Doe"},
            "age":{"type":"integer","default":30},
            "note":{"type":"string"}}});
        let filled = with_defaults(&schema, json!({"age": 41}));
        assert_eq!(filled, json!({"name":"John Doe","age":41}));
    }
}
