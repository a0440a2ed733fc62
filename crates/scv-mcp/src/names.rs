//! The names tools are offered under: `mcp__SERVER__TOOL`, or, when model
//! APIs would refuse that (over 64 characters, or characters outside
//! `[A-Za-z0-9_-]`), a valid name derived from it deterministically: the
//! invalid characters replaced by `_`, cut to fit, and a hash of the
//! original appended so two tools never share a name.

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
