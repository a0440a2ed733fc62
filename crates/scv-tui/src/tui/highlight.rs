//! Syntax highlighting of code blocks with syntect. Loading the syntax set
//! takes tens of milliseconds, so it happens on a background thread started
//! at launch; until it is ready code renders plain, and the generation
//! number tells cached renderings to redo themselves once it is.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

struct Highlighter {
    syntaxes: SyntaxSet,
    theme: Theme,
}

static HIGHLIGHTER: OnceLock<Highlighter> = OnceLock::new();
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Common constructs of many languages, to compile their patterns early.
const WARM_UP_SNIPPET: &str = "use std::io;\nimport os\n#include <stdio.h>\n\
fn add(a: i32, b: &str) -> Vec<u8> { let x = \"s\\n\"; // note\n  return vec![1, 2.5, 0x1f]; }\n\
def f(self, *args):\n    '''doc'''\n    return None  # c\n\
class A extends B { public static void main(String[] a) { if (x != null) {} } }\n\
const f = async (a) => { await g(`t ${a}`); }; /* block */\n";

/// Starts loading in the background (idempotent).
pub fn warm_up() {
    if HIGHLIGHTER.get().is_some() {
        return;
    }
    std::thread::spawn(|| {
        load();
        // Grammars compile their regexes on first use; do that here, not
        // in the first frame that shows such a code block.
        for lang in [
            "rust", "python", "js", "ts", "sh", "json", "go", "c", "cpp", "java", "diff", "yaml",
        ] {
            let _ = highlight(WARM_UP_SNIPPET, lang);
        }
    });
}

/// Loads now (tests and benchmarks want deterministic output).
pub fn load() {
    HIGHLIGHTER.get_or_init(|| {
        let syntaxes = SyntaxSet::load_defaults_newlines();
        let mut themes = ThemeSet::load_defaults();
        let theme = themes
            .themes
            .remove("base16-ocean.dark")
            .or_else(|| themes.themes.into_values().next())
            .unwrap_or_default();
        Highlighter { syntaxes, theme }
    });
    GENERATION.store(1, Ordering::Release);
}

/// Changes when highlighting becomes available.
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

/// Highlighted lines of `code` in language `lang`, or `None` when the
/// highlighter is not loaded or does not know the language.
pub fn highlight(code: &str, lang: &str) -> Option<Vec<Line<'static>>> {
    let hl = HIGHLIGHTER.get()?;
    let syntax = hl
        .syntaxes
        .find_syntax_by_token(lang)
        .or_else(|| hl.syntaxes.find_syntax_by_extension(lang))?;
    let mut lines = Vec::new();
    let mut highlighter = HighlightLines::new(syntax, &hl.theme);
    for line in LinesWithEndings::from(code) {
        let ranges = highlighter.highlight_line(line, &hl.syntaxes).ok()?;
        let spans = ranges
            .into_iter()
            .map(|(style, text)| {
                let fg = style.foreground;
                let mut s = Style::default().fg(Color::Rgb(fg.r, fg.g, fg.b));
                if style.font_style.contains(FontStyle::BOLD) {
                    s = s.add_modifier(Modifier::BOLD);
                }
                if style.font_style.contains(FontStyle::ITALIC) {
                    s = s.add_modifier(Modifier::ITALIC);
                }
                Span::styled(text.trim_end_matches(['\n', '\r']).to_string(), s)
            })
            .collect::<Vec<_>>();
        lines.push(Line::from(spans));
    }
    Some(lines)
}
