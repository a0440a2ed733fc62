//! Images a front end sends with a prompt (capability `images`): files
//! read and checked as the daemon checks them (`scv_protocol::images`:
//! the type by the bytes' signature, the size, the count), so the user
//! hears what is wrong before anything is sent; `@path` mentions of image
//! files in a prompt.

use base64::Engine as _;
use scv_protocol::images::{check_image, check_prompt_images, MAX_IMAGE_BYTES};
use scv_protocol::PromptImage;
use std::path::{Path, PathBuf};

/// File names SCV takes as images when a prompt mentions them.
pub const IMAGE_EXTENSIONS: [&str; 5] = ["png", "jpg", "jpeg", "gif", "webp"];

/// `bytes` as the `index`th image of a prompt.
pub fn from_bytes(index: usize, bytes: &[u8]) -> Result<PromptImage, String> {
    let mime = check_image(index, bytes, None)?;
    Ok(PromptImage {
        mime_type: mime.to_string(),
        data: base64::engine::general_purpose::STANDARD.encode(bytes),
    })
}

/// The file at `path` as the `index`th image of a prompt (its size is
/// checked before it is read).
pub fn read_file(index: usize, path: &Path) -> Result<PromptImage, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|err| format!("{shown}: {err}"))?;
    if !meta.is_file() {
        return Err(format!("{shown} is not a file"));
    }
    if meta.len() > MAX_IMAGE_BYTES as u64 {
        return Err(format!(
            "{shown} is {} bytes; an image may have at most {MAX_IMAGE_BYTES}",
            meta.len()
        ));
    }
    let bytes = std::fs::read(path).map_err(|err| format!("{shown}: {err}"))?;
    from_bytes(index, &bytes).map_err(|err| format!("{shown}: {err}"))
}

/// The files at `paths` as a prompt's images, in order, or the first
/// reason one cannot go.
pub fn read_files(paths: &[PathBuf]) -> Result<Vec<PromptImage>, String> {
    check_prompt_images(paths.len(), 0)?;
    let mut images = Vec::with_capacity(paths.len());
    let mut total = 0;
    for (index, path) in paths.iter().enumerate() {
        let image = read_file(index, path)?;
        total += image.data.len() / 4 * 3;
        check_prompt_images(images.len() + 1, total)?;
        images.push(image);
    }
    Ok(images)
}

/// Whether `path`'s name ends in an image extension.
pub fn is_image_name(path: &str) -> bool {
    Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| IMAGE_EXTENSIONS.iter().any(|x| x.eq_ignore_ascii_case(e)))
}

/// The image files a prompt mentions as `@path` (relative to `cwd`, or
/// absolute) that exist, each once, in the order mentioned. A word is a
/// mention when it starts with `@` and names an image file; trailing
/// punctuation (`.,;:!?)`) is not part of it.
pub fn mentioned(prompt: &str, cwd: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    for word in prompt.split_whitespace() {
        let Some(name) = word.strip_prefix('@') else {
            continue;
        };
        let name = name.trim_end_matches(['.', ',', ';', ':', '!', '?', ')']);
        if !is_image_name(name) {
            continue;
        }
        let path = cwd.join(name);
        if path.is_file() && !found.contains(&path) {
            found.push(path);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_name_existing_image_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("shot.png"), b"\x89PNG\r\n\x1a\nxx").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"text").unwrap();
        let found = mentioned(
            "see @shot.png, and @notes.txt and @gone.png @shot.png",
            dir.path(),
        );
        assert_eq!(found, [dir.path().join("shot.png")]);
        let images = read_files(&found).unwrap();
        assert_eq!(images[0].mime_type, "image/png");
        std::fs::write(dir.path().join("fake.png"), b"not really").unwrap();
        let err = read_files(&[dir.path().join("fake.png")]).unwrap_err();
        assert!(err.contains("not a PNG, JPEG, GIF or WebP"), "{err}");
    }
}
