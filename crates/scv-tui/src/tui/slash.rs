//! Slash commands: the list, matching what is typed and completing it,
//! and the `/help` text. Running them needs the session, so that is the
//! App's ([`super::app::App`]).

/// Slash commands with their help text.
pub const SLASH_COMMANDS: &[(&str, &str)] = &[
    (
        "/approvals",
        "list this session's approval rules; remove them",
    ),
    ("/clear", "clear the session (history, queue, usage)"),
    ("/copy", "copy the last answer to the clipboard (OSC 52)"),
    ("/diff", "show the workspace's git diff"),
    (
        "/model",
        "/model M or /model PROVIDER/M: switch model (idle)",
    ),
    ("/pause", "pause the queue: queued prompts wait"),
    ("/resume", "resume the queue"),
    (
        "/status",
        "provider, model, context, usage, queue, sandbox, rules, MCP",
    ),
    ("/help", "show keys and commands"),
    ("/quit", "quit scv"),
];

/// Commands matching `text`, while it is a `/` and a word.
pub fn matches(text: &str) -> Vec<(&'static str, &'static str)> {
    if !text.starts_with('/') || text.contains(char::is_whitespace) {
        return Vec::new();
    }
    SLASH_COMMANDS
        .iter()
        .copied()
        .filter(|(c, _)| c.starts_with(text))
        .collect()
}

/// `text` completed as far as the matching commands agree; `None` when
/// nothing matches.
pub fn complete(text: &str) -> Option<String> {
    let matches = matches(text);
    let (command, _) = matches.first()?;
    if matches.len() == 1 || matches.iter().all(|(c, _)| c == command) {
        Some(command.to_string())
    } else {
        Some(common_prefix(matches.iter().map(|(c, _)| *c)))
    }
}

fn common_prefix<'a>(mut words: impl Iterator<Item = &'a str>) -> String {
    let Some(first) = words.next() else {
        return String::new();
    };
    let mut prefix = first.to_string();
    for word in words {
        while !word.starts_with(&prefix) {
            prefix.pop();
        }
    }
    prefix
}
