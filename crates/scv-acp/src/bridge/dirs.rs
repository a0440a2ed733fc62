//! ACP `additionalDirectories` (on `session/new`, `session/load`,
//! `session/resume`) as the SCV protocol's `additional_directories`. Here
//! only what the SCV protocol cannot carry is refused (a relative path, a
//! path that is not UTF-8, too many); the daemon checks the rest (that
//! each exists and is a directory, not `/`, not `$SCV_HOME`) and its
//! `invalid_request` is `-32602` as well.

use crate::errors;
use agent_client_protocol::Error;
use std::path::PathBuf;

/// The most a session takes (the daemon's bound).
pub(super) const MAX_ADDITIONAL_DIRECTORIES: usize = 8;

/// `dirs` as strings, or the `-32602` refusing them.
pub(super) fn strings(dirs: &[PathBuf]) -> Result<Vec<String>, Error> {
    if dirs.len() > MAX_ADDITIONAL_DIRECTORIES {
        return Err(errors::invalid_params(format!(
            "{} additionalDirectories; a session may have at most {MAX_ADDITIONAL_DIRECTORIES}",
            dirs.len()
        )));
    }
    dirs.iter()
        .map(|dir| {
            if !dir.is_absolute() {
                return Err(errors::invalid_params(format!(
                    "additionalDirectories: `{}` is not an absolute path",
                    dir.display()
                )));
            }
            dir.to_str().map(str::to_string).ok_or_else(|| {
                errors::invalid_params("additionalDirectories: a path is not valid UTF-8")
            })
        })
        .collect()
}
