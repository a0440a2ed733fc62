//! Loading real folders, and properties of expansion.

use std::fs;
use std::path::{Path, PathBuf};

use proptest::prelude::*;

use crate::expand::{placeholder_count, substitute, APPEND_PREFIX};
use crate::*;

struct Fixture {
    _dir: tempfile::TempDir,
    roots: Roots,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let roots = Roots {
            workspace: dir.path().join("ws"),
            scv_home: dir.path().join("home"),
            claude_home: Some(dir.path().join("claude")),
            plugins: Vec::new(),
        };
        fs::create_dir_all(&roots.workspace).unwrap();
        fs::create_dir_all(&roots.scv_home).unwrap();
        Fixture { _dir: dir, roots }
    }

    fn ws(&self, rel: &str) -> PathBuf {
        self.roots.workspace.join(rel)
    }

    fn home(&self, rel: &str) -> PathBuf {
        self.roots.scv_home.join(rel)
    }

    fn load(&self) -> Catalog {
        Catalog::load(&self.roots)
    }
}

fn write(path: &Path, text: impl AsRef<[u8]>) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn skill_md(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\nDo the {name} thing with $ARGUMENTS.\n")
}

fn agent_md(name: &str, description: &str, prompt: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\n{prompt}\n")
}

fn diagnostics_for<'a>(catalog: &'a Catalog, path: &Path) -> Vec<&'a Diagnostic> {
    catalog
        .diagnostics
        .iter()
        .filter(|d| d.path == path)
        .collect()
}

#[test]
fn empty_workspace_has_nothing() {
    let f = Fixture::new();
    let c = f.load();
    assert!(c.commands.is_empty() && c.skills.is_empty() && c.diagnostics.is_empty());
    assert!(c.agents.is_empty());
    assert_eq!(c.skill_index(), None);
    assert_eq!(c.agent_index(), None);
    assert!(matches!(c.expand("/review"), Err(ExpandError::Unknown(_))));
}

#[test]
fn command_precedence_and_shadow_diagnostics() {
    let f = Fixture::new();
    write(&f.ws(".scv/commands/review.md"), "From scv.");
    write(&f.ws(".claude/commands/review.md"), "From claude.");
    write(&f.home("commands/review.md"), "From home.");
    write(&f.home("commands/mine.md"), "Mine.");
    write(&f.ws(".claude/commands/notes.txt"), "not a command");
    let c = f.load();
    let review = c.command("review").unwrap();
    assert_eq!(review.body, "From scv.");
    assert_eq!(review.scope, Scope::Workspace);
    assert_eq!(c.command("mine").unwrap().scope, Scope::User);
    assert_eq!(c.commands.len(), 2);
    for loser in [
        f.ws(".claude/commands/review.md"),
        f.home("commands/review.md"),
    ] {
        let d = diagnostics_for(&c, &loser);
        assert_eq!(d.len(), 1, "{:?}", c.diagnostics);
        assert!(d[0].message.contains("shadowed"), "{}", d[0]);
        assert!(
            d[0].message
                .contains(&f.ws(".scv/commands/review.md").display().to_string()),
            "{}",
            d[0]
        );
    }
    assert_eq!(c.diagnostics.len(), 2);
}

#[test]
fn namespaced_subfolders_keep_the_name() {
    let f = Fixture::new();
    write(
        &f.ws(".claude/commands/frontend/component.md"),
        "---\ndescription: Make a component\n---\nBuild $1.",
    );
    write(&f.ws(".claude/commands/a/b/c/deep.md"), "Three levels.");
    write(&f.ws(".claude/commands/a/b/c/d/deeper.md"), "Four levels.");
    write(&f.ws(".claude/commands/web/component.md"), "Other.");
    let c = f.load();
    let component = c.command("component").unwrap();
    assert_eq!(component.description, "Make a component (project:frontend)");
    assert!(component.path.ends_with("frontend/component.md"));
    assert_eq!(
        c.command("deep").unwrap().description,
        "Three levels. (project:a:b:c)"
    );
    assert!(c.command("deeper").is_none());
    let shadow = diagnostics_for(&c, &f.ws(".claude/commands/web/component.md"));
    assert_eq!(shadow.len(), 1);
    let too_deep = diagnostics_for(&c, &f.ws(".claude/commands/a/b/c/d"));
    assert!(
        too_deep[0].message.contains("levels deep"),
        "{:?}",
        c.diagnostics
    );
    let e = c.expand("/component Button").unwrap().unwrap();
    assert_eq!(e.kind, Kind::Command);
    assert_eq!(e.prompt, "Build Button.");
}

#[test]
fn frontmatter_forms_in_files() {
    let f = Fixture::new();
    write(
        &f.ws(".claude/commands/quoted.md"),
        "---\ndescription: \"Fix: an issue\"\nargument-hint: '[issue] [prio]'\nallowed-tools:\n  - Bash(gh:*)\n  - Read\nmodel: haiku\ndisable-model-invocation: true\n---\nFix $ARGUMENTS\n",
    );
    write(
        &f.ws(".claude/commands/flow.md"),
        "---\nallowed-tools: [Read, Grep]\n---\nFind it.\n",
    );
    write(&f.ws(".claude/commands/plain.md"), "No frontmatter here.\n");
    write(
        &f.ws(".claude/commands/open.md"),
        "---\ndescription: never closed\n\nBody\n",
    );
    write(
        &f.ws(".claude/commands/bad.md"),
        "---\ndescription: ok\nthis is not a pair\n---\nBody\n",
    );
    let c = f.load();
    let q = c.command("quoted").unwrap();
    assert_eq!(q.description, "Fix: an issue");
    assert_eq!(q.argument_hint.as_deref(), Some("[issue] [prio]"));
    assert_eq!(c.command("flow").unwrap().description, "Find it.");
    assert_eq!(c.command("plain").unwrap().body, "No frontmatter here.");
    assert!(c.command("open").is_none() && c.command("bad").is_none());
    let open = diagnostics_for(&c, &f.ws(".claude/commands/open.md"));
    assert_eq!(open[0].line, Some(1));
    assert!(
        open[0]
            .to_string()
            .contains("open.md:1: the frontmatter opened"),
        "{}",
        open[0]
    );
    let bad = diagnostics_for(&c, &f.ws(".claude/commands/bad.md"));
    assert_eq!(bad[0].line, Some(3));
    assert_eq!(c.diagnostics.len(), 2, "{:?}", c.diagnostics);
}

