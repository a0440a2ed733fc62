//! A message over the protocol's prompt limit (256 KiB) is never sent to
//! be refused: it stays in the box, the limit is said in words, and Enter
//! again (on the same text) saves it as a file in the workspace
//! (`.scv/pastes/`, ignored by git) and sends a short message naming the
//! file, which the model reads with its tools.

use super::{App, Outgoing};
use scv_protocol::limits::MAX_PROMPT_BYTES;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// Where attached pastes go, under the workspace.
const PASTES: &str = ".scv/pastes";

/// Whether `text` is over what one prompt may hold.
pub(super) fn over_limit(text: &str) -> bool {
    text.len() > MAX_PROMPT_BYTES
}

/// The over-long message the user was offered to attach as a file (its
/// fingerprint): Enter again on the same text attaches it.
#[derive(Debug, Default)]
pub(super) struct AttachOffer(Option<u64>);

/// What Enter on an over-long `text` does.
enum Attach {
    /// Says the limit and offers the file (the first Enter).
    Offer(String),
    /// Saved: the message naming the file, and the note.
    Send { message: String, note: String },
    /// It could not be saved: why (the text stays in the box).
    Failed(String),
}

impl AttachOffer {
    /// The first Enter on `text` offers; the second, on the same text,
    /// saves it under `cwd`.
    fn enter(&mut self, cwd: &Path, text: &str) -> Attach {
        let stamp = fingerprint(text);
        if self.0 != Some(stamp) {
            self.0 = Some(stamp);
            return Attach::Offer(format!(
                "this message is {}; a prompt can be at most {} — Enter again saves it as a file in the workspace ({PASTES}/) and sends a message naming it, or shorten it",
                size(text.len()),
                size(MAX_PROMPT_BYTES)
            ));
        }
        self.0 = None;
        match save(cwd, text) {
            Ok(relative) => Attach::Send {
                message: format!(
                    "The text I pasted is in `{}` ({} lines, {}); read it from there.",
                    relative.display(),
                    text.lines().count(),
                    size(text.len())
                ),
                note: format!(
                    "pasted text saved to {} and sent as a reference",
                    relative.display()
                ),
            },
            Err(err) => Attach::Failed(format!(
                "cannot save the text in {}: {err}; it stays in the box",
                cwd.join(PASTES).display()
            )),
        }
    }
}

impl App {
    /// `text` is over the limit: the first Enter says so and offers the
    /// file; Enter again on the same text saves it and sends the message
    /// that names it (the box is then empty).
    pub(super) fn offer_or_attach(&mut self, session_id: String, text: &str) -> Vec<Outgoing> {
        let Some(cwd) = self.session.as_ref().map(|s| PathBuf::from(&s.cwd)) else {
            self.hint = Some("not connected".into());
            return Vec::new();
        };
        match self.attach_offer.enter(&cwd, text) {
            Attach::Offer(hint) | Attach::Failed(hint) => {
                self.hint = Some(hint);
                Vec::new()
            }
            Attach::Send { message, note } => {
                self.input.take();
                self.notice(note);
                vec![self.start_turn(session_id, message)]
            }
        }
    }
}

fn save(cwd: &Path, text: &str) -> std::io::Result<PathBuf> {
    let dir = cwd.join(PASTES);
    std::fs::create_dir_all(&dir)?;
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        std::fs::write(&ignore, "*\n")?;
    }
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for n in 0..1000 {
        let name = format!("paste-{seconds}-{n}.txt");
        let path = dir.join(&name);
        // `create_new`: never overwrite a file that is there.
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut file) => {
                std::io::Write::write_all(&mut file, text.as_bytes())?;
                return Ok(Path::new(PASTES).join(name));
            }
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(err),
        }
    }
    Err(std::io::Error::other("too many pastes this second"))
}

fn fingerprint(text: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// Bytes in words: `256 KiB`, `1.1 MiB`.
fn size(bytes: usize) -> String {
    const KIB: f64 = 1024.0;
    let bytes = bytes as f64;
    if bytes >= KIB * KIB {
        format!("{:.1} MiB", bytes / KIB / KIB)
    } else {
        format!("{:.0} KiB", bytes / KIB)
    }
}
