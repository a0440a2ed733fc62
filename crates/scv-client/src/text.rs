//! Showing untrusted text (model output, commands, tool output) to a
//! person: control characters become visible symbols, so nothing reaches a
//! terminal or a chat that could move the cursor, rewrite a line, set the
//! clipboard (OSC 52) or reorder text (bidi overrides) — what is shown is
//! what will run.

use scv_protocol::{ErrorCode, FailureCode};
use std::borrow::Cow;

/// `text` with every control character except newline and tab shown
/// visibly: C0 controls as their Unicode control pictures (`␛`, `␍`, …),
/// DEL as `␡`, C1 controls and bidirectional overrides as `<U+XXXX>`.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            '\u{0}'..='\u{1f}' => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('?')),
            '\u{7f}' => out.push('␡'),
            c if needs_escape(c) => out.push_str(&format!("<U+{:04X}>", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `text` for the clipboard: control characters (but newline and tab) and
/// bidirectional overrides removed. A pasted answer must not carry a
/// bracketed-paste end (`ESC [ 201 ~`) followed by a command into the
/// shell it is pasted into, nor anything else a terminal would act on.
pub fn for_clipboard(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().filter(|c| !needs_escape(*c)).collect())
}

fn needs_escape(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        c if c.is_control() => true,
        // Bidirectional embeddings, overrides and isolates.
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

/// A turn failure in words.
pub fn failure_words(code: FailureCode) -> &'static str {
    match code {
        FailureCode::ProviderError => "the model provider returned an error",
        FailureCode::ContextLimit => "the conversation no longer fits the model's context window",
        FailureCode::StepLimit => "the step limit was reached",
        FailureCode::HistoryLimit => "the session's history is over its size limit",
        FailureCode::ResponseLimit => "the model's response was over the size limit",
        FailureCode::ToolLimit => "the model's tool calls were over the limit",
        FailureCode::InternalError => "the server hit an internal error",
        FailureCode::BudgetExceeded => "the budget was reached",
    }
}

/// The heading a failure's `message` is shown under: `code` in words, or
/// what the message's own start says happened (a provider that could not
/// be reached did not "return an error"); `None` when the message already
/// starts with it (headings never stack).
pub fn failure_heading(code: &str, message: &str) -> Option<String> {
    let lower = message.trim_start().to_lowercase();
    let heading = match code {
        "provider_error"
            if lower.starts_with("cannot connect") || lower.contains("request timed out") =>
        {
            "the model provider could not be reached".to_string()
        }
        "provider_error" if lower.starts_with("provider request failed") => {
            "the request to the model provider failed".to_string()
        }
        "provider_error" if lower.starts_with("provider response body failed") => {
            "the model provider's answer broke off".to_string()
        }
        _ => code_words(code),
    };
    (!lower.starts_with(&heading.to_lowercase())).then_some(heading)
}

/// A failure as one line: its heading (see [`failure_heading`]), then the
/// message after `sep`.
pub fn failure_line(code: &str, message: &str, sep: &str) -> String {
    match failure_heading(code, message) {
        Some(heading) => format!("{heading}{sep}{message}"),
        None => message.to_string(),
    }
}

/// The line of a failed MCP call's output that says its server needs a
/// login (`MCP server `NAME` needs a login: run `scv mcp login NAME``,
/// as the daemon words a refused token or refresh), if it has one; at
/// most 300 characters.
pub fn mcp_login_needed(output: &str) -> Option<String> {
    let line = output
        .lines()
        .find(|line| line.contains("needs a login: run `scv mcp login "))?;
    Some(visible(line).chars().take(300).collect())
}

/// An `error` event's code in words.
pub fn error_words(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::InvalidJson => "the server could not read a request",
        ErrorCode::NotInitialized => "the connection was not initialized",
        ErrorCode::VersionMismatch => "the server speaks another protocol version",
        ErrorCode::InvalidRequest => "the server refused the request",
        ErrorCode::SessionNotFound => "the server has no such session",
        ErrorCode::TurnActive => "the session is already running a turn",
        ErrorCode::TurnNotFound => "the server has no such turn",
        ErrorCode::ApprovalNotFound => "the server has no such approval",
        ErrorCode::QueueNotFound => "the server has no such queued prompt",
        ErrorCode::QueueConflict => "the queue changed meanwhile",
        ErrorCode::Unsupported => "the server does not support this",
        ErrorCode::ComponentError => "a component failed",
        ErrorCode::InternalError => "the server hit an internal error",
    }
}

/// A code from an `error` event or a `turn.failed` (as a string) in
/// words: the protocol's codes as above, any other with its underscores
/// as spaces.
pub fn code_words(code: &str) -> String {
    let value = serde_json::Value::String(code.to_string());
    if let Ok(code) = serde_json::from_value::<FailureCode>(value.clone()) {
        return failure_words(code).to_string();
    }
    if let Ok(code) = serde_json::from_value::<ErrorCode>(value) {
        return error_words(code).to_string();
    }
    code.replace('_', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_calls_login_line_is_found() {
        let output = "MCP server `web` needs a login: run `scv mcp login web`";
        assert_eq!(mcp_login_needed(output).as_deref(), Some(output));
        let shown = mcp_login_needed(&format!("first\n{output}\x1b[2J")).unwrap();
        assert!(
            shown.starts_with(output) && !shown.contains('\x1b'),
            "{shown}"
        );
        assert!(mcp_login_needed("the connection broke").is_none());
    }

    #[test]
    fn codes_are_said_in_words() {
        assert_eq!(
            code_words("turn_active"),
            "the session is already running a turn"
        );
        assert_eq!(
            code_words("provider_error"),
            "the model provider returned an error"
        );
        assert_eq!(
            code_words("invalid_request"),
            "the server refused the request"
        );
        assert_eq!(code_words("disconnected"), "disconnected");
        assert_eq!(code_words("some_new_code"), "some new code");
    }

    #[test]
    fn failure_headings_say_what_happened_and_never_stack() {
        assert_eq!(
            failure_line(
                "provider_error",
                "cannot connect to provider at h: refused",
                ": "
            ),
            "the model provider could not be reached: cannot connect to provider at h: refused"
        );
        assert_eq!(
            failure_line("provider_error", "HTTP 500: overloaded", ": "),
            "the model provider returned an error: HTTP 500: overloaded"
        );
        assert_eq!(
            failure_line(
                "provider_error",
                "The model provider returned an error: 503",
                ": "
            ),
            "The model provider returned an error: 503"
        );
        assert_eq!(
            failure_line("step_limit", "24 steps", " — "),
            "the step limit was reached — 24 steps"
        );
    }

    #[test]
    fn controls_become_visible_and_plain_text_is_borrowed() {
        assert!(matches!(visible("plain\ttext\n"), Cow::Borrowed(_)));
        assert_eq!(
            visible("a\x1b]52;c;cHduZWQ=\x07b\rc\x7f"),
            "a␛]52;c;cHduZWQ=␇b␍c␡"
        );
        assert_eq!(visible("x\u{202e}y\u{9b}"), "x<U+202E>y<U+009B>");
    }

    #[test]
    fn clipboard_text_loses_every_control_but_lines_and_tabs() {
        assert_eq!(
            for_clipboard("ls\x1b[201~\nrm -rf ~\r\t\u{9b}x\u{202e}"),
            "ls[201~\nrm -rf ~\tx"
        );
        assert!(matches!(for_clipboard("plain\n"), Cow::Borrowed(_)));
    }
}
