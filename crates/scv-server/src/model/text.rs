//! A message's text, held once: as the JSON string every wire sends it as.
//!
//! A long session keeps its history and each message's rendering for the
//! wire ([`super::Rendered`]); holding the text as a `String` in the
//! message and again escaped inside the rendering made the history cost
//! twice its size (17 MiB of renderings beside 17 MiB of messages at a
//! 16 MiB history, by heaptrack). The text is kept escaped, as
//! `serde_json` writes it, so a rendering can point at these very bytes
//! instead of copying them (`share` below); the text itself is read back
//! on the rare occasions something needs it (compaction, the journal, a
//! hook), borrowed when it has nothing escaped.

use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Text {
    /// The JSON string literal, quotes included, exactly as `serde_json`
    /// writes the text: one text has one literal, so equal texts have
    /// equal bytes.
    json: Bytes,
    /// Bytes of the text itself, unescaped.
    len: usize,
}

impl Text {
    pub(crate) fn new(text: &str) -> Text {
        let mut json = Vec::with_capacity(text.len() + 2);
        // Writing a `str` into a `Vec` cannot fail.
        serde_json::to_writer(&mut json, text).unwrap_or_default();
        Text {
            json: Bytes::from(json.into_boxed_slice()),
            len: text.len(),
        }
    }

    /// The text: borrowed unless it has escapes to undo.
    pub(crate) fn as_str(&self) -> Cow<'_, str> {
        let inner = &self.json[1..self.json.len() - 1];
        if memchr::memchr(b'\\', inner).is_none() {
            if let Ok(text) = std::str::from_utf8(inner) {
                return Cow::Borrowed(text);
            }
        }
        // The literal was written by serde_json from a `str`: it reads back.
        Cow::Owned(serde_json::from_slice(&self.json).unwrap_or_default())
    }

    /// Length of the text in bytes (not of its literal).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The JSON literal, for a rendering to share.
    pub(crate) fn json(&self) -> &Bytes {
        &self.json
    }
}

/// The empty text.
pub(crate) static EMPTY: Text = Text {
    json: Bytes::from_static(b"\"\""),
    len: 0,
};

impl Default for Text {
    fn default() -> Text {
        EMPTY.clone()
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Text {
        Text::new(text)
    }
}

impl From<String> for Text {
    fn from(text: String) -> Text {
        Text::new(&text)
    }
}

impl From<&String> for Text {
    fn from(text: &String) -> Text {
        Text::new(text)
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.len == other.len() && self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self == *other
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_str())
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.as_str())
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Text, D::Error> {
        String::deserialize(deserializer).map(|text| Text::new(&text))
    }
}

/// A message's rendering with each of `texts` (at least `MIN_SHARED`
/// bytes long) that appears in it verbatim replaced by the text's own
/// literal: the parts, in order, whose concatenation is `rendering`.
/// Where a text appears twice, or not at all (a wire that changes it),
/// the rendering keeps its own bytes: the result is the same bytes
/// either way.
pub(crate) fn share<'a>(rendering: Vec<u8>, texts: impl IntoIterator<Item = &'a Text>) -> Parts {
    let mut found: Vec<(usize, &Bytes)> = texts
        .into_iter()
        .map(Text::json)
        .filter(|json| json.len() >= MIN_SHARED)
        .filter_map(|json| find(&rendering, json).map(|at| (at, json)))
        .collect();
    found.sort_by_key(|(at, _)| *at);
    let mut parts = Vec::with_capacity(found.len() * 2 + 1);
    let mut from = 0;
    for (at, json) in found {
        if at < from {
            continue; // overlaps a text already shared
        }
        if at > from {
            parts.push(Bytes::copy_from_slice(&rendering[from..at]));
        }
        parts.push(json.clone());
        from = at + json.len();
    }
    if parts.is_empty() {
        return Parts::from(rendering);
    }
    if from < rendering.len() {
        parts.push(Bytes::copy_from_slice(&rendering[from..]));
    }
    Parts::new(parts)
}

/// Where `json` first appears in `rendering`. The searcher is built for
/// the literal's first `HEAD` bytes and each place they appear is
/// compared with the rest: a searcher for the whole literal (a needle
/// the message's size) cost as much to build as the search, and was half
/// of the first request after a resume (every message rendered again).
/// Comparing is bounded: past `rendering`'s length in compared bytes (a
/// text whose head repeats all over the rendering) the whole literal is
/// searched for instead, so the work stays linear.
fn find(rendering: &[u8], json: &[u8]) -> Option<usize> {
    if json.len() <= HEAD {
        return memchr::memmem::find(rendering, json);
    }
    let (head, rest) = json.split_at(HEAD);
    let finder = memchr::memmem::Finder::new(head);
    let mut compared = 0usize;
    for at in finder.find_iter(rendering) {
        let after = &rendering[at + HEAD..];
        if after.starts_with(rest) {
            return Some(at);
        }
        compared += rest.len().min(after.len());
        if compared > rendering.len() {
            return memchr::memmem::find(&rendering[at..], json).map(|more| at + more);
        }
    }
    None
}

