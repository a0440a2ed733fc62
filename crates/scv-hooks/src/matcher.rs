//! A matcher group's `matcher`: which tool calls (or which SessionStart
//! sources, PreCompact triggers, SessionEnd reasons) its hooks run for.
//!
//! Claude Code's documentation: "matcher: Pattern to match tool names,
//! case-sensitive ... Simple strings match exactly: `Write` matches only the
//! Write tool. Supports regex: `Edit|Write` or `Notebook.*`. Use `*` to match
//! all tools. You can also use empty string (`""`) or leave `matcher` blank."
//!
//! SCV's choice: a matcher other than `""`/`*`/absent is a regex that must
//! match the WHOLE name (`^(?:m)$`). That keeps "simple strings match exactly"
//! true for every string (`Bash` does not match a tool `BashOutput`), makes
//! `Edit|Write` mean either name, and `mcp__memory__.*` every tool of that
//! server. It never matches a name only by a substring.

use regex::{Regex, RegexBuilder};

use crate::tools::claude_names;

/// The compiled form of a `matcher`.
#[derive(Clone, Debug)]
pub(crate) enum Matcher {
    /// `""`, `"*"` or no `matcher`: everything.
    All,
    /// Anything else, anchored as a whole-name match.
    Pattern(Regex),
}

/// How big a compiled matcher may get (a matcher is a name pattern, not a
/// program; this stops a pathological one from costing the daemon memory).
const REGEX_SIZE_LIMIT: usize = 1 << 20;

impl Matcher {
    /// Compiles `matcher` (None: absent). The error is regex's message.
    pub(crate) fn new(matcher: Option<&str>) -> Result<Matcher, String> {
        match matcher.map(str::trim) {
            None | Some("") | Some("*") => Ok(Matcher::All),
            Some(m) => RegexBuilder::new(&format!("^(?:{m})$"))
                .size_limit(REGEX_SIZE_LIMIT)
                .build()
                .map(Matcher::Pattern)
                .map_err(|e| e.to_string()),
        }
    }

    /// Whether a tool call of SCV's tool `tool` matches: the pattern matches
    /// SCV's name or one of Claude Code's names for it.
    pub(crate) fn matches_tool(&self, tool: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Pattern(re) => {
                re.is_match(tool) || claude_names(tool).iter().any(|cc| re.is_match(cc))
            }
        }
    }

    /// Whether a word other than a tool name (a SessionStart `source`, a
    /// PreCompact `trigger`) matches.
    pub(crate) fn matches_word(&self, word: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Pattern(re) => re.is_match(word),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &str) -> Matcher {
        Matcher::new(Some(s)).unwrap()
    }

    #[test]
    fn empty_star_and_absent_match_everything() {
        for matcher in [Matcher::new(None).unwrap(), m(""), m("*"), m(" * ")] {
            assert!(matcher.matches_tool("bash"));
            assert!(matcher.matches_tool("mcp__x__y"));
            assert!(matcher.matches_word("startup"));
        }
    }

    #[test]
    fn claude_code_names_match_scv_tools() {
        assert!(m("Bash").matches_tool("bash"));
        assert!(!m("Bash").matches_tool("read_file"));
        assert!(m("Edit|Write").matches_tool("edit_file"));
        assert!(m("Edit|Write").matches_tool("write_file"));
        assert!(!m("Edit|Write").matches_tool("read_file"));
        assert!(m("MultiEdit").matches_tool("edit_file"));
        assert!(m("Read").matches_tool("read_file"));
        assert!(m("Glob").matches_tool("list_dir"));
        assert!(m("Grep").matches_tool("search"));
    }

    #[test]
    fn scv_names_match_too() {
        assert!(m("bash").matches_tool("bash"));
        assert!(m("edit_file|write_file").matches_tool("write_file"));
        assert!(m(".*_file").matches_tool("read_file"));
        assert!(!m(".*_file").matches_tool("bash"));
    }

    #[test]
    fn matching_is_case_sensitive_and_whole_name() {
        // "case-sensitive" and "Simple strings match exactly".
        assert!(!m("BASH").matches_tool("bash"));
        assert!(!m("Bas").matches_tool("bash"));
        assert!(!m("ash").matches_tool("bash"));
        assert!(!m("Edit").matches_tool("edit_file_v2"));
        // The alternation is grouped before anchoring: `a|b` is not `^a|b$`.
        assert!(!m("Read|Bash").matches_tool("bash_extra"));
    }

    #[test]
    fn mcp_patterns() {
        let memory = m("mcp__memory__.*");
        assert!(memory.matches_tool("mcp__memory__create_entities"));
        assert!(!memory.matches_tool("mcp__github__search_repositories"));
        assert!(m("mcp__.*__write.*").matches_tool("mcp__fs__write_file"));
        assert!(
            m("mcp__github__search_repositories").matches_tool("mcp__github__search_repositories")
        );
        assert!(!m("mcp__github").matches_tool("mcp__github__search_repositories"));
    }

    #[test]
    fn an_invalid_regex_is_an_error() {
        assert!(Matcher::new(Some("Bash(")).is_err());
        assert!(Matcher::new(Some("[")).is_err());
    }

    #[test]
    fn words() {
        assert!(m("startup|resume").matches_word("resume"));
        assert!(!m("startup|resume").matches_word("clear"));
        assert!(m("auto").matches_word("auto"));
    }
}
