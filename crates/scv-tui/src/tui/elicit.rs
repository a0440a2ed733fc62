//! An MCP server's question (`elicitation.requested`) as a form over the
//! transcript. Form mode: one line per field of the requested schema,
//! typed into (a yes-or-no or a choice also cycles with Space / ← →),
//! Tab and ↑ ↓ move between fields; Enter sends once every field parses
//! and the whole matches the schema (else the first wrong field is
//! focused and what is wrong is said, nothing sent). URL mode: the link,
//! which SCV never opens; Enter says the user finished there. Ctrl+N
//! declines, Esc cancels. Questions that come while one is up wait behind
//! it ([`MAX_WAITING`] at most; past it they are declined).
//!
//! What is typed stays on the form: the transcript only says the question
//! was answered and how, never the answers.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use scv_client::text::visible;
use scv_protocol::elicit_form::{self, Field, Kind};
use scv_protocol::{ElicitationAction, ElicitationRequested};
use serde_json::Value;
use std::collections::VecDeque;

/// Questions waiting behind the one shown.
pub const MAX_WAITING: usize = 16;
/// The longest answer typed into one field (characters).
pub const MAX_FIELD_CHARS: usize = 4096;

/// The answer to one question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub elicitation_id: String,
    pub action: ElicitationAction,
    pub content: Option<Value>,
}

/// What a key did to the form.
#[derive(Debug, Clone, PartialEq)]
pub enum FormKey {
    /// Not the form's (Ctrl+C, Ctrl+D).
    Pass,
    Taken,
    Answered(Answer),
}

/// The question shown, and those waiting.
#[derive(Debug, Clone)]
pub struct ElicitForm {
    pub asked: ElicitationRequested,
    fields: Vec<Field>,
    inputs: Vec<String>,
    focus: usize,
    error: Option<String>,
    waiting: VecDeque<ElicitationRequested>,
}

impl ElicitForm {
    pub fn new(asked: ElicitationRequested) -> ElicitForm {
        let fields = asked
            .schema
            .as_ref()
            .map(elicit_form::fields)
            .unwrap_or_default();
        let inputs = fields.iter().map(initial).collect();
        ElicitForm {
            asked,
            fields,
            inputs,
            focus: 0,
            error: None,
            waiting: VecDeque::new(),
        }
    }

    /// Another question, behind this one; `Err`: no room (its id, to
    /// decline it).
    pub fn push(&mut self, asked: ElicitationRequested) -> Result<(), String> {
        if self.waiting.len() >= MAX_WAITING {
            return Err(asked.elicitation_id);
        }
        self.waiting.push_back(asked);
        Ok(())
    }

    /// The next waiting question, if any (this one was answered).
    pub fn next(self) -> Option<ElicitForm> {
        let mut waiting = self.waiting;
        let asked = waiting.pop_front()?;
        let mut form = ElicitForm::new(asked);
        form.waiting = waiting;
        Some(form)
    }

