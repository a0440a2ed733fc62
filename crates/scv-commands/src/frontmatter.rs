//! The frontmatter of a command, skill or agent file: the YAML block
//! between a first line `---` and the next `---` line, in the small subset
//! these files use. There is no YAML crate in the workspace, and a full YAML
//! parser is far more than `key: value` lines need, so this reads exactly:
//!
//! - `key: value` lines at column 0 (keys of letters, digits, `_`, `-`, `.`),
//!   the value plain, `"double quoted"` (escapes `\" \\ \/ \n \t \r \0`) or
//!   `'single quoted'` (`''` for a quote), on one line; a plain value's
//!   ` # comment` is dropped;
//! - `key:` followed by a list (`- item` lines, indented or not) or by one
//!   level of `  sub: value` lines (the Agent Skills `metadata` map);
//! - `key: |` / `key: >` block scalars (with `-` or `+` chomping) over the
//!   indented lines after them;
//! - for `allowed-tools` and `tools`, a one-line flow list `[a, "b"]`;
//! - blank lines and `# comment` lines.
//!
//! Anything else is an error naming its line: an opening `---` without a
//! closing one, a line that is not `key: value`, a duplicate key, a quote not
//! closed on its line, text after a closing quote, anchors, aliases, tags,
//! flow mappings, tabs in indentation, deeper nesting.
//!
//! One deliberate leniency, which the Agent Skills client guide recommends
//! ("Skill files authored for other clients may contain technically invalid
//! YAML that their parsers happen to accept. The most common issue is
//! unquoted values containing colons"): a plain value may contain `: `, so
//! `description: Use when: the user asks` is the string after the first
//! `: `. Likewise a plain value starting with `[` is kept as its text for
//! keys other than the list keys, so `argument-hint: [pr] [priority]` (Claude
//! Code's documented form, not valid YAML) is the hint `[pr] [priority]`.

