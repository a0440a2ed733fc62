//! Where Claude Code keeps a user's files: `$CLAUDE_CONFIG_DIR` when set
//! (as Claude Code honours it), else `~/.claude`. SCV reads its
//! `settings.json` (hooks), and the sandbox lets a user's hook read its
//! `hooks/` folder.

use std::path::PathBuf;

/// Claude Code's user folder; `None` without an absolute `$HOME` (and no
/// `$CLAUDE_CONFIG_DIR`).
pub(crate) fn user_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").map(PathBuf::from) {
        if dir.is_absolute() {
            return Some(dir);
        }
    }
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|home| home.is_absolute())
        .map(|home| home.join(".claude"))
}