    /// Every question's id, the one shown first.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.asked.elicitation_id.as_str())
            .chain(self.waiting.iter().map(|a| a.elicitation_id.as_str()))
    }

    fn answer(&self, action: ElicitationAction, content: Option<Value>) -> FormKey {
        FormKey::Answered(Answer {
            elicitation_id: self.asked.elicitation_id.clone(),
            action,
            content,
        })
    }

    pub fn on_key(&mut self, key: KeyEvent) -> FormKey {
        let control = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('c' | 'd') if control => return FormKey::Pass,
            KeyCode::Char('n') if control => return self.answer(ElicitationAction::Decline, None),
            KeyCode::Esc => return self.answer(ElicitationAction::Cancel, None),
            KeyCode::Enter if self.asked.url.is_some() => {
                return self.answer(ElicitationAction::Accept, None)
            }
            KeyCode::Enter => return self.submit(),
            _ if self.fields.is_empty() => {}
            KeyCode::Tab | KeyCode::Down => self.focus = (self.focus + 1) % self.fields.len(),
            KeyCode::BackTab | KeyCode::Up => {
                self.focus = (self.focus + self.fields.len() - 1) % self.fields.len()
            }
            KeyCode::Left => self.cycle(false),
            KeyCode::Right => self.cycle(true),
            KeyCode::Char(' ') if self.cycles() => self.cycle(true),
            KeyCode::Backspace => {
                self.inputs[self.focus].pop();
            }
            KeyCode::Char(c) if !control => {
                let input = &mut self.inputs[self.focus];
                if input.chars().count() < MAX_FIELD_CHARS {
                    input.push(c);
                }
            }
            _ => {}
        }
        FormKey::Taken
    }

    /// The focused field is a yes-or-no or a single choice.
    fn cycles(&self) -> bool {
        matches!(
            self.fields[self.focus].kind,
            Kind::Boolean | Kind::Choice(_)
        )
    }

    /// The focused yes-or-no or choice to its next (or previous) value.
    fn cycle(&mut self, forward: bool) {
        let options: Vec<String> = match &self.fields[self.focus].kind {
            Kind::Boolean => vec!["yes".into(), "no".into()],
            Kind::Choice(choices) => choices.iter().map(|c| c.label.clone()).collect(),
            _ => return,
        };
        if options.is_empty() {
            return;
        }
        let input = &mut self.inputs[self.focus];
        let at = options.iter().position(|o| o.eq_ignore_ascii_case(input));
        let n = options.len();
        let next = match (at, forward) {
            (None, true) => 0,
            (None, false) => n - 1,
            (Some(i), true) => (i + 1) % n,
            (Some(i), false) => (i + n - 1) % n,
        };
        *input = options[next].clone();
    }

    /// Enter: the content when every field parses and the whole matches.
    fn submit(&mut self) -> FormKey {
        let mut values = Vec::with_capacity(self.fields.len());
        for (n, field) in self.fields.iter().enumerate() {
            match field.parse(&self.inputs[n]) {
                Ok(value) => values.push(value),
                Err(why) => {
                    self.focus = n;
                    self.error = Some(why);
                    return FormKey::Taken;
                }
            }
        }
        let content = elicit_form::content(&self.fields, &values);
        let schema = self.asked.schema.clone().unwrap_or(Value::Null);
        if let Err(why) = elicit_form::check_content(&schema, &content) {
            self.error = Some(why);
            return FormKey::Taken;
        }
        self.answer(ElicitationAction::Accept, Some(content))
    }

    /// The border's title: the keys.
    pub fn title(&self) -> &'static str {
        if self.asked.url.is_some() {
            " MCP server asks — Enter done · Ctrl+N decline · Esc cancel "
        } else {
            " MCP server asks — Enter send · Tab next field · Ctrl+N decline · Esc cancel "
        }
    }

    pub fn lines(&self) -> Vec<Line<'static>> {
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let dim = Style::default().fg(Color::DarkGray);
        let mut lines = vec![
            Line::styled(
                format!("MCP server `{}` asks:", visible(&self.asked.server)),
                dim,
            ),
            Line::styled(visible(&self.asked.message).into_owned(), bold),
            Line::default(),
        ];
        if let Some(url) = &self.asked.url {
            lines.push(Line::raw("Open this link yourself (SCV does not open it):"));
            lines.push(Line::styled(
                visible(url).into_owned(),
                Style::default()
                    .fg(Color::Cyan)
                    .add_modifier(Modifier::UNDERLINED),
            ));
            lines.push(Line::default());
            lines.push(Line::styled("Press Enter once you are done there.", dim));
        }
        for (n, field) in self.fields.iter().enumerate() {
            lines.extend(self.field_lines(n, field));
        }
        if let Some(error) = &self.error {
            lines.push(Line::default());
            lines.push(Line::styled(
                format!("Not sent: {}", visible(error)),
                Style::default().fg(Color::Red),
            ));
        }
        if !self.waiting.is_empty() {
            lines.push(Line::default());
            lines.push(Line::styled(
                format!("{} more question(s) waiting", self.waiting.len()),
                dim,
            ));
        }
        lines
    }

    fn field_lines(&self, n: usize, field: &Field) -> Vec<Line<'static>> {
        let focused = n == self.focus;
        let marker = if focused { "› " } else { "  " };
        let required = if field.required { " *" } else { "" };
        let input = visible(&self.inputs[n]).into_owned();
        let cursor = if focused { "▏" } else { "" };
        let mut lines = vec![Line::from(vec![
            Span::styled(
                format!("{marker}{}{required}: ", visible(&field.title)),
                Style::default().add_modifier(Modifier::BOLD),
            ),
            Span::raw(input),
            Span::styled(cursor, Style::default().fg(Color::Cyan)),
        ])];
        let mut help = field.takes();
        if let Some(description) = &field.description {
            help = format!("{} — {help}", visible(description));
        }
        lines.push(Line::styled(
            format!("    {help}"),
            Style::default().fg(Color::DarkGray),
        ));
        lines
    }
}