#[test]
fn arguments_with_quotes_and_append() {
    let f = Fixture::new();
    write(
        &f.ws(".scv/commands/pr.md"),
        "Review PR #$1 (priority $2, owner $3). Raw: $ARGUMENTS",
    );
    write(&f.ws(".scv/commands/opt.md"), "Optimize the code.");
    let c = f.load();
    let e = c.expand("/pr  42 \"very high\"  ").unwrap().unwrap();
    assert_eq!(
        e.prompt,
        "Review PR #42 (priority very high, owner ). Raw: 42 \"very high\""
    );
    assert_eq!(
        c.expand("/opt src/lib.rs").unwrap().unwrap().prompt,
        "Optimize the code.\n\nARGUMENTS: src/lib.rs"
    );
    assert_eq!(
        c.expand("/opt").unwrap().unwrap().prompt,
        "Optimize the code."
    );
}

#[test]
fn slash_forms_that_are_not_commands() {
    let f = Fixture::new();
    write(&f.ws(".scv/commands/usr.md"), "x");
    let c = f.load();
    assert!(c.expand("/usr/bin is where it lives").unwrap().is_none());
    assert!(c.expand("/").unwrap().is_none());
    assert!(c.expand("/ hello").unwrap().is_none());
    assert!(c.expand("hello /usr").unwrap().is_none());
    assert!(c.expand("/usr").unwrap().is_some());
}

#[test]
fn unknown_suggests_nearest() {
    let f = Fixture::new();
    write(&f.ws(".scv/commands/review.md"), "x");
    write(
        &f.ws(".scv/skills/release-notes/SKILL.md"),
        skill_md("release-notes", "Write release notes."),
    );
    let c = f.load();
    let Err(ExpandError::Unknown(u)) = c.expand("/reviw now") else {
        panic!("expected unknown");
    };
    assert_eq!(u.name, "reviw");
    assert_eq!(u.known, ["review"]);
    assert_eq!(
        u.to_string(),
        "unknown command /reviw (did you mean /review?)"
    );
    let Err(ExpandError::Unknown(u)) = c.expand("/release") else {
        panic!("expected unknown");
    };
    assert_eq!(u.known, ["release-notes"]);
}

#[test]
fn skills_precedence_validation_and_expansion() {
    let f = Fixture::new();
    write(
        &f.ws(".scv/skills/pdf/SKILL.md"),
        skill_md("pdf", "Handle PDFs."),
    );
    write(
        &f.home("skills/pdf/SKILL.md"),
        skill_md("pdf", "Home PDFs."),
    );
    write(
        &f.ws(".claude/skills/Bad/SKILL.md"),
        skill_md("Bad", "Uppercase."),
    );
    write(
        &f.ws(".claude/skills/nodesc/SKILL.md"),
        "---\nname: nodesc\n---\nBody\n",
    );
    write(
        &f.ws(".claude/skills/renamed/SKILL.md"),
        skill_md("other-name", "Mismatched folder."),
    );
    write(&f.ws(".claude/skills/not-a-skill/README.md"), "no SKILL.md");
    write(&f.ws(".claude/skills/loose.md"), "a file, not a folder");
    let c = f.load();
    let names: Vec<&str> = c.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["pdf", "other-name"]);
    assert_eq!(c.skill("pdf").unwrap().description, "Handle PDFs.");
    let bad = diagnostics_for(&c, &f.ws(".claude/skills/Bad/SKILL.md"));
    assert_eq!((bad.len(), bad[0].line), (1, Some(2)));
    assert!(bad[0].message.contains("lowercase"), "{}", bad[0]);
    let nodesc = diagnostics_for(&c, &f.ws(".claude/skills/nodesc/SKILL.md"));
    assert!(
        nodesc[0].message.contains("no `description`"),
        "{}",
        nodesc[0]
    );
    let renamed = diagnostics_for(&c, &f.ws(".claude/skills/renamed/SKILL.md"));
    assert!(
        renamed[0].message.contains("does not match its folder"),
        "{}",
        renamed[0]
    );
    assert_eq!(diagnostics_for(&c, &f.home("skills/pdf/SKILL.md")).len(), 1);
    assert_eq!(c.diagnostics.len(), 4, "{:?}", c.diagnostics);

    let skill = c.skill("pdf").unwrap();
    let body = skill.load_body().unwrap();
    assert!(body.starts_with("Skill `pdf` (folder "), "{body}");
    assert!(body.contains(&skill.dir.display().to_string()));
    assert!(
        body.ends_with("Do the pdf thing with $ARGUMENTS."),
        "{body}"
    );
    assert!(!body.contains("description:"));

    let e = c.expand("/pdf report.pdf").unwrap().unwrap();
    assert_eq!(e.kind, Kind::Skill);
    assert!(
        e.prompt.starts_with("The user invoked the skill `pdf`."),
        "{}",
        e.prompt
    );
    assert!(
        e.prompt.ends_with("Do the pdf thing with report.pdf."),
        "{}",
        e.prompt
    );
    write(
        &f.ws(".scv/skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: x\n---\nNo placeholder.",
    );
    let e = c.expand("/pdf a.pdf").unwrap().unwrap();
    assert!(
        e.prompt.ends_with("No placeholder.\n\nARGUMENTS: a.pdf"),
        "{}",
        e.prompt
    );

    fs::remove_file(&skill.path).unwrap();
    match c.expand("/pdf") {
        Err(ExpandError::Unreadable { name, path, .. }) => {
            assert_eq!(name, "pdf");
            assert_eq!(path, skill.path);
        }
        other => panic!("{other:?}"),
    }
    assert!(skill.load_body().is_err());
}