/// Keys whose one-line `[a, b]` value is read as a list.
const LIST_KEYS: &[&str] = &["allowed-tools", "tools"];

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Value {
    Str(String),
    List(Vec<String>),
    Map(Vec<(String, String)>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Field {
    pub(crate) key: String,
    pub(crate) value: Value,
    /// 1-based line in the file.
    pub(crate) line: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Parsed<'a> {
    /// `None`: the file has no frontmatter (its first line is not `---`).
    pub(crate) fields: Option<Vec<Field>>,
    /// Everything after the closing `---` line (the whole text when there is
    /// no frontmatter), not trimmed.
    pub(crate) body: &'a str,
}

impl Parsed<'_> {
    pub(crate) fn get(&self, key: &str) -> Option<&Field> {
        self.fields.as_ref()?.iter().find(|f| f.key == key)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Error {
    pub(crate) line: usize,
    pub(crate) message: String,
}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, Error> {
    Err(Error {
        line,
        message: message.into(),
    })
}

/// Splits `text` (a leading byte-order mark is ignored) into frontmatter and
/// body.
pub(crate) fn parse(text: &str) -> Result<Parsed<'_>, Error> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut pieces = text.split_inclusive('\n');
    match pieces.next() {
        Some(first) if is_fence(first) => {}
        _ => {
            return Ok(Parsed {
                fields: None,
                body: text,
            })
        }
    }
    let mut offset = text.split_inclusive('\n').next().map_or(0, str::len);
    let mut lines: Vec<(usize, &str)> = Vec::new();
    for (i, piece) in pieces.enumerate() {
        let number = i + 2;
        offset += piece.len();
        if is_fence(piece) {
            let fields = parse_fields(&lines)?;
            return Ok(Parsed {
                fields: Some(fields),
                body: &text[offset..],
            });
        }
        lines.push((number, strip_eol(piece)));
    }
    err(
        1,
        "the frontmatter opened by `---` on line 1 is never closed by a `---` line",
    )
}

fn strip_eol(piece: &str) -> &str {
    let piece = piece.strip_suffix('\n').unwrap_or(piece);
    piece.strip_suffix('\r').unwrap_or(piece)
}

fn is_fence(piece: &str) -> bool {
    strip_eol(piece).trim_end() == "---"
}

fn is_skippable(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn parse_fields(lines: &[(usize, &str)]) -> Result<Vec<Field>, Error> {
    let mut fields: Vec<Field> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let (number, line) = lines[i];
        i += 1;
        if is_skippable(line) {
            continue;
        }
        check_tabs(number, line)?;
        if line.starts_with(' ') {
            return err(
                number,
                "unexpected indented line (expected `key: value` at the start of the line)",
            );
        }
        if line == "..." || line.starts_with("--- ") {
            return err(number, "only one YAML document is allowed in frontmatter");
        }
        let (key, rest) = split_key(number, line)?;
        if let Some(first) = fields.iter().find(|f| f.key == key) {
            return err(
                number,
                format!("duplicate key `{key}` (first on line {})", first.line),
            );
        }
        let value_text = rest.trim();
        let value = if value_text.is_empty() || value_text.starts_with('#') {
            let (value, used) = nested(&lines[i..])?;
            i += used;
            value
        } else if let Some(chomp) = block_indicator(number, value_text)? {
            let (value, used) = block_scalar(&lines[i..], value_text.starts_with('>'), chomp);
            i += used;
            Value::Str(value)
        } else if LIST_KEYS.contains(&key) && value_text.starts_with('[') {
            Value::List(flow_list(number, value_text)?)
        } else {
            Value::Str(scalar(number, value_text)?)
        };
        fields.push(Field {
            key: key.to_owned(),
            value,
            line: number,
        });
    }
    Ok(fields)
}

fn check_tabs(number: usize, line: &str) -> Result<(), Error> {
    let lead = &line[..line.len() - line.trim_start().len()];
    if lead.contains('\t') {
        return err(number, "tabs are not allowed in indentation");
    }
    Ok(())
}

/// `key: rest` → (`key`, ` rest`). The key must be followed by `:` and then
/// whitespace or the end of the line.
fn split_key(number: usize, line: &str) -> Result<(&str, &str), Error> {
    let not_key = || {
        err(
            number,
            format!("expected `key: value`, found `{}`", shorten(line)),
        )
    };
    let Some(colon) = line.find(':') else {
        return not_key();
    };
    let key = &line[..colon];
    let rest = &line[colon + 1..];
    let key_ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !key_ok || !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return not_key();
    }
    Ok((key, rest))
}

fn shorten(line: &str) -> String {
    const MAX: usize = 60;
    if line.len() <= MAX {
        return line.to_owned();
    }
    let mut end = MAX;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &line[..end])
}

