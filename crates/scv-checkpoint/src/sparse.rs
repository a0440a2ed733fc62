//! Files with holes (`truncate -s 64M`, disk images, databases): stored
//! by what they hold, not their length, and restored with their holes.
//!
//! A file whose allocated blocks are fewer than its length is asked for
//! its data (`SEEK_DATA` / `SEEK_HOLE`); if it has a hole, only its data
//! is read, and its object holds, instead of the content as it is:
//!
//! `SCVS` 0x01, then records of a varint `skip`, a varint `len` and `len`
//! bytes: each a run of the file's non-zero 4 KiB pages (at most 1 MiB;
//! pages aligned to the file's offsets, the last one possibly short),
//! `skip` the zeros between the end of the previous run and this one; the
//! last record has `len` 0, its `skip` reaching the file's length.
//!
//! Zero pages are left out even where the file has data, so the form
//! depends on the content alone (not on what happens to be allocated):
//! the same content, the same object. The object is named by the hash of
//! this form (a tree's tag 6 says so), so it is verified like any other;
//! a file without holes is stored as it is, as before.

use crate::hash::{Hash, Hasher};
use rustix::io::Errno;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::FileExt;

pub(crate) const MAGIC: &[u8; 5] = b"SCVS\x01";
const PAGE: u64 = 4096;
/// The longest run in one record (what a writer or reader holds).
const MAX_RUN: usize = 1024 * 1024;

/// What the file's data ranges are, when it has a hole before its end:
/// (start, end) pairs, sorted. None for a file without holes, or a file
/// system that cannot say.
pub(crate) fn data_ranges(file: &File, size: u64) -> Result<Option<Vec<(u64, u64)>>, Errno> {
    use rustix::fs::SeekFrom;
    let mut ranges = Vec::new();
    let mut pos = 0;
    while pos < size {
        let start = match rustix::fs::seek(file, SeekFrom::Data(pos)) {
            Ok(start) => start,
            // No data from `pos` to the end.
            Err(Errno::NXIO) => break,
            Err(Errno::INVAL) | Err(Errno::OPNOTSUPP) => return Ok(None),
            Err(e) => return Err(e),
        };
        if start >= size {
            break;
        }
        let end = rustix::fs::seek(file, SeekFrom::Hole(start))?.min(size);
        if end <= start {
            break;
        }
        ranges.push((start, end));
        pos = end;
    }
    if ranges == [(0, size)] {
        return Ok(None);
    }
    Ok(Some(ranges))
}

/// Writes the sparse form of `file` (of length `size`, its data in
/// `ranges`) to `out`; the hash of what was written, its length and the
/// data bytes read. A read error is the outer `Err` with why.
pub(crate) fn encode(
    file: &File,
    size: u64,
    ranges: &[(u64, u64)],
    out: &mut File,
) -> Result<(Hash, u64, u64), std::io::Error> {
    let mut writer = Encoder {
        out: BufWriter::with_capacity(256 * 1024, out),
        hasher: Hasher::new(),
        written: 0,
        pos: 0,
        run_start: 0,
        run: Vec::new(),
    };
    writer.put(MAGIC)?;
    let mut read = 0u64;
    let mut buf = vec![0u8; 256 * 1024];
    for &(start, end) in ranges {
        let mut at = start;
        while at < end {
            let want = ((end - at) as usize).min(buf.len());
            let n = match file.read_at(&mut buf[..want], at) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            read += n as u64;
            // Page by page, on the file's 4 KiB boundaries.
            let mut i = 0;
            while i < n {
                let offset = at + i as u64;
                let page_end = ((offset / PAGE + 1) * PAGE).min(at + n as u64);
                let piece = &buf[i..(page_end - at) as usize];
                if piece.iter().all(|&b| b == 0) {
                    writer.flush_run()?;
                } else {
                    writer.push(offset, piece)?;
                }
                i = (page_end - at) as usize;
            }
            at += n as u64;
        }
    }
    writer.flush_run()?;
    let skip = size.saturating_sub(writer.pos);
    writer.record(skip, &[])?;
    writer.out.flush()?;
    Ok((writer.hasher.finish(), writer.written, read))
}

