//! Agent Skills: folders holding a `SKILL.md` whose frontmatter has `name`
//! and `description`.
//!
//! The specification (agentskills.io) requires `name` ("Must be 1-64
//! characters", lowercase `a-z`, digits and hyphens, not starting or ending
//! with a hyphen, no `--`, "Must match the parent directory name") and
//! `description` ("Must be 1-1024 characters"). Its client guide asks for
//! lenient validation: "Name doesn't match the parent directory name → warn,
//! load anyway", "Description is missing or empty → skip the skill", "YAML is
//! completely unparseable → skip the skill". So here:
//!
//! - no frontmatter, malformed frontmatter, a missing or empty `name` or
//!   `description`, or a file over the cap: skipped, with a [`Diagnostic`];
//! - a `name` outside the character rules or over 64 characters: skipped
//!   too (the guide would only warn on length; but the name is what the user
//!   types after `/` and what the model passes to the skill tool, so it is
//!   kept to the unambiguous form);
//! - a `name` that differs from its folder, or a `description` over 1024
//!   characters: a [`Diagnostic`], and the skill is loaded (under its
//!   `name`; the index cuts long descriptions anyway).
//!
//! Only `SKILLS_ROOT/*/SKILL.md` is looked at. A skill folder that is a
//! symlink is read (there is no recursion below it, so no loop; inside the
//! workspace, for a workspace root). The `SKILL.md` is opened once and read
//! from that descriptor, at load time and again when the body is read (see
//! [`crate::open`]).

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::frontmatter;
use crate::open::{self, Base, Opened, ReadError};
use crate::shared::{self, Diagnostic, EntryKind, Scope, MAX_FILE_BYTES};

/// At most this many skills are loaded; past it, a [`Diagnostic`] and the
/// rest are skipped.
pub const MAX_SKILLS: usize = 200;
/// [`Skill::load_body`] returns at most this many bytes of the body.
pub const MAX_SKILL_BYTES: usize = 256 * 1024;
const MAX_NAME_CHARS: usize = 64;
const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Folder entries looked at per root.
const MAX_ENTRIES_PER_ROOT: usize = 10_000;

/// One skill, as found at load time (its body is read when used).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The skill's folder: relative paths in its body are relative to it.
    pub dir: PathBuf,
    /// The `SKILL.md`.
    pub path: PathBuf,
    pub scope: Scope,
    /// The workspace a workspace skill's file is opened beneath (again
    /// when its body is read).
    #[serde(skip)]
    pub confine: Option<PathBuf>,
}

impl Skill {
    /// Reads the `SKILL.md` body now (after the frontmatter, trimmed; at most
    /// [`MAX_SKILL_BYTES`], cut at a char boundary with a note), preceded by
    /// a header line naming the skill's folder so the model can read the
    /// files the body refers to. This is what the `skill` tool returns.
    pub fn load_body(&self) -> io::Result<String> {
        Ok(format!("{}{}", self.header(), self.read_body()?))
    }

    pub(crate) fn header(&self) -> String {
        format!(
            "Skill `{}` (folder {}; relative paths below are relative to that folder):\n\n",
            self.name,
            self.dir.display()
        )
    }

    /// The body as it is in the file now: the file opened once (beneath
    /// the workspace for a workspace skill) and read from that descriptor.
    pub(crate) fn read_body(&self) -> io::Result<String> {
        let invalid = |message: String| io::Error::new(io::ErrorKind::InvalidData, message);
        if self.scope == Scope::Workspace && self.confine.is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a workspace skill without its workspace is not read",
            ));
        }
        let (file, size) = match Base::new(self.confine.as_deref())?.open_file(&self.path)? {
            Opened::File(file, size) => (file, size),
            Opened::Dir => return Err(invalid(format!("{} is a folder", self.path.display()))),
            Opened::Other(kind) => {
                return Err(invalid(format!(
                    "{} is not a regular file ({kind})",
                    self.path.display()
                )))
            }
        };
        let bytes = open::read_capped(file, size, MAX_FILE_BYTES).map_err(|e| match e {
            ReadError::TooBig(_) => invalid(format!(
                "{} is over the {MAX_FILE_BYTES}-byte limit",
                self.path.display()
            )),
            ReadError::Io(e) => e,
        })?;
        let text = String::from_utf8(bytes)
            .map_err(|_| invalid(format!("{} is not valid UTF-8", self.path.display())))?;
        let parsed = frontmatter::parse(&text)
            .map_err(|e| invalid(format!("{}:{}: {}", self.path.display(), e.line, e.message)))?;
        let body = parsed.body.trim();
        if body.len() <= MAX_SKILL_BYTES {
            return Ok(body.to_owned());
        }
        let mut end = MAX_SKILL_BYTES;
        while !body.is_char_boundary(end) {
            end -= 1;
        }
        Ok(format!(
            "{}\n\n[SKILL.md cut at {MAX_SKILL_BYTES} bytes]",
            &body[..end]
        ))
    }
}

