//! Lays the daemon's hot code out together (docs/DESIGN.md, "Code layout").
//!
//! Most of an idle or busy daemon's resident memory is its binary's code
//! pages, and the kernel maps code 64 KiB around each page that runs: the
//! ~1,500 functions a daemon runs, scattered through 13 MB of code, kept
//! 8–10 MiB of it resident. `layout/hot-functions.txt` lists them (by
//! their linked names, as `scripts/code-layout.sh` collects them); lld
//! places them first and together. A name the build does not have (a
//! dependency or the compiler changed) is skipped, so a stale list costs
//! locality, never correctness.

use std::env;
use std::path::Path;
use std::process::Command;

const LIST: &str = "layout/hot-functions.txt";

fn main() {
    println!("cargo:rerun-if-changed={LIST}");
    println!("cargo:rerun-if-env-changed=SCV_CODE_LAYOUT");
    if !layout_applies() {
        return;
    }
    let manifest = env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let list = Path::new(&manifest).join(LIST);
    if !list.is_file() {
        return;
    }
    for arg in [
        format!("-Wl,--symbol-ordering-file={}", list.display()),
        "-Wl,--no-warn-symbol-ordering".to_string(),
    ] {
        println!("cargo:rustc-link-arg-bin=scv-server={arg}");
    }
}

/// Release builds for x86-64 Linux linked by rustc's own lld (the default
/// since Rust 1.90), unless `SCV_CODE_LAYOUT=0` or another linker was
/// chosen: GNU ld does not know the option.
fn layout_applies() -> bool {
    let var = |name: &str| env::var(name).unwrap_or_default();
    if var("PROFILE") != "release"
        || var("TARGET") != "x86_64-unknown-linux-gnu"
        || var("SCV_CODE_LAYOUT") == "0"
        || var("CARGO_ENCODED_RUSTFLAGS").contains("link")
        || env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some()
    {
        return false;
    }
    rustc_minor().is_some_and(|minor| minor >= 90)
}

/// The minor version of the compiler building this crate (`1.95.0` → 95).
fn rustc_minor() -> Option<u32> {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let output = Command::new(rustc).arg("-vV").output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let release = text.lines().find_map(|l| l.strip_prefix("release: "))?;
    let mut parts = release.split('.');
    (parts.next()? == "1").then_some(())?;
    parts.next()?.parse().ok()
}