struct Encoder<'a> {
    out: BufWriter<&'a mut File>,
    hasher: Hasher,
    written: u64,
    /// Where the last record ended, in the file.
    pos: u64,
    run_start: u64,
    run: Vec<u8>,
}

impl Encoder<'_> {
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.hasher.update(bytes);
        self.written += bytes.len() as u64;
        self.out.write_all(bytes)
    }

    fn record(&mut self, skip: u64, bytes: &[u8]) -> std::io::Result<()> {
        let mut head = Vec::with_capacity(20);
        varint(&mut head, skip);
        varint(&mut head, bytes.len() as u64);
        self.put(&head)?;
        self.put(bytes)?;
        self.pos += skip + bytes.len() as u64;
        Ok(())
    }

    /// Adds non-zero bytes at `offset` to the current run (a new run when
    /// they do not follow it, or it is full).
    fn push(&mut self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        if !self.run.is_empty()
            && (offset != self.run_start + self.run.len() as u64
                || self.run.len() + bytes.len() > MAX_RUN)
        {
            self.flush_run()?;
        }
        if self.run.is_empty() {
            self.run_start = offset;
        }
        self.run.extend_from_slice(bytes);
        Ok(())
    }

    fn flush_run(&mut self) -> std::io::Result<()> {
        if self.run.is_empty() {
            return Ok(());
        }
        let run = std::mem::take(&mut self.run);
        let skip = self.run_start - self.pos;
        self.record(skip, &run)?;
        self.run = run;
        self.run.clear();
        Ok(())
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a sparse object from `blob` and writes the file it describes
/// into `out` (empty), holes left as holes; fails if the object is not
/// well formed or not `hash`.
pub(crate) fn decode(blob: File, hash: &Hash, out: &File) -> Result<(), String> {
    let mut r = HashingReader {
        inner: std::io::BufReader::with_capacity(256 * 1024, blob),
        hasher: Hasher::new(),
    };
    let mut magic = [0u8; 5];
    r.exact(&mut magic)?;
    if &magic != MAGIC {
        return Err("the stored content is not in the sparse form".into());
    }
    let mut pos: u64 = 0;
    let mut buf = Vec::new();
    loop {
        let skip = r.varint()?;
        let len = r.varint()?;
        pos = pos
            .checked_add(skip)
            .filter(|&p| p <= i64::MAX as u64)
            .ok_or("the stored sparse form is damaged (offset too big)")?;
        if len == 0 {
            break;
        }
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l <= MAX_RUN)
            .ok_or("the stored sparse form is damaged (a run too long)")?;
        buf.resize(len, 0);
        r.exact(&mut buf)?;
        out.write_all_at(&buf, pos)
            .map_err(|e| format!("cannot write: {e}"))?;
        pos += len as u64;
    }
    let mut rest = [0u8; 1];
    match r.inner.read(&mut rest) {
        Ok(0) => {}
        Ok(_) => return Err("the stored sparse form is damaged (trailing bytes)".into()),
        Err(e) => return Err(format!("cannot read the stored content: {e}")),
    }
    if r.hasher.finish() != *hash {
        return Err("the stored content changed during the restore".into());
    }
    rustix::fs::ftruncate(out, pos).map_err(|e| format!("cannot set its length: {e}"))
}

struct HashingReader<R> {
    inner: R,
    hasher: Hasher,
}

