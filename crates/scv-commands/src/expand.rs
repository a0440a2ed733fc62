//! Turning `/NAME args` into the prompt sent to the model.
//!
//! Placeholders follow Claude Code's command files: "`$ARGUMENTS` - All
//! arguments as single string", and "Positional Parameters (`$1`, `$2`,
//! `$3`) - Individual arguments". Here:
//!
//! - `$ARGUMENTS` is the whole argument string as typed, trimmed (quotes
//!   kept);
//! - `$1` … `$9` are the arguments split as a shell would on whitespace,
//!   `"double"` and `'single'` quotes grouping (and removed; no backslash
//!   escapes); a missing one is the empty string. Only one digit is read:
//!   `$10` is `$1` followed by `0`, `$0` is left as it is (Claude Code's
//!   newer skills use 0-based `$0`/`$ARGUMENTS[N]`; mixing both numberings
//!   in one file format would make `$1` mean two things, so the command
//!   files' documented 1-based form is the one read).
//! - When the body has none of these and arguments were given, they are
//!   appended as "\n\nARGUMENTS: …", as Claude Code documents: "If you don't
//!   put it in the body, Claude Code appends it anyway as `ARGUMENTS:
//!   <value>`".
//!
//! Nothing else in a body is interpreted: Claude Code's ``!`command` ``
//! (runs a shell command) and `@file` (inlines a file) are left as text.

use std::fmt;
use std::io;
use std::path::PathBuf;

use serde::Serialize;

/// What `/NAME` named.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Command,
    Skill,
}

/// `/NAME args`, expanded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Expansion {
    pub name: String,
    pub kind: Kind,
    /// The text to send to the model in place of what the user typed.
    pub prompt: String,
}

/// A well-formed `/NAME` that is neither a command nor a skill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unknown {
    pub name: String,
    /// A few nearest known names, nearest first, for "did you mean".
    pub known: Vec<String>,
}

impl fmt::Display for Unknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown command /{}", self.name)?;
        if !self.known.is_empty() {
            let names: Vec<String> = self.known.iter().map(|n| format!("/{n}")).collect();
            write!(f, " (did you mean {}?)", names.join(", "))?;
        }
        Ok(())
    }
}

impl std::error::Error for Unknown {}

/// Why [`crate::Catalog::expand`] could not expand a `/NAME`.
#[derive(Debug, thiserror::Error)]
pub enum ExpandError {
    #[error(transparent)]
    Unknown(#[from] Unknown),
    /// A skill whose `SKILL.md` cannot be read now (removed, changed into
    /// something malformed, ...).
    #[error("the skill /{name} could not be read from {}: {error}", path.display())]
    Unreadable {
        name: String,
        path: PathBuf,
        #[source]
        error: io::Error,
    },
}

/// What [`substitute`] appends when the body has no placeholder.
pub(crate) const APPEND_PREFIX: &str = "\n\nARGUMENTS: ";

/// `/NAME rest` → (`NAME`, `rest` trimmed). `None`: not the slash command
/// form (no leading `/`, an empty name, or a name with a character outside
/// `[A-Za-z0-9_:.-]`, such as `/usr/bin`).
pub(crate) fn parse_invocation(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..end];
    if !crate::commands::is_command_name(name) {
        return None;
    }
    Some((name, rest[end..].trim()))
}

/// Splits like a shell: whitespace separates, quotes group and are removed,
/// an unclosed quote runs to the end.
pub(crate) fn split_args(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in args.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => current.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            None => {
                current.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(current);
    }
    out
}

enum Token {
    All,
    Positional(usize),
}

/// The placeholder at the start of `s`, and its length.
fn placeholder(s: &str) -> Option<(Token, usize)> {
    if s.starts_with("$ARGUMENTS") {
        return Some((Token::All, "$ARGUMENTS".len()));
    }
    match s.as_bytes() {
        [b'$', d @ b'1'..=b'9', ..] => Some((Token::Positional(usize::from(d - b'1')), 2)),
        _ => None,
    }
}

/// How many placeholders `body` has.
pub(crate) fn placeholder_count(body: &str) -> usize {
    body.match_indices('$')
        .filter(|(i, _)| placeholder(&body[*i..]).is_some())
        .count()
}

