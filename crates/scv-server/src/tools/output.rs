//! Bounding tool output before it reaches the protocol or the model.

use crate::text::{ceil_boundary, floor_boundary};

/// Cuts `text` to at most `max` bytes, keeping the head and the tail (where
/// build errors and summaries usually are) around a marker.
pub(crate) fn cap(text: String, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let marker_room = 64;
    let keep = max.saturating_sub(marker_room);
    let head_end = floor_boundary(&text, keep / 2);
    let tail_start = ceil_boundary(&text, text.len() - (keep - keep / 2));
    let omitted = tail_start - head_end;
    let mut out = String::with_capacity(max);
    out.push_str(&text[..head_end]);
    out.push_str(&format!("\n[... {omitted} bytes omitted ...]\n"));
    out.push_str(&text[tail_start..]);
    (out, true)
}

/// True when the bytes look binary (a NUL in the first 8 KiB).
pub(super) fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_head_and_tail_within_the_cap() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let (out, truncated) = cap(text.clone(), 200);
        assert!(truncated);
        assert!(out.len() <= 200, "{}", out.len());
        assert!(out.starts_with("line 0\n"));
        assert!(out.ends_with("line 999\n"));
        assert!(out.contains("bytes omitted"));
        assert_eq!(cap(text.clone(), text.len()), (text, false));
    }

    #[test]
    fn never_splits_a_character() {
        let text = "é".repeat(500);
        let (out, truncated) = cap(text, 101);
        assert!(truncated);
        assert!(out.len() <= 101);
    }
}
