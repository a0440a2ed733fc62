//! Lays the daemon's hot code out together (docs/DESIGN.md, "Code layout").
//!
//! Most of an idle or busy daemon's resident memory is its binary's code
//! pages, and the kernel maps code 64 KiB around each page that runs: the
//! ~1,800 functions a daemon runs, scattered through 13 MB of code, kept
//! 8–10 MiB of it resident. `layout/hot-functions.txt` lists them (by
//! their linked names, as `scripts/code-layout.sh` collects them); lld
//! places them first and together. A name the build does not have (a
//! dependency or the compiler changed) is skipped, so a stale list costs
//! locality, never correctness.

use std::env;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const LIST: &str = "layout/hot-functions.txt";

fn main() {
    println!("cargo:rerun-if-changed={LIST}");
    for var in [
        "SCV_CODE_LAYOUT",
        "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER",
        "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "RUSTFLAGS",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let var = |name: &str| env::var(name).unwrap_or_default();
    // Release builds for x86-64 Linux, built where they run.
    if var("PROFILE") != "release"
        || var("TARGET") != "x86_64-unknown-linux-gnu"
        || var("HOST") != var("TARGET")
        || var("SCV_CODE_LAYOUT") == "0"
    {
        return;
    }
    let list = Path::new(&var("CARGO_MANIFEST_DIR")).join(LIST);
    if !list.is_file() {
        return;
    }
    let args = [
        format!("-Wl,--symbol-ordering-file={}", list.display()),
        "-Wl,--no-warn-symbol-ordering".to_string(),
    ];
    if !linker_accepts(&args) {
        println!(
            "cargo:warning=the linker does not take a symbol ordering file (not lld?): \
             scv-server is linked without its code layout"
        );
        return;
    }
    for arg in args {
        println!("cargo:rustc-link-arg-bin=scv-server={arg}");
    }
}

/// Links an empty program with `args` the way this build links (its
/// linker and flags): lld takes them, GNU ld refuses them — and a distro's
/// rustc may link with GNU ld whatever its version.
fn linker_accepts(args: &[String]) -> bool {
    // A folder of its own: a failed link leaves rustc's objects behind.
    let dir = PathBuf::from(env::var("OUT_DIR").unwrap_or_default()).join("layout-probe");
    if std::fs::create_dir_all(&dir).is_err() {
        return false;
    }
    let out = dir.join("probe");
    let mut rustc = Command::new(env::var("RUSTC").unwrap_or_else(|_| "rustc".into()));
    rustc.args(["--crate-type", "bin", "--crate-name", "layout_probe", "-o"]);
    rustc.arg(&out);
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    rustc.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    if let Ok(linker) = env::var("RUSTC_LINKER") {
        rustc.arg(format!("-Clinker={linker}"));
    }
    for arg in args {
        rustc.arg(format!("-Clink-arg={arg}"));
    }
    rustc
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let Ok(mut child) = rustc.spawn() else {
        return false;
    };
    let wrote = child
        .stdin
        .take()
        .is_some_and(|mut stdin| stdin.write_all(b"fn main() {}\n").is_ok());
    let linked = child.wait().is_ok_and(|status| status.success());
    let _ = std::fs::remove_dir_all(&dir);
    wrote && linked
}