impl<R: Read> HashingReader<R> {
    fn exact(&mut self, buf: &mut [u8]) -> Result<(), String> {
        self.inner.read_exact(buf).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                "the stored sparse form is damaged (truncated)".to_string()
            } else {
                format!("cannot read the stored content: {e}")
            }
        })?;
        self.hasher.update(buf);
        Ok(())
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let mut b = [0u8; 1];
            self.exact(&mut b)?;
            v |= u64::from(b[0] & 0x7f) << shift;
            if b[0] & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("the stored sparse form is damaged (a number too long)".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Seek;

    /// A file of `size` with `data` written at each offset (holes around).
    fn sparse_file(size: u64, data: &[(u64, &[u8])]) -> File {
        let mut f = tempfile::tempfile().unwrap();
        f.set_len(size).unwrap();
        for (at, bytes) in data {
            f.write_all_at(bytes, *at).unwrap();
        }
        f.rewind().unwrap();
        f
    }

    /// The hash of the first `size` bytes, read in pieces.
    fn digest(f: &File, size: u64) -> Hash {
        let mut hasher = Hasher::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut at = 0;
        while at < size {
            let n = buf.len().min((size - at) as usize);
            f.read_exact_at(&mut buf[..n], at).unwrap();
            hasher.update(&buf[..n]);
            at += n as u64;
        }
        hasher.finish()
    }

    fn round_trip(f: &File, size: u64) -> (Hash, Vec<u8>, File) {
        let ranges = data_ranges(f, size).unwrap().unwrap_or(vec![(0, size)]);
        let mut enc = tempfile::tempfile().unwrap();
        let (hash, len, _) = encode(f, size, &ranges, &mut enc).unwrap();
        let mut bytes = Vec::new();
        enc.rewind().unwrap();
        enc.read_to_end(&mut bytes).unwrap();
        assert_eq!(bytes.len() as u64, len);
        assert_eq!(Hash::of(&bytes), hash);
        enc.rewind().unwrap();
        let out = tempfile::tempfile().unwrap();
        decode(enc, &hash, &out).unwrap();
        assert_eq!(out.metadata().unwrap().len(), size);
        assert_eq!(digest(&out, size), digest(f, size));
        (hash, bytes, out)
    }

    #[test]
    fn the_form_round_trips_and_depends_on_the_content_alone() {
        let size = 8 << 20;
        let data: [(u64, &[u8]); 4] = [
            (0, b"head"),
            (3 * 4096 + 17, &[7u8; 9000]),
            (5 << 20, b"middle"),
            (size - 3, b"end"),
        ];
        let f = sparse_file(size, &data);
        let (hash, bytes, out) = round_trip(&f, size);
        assert!(bytes.len() < 40 * 1024, "{}", bytes.len());
        // The same content, written with its zeros allocated: the same form.
        let dense = tempfile::tempfile().unwrap();
        let mut all = vec![0u8; size as usize];
        f.read_exact_at(&mut all, 0).unwrap();
        dense.write_all_at(&all, 0).unwrap();
        let (again, _, _) = round_trip(&dense, size);
        assert_eq!(again, hash);
        // Restored with holes.
        use std::os::unix::fs::MetadataExt;
        assert!(out.metadata().unwrap().blocks() * 512 < 256 * 1024);
        // A length with no data at all, and one ending in a hole.
        round_trip(&sparse_file(64 << 20, &[]), 64 << 20);
        round_trip(&sparse_file(100_000, &[(10, b"x")]), 100_000);
    }

    #[test]
    fn damage_is_refused() {
        let f = sparse_file(1 << 20, &[(4096, b"data"), (40_000, b"more")]);
        let (hash, bytes, _) = round_trip(&f, 1 << 20);
        for cut in 0..bytes.len() {
            let mut t = tempfile::tempfile().unwrap();
            t.write_all(&bytes[..cut]).unwrap();
            t.rewind().unwrap();
            assert!(decode(t, &hash, &tempfile::tempfile().unwrap()).is_err());
        }
        let mut longer = bytes.clone();
        longer.push(0);
        let mut t = tempfile::tempfile().unwrap();
        t.write_all(&longer).unwrap();
        t.rewind().unwrap();
        assert!(decode(t, &hash, &tempfile::tempfile().unwrap()).is_err());
        let mut flipped = bytes.clone();
        let last = flipped.len() - 3;
        flipped[last] ^= 1;
        let mut t = tempfile::tempfile().unwrap();
        t.write_all(&flipped).unwrap();
        t.rewind().unwrap();
        assert!(decode(t, &hash, &tempfile::tempfile().unwrap()).is_err());
    }
}