/// What a field shows at first: its default, as it would be typed.
fn initial(field: &Field) -> String {
    match (&field.default, &field.kind) {
        (Some(Value::Bool(yes)), _) => if *yes { "yes" } else { "no" }.into(),
        (Some(Value::String(text)), Kind::Choice(choices)) => choices
            .iter()
            .find(|c| &c.value == text)
            .map_or_else(|| text.clone(), |c| c.label.clone()),
        (Some(Value::String(text)), _) => text.clone(),
        (Some(Value::Number(n)), _) => n.to_string(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn typed(form: &mut ElicitForm, text: &str) {
        for c in text.chars() {
            form.on_key(key(KeyCode::Char(c)));
        }
    }

    fn asked(schema: Value) -> ElicitationRequested {
        ElicitationRequested {
            elicitation_id: "e1".into(),
            server: "fake".into(),
            message: "Who?".into(),
            schema: Some(schema),
            url: None,
        }
    }

    #[test]
    fn a_form_is_sent_only_once_it_matches_its_schema() {
        let mut form = ElicitForm::new(asked(json!({"type":"object","properties":{
            "name":{"type":"string","minLength":2},
            "age":{"type":"integer"},
            "ok":{"type":"boolean"}},"required":["name","age"]})));
        // By key: age, name, ok.
        form.on_key(key(KeyCode::Tab));
        typed(&mut form, "A");
        assert_eq!(form.on_key(key(KeyCode::Enter)), FormKey::Taken);
        assert!(form.error.as_deref().unwrap().contains("required"));
        assert_eq!(form.focus, 0, "the wrong field is focused");
        typed(&mut form, "x");
        assert_eq!(form.on_key(key(KeyCode::Enter)), FormKey::Taken);
        assert!(form.error.as_deref().unwrap().contains("whole number"));
        form.on_key(key(KeyCode::Backspace));
        typed(&mut form, "36");
        assert_eq!(form.on_key(key(KeyCode::Enter)), FormKey::Taken);
        assert!(form.error.as_deref().unwrap().contains("at least 2"));
        assert_eq!(form.focus, 1);
        typed(&mut form, "da");
        form.on_key(key(KeyCode::Down));
        form.on_key(key(KeyCode::Char(' ')));
        form.on_key(key(KeyCode::Right));
        let FormKey::Answered(answer) = form.on_key(key(KeyCode::Enter)) else {
            panic!("not sent: {:?}", form.error);
        };
        assert_eq!(answer.action, ElicitationAction::Accept);
        assert_eq!(
            answer.content,
            Some(json!({"name":"Ada","age":36,"ok":false}))
        );
    }

    #[test]
    fn ctrl_n_declines_esc_cancels_and_questions_wait_their_turn() {
        let mut form = ElicitForm::new(asked(json!({"type":"object","properties":{}})));
        let decline = form.on_key(KeyEvent::new(KeyCode::Char('n'), KeyModifiers::CONTROL));
        assert!(matches!(decline, FormKey::Answered(a) if a.action == ElicitationAction::Decline));
        let cancel = form.on_key(key(KeyCode::Esc));
        assert!(matches!(cancel, FormKey::Answered(a) if a.action == ElicitationAction::Cancel));
        let ctrl_c = form.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
        assert_eq!(ctrl_c, FormKey::Pass);
        let mut second = asked(json!({}));
        second.elicitation_id = "e2".into();
        form.push(second).unwrap();
        for _ in 1..MAX_WAITING {
            form.push(asked(json!({}))).unwrap();
        }
        assert!(form.push(asked(json!({}))).is_err(), "bounded");
        let next = form.next().unwrap();
        assert_eq!(next.asked.elicitation_id, "e2");
    }
}
