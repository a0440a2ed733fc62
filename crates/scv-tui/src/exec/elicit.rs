//! `scv exec --elicit`: an MCP server's question (`elicitation.requested`)
//! asked on the terminal. The question goes to stderr; the answers are
//! read a line at a time from standard input, or from `/dev/tty` when the
//! prompt itself came from standard input. A form is filled in field by
//! field, each answer checked against its field (a wrong one is said and
//! asked again, [`MAX_TRIES`] times at most, then the question is
//! cancelled) and the whole against the schema before it is sent; a link
//! is shown, never opened, and `y` says the user finished there. The
//! answers are never printed back. No line to read (end of input): the
//! question is cancelled.
//!
//! Without `--elicit`, [`super::show::Printer`] declines at once and says
//! so.

use scv_client::text::visible;
use scv_protocol::elicit_form::{self, Kind};
use scv_protocol::{ElicitationAction, ElicitationRequested};
use serde_json::Value;
use std::io::{BufRead, Write};
use tokio::sync::mpsc;

/// The longest answer line kept; the rest of a longer one is dropped.
const MAX_LINE_BYTES: usize = 64 * 1024;
/// Answers tried at one field before the question is cancelled.
pub(crate) const MAX_TRIES: usize = 5;

/// Where the answers are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Stdin,
    /// The prompt was read from standard input: the terminal itself.
    Tty,
}

/// Lines typed, read on a thread of their own once the first question
/// comes (so a run that asks nothing never reads its input).
pub(crate) struct Terminal {
    source: Source,
    lines: Option<mpsc::Receiver<String>>,
}

impl Terminal {
    /// Answers from stdin, or the terminal when stdin held the prompt.
    pub(crate) fn for_prompt(prompt_from_stdin: bool) -> Terminal {
        Terminal::new(if prompt_from_stdin {
            Source::Tty
        } else {
            Source::Stdin
        })
    }

    pub(crate) fn new(source: Source) -> Terminal {
        Terminal {
            source,
            lines: None,
        }
    }

    async fn line(&mut self) -> Option<String> {
        let source = self.source;
        let lines = self.lines.get_or_insert_with(|| {
            let (send, receive) = mpsc::channel(16);
            std::thread::spawn(move || read_lines(source, send));
            receive
        });
        lines.recv().await
    }

    /// Asks `asked` on stderr: the action and, for an accepted form, its
    /// content.
    pub(crate) async fn ask(
        &mut self,
        asked: &ElicitationRequested,
    ) -> (ElicitationAction, Option<Value>) {
        let mut err = std::io::stderr();
        let _ = writeln!(
            err,
            "[elicitation] MCP server `{}` asks: {}",
            visible(&asked.server),
            visible(&asked.message)
        );
        if let Some(url) = &asked.url {
            let _ = writeln!(
                err,
                "  Open this link yourself (SCV does not open it):\n  {}",
                visible(url)
            );
            return match self
                .choose("  Done there? y accepts, n declines, c cancels: ")
                .await
            {
                Some(ElicitationAction::Accept) => (ElicitationAction::Accept, None),
                Some(other) => (other, None),
                None => (ElicitationAction::Cancel, None),
            };
        }
        let schema = asked
            .schema
            .clone()
            .unwrap_or_else(|| serde_json::json!({}));
        match self
            .choose("  Answer it? y fills it in, n declines, c cancels: ")
            .await
        {
            Some(ElicitationAction::Accept) => {}
            Some(other) => return (other, None),
            None => return (ElicitationAction::Cancel, None),
        }
        match self.fill(&schema).await {
            Some(content) => (ElicitationAction::Accept, Some(content)),
            None => {
                let _ = writeln!(err, "  The question was cancelled.");
                (ElicitationAction::Cancel, None)
            }
        }
    }

    /// y / n / c, asked until one of them comes (`None`: no more input).
    async fn choose(&mut self, question: &str) -> Option<ElicitationAction> {
        for _ in 0..MAX_TRIES {
            let mut err = std::io::stderr();
            let _ = write!(err, "{question}");
            let _ = err.flush();
            let line = self.line().await?;
            match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" | "accept" => return Some(ElicitationAction::Accept),
                "n" | "no" | "decline" => return Some(ElicitationAction::Decline),
                "c" | "cancel" => return Some(ElicitationAction::Cancel),
                _ => {}
            }
        }
        Some(ElicitationAction::Cancel)
    }

    /// The form's content, field by field (`None`: cancelled).
    async fn fill(&mut self, schema: &Value) -> Option<Value> {
        let fields = elicit_form::fields(schema);
        let mut values = Vec::with_capacity(fields.len());
        let mut err = std::io::stderr();
        for field in &fields {
            if field.kind == Kind::Other {
                let _ = writeln!(err, "  `{}` cannot be filled in here.", visible(&field.key));
                return None;
            }
            if let Some(description) = &field.description {
                let _ = writeln!(err, "  ({})", visible(description));
            }
            let required = if field.required { ", required" } else { "" };
            let mut value = None;
            for _ in 0..MAX_TRIES {
                let _ = write!(
                    err,
                    "  {} ({}{required}): ",
                    visible(&field.title),
                    visible(&field.takes())
                );
                let _ = err.flush();
                match field.parse(&self.line().await?) {
                    Ok(parsed) => {
                        value = Some(parsed);
                        break;
                    }
                    Err(why) => {
                        let _ = writeln!(err, "  {}", visible(&why));
                    }
                }
            }
            values.push(value?);
        }
        let content = elicit_form::content(&fields, &values);
        match elicit_form::check_content(schema, &content) {
            Ok(()) => Some(content),
            Err(why) => {
                let _ = writeln!(err, "  {}", visible(&why));
                None
            }
        }
    }
}

/// Reads lines from `source` into `send` until its end (or the receiver
/// is gone).
fn read_lines(source: Source, send: mpsc::Sender<String>) {
    let reader: Box<dyn BufRead> = match source {
        Source::Stdin => Box::new(std::io::BufReader::new(std::io::stdin())),
        Source::Tty => match std::fs::File::open("/dev/tty") {
            Ok(tty) => Box::new(std::io::BufReader::new(tty)),
            Err(err) => {
                eprintln!("scv: cannot read answers from the terminal (/dev/tty): {err}");
                return;
            }
        },
    };
    let mut reader = reader;
    loop {
        let mut line = Vec::new();
        match std::io::Read::take(&mut reader, MAX_LINE_BYTES as u64).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if !line.ends_with(b"\n") {
            // The rest of an overlong line is dropped.
            let mut rest = Vec::new();
            let _ = reader.read_until(b'\n', &mut rest);
        }
        let text = String::from_utf8_lossy(&line).into_owned();
        if send.blocking_send(text).is_err() {
            return;
        }
    }
}