/// What follows `key:` with no value: a list, a one-level map, or nothing
/// (the empty string). Returns the value and how many lines it used.
fn nested(lines: &[(usize, &str)]) -> Result<(Value, usize), Error> {
    let mut used = 0;
    let mut items: Vec<(usize, &str)> = Vec::new();
    for &(number, line) in lines {
        if is_skippable(line) {
            used += 1;
            continue;
        }
        let is_item = line.trim_start() == "-" || line.trim_start().starts_with("- ");
        if !(line.starts_with(' ') || is_item) {
            break;
        }
        check_tabs(number, line)?;
        used += 1;
        items.push((number, line));
    }
    let Some(&(first_number, first)) = items.first() else {
        return Ok((Value::Str(String::new()), used));
    };
    let indent = indent_of(first);
    let first_trimmed = first.trim_start();
    if first_trimmed == "-" || first_trimmed.starts_with("- ") {
        let mut list = Vec::new();
        for &(number, line) in &items {
            let t = line.trim_start();
            if indent_of(line) != indent || !(t == "-" || t.starts_with("- ")) {
                return err(number, "expected a `- item` line of the list above");
            }
            let item = t[1..].trim();
            if item.starts_with('-') && (item == "-" || item.starts_with("- ")) {
                return err(number, "nested lists are not supported");
            }
            list.push(if item.is_empty() {
                String::new()
            } else {
                scalar(number, item)?
            });
        }
        return Ok((Value::List(list), used));
    }
    if indent == 0 {
        return err(first_number, "expected an indented value");
    }
    let mut map = Vec::new();
    for &(number, line) in &items {
        if indent_of(line) != indent {
            return err(number, "only one level of nested `key: value` is supported");
        }
        let (key, rest) = split_key(number, line.trim_start())?;
        let v = rest.trim();
        if v.is_empty() {
            return err(number, "only one level of nested `key: value` is supported");
        }
        if map.iter().any(|(k, _)| k == key) {
            return err(number, format!("duplicate key `{key}`"));
        }
        map.push((key.to_owned(), scalar(number, v)?));
    }
    Ok((Value::Map(map), used))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Chomp {
    Clip,
    Strip,
    Keep,
}

/// `|`, `|-`, `|+`, `>`, `>-`, `>+` (optionally followed by a comment).
fn block_indicator(number: usize, value: &str) -> Result<Option<Chomp>, Error> {
    if !value.starts_with(['|', '>']) {
        return Ok(None);
    }
    let head = value.split(" #").next().unwrap_or(value).trim_end();
    match &head[1..] {
        "" => Ok(Some(Chomp::Clip)),
        "-" => Ok(Some(Chomp::Strip)),
        "+" => Ok(Some(Chomp::Keep)),
        _ => err(
            number,
            "unsupported block scalar header (use `|`, `|-`, `>` or `>-`)",
        ),
    }
}

fn block_scalar(lines: &[(usize, &str)], folded: bool, chomp: Chomp) -> (String, usize) {
    let indent = lines
        .iter()
        .map(|(_, l)| *l)
        .find(|l| !l.trim().is_empty())
        .map_or(0, indent_of);
    let mut used = 0;
    let mut content: Vec<&str> = Vec::new();
    if indent > 0 {
        for &(_, line) in lines {
            if line.trim().is_empty() {
                content.push("");
            } else if indent_of(line) >= indent {
                content.push(&line[indent..]);
            } else {
                break;
            }
            used += 1;
        }
    }
    // Trailing blank lines belong to the chomping, not the content; they
    // are also not consumed (a following key may come after them).
    let mut trailing = 0;
    while content.last() == Some(&"") {
        content.pop();
        trailing += 1;
    }
    used -= trailing;
    let mut out = String::new();
    if folded {
        let mut previous_blank = true;
        for line in &content {
            if line.is_empty() {
                out.push('\n');
                previous_blank = true;
            } else {
                if !previous_blank {
                    out.push(' ');
                }
                out.push_str(line);
                previous_blank = false;
            }
        }
    } else {
        out = content.join("\n");
    }
    if !out.is_empty() {
        match chomp {
            Chomp::Strip => {}
            Chomp::Clip => out.push('\n'),
            Chomp::Keep => {
                out.push('\n');
                out.extend(std::iter::repeat_n('\n', trailing));
            }
        }
    }
    (out, used)
}

/// `[a, "b c", 'd']` on one line.
fn flow_list(number: usize, value: &str) -> Result<Vec<String>, Error> {
    let value = strip_comment(value);
    let Some(inner) = value
        .strip_prefix('[')
        .and_then(|v| v.trim_end().strip_suffix(']'))
    else {
        return err(number, "a `[` list must be closed by `]` on the same line");
    };
    let mut items = Vec::new();
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let (item, after) = if rest.starts_with(['"', '\'']) {
            let (item, len) = quoted(number, rest)?;
            (item, rest[len..].trim_start())
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            let item = rest[..end].trim();
            if item.starts_with(['[', '{', '&', '*', '!']) {
                return err(number, "nested collections are not supported in a `[` list");
            }
            (item.to_owned(), &rest[end..])
        };
        items.push(item);
        rest = match after.strip_prefix(',') {
            Some(r) => r.trim_start(),
            None if after.trim().is_empty() => "",
            None => return err(number, "expected `,` between list items"),
        };
    }
    Ok(items)
}