#[test]
fn a_skill_wins_over_a_command_of_the_same_name() {
    let f = Fixture::new();
    write(&f.ws(".scv/commands/deploy.md"), "Deploy command.");
    write(
        &f.ws(".scv/skills/deploy/SKILL.md"),
        skill_md("deploy", "Deploy skill."),
    );
    let c = f.load();
    assert_eq!(c.expand("/deploy").unwrap().unwrap().kind, Kind::Skill);
    assert!(c.command("deploy").is_some());
    let d = diagnostics_for(&c, &f.ws(".scv/commands/deploy.md"));
    assert!(d[0].message.contains("runs the skill"), "{}", d[0]);
}

#[test]
fn claude_codes_user_folder_comes_after_scv_home() {
    let f = Fixture::new();
    let claude = f.roots.claude_home.clone().unwrap();
    write(&claude.join("commands/review.md"), "Review from ~/.claude.");
    write(&f.home("commands/review.md"), "Review from SCV_HOME.");
    write(
        &claude.join("commands/only-claude.md"),
        "Only in ~/.claude.",
    );
    write(
        &claude.join("skills/pdf/SKILL.md"),
        skill_md("pdf", "PDF things."),
    );
    write(
        &claude.join("agents/explorer.md"),
        agent_md("explorer", "Explores.", "P"),
    );
    let c = f.load();
    assert_eq!(
        c.command("review").unwrap().path,
        f.home("commands/review.md")
    );
    let only = c.command("only-claude").unwrap();
    assert_eq!(only.scope, Scope::User);
    assert_eq!(c.skill("pdf").unwrap().scope, Scope::User);
    assert!(c.agent("explorer").is_some());
    assert!(!diagnostics_for(&c, &claude.join("commands/review.md")).is_empty());
}

#[test]
fn skill_index_bounds() {
    let f = Fixture::new();
    for i in 0..65 {
        let name = format!("skill-{i:02}");
        write(
            &f.home(&format!("skills/{name}/SKILL.md")),
            skill_md(&name, &format!("Number {i}.")),
        );
    }
    let c = f.load();
    assert_eq!(c.skills.len(), 65);
    let index = c.skill_index().unwrap();
    let lines: Vec<&str> = index.lines().collect();
    assert_eq!(lines.len(), 65);
    assert_eq!(lines[0], "- skill-00: Number 0.");
    assert_eq!(lines[63], "- skill-63: Number 63.");
    assert!(
        lines[64].starts_with("(1 more skills not listed; "),
        "{}",
        lines[64]
    );
}

#[test]
fn skill_index_keeps_1024_characters_and_cuts_at_a_char_boundary() {
    let f = Fixture::new();
    // anthropics/skills' descriptions put "Use when…" past 160 bytes.
    let trigger = format!(
        "{} Use when the user asks for a PDF.",
        "Handles documents.".repeat(12)
    );
    write(&f.ws(".scv/skills/pdf/SKILL.md"), skill_md("pdf", &trigger));
    let long = format!("{}é{}", "a".repeat(1022), "b".repeat(50));
    write(&f.ws(".scv/skills/long/SKILL.md"), skill_md("long", &long));
    write(
        &f.ws(".scv/skills/multi/SKILL.md"),
        "---\nname: multi\ndescription: |\n  line one\n  line two\n---\n",
    );
    let c = f.load();
    let index = c.skill_index().unwrap();
    let lines: Vec<&str> = index.lines().collect();
    assert!(
        lines.contains(&format!("- pdf: {trigger}").as_str()),
        "{index}"
    );
    let long_line = lines.iter().find(|l| l.starts_with("- long: ")).unwrap();
    let long_desc = &long_line["- long: ".len()..];
    assert_eq!(long_desc, format!("{}é…", "a".repeat(1022)));
    assert_eq!(long_desc.chars().count(), MAX_INDEX_DESCRIPTION_CHARS);
    assert!(lines.contains(&"- multi: line one line two"), "{index}");
}

#[test]
fn skill_index_shortens_evenly_within_its_bound_and_drops_none() {
    let f = Fixture::new();
    // Three short descriptions and 61 of 1,000 bytes: over the bound.
    for i in 0..MAX_INDEXED_SKILLS {
        let name = format!("s{i:02}");
        let description = if i < 3 {
            format!("Short {i}.")
        } else {
            format!("{i:02} {}", "x".repeat(997))
        };
        write(
            &f.home(&format!("skills/{name}/SKILL.md")),
            skill_md(&name, &description),
        );
    }
    let c = f.load();
    let index = c.skill_index().unwrap();
    let lines: Vec<&str> = index.lines().collect();
    assert_eq!(lines.len(), MAX_INDEXED_SKILLS);
    assert_eq!(lines[0], "- s00: Short 0.");
    let descriptions: Vec<&str> = lines.iter().map(|l| &l["- s00: ".len()..]).collect();
    let total: usize = descriptions.iter().map(|d| d.len()).sum();
    assert!(total <= MAX_SKILL_INDEX_DESCRIPTION_BYTES, "{total}");
    // The long ones: all the same length, well over 160 bytes, each
    // starting with its own number.
    let long: Vec<usize> = descriptions[3..].iter().map(|d| d.len()).collect();
    assert!(long.iter().all(|l| *l == long[0]), "{long:?}");
    assert!(long[0] > 160 && long[0] < 1000, "{}", long[0]);
    assert!(total > MAX_SKILL_INDEX_DESCRIPTION_BYTES - 64, "{total}");
    for (i, d) in descriptions.iter().enumerate().skip(3) {
        assert!(
            d.starts_with(&format!("{i:02} ")) && d.ends_with('…'),
            "{d}"
        );
    }
}

