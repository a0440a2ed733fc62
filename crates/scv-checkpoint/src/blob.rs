//! File contents as the store keeps them: one zstd frame per object
//! (level [`LEVEL`]), named by the sha256 of the content it holds, so a
//! 50,000-file workspace costs the store about what a shadow git's loose
//! objects cost (docs/BENCHMARKS.md), not its size on disk.
//!
//! Stores written before compression hold contents as they are. A reader
//! takes an object that starts with zstd's magic number as a frame and, if
//! it does not decode to its hash (a raw file that happened to start with
//! those four bytes, a `.zst` file stored by an older build), as it is:
//! the hash decides, so either form is read back exactly or refused.
//! Sparse objects (`sparse.rs`) start with their own magic and are read as
//! they are.

use crate::hash::{Hash, Hasher};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;

/// zstd's fastest regular level: about git's `core.looseCompression` (1)
/// in time and better in size on source text.
pub(crate) const LEVEL: i32 = 1;
const MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// `bytes` as stored (one compression context per thread, reused: a
/// first snapshot packs tens of thousands of small files).
pub(crate) fn pack(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    thread_local! {
        static PACKER: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    PACKER.with(|cell| {
        let mut cell = cell.borrow_mut();
        let packer = match cell.as_mut() {
            Some(p) => p,
            None => cell.insert(zstd::bulk::Compressor::new(LEVEL)?),
        };
        packer.compress(bytes)
    })
}

/// A writer that compresses into `out` (finish it with [`finish`]).
pub(crate) fn packer(out: File) -> std::io::Result<zstd::stream::write::Encoder<'static, File>> {
    let mut encoder = zstd::stream::write::Encoder::new(out, LEVEL)?;
    encoder.include_checksum(false)?;
    Ok(encoder)
}

pub(crate) fn finish(encoder: zstd::stream::write::Encoder<'static, File>) -> std::io::Result<()> {
    let mut file = encoder.finish()?;
    file.flush()
}

/// Whether the object in `file` starts as a zstd frame does.
fn framed(file: &File) -> bool {
    let mut head = [0u8; 4];
    matches!(file.read_at(&mut head, 0), Ok(4)) && head == MAGIC
}

/// Streams the content of the object in `file` (at most `max` bytes of it)
/// into `sink`, and returns whether that content has `hash`. A frame that
/// does not decode to `hash` is tried as raw content, `reset` first
/// undoing what `sink` took.
pub(crate) fn read_into(
    file: &mut File,
    hash: &Hash,
    max: u64,
    sink: &mut dyn FnMut(&[u8]) -> Result<(), String>,
    reset: &mut dyn FnMut() -> Result<(), String>,
) -> Result<bool, String> {
    if framed(file) {
        let decoded = zstd::stream::read::Decoder::new(&*file)
            .map_err(|e| format!("cannot read the stored content: {e}"))
            .and_then(|decoder| pump(decoder.take(max), sink));
        match decoded {
            Ok(got) if got == *hash => return Ok(true),
            // A damaged frame or another content: the raw form decides.
            Ok(_) | Err(_) => reset()?,
        }
        file.seek(SeekFrom::Start(0))
            .map_err(|e| format!("cannot read the stored content: {e}"))?;
    }
    let got = pump((&*file).take(max), sink)?;
    Ok(got == *hash)
}

fn pump(
    mut reader: impl Read,
    sink: &mut dyn FnMut(&[u8]) -> Result<(), String>,
) -> Result<Hash, String> {
    let mut hasher = Hasher::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("cannot read the stored content: {e}")),
        };
        hasher.update(&buf[..n]);
        sink(&buf[..n])?;
    }
    Ok(hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(bytes: &[u8]) -> File {
        let mut f = tempfile_in_tmp();
        f.write_all(bytes).unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        f
    }

    fn tempfile_in_tmp() -> File {
        let path = std::env::temp_dir().join(format!(
            "scv-blob-test-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        f
    }

    fn read(file: &mut File, hash: &Hash) -> Option<Vec<u8>> {
        let out = std::cell::RefCell::new(Vec::new());
        let ok = read_into(
            file,
            hash,
            u64::MAX,
            &mut |b| {
                out.borrow_mut().extend_from_slice(b);
                Ok(())
            },
            &mut || {
                out.borrow_mut().clear();
                Ok(())
            },
        )
        .unwrap();
        ok.then(|| out.into_inner())
    }

    #[test]
    fn a_packed_object_and_a_raw_one_read_back_by_their_hash() {
        let text = b"fn main() { println!(\"hello\"); }\n".repeat(100);
        let packed = pack(&text).unwrap();
        assert!(packed.len() < text.len() / 4, "{}", packed.len());
        let hash = Hash::of(&text);
        assert_eq!(read(&mut object(&packed), &hash).unwrap(), text);
        // An older store's raw object, even one that starts like a frame.
        assert_eq!(read(&mut object(&text), &hash).unwrap(), text);
        let mut raw = MAGIC.to_vec();
        raw.extend_from_slice(b"not really zstd");
        assert_eq!(read(&mut object(&raw), &Hash::of(&raw)).unwrap(), raw);
        // A frame of another content is refused.
        assert!(read(&mut object(&packed), &Hash::of(b"other")).is_none());
    }
}