/// Whether `name` follows the specification's rules (an agent's name
/// follows them too).
pub(crate) fn name_problem(name: &str) -> Option<&'static str> {
    if name.chars().count() > MAX_NAME_CHARS {
        Some("is over 64 characters")
    } else if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        Some("may only contain lowercase letters a-z, digits and hyphens")
    } else if name.starts_with('-') || name.ends_with('-') {
        Some("must not start or end with a hyphen")
    } else if name.contains("--") {
        Some("must not contain consecutive hyphens")
    } else {
        None
    }
}

/// Loads the skills of `roots`, in order: the first definition of a name
/// wins and each later one is a shadowed [`Diagnostic`].
pub(crate) fn load(roots: &[(PathBuf, Scope)], diagnostics: &mut Vec<Diagnostic>) -> Vec<Skill> {
    let mut skills: Vec<Skill> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    for (root, scope) in roots {
        let base = match shared::open_root(root, *scope) {
            Ok(Some(base)) => base,
            Ok(None) => continue,
            Err(d) => {
                diagnostics.push(d);
                continue;
            }
        };
        let entries = match shared::list_dir(&base, root) {
            Ok(Some(entries)) => entries,
            Ok(None) => continue,
            Err(d) => {
                diagnostics.push(d);
                continue;
            }
        };
        let confine = match scope {
            Scope::Workspace => shared::workspace_of(root),
            Scope::User => None,
        };
        for (i, entry) in entries.into_iter().enumerate() {
            if i >= MAX_ENTRIES_PER_ROOT {
                diagnostics.push(Diagnostic::new(
                    root,
                    None,
                    format!("more than {MAX_ENTRIES_PER_ROOT} entries; the rest are not read"),
                ));
                break;
            }
            // A folder, or a link that may lead to one.
            if !matches!(entry.kind, EntryKind::Dir | EntryKind::Link) {
                continue;
            }
            let path = entry.path.join("SKILL.md");
            let opened = match base.open_file(&path) {
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                    ) =>
                {
                    continue; // not a skill folder
                }
                opened => opened,
            };
            if skills.len() >= MAX_SKILLS {
                diagnostics.push(Diagnostic::new(
                    &path,
                    None,
                    format!("more than {MAX_SKILLS} skills; this and the rest are skipped"),
                ));
                return skills;
            }
            let text = match opened
                .map_err(|e| shared::unopened(&path, &e))
                .and_then(|opened| shared::read_opened(opened, &path))
            {
                Ok(text) => text,
                Err(d) => {
                    diagnostics.push(d);
                    continue;
                }
            };
            let skill = match parse(&text, &entry.path, &entry.name, &path, *scope, diagnostics) {
                Ok(skill) => Skill {
                    confine: confine.clone(),
                    ..skill
                },
                Err(d) => {
                    diagnostics.push(d);
                    continue;
                }
            };
            if let Some(&winner) = by_name.get(&skill.name) {
                diagnostics.push(Diagnostic::new(
                    &path,
                    None,
                    format!(
                        "the skill `{}` is already defined by {}; this one is shadowed",
                        skill.name,
                        skills[winner].path.display()
                    ),
                ));
                continue;
            }
            by_name.insert(skill.name.clone(), skills.len());
            skills.push(skill);
        }
    }
    skills
}