#[test]
fn non_utf8_and_oversized_files_are_skipped() {
    let f = Fixture::new();
    write(
        &f.ws(".scv/commands/latin1.md"),
        b"line one\ncaf\xe9\n".as_slice(),
    );
    let big = format!(
        "---\ndescription: big\n---\n{}",
        "x".repeat(MAX_FILE_BYTES as usize)
    );
    write(&f.ws(".scv/commands/big.md"), &big);
    write(
        &f.ws(".scv/skills/huge/SKILL.md"),
        format!(
            "{}{}",
            skill_md("huge", "Huge."),
            "y".repeat(MAX_FILE_BYTES as usize)
        ),
    );
    write(&f.ws(".scv/commands/ok.md"), "Fine.");
    let c = f.load();
    assert_eq!(c.commands.len(), 1);
    assert!(c.skills.is_empty());
    let latin = diagnostics_for(&c, &f.ws(".scv/commands/latin1.md"));
    assert_eq!(latin[0].line, Some(2));
    assert!(latin[0].message.contains("UTF-8"), "{}", latin[0]);
    let big = diagnostics_for(&c, &f.ws(".scv/commands/big.md"));
    assert!(
        big[0].message.contains("over the 262144-byte limit"),
        "{}",
        big[0]
    );
    let huge = diagnostics_for(&c, &f.ws(".scv/skills/huge/SKILL.md"));
    assert!(huge[0].message.contains("limit"), "{}", huge[0]);
}

#[cfg(unix)]
#[test]
fn symlinked_files_are_read_and_symlinked_folders_not_entered() {
    use std::os::unix::fs::symlink;
    let f = Fixture::new();
    let root = f.ws(".claude/commands");
    write(&root.join("real/one.md"), "One.");
    write(&f.ws("elsewhere/shared.md"), "Shared.");
    symlink(f.ws("elsewhere/shared.md"), root.join("linked.md")).unwrap();
    // A loop: commands/real/back -> commands.
    symlink(&root, root.join("real/back")).unwrap();
    symlink(root.join("missing.md"), root.join("dangling.md")).unwrap();
    let c = f.load();
    let mut names: Vec<&str> = c.commands.iter().map(|c| c.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["linked", "one"]);
    let back = diagnostics_for(&c, &root.join("real/back"));
    assert!(
        back[0].message.contains("not followed"),
        "{:?}",
        c.diagnostics
    );
    assert_eq!(c.diagnostics.len(), 1, "{:?}", c.diagnostics);
}

/// A repository's command or skill that links outside the workspace (to a
/// credential, say) is never read; the user's own (`$SCV_HOME`) may link
/// anywhere.
#[test]
fn workspace_links_leading_outside_are_not_read() {
    use std::os::unix::fs::symlink;
    let f = Fixture::new();
    let secret = f._dir.path().join("secret.md");
    write(
        &secret,
        "---\nname: review\ndescription: d\n---\nAKIA-SECRET",
    );
    symlink(&secret, f.ws(".scv/commands/review.md").tap_parent()).unwrap();
    fs::create_dir_all(f.ws(".scv/skills/review")).unwrap();
    symlink(&secret, f.ws(".scv/skills/review/SKILL.md")).unwrap();
    symlink(&secret, f.home("commands/mine.md").tap_parent()).unwrap();
    let c = f.load();
    let names: Vec<&str> = c.commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["mine"], "{:?}", c.diagnostics);
    assert!(c.skills.is_empty());
    let outside = c
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("leads outside the workspace"))
        .count();
    assert_eq!(outside, 2, "{:?}", c.diagnostics);
}

/// Makes a path's parent folder; the path itself.
trait TapParent {
    fn tap_parent(self) -> Self;
}

impl TapParent for PathBuf {
    fn tap_parent(self) -> Self {
        fs::create_dir_all(self.parent().unwrap()).unwrap();
        self
    }
}

#[test]
fn command_cap() {
    let f = Fixture::new();
    for i in 0..MAX_COMMANDS + 2 {
        write(&f.home(&format!("commands/c{i:03}.md")), "x");
    }
    let c = f.load();
    assert_eq!(c.commands.len(), MAX_COMMANDS);
    assert_eq!(c.diagnostics.len(), 1, "{:?}", c.diagnostics);
    assert!(c.diagnostics[0].message.contains("more than 500 commands"));
}

#[test]
fn invalid_command_file_names_are_reported() {
    let f = Fixture::new();
    write(&f.ws(".scv/commands/has space.md"), "x");
    let c = f.load();
    assert!(c.commands.is_empty());
    assert!(c.diagnostics[0].message.contains("cannot be typed"));
}

