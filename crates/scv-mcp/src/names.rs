//! The names tools are offered under: `mcp__SERVER__TOOL`, or, when model
//! APIs would refuse that (over 64 characters, or characters outside
//! `[A-Za-z0-9_-]`), a valid name derived from it deterministically: the
//! invalid characters replaced by `_`, cut to fit, and a hash of the
//! original appended.
//!
//! Names never collide across servers: a server name has no `__` and does
//! not end in `_` ([`crate::ServerSpec`] refuses both), and every name of
//! server `S` starts with `mcp__S__` (a mapped one is cut at 55 bytes,
//! past the longest such prefix), so the first `__` after `mcp__` ends the
//! server's name. Within one server a mapped name can still equal another
//! tool's own name (a server may call a tool `read_file_1a2b3c4d`), or two
//! mapped names can meet; [`assign`] settles that with a suffix.

use std::collections::{BTreeMap, BTreeSet};

const MAX_NAME: usize = 64;

pub fn tool_name(server: &str, tool: &str) -> String {
    let plain = format!("mcp__{server}__{tool}");
    if plain.len() <= MAX_NAME && plain.bytes().all(valid) {
        return plain;
    }
    let mut name: String = plain
        .chars()
        .map(|c| {
            if c.is_ascii() && valid(c as u8) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let hash = format!("_{:08x}", fnv1a(plain.as_bytes()) as u32);
    name.truncate(MAX_NAME - hash.len());
    name.push_str(&hash);
    name
}

/// Gives each of one server's tools a name no other of its tools has.
/// A tool keeps the name it was offered under before (`previous`: tool →
/// name), so a name never moves to another tool while its tool is still
/// there; the others get theirs in a fixed order — tools whose own name is
/// valid first, then by tool name — and a name already taken gets `_2`,
/// `_3`, … (cut to fit). Returns the names, in the order of `tools` (the
/// tools' own names), and a note for the log per renamed tool.
pub(crate) fn assign(
    server: &str,
    tools: &[&str],
    previous: &BTreeMap<String, String>,
) -> (Vec<String>, Vec<String>) {
    let prefix = format!("mcp__{server}__");
    let mut names = vec![String::new(); tools.len()];
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut order: Vec<usize> = Vec::new();
    for (index, tool) in tools.iter().enumerate() {
        match previous.get(*tool) {
            // Only a name this server's tools may have (a server renamed
            // in the config starts afresh).
            Some(name) if name.starts_with(&prefix) && !taken.contains(name) => {
                names[index] = name.clone();
                taken.insert(name.clone());
            }
            _ => order.push(index),
        }
    }
    order.sort_by(|&a, &b| {
        let mapped = |i: usize| tool_name(server, tools[i]) != format!("{prefix}{}", tools[i]);
        (mapped(a), tools[a]).cmp(&(mapped(b), tools[b]))
    });
    let mut notes = Vec::new();
    for index in order {
        let tool = tools[index];
        let base = tool_name(server, tool);
        let mut name = base.clone();
        let mut n = 2;
        while taken.contains(&name) {
            let suffix = format!("_{n}");
            let cut = (MAX_NAME - suffix.len()).min(base.len());
            name = format!("{}{suffix}", &base[..cut]);
            n += 1;
        }
        if name != base {
            notes.push(format!(
                "tool `{tool}` is offered as `{name}`: `{base}` is another tool's"
            ));
        }
        names[index] = name.clone();
        taken.insert(name);
    }
    (names, notes)
}

fn valid(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// FNV-1a: stable across runs and builds (the std hasher is not).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_name_that_is_another_tools_gets_a_suffix_and_names_stay_put() {
        let dotted = tool_name("s", "a.b");
        let twin = dotted.strip_prefix("mcp__s__").unwrap().to_string();
        // Both at once, in either order: the tool's own name wins.
        for order in [["a.b", twin.as_str()], [twin.as_str(), "a.b"]] {
            let (names, notes) = assign("s", &order, &BTreeMap::new());
            let by_tool: BTreeMap<&str, &str> = order
                .iter()
                .copied()
                .zip(names.iter().map(String::as_str))
                .collect();
            assert_eq!(by_tool[twin.as_str()], dotted);
            assert_eq!(by_tool["a.b"], format!("{dotted}_2"));
            assert_eq!(notes.len(), 1, "{notes:?}");
        }
        // The twin appears later: `a.b` keeps the name it had.
        let previous = [("a.b".to_string(), dotted.clone())].into();
        let (names, _) = assign("s", &[twin.as_str(), "a.b"], &previous);
        assert_eq!(names, [format!("{dotted}_2"), dotted.clone()]);
        // A long name at the limit still fits with its suffix.
        let long = "x".repeat(100);
        let mapped = tool_name("s", &long);
        let (names, _) = assign(
            "s",
            &[long.as_str(), mapped.strip_prefix("mcp__s__").unwrap()],
            &BTreeMap::new(),
        );
        assert!(names.iter().all(|n| n.len() <= 64 && n.bytes().all(valid)));
        assert_ne!(names[0], names[1]);
    }

    #[test]
    fn names_of_two_servers_never_meet() {
        // With `__` and a trailing `_` refused in server names, the server
        // part of a name is what precedes its first `__` after `mcp__`.
        for (server, tool) in [("x", "y__z"), ("a", "_b"), ("a-", "_b"), ("_a", "b")] {
            let name = tool_name(server, tool);
            let rest = name.strip_prefix("mcp__").unwrap();
            assert_eq!(&rest[..rest.find("__").unwrap()], server, "{name}");
        }
        let mapped = tool_name(&"s".repeat(32), &"t.".repeat(40));
        assert!(mapped.starts_with(&format!("mcp__{}__", "s".repeat(32))));
    }

    #[test]
    fn valid_names_pass_and_others_map_deterministically() {
        assert_eq!(tool_name("git", "status"), "mcp__git__status");
        let dotted = tool_name("fs", "read.file");
        assert!(dotted.starts_with("mcp__fs__read_file_"), "{dotted}");
        assert_eq!(dotted, tool_name("fs", "read.file"));
        assert_ne!(dotted, tool_name("fs", "read_file"));
        assert_ne!(dotted, tool_name("fs", "read/file"));
        let long = tool_name("server", &"x".repeat(100));
        assert_eq!(long.len(), 64);
        assert!(long.bytes().all(valid));
        let unicode = tool_name("s", "读取");
        assert!(
            unicode.bytes().all(valid) && unicode.len() <= 64,
            "{unicode}"
        );
    }
}