/// Reads one `SKILL.md`: `Err` skips it; warnings go to `diagnostics`.
fn parse(
    text: &str,
    dir: &Path,
    folder: &str,
    path: &Path,
    scope: Scope,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Skill, Diagnostic> {
    let parsed = frontmatter::parse(text).map_err(|e| {
        Diagnostic::new(path, Some(e.line), format!("{}; skill skipped", e.message))
    })?;
    if parsed.fields.is_none() {
        return Err(Diagnostic::new(
            path,
            Some(1),
            "no frontmatter (a SKILL.md starts with `---`, then `name:` and `description:`); skill skipped",
        ));
    }
    let (name, name_line) = shared::required(&parsed, "name", path, "skill")?;
    if let Some(problem) = name_problem(&name) {
        return Err(Diagnostic::new(
            path,
            Some(name_line),
            format!("the name `{name}` {problem}; skill skipped"),
        ));
    }
    let (description, description_line) = shared::required(&parsed, "description", path, "skill")?;
    if name != folder {
        diagnostics.push(Diagnostic::new(
            path,
            Some(name_line),
            format!("the name `{name}` does not match its folder `{folder}` (loaded as `{name}`)"),
        ));
    }
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        diagnostics.push(Diagnostic::new(
            path,
            Some(description_line),
            format!("the description is {chars} characters, over the specification's {MAX_DESCRIPTION_CHARS} (loaded; the index cuts it)"),
        ));
    }
    Ok(Skill {
        name,
        description: shared::one_line(&description),
        dir: dir.to_path_buf(),
        path: path.to_path_buf(),
        scope,
        confine: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in(folder: &str, text: &str) -> (Result<Skill, Diagnostic>, Vec<Diagnostic>) {
        let dir = Path::new("/s").join(folder);
        let path = dir.join("SKILL.md");
        let mut diags = Vec::new();
        let r = parse(text, &dir, folder, &path, Scope::User, &mut diags);
        (r, diags)
    }

    #[test]
    fn valid_skill() {
        let (r, diags) = parse_in("pdf", "---\nname: pdf\ndescription: >-\n  Extract text\n  from PDFs.\nlicense: MIT\nmetadata:\n  author: x\n---\nBody");
        let s = r.unwrap();
        assert_eq!(s.name, "pdf");
        assert_eq!(s.description, "Extract text from PDFs.");
        assert!(diags.is_empty());
    }

    #[test]
    fn invalid_names_are_skipped_with_their_line() {
        for name in ["PDF", "-pdf", "pdf-", "pdf--x", "pdf_x", &"a".repeat(65)] {
            let (r, _) = parse_in(name, &format!("---\ndescription: d\nname: {name}\n---\n"));
            let d = r.unwrap_err();
            assert_eq!(d.line, Some(3), "{name}: {d}");
            assert!(d.message.contains("skill skipped"), "{d}");
        }
        assert!(name_problem(&"a".repeat(64)).is_none());
    }

    #[test]
    fn missing_or_empty_fields() {
        let (r, _) = parse_in("x", "---\nname: x\n---\n");
        let d = r.unwrap_err();
        assert!(d.message.contains("no `description`"), "{d}");
        assert_eq!(d.line, Some(1));
        let (r, _) = parse_in("x", "---\nname: x\ndescription: \"\"\n---\n");
        assert_eq!(r.unwrap_err().line, Some(3));
        let (r, _) = parse_in("x", "Just text\n");
        assert!(r.unwrap_err().message.contains("no frontmatter"));
        let (r, _) = parse_in("x", "---\nname: x\ndescription:\n  - a\n---\n");
        assert_eq!(r.unwrap_err().line, Some(3));
    }

    #[test]
    fn folder_mismatch_and_long_description_warn_but_load() {
        let long = "d".repeat(1025);
        let (r, diags) = parse_in(
            "folder",
            &format!("---\nname: other\ndescription: {long}\n---\n"),
        );
        assert_eq!(r.unwrap().name, "other");
        assert_eq!(diags.len(), 2, "{diags:?}");
        assert_eq!(diags[0].line, Some(2));
        assert!(diags[0].message.contains("does not match its folder"));
        assert_eq!(diags[1].line, Some(3));
        assert!(diags[1].message.contains("1025 characters"));
    }
}