#[test]
fn agents_precedence_and_shadow_diagnostics() {
    let f = Fixture::new();
    write(
        &f.ws(".scv/agents/reviewer.md"),
        agent_md("reviewer", "Reviews code.", "From scv."),
    );
    write(
        &f.ws(".claude/agents/reviewer.md"),
        agent_md("reviewer", "Reviews code.", "From claude."),
    );
    write(
        &f.ws(".claude/agents/tester.md"),
        agent_md("tester", "Runs tests.", "Test it."),
    );
    write(
        &f.home("agents/reviewer.md"),
        agent_md("reviewer", "Reviews code.", "From home."),
    );
    write(
        &f.home("agents/mine.md"),
        agent_md("mine", "Mine.", "Do mine."),
    );
    // Neither a file elsewhere than directly in the folder nor a non-`.md`
    // file is an agent.
    write(
        &f.ws(".claude/agents/sub/deep.md"),
        agent_md("deep", "Too deep.", "x"),
    );
    write(
        &f.ws(".claude/agents/notes.txt"),
        agent_md("notes", "d", "x"),
    );
    // A shadowing name comes from the frontmatter, not the file.
    write(
        &f.home("agents/other.md"),
        agent_md("tester", "Runs tests.", "Home tester."),
    );
    let c = f.load();
    let names: Vec<&str> = c.agents.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["reviewer", "tester", "mine"]);
    let reviewer = c.agent("reviewer").unwrap();
    assert_eq!(reviewer.prompt, "From scv.");
    assert_eq!(reviewer.scope, Scope::Workspace);
    assert_eq!(reviewer.path, f.ws(".scv/agents/reviewer.md"));
    assert_eq!(c.agent("tester").unwrap().scope, Scope::Workspace);
    assert_eq!(c.agent("mine").unwrap().scope, Scope::User);
    assert!(c.agent("deep").is_none() && c.agent("notes").is_none());
    for (loser, winner) in [
        (".claude/agents/reviewer.md", ".scv/agents/reviewer.md"),
        ("agents/reviewer.md", ".scv/agents/reviewer.md"),
    ] {
        let loser = if loser.starts_with('.') {
            f.ws(loser)
        } else {
            f.home(loser)
        };
        let d = diagnostics_for(&c, &loser);
        assert_eq!(d.len(), 1, "{:?}", c.diagnostics);
        assert_eq!(
            d[0].message,
            format!(
                "the agent `reviewer` is already defined by {}; this one is shadowed",
                f.ws(winner).display()
            )
        );
    }
    let other = diagnostics_for(&c, &f.home("agents/other.md"));
    assert_eq!(other.len(), 2, "{other:?}");
    assert!(other[0]
        .message
        .contains("does not match the file name `other.md`"));
    assert!(other[1].message.contains("shadowed"), "{}", other[1]);
    assert_eq!(c.diagnostics.len(), 4, "{:?}", c.diagnostics);
}

#[test]
fn agent_fields_in_files() {
    let f = Fixture::new();
    let root = f.ws(".scv/agents");
    write(
        &root.join("comma.md"),
        "---\nname: comma\ndescription: Comma tools.\ntools: Read, Grep, Glob, Bash\nmodel: sonnet\ncolor: blue\n---\nFind things.\n",
    );
    write(
        &root.join("listed.md"),
        "---\nname: listed\ndescription: Listed tools.\ntools:\n  - Read\n  - \"Bash(git diff:*)\"\nmodel: inherit\nsandbox: read-only\n---\nLook only.\n",
    );
    write(
        &root.join("plain.md"),
        "---\nname: plain\ndescription: |\n  Use when\n  asked.\npermissionMode: plan\n---\n\n  You help.\n\nMore.\n\n",
    );
    write(
        &root.join("id.md"),
        "---\nname: id\ndescription: d\nmodel: claude-sonnet-4-5-20250929\ntools: []\n---\nP\n",
    );
    write(
        &root.join("writes.md"),
        "---\nname: writes\ndescription: d\nsandbox: workspace-write\n---\nP\n",
    );
    let c = f.load();
    let comma = c.agent("comma").unwrap();
    assert_eq!(
        comma.tools.as_deref(),
        Some(
            ["Read", "Grep", "Glob", "Bash"]
                .map(String::from)
                .as_slice()
        )
    );
    assert_eq!(comma.model.as_deref(), Some("sonnet"));
    assert!(!comma.read_only);
    assert_eq!(comma.prompt, "Find things.");
    let listed = c.agent("listed").unwrap();
    assert_eq!(
        listed.tools.as_deref(),
        Some(["Read", "Bash(git diff:*)"].map(String::from).as_slice())
    );
    assert_eq!(listed.model.as_deref(), Some("inherit"));
    assert!(listed.read_only);
    let plain = c.agent("plain").unwrap();
    assert_eq!((plain.tools.as_ref(), plain.model.as_ref()), (None, None));
    assert_eq!(plain.description, "Use when asked.");
    assert_eq!(plain.prompt, "You help.\n\nMore.");
    let id = c.agent("id").unwrap();
    assert_eq!(id.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
    assert_eq!(id.tools, Some(vec![]));
    assert!(c.agent("writes").is_none());
    let writes = diagnostics_for(&c, &root.join("writes.md"));
    assert_eq!(writes[0].line, Some(4));
    assert!(
        writes[0].to_string().ends_with(
            "writes.md:4: `sandbox` must be `read-only` (the only sandbox there is), not `workspace-write`; agent skipped"
        ),
        "{}",
        writes[0]
    );
    assert_eq!(c.diagnostics.len(), 1, "{:?}", c.diagnostics);
}

#[test]
fn invalid_agents_are_skipped_with_their_line() {
    let f = Fixture::new();
    let root = f.ws(".claude/agents");
    let cases: &[(&str, &str, Option<usize>, &str)] = &[
        (
            "noname",
            "---\ndescription: d\n---\nP",
            Some(1),
            "the frontmatter has no `name`, which is required; agent skipped",
        ),
        (
            "nodesc",
            "---\nname: nodesc\n---\nP",
            Some(1),
            "the frontmatter has no `description`, which is required; agent skipped",
        ),
        (
            "badname",
            "---\ndescription: d\nname: Bad_Name\n---\nP",
            Some(3),
            "the name `Bad_Name` may only contain lowercase letters a-z, digits and hyphens; agent skipped",
        ),
        (
            "empty",
            "---\nname: empty\ndescription: d\n---\n\n  \n",
            None,
            "the body (the subagent's system prompt) is empty; agent skipped",
        ),
        (
            "malformed",
            "---\nname: malformed\ndescription: d\ntools: [Read, Grep\n---\nP",
            Some(4),
            "a `[` list must be closed by `]` on the same line; agent skipped",
        ),
        (
            "bare",
            "You are a reviewer.\n",
            Some(1),
            "no frontmatter (an agent file starts with `---`, then `name:` and `description:`); agent skipped",
        ),
    ];
    for (stem, text, _, _) in cases {
        write(&root.join(format!("{stem}.md")), text);
    }
    write(
        &root.join("latin1.md"),
        b"---\nname: latin1\ndescription: caf\xe9\n---\nP".as_slice(),
    );
    write(
        &root.join("big.md"),
        agent_md("big", "d", &"x".repeat(MAX_FILE_BYTES as usize)),
    );
    let c = f.load();
    assert!(c.agents.is_empty(), "{:?}", c.agents);
    for (stem, _, line, message) in cases {
        let d = diagnostics_for(&c, &root.join(format!("{stem}.md")));
        assert_eq!(d.len(), 1, "{stem}: {d:?}");
        assert_eq!(d[0].line, *line, "{stem}: {}", d[0]);
        assert_eq!(d[0].message, *message, "{stem}");
    }
    let latin = diagnostics_for(&c, &root.join("latin1.md"));
    assert_eq!(latin[0].line, Some(3));
    assert!(latin[0].message.contains("not valid UTF-8"), "{}", latin[0]);
    let big = diagnostics_for(&c, &root.join("big.md"));
    assert!(
        big[0].message.contains("-byte limit; skipped"),
        "{}",
        big[0]
    );
    assert_eq!(c.diagnostics.len(), cases.len() + 2, "{:?}", c.diagnostics);
}

/// As with commands and skills: a repository's agent file that links
/// outside the workspace is never read, the user's own may link anywhere.
#[cfg(unix)]
#[test]
fn workspace_agent_links_leading_outside_are_not_read() {
    use std::os::unix::fs::symlink;
    let f = Fixture::new();
    let secret = f._dir.path().join("secret.md");
    write(&secret, agent_md("leak", "d", "AKIA-SECRET"));
    let inside = f.ws("docs/inside.md");
    write(&inside, agent_md("inside", "d", "Inside."));
    symlink(&secret, f.ws(".scv/agents/leak.md").tap_parent()).unwrap();
    symlink(&secret, f.ws(".claude/agents/leak.md").tap_parent()).unwrap();
    symlink(&inside, f.ws(".claude/agents/inside.md")).unwrap();
    symlink(&secret, f.home("agents/leak.md").tap_parent()).unwrap();
    let c = f.load();
    let names: Vec<&str> = c.agents.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["inside", "leak"], "{:?}", c.diagnostics);
    let leak = c.agent("leak").unwrap();
    assert_eq!(leak.scope, Scope::User);
    assert_eq!(leak.path, f.home("agents/leak.md"));
    for path in [f.ws(".scv/agents/leak.md"), f.ws(".claude/agents/leak.md")] {
        let d = diagnostics_for(&c, &path);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(
            d[0].message.contains("leads outside the workspace"),
            "{}",
            d[0]
        );
    }
    assert_eq!(c.diagnostics.len(), 2, "{:?}", c.diagnostics);
}