/// `body` with its placeholders replaced from `args` (already trimmed), or,
/// with none, `args` appended as "ARGUMENTS: …" when there are any.
pub(crate) fn substitute(body: &str, args: &str) -> String {
    if placeholder_count(body) == 0 {
        return match (body.is_empty(), args.is_empty()) {
            (_, true) => body.to_owned(),
            (true, false) => format!("{}{args}", APPEND_PREFIX.trim_start()),
            (false, false) => format!("{body}{APPEND_PREFIX}{args}"),
        };
    }
    let positional = split_args(args);
    let mut out = String::with_capacity(body.len() + args.len());
    let mut rest = body;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        match placeholder(rest) {
            Some((token, len)) => {
                match token {
                    Token::All => out.push_str(args),
                    Token::Positional(n) => {
                        out.push_str(positional.get(n).map_or("", String::as_str));
                    }
                }
                rest = &rest[len..];
            }
            None => {
                out.push('$');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Up to three of `names` nearest to `name` (by edit distance, or sharing a
/// prefix), nearest first.
pub(crate) fn nearest<'a>(name: &str, names: impl Iterator<Item = &'a str>) -> Vec<String> {
    const MAX_SUGGESTIONS: usize = 3;
    const MAX_COMPARED_CHARS: usize = 128;
    let typed: Vec<char> = name.to_lowercase().chars().collect();
    if typed.len() > MAX_COMPARED_CHARS {
        return Vec::new();
    }
    let threshold = (typed.len() / 3).max(1);
    let mut scored: Vec<(usize, String)> = Vec::new();
    for candidate in names {
        let lower: Vec<char> = candidate.to_lowercase().chars().collect();
        if lower.len() > MAX_COMPARED_CHARS || scored.iter().any(|(_, n)| n == candidate) {
            continue;
        }
        let distance = edit_distance(&typed, &lower);
        let prefix = typed.len() >= 2 && (lower.starts_with(&typed) || typed.starts_with(&lower));
        if distance <= threshold || prefix {
            scored.push((distance, candidate.to_owned()));
        }
    }
    scored.sort();
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, n)| n)
        .collect()
}

fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invocation_forms() {
        assert_eq!(
            parse_invocation("/review 12  high "),
            Some(("review", "12  high"))
        );
        assert_eq!(parse_invocation("/ns:x.y-z_1"), Some(("ns:x.y-z_1", "")));
        assert_eq!(parse_invocation("/x\targ"), Some(("x", "arg")));
        assert_eq!(parse_invocation("/"), None);
        assert_eq!(parse_invocation("/ args"), None);
        assert_eq!(parse_invocation("/usr/bin is where"), None);
        assert_eq!(parse_invocation("review"), None);
        assert_eq!(parse_invocation("/é"), None);
    }

    #[test]
    fn split_like_a_shell() {
        assert_eq!(split_args(""), Vec::<String>::new());
        assert_eq!(split_args("a  b\tc"), ["a", "b", "c"]);
        assert_eq!(split_args("\"a b\" 'c d' e"), ["a b", "c d", "e"]);
        assert_eq!(split_args("x\"y z\"w ''"), ["xy zw", ""]);
        assert_eq!(split_args("\"it's\" 'say \"hi\"'"), ["it's", "say \"hi\""]);
        assert_eq!(split_args("\"open quote"), ["open quote"]);
    }

    #[test]
    fn arguments_and_positionals() {
        let body = "Review PR #$1 with priority $2 for $3. All: $ARGUMENTS";
        assert_eq!(
            substitute(body, "456 \"very high\""),
            "Review PR #456 with priority very high for . All: 456 \"very high\""
        );
        assert_eq!(substitute("$10 $0 $$1 $", "a b"), "a0 $0 $a $");
        assert_eq!(substitute("cost: $ARGUMENTSx", "5"), "cost: 5x");
        assert_eq!(substitute("$1", ""), "");
    }

    #[test]
    fn no_placeholder_appends() {
        assert_eq!(
            substitute("Optimize.", "src/a.rs"),
            "Optimize.\n\nARGUMENTS: src/a.rs"
        );
        assert_eq!(substitute("Optimize.", ""), "Optimize.");
        assert_eq!(substitute("", "x"), "ARGUMENTS: x");
    }

    #[test]
    fn bang_and_at_are_left_alone() {
        let body = "Status: !`git status`\nSee @src/main.rs";
        assert_eq!(substitute(body, ""), body);
    }

    #[test]
    fn suggestions() {
        let names = ["review", "review-pr", "commit", "deploy"];
        assert_eq!(nearest("reveiw", names.into_iter()), ["review"]);
        assert_eq!(nearest("rev", names.into_iter()), ["review", "review-pr"]);
        assert!(nearest("zzzzzz", names.into_iter()).is_empty());
        let unknown = Unknown {
            name: "reveiw".into(),
            known: vec!["review".into(), "review-pr".into()],
        };
        assert_eq!(
            unknown.to_string(),
            "unknown command /reveiw (did you mean /review, /review-pr?)"
        );
        let none = Unknown {
            name: "x".into(),
            known: vec![],
        };
        assert_eq!(none.to_string(), "unknown command /x");
    }
}
