//! Which environment variables a tool process sees, and keeping secrets
//! out of the server's own environment block.
//!
//! A tool (every sandbox mode, `off` included) never sees a provider's API
//! key or any variable named like a credential, unless the configuration
//! passes it through. Scrubbing the tool's environment is not enough: a
//! tool could read the server's `/proc/<pid>/environ`, which shows the
//! block the kernel placed at `exec`, so the server moves its environment
//! out of that block and wipes it ([`seal_own_environment`]).

use std::ffi::{CStr, OsString};

/// `*_KEY`, `*_TOKEN`, `*_SECRET`, `*PASSWORD*`, `*_CREDENTIALS`, any case.
pub fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    ["_KEY", "_TOKEN", "_SECRET", "_CREDENTIALS"]
        .iter()
        .any(|suffix| name.ends_with(suffix))
        || name.contains("PASSWORD")
}

/// The variables of `vars` a tool process gets: all but credentials
/// (`keys` names the providers' key variables), except those listed in
/// `passthrough`.
pub fn tool_environment(
    vars: &[(OsString, OsString)],
    keys: &[String],
    passthrough: &[String],
) -> Vec<(OsString, OsString)> {
    vars.iter()
        .filter(|(name, _)| {
            let name = name.to_string_lossy();
            passthrough.iter().any(|p| *p == name)
                || !(is_secret_name(&name) || keys.iter().any(|k| *k == name))
        })
        .cloned()
        .collect()
}

/// Reads the process's environment, then takes the variables `secret`
/// names out of it and moves the rest out of the block the kernel shows
/// as `/proc/<pid>/environ`, which it then overwrites with zeros. Returns
/// the environment as it was, for the caller to keep what it needs.
///
/// Call it while the process still has one thread (first thing in
/// `main`): the C environment is not safe to change concurrently.
pub fn seal_own_environment(secret: impl Fn(&str) -> bool) -> Vec<(OsString, OsString)> {
    let originals = original_strings();
    let vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    for (name, value) in &vars {
        if secret(&name.to_string_lossy()) {
            std::env::remove_var(name);
        } else {
            // A fresh copy on the heap; the variable no longer points
            // into the block.
            std::env::set_var(name, value);
        }
    }
    for (start, len) in originals {
        // SAFETY: each string was in the C environment; after the loop
        // above nothing refers to it any more (libc never frees replaced
        // strings), so zeroing it in place changes only what /proc shows.
        unsafe { std::ptr::write_bytes(start, 0, len) };
    }
    vars
}

/// The strings of the C environment as they are now: start and length.
fn original_strings() -> Vec<(*mut u8, usize)> {
    extern "C" {
        static mut environ: *mut *mut libc::c_char;
    }
    let mut strings = Vec::new();
    // SAFETY: `environ` is a null-terminated array of C strings; we only
    // read it, in a single-threaded process.
    unsafe {
        let mut entry = environ;
        if entry.is_null() {
            return strings;
        }
        while !(*entry).is_null() {
            let len = CStr::from_ptr(*entry).to_bytes().len();
            strings.push(((*entry).cast::<u8>(), len));
            entry = entry.add(1);
        }
    }
    strings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_recognized_by_name() {
        for name in [
            "OPENAI_API_KEY",
            "github_token",
            "AWS_SECRET",
            "DB_PASSWORD_FILE",
            "mypassword",
            "GOOGLE_APPLICATION_CREDENTIALS",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "KEYBOARD", "TOKENIZERS_PARALLELISM", "LANG"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn a_tool_gets_no_credential_but_what_passes_through() {
        let vars: Vec<(OsString, OsString)> = [
            ("PATH", "/bin"),
            ("OPENAI_API_KEY", "sk-1"),
            ("MY_LLM", "k"),
            ("GH_TOKEN", "t"),
            ("NPM_TOKEN", "n"),
        ]
        .iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let env = tool_environment(&vars, &["MY_LLM".into()], &["NPM_TOKEN".into()]);
        let names: Vec<_> = env
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["PATH", "NPM_TOKEN"]);
    }
}