#[test]
fn agent_cap() {
    let f = Fixture::new();
    for i in 0..MAX_AGENTS + 2 {
        let name = format!("a{i:02}");
        write(
            &f.home(&format!("agents/{name}.md")),
            agent_md(&name, "d", "P"),
        );
    }
    let c = f.load();
    assert_eq!(c.agents.len(), MAX_AGENTS);
    assert_eq!(c.agents.last().unwrap().name, "a63");
    assert_eq!(c.diagnostics.len(), 1, "{:?}", c.diagnostics);
    assert_eq!(c.diagnostics[0].path, f.home("agents/a64.md"));
    assert_eq!(
        c.diagnostics[0].message,
        "more than 64 agents; this and the rest are skipped"
    );
}

#[test]
fn agent_index_bounds_and_cuts() {
    let f = Fixture::new();
    for i in 0..MAX_INDEXED_AGENTS + 1 {
        let name = format!("agent-{i:02}");
        write(
            &f.home(&format!("agents/{name}.md")),
            agent_md(&name, &format!("Number {i}."), "P"),
        );
    }
    // A workspace agent: listed before the user's.
    let long = format!("{}é{}", "a".repeat(155), "b".repeat(50));
    write(&f.ws(".scv/agents/aaa.md"), agent_md("aaa", &long, "P"));
    let c = f.load();
    let index = c.agent_index().unwrap();
    let lines: Vec<&str> = index.lines().collect();
    assert_eq!(lines.len(), MAX_INDEXED_AGENTS + 1, "{index}");
    assert_eq!(lines[0], format!("- aaa: {}é…", "a".repeat(155)));
    assert!(lines[0].len() - "- aaa: ".len() <= MAX_INDEX_DESCRIPTION_BYTES);
    assert_eq!(lines[1], "- agent-00: Number 0.");
    assert_eq!(lines[31], "- agent-30: Number 30.");
    assert_eq!(lines[32], "(2 more agents not listed)");

    let f = Fixture::new();
    write(
        &f.ws(".scv/agents/multi.md"),
        "---\nname: multi\ndescription: >\n  Use when\n\n  asked.\n---\nP",
    );
    assert_eq!(
        f.load().agent_index().as_deref(),
        Some("- multi: Use when asked.")
    );
}

fn catalog_with(body: &str) -> Catalog {
    Catalog {
        commands: vec![Command {
            name: "c".into(),
            description: String::new(),
            argument_hint: None,
            body: body.into(),
            path: PathBuf::from("/c.md"),
            scope: Scope::Workspace,
            allowed_tools: Vec::new(),
            model: None,
        }],
        ..Catalog::default()
    }
}