fn strip_comment(value: &str) -> &str {
    let mut cut = value.len();
    for (i, _) in value.match_indices('#') {
        if i > 0 && value[..i].ends_with([' ', '\t']) {
            cut = i;
            break;
        }
    }
    value[..cut].trim_end()
}

/// One scalar value (already trimmed, not empty).
fn scalar(number: usize, value: &str) -> Result<String, Error> {
    if value.starts_with(['"', '\'']) {
        let (s, len) = quoted(number, value)?;
        let after = value[len..].trim();
        if !(after.is_empty() || after.starts_with('#')) {
            return err(
                number,
                format!(
                    "unexpected text after the closing quote: `{}`",
                    shorten(after)
                ),
            );
        }
        return Ok(s);
    }
    if let Some(c) = value.chars().next() {
        if matches!(c, '&' | '*' | '!' | '{' | '%') {
            return err(
                number,
                format!("`{c}` (YAML anchors, aliases, tags, flow mappings) is not supported; quote the value"),
            );
        }
    }
    Ok(strip_comment(value).to_owned())
}

/// A quoted string at the start of `value`: its text and the byte length of
/// the quoted form including both quotes.
fn quoted(number: usize, value: &str) -> Result<(String, usize), Error> {
    let mut chars = value.char_indices();
    let Some((_, quote)) = chars.next() else {
        return err(number, "expected a quoted value");
    };
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        if c == quote {
            if quote == '\'' && value[i + 1..].starts_with('\'') {
                chars.next();
                out.push('\'');
                continue;
            }
            return Ok((out, i + 1));
        }
        if c == '\\' && quote == '"' {
            let escaped = match chars.next() {
                Some((_, '"')) => '"',
                Some((_, '\\')) => '\\',
                Some((_, '/')) => '/',
                Some((_, 'n')) => '\n',
                Some((_, 't')) => '\t',
                Some((_, 'r')) => '\r',
                Some((_, '0')) => '\0',
                Some((_, other)) => {
                    return err(number, format!("unsupported escape `\\{other}`"));
                }
                None => break,
            };
            out.push(escaped);
            continue;
        }
        out.push(c);
    }
    err(
        number,
        format!("the {quote}quoted{quote} value is not closed on this line"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(text: &str) -> Vec<Field> {
        parse(text).unwrap().fields.unwrap()
    }

    fn value(text: &str, key: &str) -> Value {
        parse(text).unwrap().get(key).unwrap().value.clone()
    }

    #[test]
    fn no_frontmatter_is_all_body() {
        let p = parse("Review the code.\n---\n").unwrap();
        assert_eq!(p.fields, None);
        assert_eq!(p.body, "Review the code.\n---\n");
        assert_eq!(parse("").unwrap().body, "");
    }

    #[test]
    fn plain_and_quoted_values() {
        let text = "---\r\ndescription: Fix issue#123 # a comment (YAML: ` #` starts one)\r\nargument-hint: \"[pr] [prio]\"\nmodel: 'it''s'\nempty: \"\"\n---\nBody\n";
        let p = parse(text).unwrap();
        assert_eq!(p.body, "Body\n");
        let f = p.fields.clone().unwrap();
        assert_eq!(f[0].value, Value::Str("Fix issue#123".into()));
        assert_eq!(f[0].line, 2);
        assert_eq!(f[1].value, Value::Str("[pr] [prio]".into()));
        assert_eq!(f[2].value, Value::Str("it's".into()));
        assert_eq!(f[3].value, Value::Str(String::new()));
        assert_eq!(
            value("---\nd: \"a\\\"b\\n\"\n---\n", "d"),
            Value::Str("a\"b\n".into())
        );
    }

    #[test]
    fn colons_in_plain_values_and_unquoted_brackets_are_text() {
        assert_eq!(
            value(
                "---\ndescription: Use when: the user asks\n---\n",
                "description"
            ),
            Value::Str("Use when: the user asks".into())
        );
        assert_eq!(
            value(
                "---\nargument-hint: [pr-number] [priority]\n---\n",
                "argument-hint"
            ),
            Value::Str("[pr-number] [priority]".into())
        );
    }

    #[test]
    fn lists_in_every_form() {
        let block = "---\nallowed-tools:\n  - Bash(git:*)\n  - \"Read\"\n---\n";
        assert_eq!(
            value(block, "allowed-tools"),
            Value::List(vec!["Bash(git:*)".into(), "Read".into()])
        );
        let compact = "---\ntools:\n- a\n- b\nmodel: x\n---\n";
        assert_eq!(
            value(compact, "tools"),
            Value::List(vec!["a".into(), "b".into()])
        );
        assert_eq!(value(compact, "model"), Value::Str("x".into()));
        let flow = "---\nallowed-tools: [Read, \"Bash(git add:*)\", Grep] # c\n---\n";
        assert_eq!(
            value(flow, "allowed-tools"),
            Value::List(vec!["Read".into(), "Bash(git add:*)".into(), "Grep".into()])
        );
        let spaced = "---\nallowed-tools: Bash(git:*) Read\n---\n";
        assert_eq!(
            value(spaced, "allowed-tools"),
            Value::Str("Bash(git:*) Read".into())
        );
    }

    #[test]
    fn one_level_map_and_block_scalars() {
        let text = "---\nname: pdf\nmetadata:\n  author: example-org\n  version: \"1.0\"\ndescription: >\n  Extract text\n  and tables.\n\n  Use for PDFs.\nlit: |-\n  a\n  b\n---\nbody";
        let f = fields(text);
        assert_eq!(
            f[1].value,
            Value::Map(vec![
                ("author".into(), "example-org".into()),
                ("version".into(), "1.0".into())
            ])
        );
        assert_eq!(
            f[2].value,
            Value::Str("Extract text and tables.\nUse for PDFs.\n".into())
        );
        assert_eq!(f[3].value, Value::Str("a\nb".into()));
        assert_eq!(f[3].line, 11);
    }

    #[test]
    fn errors_name_their_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("---\ndescription: x\n", 1, "never closed"),
            ("---\na: 1\njust text\n---\n", 3, "expected `key: value`"),
            (
                "---\na: 1\na: 2\n---\n",
                3,
                "duplicate key `a` (first on line 2)",
            ),
            ("---\na: \"open\n---\n", 2, "not closed"),
            ("---\na: \"x\" y\n---\n", 2, "after the closing quote"),
            ("---\na: *alias\n---\n", 2, "not supported"),
            ("---\na: {b: c}\n---\n", 2, "not supported"),
            ("---\n  a: 1\n---\n", 2, "indented"),
            ("---\na:\n  - x\n  y: z\n---\n", 4, "`- item`"),
            ("---\na:\n  b:\n    c: d\n---\n", 3, "one level"),
            ("---\na: \"\\q\"\n---\n", 2, "escape"),
            ("---\nkey:value\n---\n", 2, "expected `key: value`"),
            ("---\na: |2\n  x\n---\n", 2, "block scalar"),
            ("---\ntools: [a, b\n---\n", 2, "closed by `]`"),
        ];
        for (text, line, message) in cases {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, *line, "{text:?}: {e:?}");
            assert!(e.message.contains(message), "{text:?}: {e:?}");
        }
    }

    #[test]
    fn bom_and_comments_and_blank_lines() {
        let text = "\u{feff}---\n# comment\n\ndescription: hi\n---\n";
        assert_eq!(fields(text)[0].line, 4);
        assert_eq!(value("---\na:\n---\n", "a"), Value::Str(String::new()));
    }
}
