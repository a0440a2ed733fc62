//! Reading a whole text file for the file tools, within
//! [`MAX_FILE_BYTES`], refusing binary and non-UTF-8 content.

use super::output::looks_binary;
use std::fs::File;
use std::io::Read;

/// The largest file the tools read whole, or write by editing.
pub(crate) const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;

/// A whole text file of at most [`MAX_FILE_BYTES`], from an open file.
pub(super) fn read_text(mut file: File, size: u64, shown: &str) -> Result<String, String> {
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "{shown} is too large to read ({size} bytes; limit {MAX_FILE_BYTES})"
        ));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    (&mut file)
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("cannot read {shown}: {err}"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "{shown} is too large to read (over {MAX_FILE_BYTES} bytes)"
        ));
    }
    if looks_binary(&bytes) {
        return Err(format!(
            "{shown} is a binary file ({} bytes); not shown",
            bytes.len()
        ));
    }
    String::from_utf8(bytes).map_err(|_| format!("{shown} is not valid UTF-8 text; not shown"))
}