proptest! {
    #[test]
    fn expand_never_panics(text in "\\PC*", body in "\\PC*") {
        let catalog = catalog_with(&body);
        let _ = catalog.expand(&text);
        let _ = catalog.expand(&format!("/{text}"));
        let _ = catalog.expand(&format!("/c {text}"));
        let _ = catalog.skill_index();
        let _ = catalog.agent_index();
    }

    #[test]
    fn substitution_is_bounded(
        body in "([a-z $\"']|\\$ARGUMENTS|\\$[0-9]|é){0,60}",
        args in "([a-z \"']|é){0,40}",
    ) {
        let catalog = catalog_with(&body);
        let expansion = catalog.expand(&format!("/c {args}")).unwrap().unwrap();
        let args = args.trim();
        let bound = body.len() + args.len() * (placeholder_count(&body) + 1) + APPEND_PREFIX.len();
        prop_assert!(expansion.prompt.len() <= bound, "{} > {}", expansion.prompt.len(), bound);
        prop_assert_eq!(expansion.prompt, substitute(&body, args));
    }

    #[test]
    fn frontmatter_parser_never_panics(text in "(---\n)?([a-z: \"'|>#\\[\\],-]{0,20}\n){0,8}(---\n)?\\PC{0,20}") {
        let _ = crate::frontmatter::parse(&text);
    }
}

/// A FIFO at `path` (no writer: opening it to read would wait forever).
fn mkfifo(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
}

/// Runs `f` on a thread and fails the test if it has not returned within
/// a minute (a blocking open would never return).
fn without_blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(f());
    });
    receive
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("blocked (a FIFO was opened and waited on?)")
}

/// A workspace's skill, command or agent whose file is a link leading
/// outside (absolute, or climbing out with `..`, or through a linked
/// folder) is refused at the open; links that stay inside work, relative or
/// absolute.
#[test]
fn links_leading_outside_are_refused_at_the_open_and_inside_ones_work() {
    use std::os::unix::fs::symlink;
    let f = Fixture::new();
    let secret = f._dir.path().join("secret.md");
    write(&secret, skill_md("leak", "AKIA-SECRET"));
    let outside_dir = f._dir.path().join("outside");
    write(
        &outside_dir.join("SKILL.md"),
        skill_md("far", "AKIA-SECRET"),
    );
    // Skills: absolute and `..` links out, a linked folder out; a relative
    // and an absolute link inside.
    symlink(&secret, f.ws(".scv/skills/abs/SKILL.md").tap_parent()).unwrap();
    symlink(
        "../../../../secret.md",
        f.ws(".scv/skills/dotdot/SKILL.md").tap_parent(),
    )
    .unwrap();
    symlink(&outside_dir, f.ws(".scv/skills/far")).unwrap();
    write(&f.ws("docs/rel.md"), skill_md("rel", "Relative inside."));
    write(
        &f.ws("docs/abs-in.md"),
        skill_md("abs-in", "Absolute inside."),
    );
    symlink(
        "../../../docs/rel.md",
        f.ws(".scv/skills/rel/SKILL.md").tap_parent(),
    )
    .unwrap();
    symlink(
        f.ws("docs/abs-in.md"),
        f.ws(".scv/skills/abs-in/SKILL.md").tap_parent(),
    )
    .unwrap();
    // A command linking out with `..`, and one inside with `..`.
    symlink(
        "../../../secret.md",
        f.ws(".scv/commands/out.md").tap_parent(),
    )
    .unwrap();
    write(&f.ws("docs/cmd.md"), "Inside command.");
    symlink("../../docs/cmd.md", f.ws(".scv/commands/in.md")).unwrap();
    // A commands folder that is itself a link out.
    symlink(&outside_dir, f.ws(".claude/commands").tap_parent()).unwrap();
    let c = f.load();
    let mut skills: Vec<&str> = c.skills.iter().map(|s| s.name.as_str()).collect();
    skills.sort();
    assert_eq!(skills, ["abs-in", "rel"], "{:?}", c.diagnostics);
    let commands: Vec<&str> = c.commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(commands, ["in"], "{:?}", c.diagnostics);
    assert_eq!(c.command("in").unwrap().body, "Inside command.");
    for path in [
        f.ws(".scv/skills/abs/SKILL.md"),
        f.ws(".scv/skills/dotdot/SKILL.md"),
        f.ws(".scv/skills/far/SKILL.md"),
        f.ws(".scv/commands/out.md"),
        f.ws(".claude/commands"),
    ] {
        let d = diagnostics_for(&c, &path);
        assert_eq!(d.len(), 1, "{}: {:?}", path.display(), c.diagnostics);
        assert!(
            d[0].message.starts_with("it leads outside the workspace"),
            "{}",
            d[0]
        );
    }
    assert_eq!(c.diagnostics.len(), 5, "{:?}", c.diagnostics);
    assert!(!format!("{c:?}").contains("AKIA-SECRET"));

    let rel = c.skill("rel").unwrap();
    assert!(rel
        .load_body()
        .unwrap()
        .ends_with("Do the rel thing with $ARGUMENTS."));
    // Turned into a link out after loading: refused when its body is read.
    fs::remove_file(&rel.path).unwrap();
    symlink(&secret, &rel.path).unwrap();
    let err = rel.load_body().unwrap_err();
    assert!(
        err.to_string()
            .starts_with("it leads outside the workspace"),
        "{err}"
    );
    match c.expand("/rel") {
        Err(ExpandError::Unreadable { error, .. }) => {
            assert!(error.to_string().contains("leads outside"), "{error}")
        }
        other => panic!("{other:?}"),
    }
}