/// Bytes of a literal's head the searcher looks for.
const HEAD: usize = 32;

/// Texts shorter than this are copied into the rendering: a shared part
/// costs a `Bytes` (32 bytes) and a reference count.
pub(crate) const MIN_SHARED: usize = 256;

/// One message's rendering, as the parts it is sent in (none empty),
/// shared: every request takes the history's renderings again. (No
/// equality: two splits of the same bytes are the same rendering.)
#[derive(Debug, Clone, Default)]
pub(crate) struct Parts {
    parts: Arc<[Bytes]>,
    len: usize,
}

impl Parts {
    fn new(parts: Vec<Bytes>) -> Parts {
        let parts: Arc<[Bytes]> = parts.into_iter().filter(|p| !p.is_empty()).collect();
        let len = parts.iter().map(Bytes::len).sum();
        Parts { parts, len }
    }

    pub(crate) fn as_slice(&self) -> &[Bytes] {
        &self.parts
    }

    /// True when the message renders to nothing on this wire.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of the rendering.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl From<Vec<u8>> for Parts {
    fn from(rendering: Vec<u8>) -> Parts {
        Parts::new(vec![Bytes::from(rendering.into_boxed_slice())])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(parts: &Parts) -> Vec<u8> {
        parts
            .as_slice()
            .iter()
            .flat_map(|p| p.iter().copied())
            .collect()
    }

    #[test]
    fn a_text_reads_back_as_written() {
        for text in ["", "plain", "two\nlines \"quoted\" \\ tab\t", "ünï\u{1}"] {
            let held = Text::new(text);
            assert_eq!(held.as_str(), text);
            assert_eq!(held.len(), text.len());
            assert_eq!(held.json().as_ref(), serde_json::to_vec(text).unwrap());
            let round: Text = serde_json::from_str(&serde_json::to_string(&held).unwrap()).unwrap();
            assert_eq!(round, held);
        }
        assert!(matches!(Text::new("plain").as_str(), Cow::Borrowed(_)));
    }

    #[test]
    fn a_rendering_shares_its_texts_and_keeps_its_bytes() {
        let long = Text::new(&"line\n".repeat(100));
        let other = Text::new(&"y".repeat(300));
        let short = Text::new("c1");
        let absent = Text::new(&"z".repeat(300));
        let rendering = serde_json::to_vec(&serde_json::json!({
            "id": "c1", "content": long, "more": other, "again": other
        }))
        .unwrap();
        let parts = share(rendering.clone(), [&short, &long, &other, &absent]);
        assert_eq!(joined(&parts), rendering);
        assert_eq!(parts.len(), rendering.len());
        let shares = |t: &Text| {
            parts
                .as_slice()
                .iter()
                .any(|p| p.as_ptr() == t.json().as_ptr())
        };
        assert!(shares(&long) && shares(&other));
        assert!(!shares(&short) && !shares(&absent));
        // Nothing to share: one part.
        let parts = share(b"{}".to_vec(), [&short]);
        assert_eq!(parts.as_slice().len(), 1);
        assert!(share(Vec::new(), [&long]).is_empty());
    }

    #[test]
    fn a_text_is_found_past_places_that_only_begin_like_it() {
        let text = format!("{}{}", "h".repeat(HEAD), "tail".repeat(80));
        let json = serde_json::to_vec(&text).unwrap();
        // Its head, cut short, many times over; then the text itself.
        let mut rendering = Vec::new();
        for _ in 0..50 {
            rendering.extend_from_slice(&json[..json.len() - 7]);
            rendering.push(b',');
        }
        let at = rendering.len();
        rendering.extend_from_slice(&json);
        rendering.extend_from_slice(b"}");
        assert_eq!(find(&rendering, &json), Some(at));
        assert_eq!(find(&rendering[..rendering.len() - 2], &json), None);
        assert_eq!(find(&rendering, b"\"hh"), Some(0));
        // A head that recurs within itself (`\"\"\"…`): every other byte
        // of a decoy is a place to compare; past the rendering's length in
        // compared bytes the whole literal is searched for instead.
        let quotes = |end: &str| serde_json::to_vec(&format!("{}{end}", "\"".repeat(400))).unwrap();
        let (json, decoy) = (quotes("b"), quotes("a"));
        let mut many = decoy.repeat(3);
        let at = many.len();
        many.extend_from_slice(&json);
        assert_eq!(find(&many, &json), Some(at));
        assert_eq!(find(&decoy.repeat(3), &json), None);
    }
}
