//! The Pythons with the official MCP SDK that `.ci/run` installs into
//! `target/mcp-venv` (`mcp` 1.x, or `SCV_MCP_PYTHON`) and `target/mcp2-venv`
//! (`mcp` 2.x, which speaks the 2026-07-28 revision too), for tests whose
//! MCP servers are written with it.

use std::path::{Path, PathBuf};

/// That Python, or `None` (the caller skips, saying so) — unless
/// `SCV_REQUIRE_MCP` is set (CI), where a missing SDK fails the test.
pub fn python() -> Option<PathBuf> {
    venv_python("SCV_MCP_PYTHON", "mcp-venv")
}

/// The Python with the SDK's 2.x line (`target/mcp2-venv`, or
/// `SCV_MCP2_PYTHON`), as [`python`].
pub fn python2() -> Option<PathBuf> {
    venv_python("SCV_MCP2_PYTHON", "mcp2-venv")
}

fn venv_python(var: &str, venv: &str) -> Option<PathBuf> {
    let python = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target")
            .join(venv)
            .join("bin/python3")
    });
    let works = std::process::Command::new(&python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|out| out.status.success());
    if works {
        return Some(python);
    }
    assert!(
        std::env::var_os("SCV_REQUIRE_MCP").is_none(),
        "SCV_REQUIRE_MCP is set but {} cannot import mcp (run .ci/run)",
        python.display()
    );
    eprintln!(
        "skipped: no Python with the mcp package at {}",
        python.display()
    );
    None
}