/// A FIFO, direct or through a link, in place of a file: refused without
/// waiting for a writer, at load time and when a skill's body is read.
#[test]
fn fifos_are_refused_without_blocking() {
    use std::os::unix::fs::symlink;
    let f = Fixture::new();
    mkfifo(&f.ws(".scv/skills/pipe/SKILL.md"));
    mkfifo(&f.ws("fifo"));
    symlink("../../fifo", f.ws(".scv/commands/pipe.md").tap_parent()).unwrap();
    symlink("../../fifo", f.ws(".scv/agents/pipe.md").tap_parent()).unwrap();
    mkfifo(&f.home("skills/pipe/SKILL.md"));
    write(
        &f.ws(".scv/skills/notes/SKILL.md"),
        skill_md("notes", "Notes."),
    );
    let roots = f.roots.clone();
    let c = without_blocking(move || Catalog::load(&roots));
    let names: Vec<&str> = c.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["notes"], "{:?}", c.diagnostics);
    assert!(c.commands.is_empty() && c.agents.is_empty());
    for path in [
        f.ws(".scv/skills/pipe/SKILL.md"),
        f.ws(".scv/commands/pipe.md"),
        f.ws(".scv/agents/pipe.md"),
        f.home("skills/pipe/SKILL.md"),
    ] {
        let d = diagnostics_for(&c, &path);
        assert_eq!(d.len(), 1, "{}: {:?}", path.display(), c.diagnostics);
        assert_eq!(d[0].message, "not a regular file (a FIFO); skipped");
    }
    assert_eq!(c.diagnostics.len(), 4, "{:?}", c.diagnostics);

    let skill = c.skill("notes").unwrap().clone();
    fs::remove_file(&skill.path).unwrap();
    mkfifo(&skill.path);
    let err = without_blocking(move || skill.load_body()).unwrap_err();
    assert!(
        err.to_string().ends_with("is not a regular file (a FIFO)"),
        "{err}"
    );
}

/// The size cap holds on what is read from the descriptor, at load time
/// and when a skill's body is read after it grew.
#[test]
fn over_size_files_are_refused() {
    use std::os::unix::fs::symlink;
    let f = Fixture::new();
    let big = "x".repeat(MAX_FILE_BYTES as usize + 1);
    write(&f.ws("docs/big.md"), &big);
    symlink(
        "../../docs/big.md",
        f.ws(".scv/commands/big.md").tap_parent(),
    )
    .unwrap();
    write(&f.home("agents/big.md"), agent_md("big", "d", &big));
    write(
        &f.ws(".scv/skills/notes/SKILL.md"),
        skill_md("notes", "Notes."),
    );
    let c = f.load();
    assert!(c.commands.is_empty() && c.agents.is_empty());
    for path in [f.ws(".scv/commands/big.md"), f.home("agents/big.md")] {
        let d = diagnostics_for(&c, &path);
        assert!(
            d[0].message
                .ends_with("over the 262144-byte limit; skipped"),
            "{}",
            d[0]
        );
    }
    let skill = c.skill("notes").unwrap();
    write(&skill.path, format!("{}{big}", skill_md("notes", "Notes.")));
    let err = skill.load_body().unwrap_err();
    assert!(
        err.to_string().ends_with("is over the 262144-byte limit"),
        "{err}"
    );
}

/// Finding c02: a sandboxed command flips `SKILL.md` (and a command file)
/// between a regular file and a link to a key outside the workspace, each
/// flip one atomic rename (`renameat2` exchanging the name with a prepared
/// link, so the loop is as tight as it gets), while the skill's body is read
/// and the catalog loaded over and over. A check of the path followed by an
/// open of the path by name reads the key whenever a flip lands in between;
/// opening once beneath the workspace never does.
#[test]
fn a_skill_flipped_to_a_link_outside_never_leaks() {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    use std::os::unix::fs::symlink;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    const KEY: &str = "OPENSSH-PRIVATE-KEY-c02";
    let f = Fixture::new();
    let key = f._dir.path().join("id_ed25519");
    write(
        &key,
        format!("---\nname: notes\ndescription: {KEY}\n---\n{KEY}\n"),
    );
    let skill_file = f.ws(".scv/skills/notes/SKILL.md");
    write(&skill_file, skill_md("notes", "Take notes."));
    let command_file = f.ws(".scv/commands/memo.md");
    write(&command_file, "Write a memo.");
    let c = f.load();
    let skill = c.skill("notes").unwrap().clone();

    // Beside each file, a prepared link to the key (a hidden name: not
    // listed as a command or a skill); each exchange flips the name.
    let pairs: Vec<(PathBuf, PathBuf)> = [&skill_file, &command_file]
        .into_iter()
        .map(|target| {
            let file = target.file_name().unwrap().to_str().unwrap();
            let link = target.with_file_name(format!(".{file}.link"));
            symlink(&key, &link).unwrap();
            (target.clone(), link)
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let flip = |(target, link): &(PathBuf, PathBuf)| {
                renameat_with(CWD, target, CWD, link, RenameFlags::EXCHANGE)
            };
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for pair in &pairs {
                    if flip(pair).is_err() {
                        return flips; // the test is over (failed)
                    }
                }
                flips += 1;
            }
            // End on the regular files.
            for pair in &pairs {
                if fs::symlink_metadata(&pair.0).unwrap().is_symlink() {
                    flip(pair).unwrap();
                }
            }
            flips
        })
    };

    let (mut read, mut refused) = (0, 0);
    for i in 0..5_000 {
        match skill.load_body() {
            Ok(body) => {
                assert!(!body.contains(KEY), "call {i} read the key: {body}");
                read += 1;
            }
            Err(err) => {
                assert!(!err.to_string().contains(KEY), "call {i}: {err}");
                refused += 1;
            }
        }
        if i % 10 == 0 {
            let loaded = Catalog::load(&f.roots);
            assert!(
                !format!("{loaded:?}").contains(KEY),
                "load {i} read the key: {loaded:?}"
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    eprintln!("{flips} flips; {read} bodies read, {refused} refused");
    assert!(flips > 0);
    // The flipper ends on the regular file: it reads as before.
    assert!(skill
        .load_body()
        .unwrap()
        .ends_with("Do the notes thing with $ARGUMENTS."));
    assert_eq!(f.load().command("memo").unwrap().body, "Write a memo.");
}
