//! Opening a command, skill or agent file (or a folder of them) once, and
//! reading it from that one descriptor.
//!
//! A workspace's files are opened beneath the workspace directory with
//! `openat2(2)` and `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`: the kernel
//! resolves the path and refuses, at the open, a `..` or a link that leads
//! outside. Nothing is checked beforehand and opened by name afterwards, so
//! a link swapped in between (a repository or a sandboxed command flipping
//! `SKILL.md` to `~/.ssh/id_ed25519`) has no window. Relative links that
//! stay inside work; a link whose target is an absolute path inside the
//! workspace is followed by opening that target, made relative, beneath the
//! workspace again (only the name is rewritten; the open is as confined).
//!
//! The user's own files (`SCV_HOME`) are opened by path, links followed
//! wherever they lead (dotfiles are often links).
//!
//! Either way, files are opened non-blocking (a FIFO does not hang the
//! open), `fstat`ed, and only a regular file is read, from that descriptor,
//! at most the cap plus one byte.

use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

const RESOLVE: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);
/// Links to an absolute path inside the workspace followed for one open.
const MAX_ABSOLUTE_LINKS: usize = 8;
/// `openat2` answers `EAGAIN` when a rename anywhere on the system raced a
/// `..` it was resolving beneath the workspace; it is tried again this often.
const MAX_TRIES: usize = 8;

/// Why a workspace's file is not opened: it (or a folder on its way) is a
/// link leading outside the workspace.
#[derive(Debug)]
pub(crate) struct Outside;

impl fmt::Display for Outside {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("it leads outside the workspace; a workspace's commands, skills and agents are read only from inside it")
    }
}

impl std::error::Error for Outside {}

/// Whether `err` is [`Outside`].
pub(crate) fn is_outside(err: &io::Error) -> bool {
    err.get_ref().is_some_and(|inner| inner.is::<Outside>())
}

fn outside() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, Outside)
}

/// Where the files of one root are opened from.
pub(crate) struct Base {
    /// `None`: anywhere (the user's own files).
    beneath: Option<Beneath>,
}

/// A handle on a workspace directory and its path.
struct Beneath {
    dir: OwnedFd,
    path: PathBuf,
}

/// What an open found.
pub(crate) enum Opened {
    /// A regular file, with its size when opened.
    File(File, u64),
    Dir,
    /// Anything else ("a FIFO", "a socket", ...), not read.
    Other(&'static str),
}

impl Base {
    /// Files beneath `workspace`, or anywhere when `None`.
    pub(crate) fn new(workspace: Option<&Path>) -> io::Result<Base> {
        let Some(path) = workspace else {
            return Ok(Base { beneath: None });
        };
        let dir = rustix::fs::open(
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Base {
            beneath: Some(Beneath {
                dir,
                path: path.to_path_buf(),
            }),
        })
    }

    /// Opens `path` (inside the workspace, for a workspace) to read,
    /// without blocking; `directory`: only a folder opens.
    fn open(&self, path: &Path, directory: bool) -> io::Result<OwnedFd> {
        let mut flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
        if directory {
            flags |= OFlags::DIRECTORY;
        }
        let Some(beneath) = &self.beneath else {
            return Ok(rustix::fs::open(path, flags, Mode::empty())?);
        };
        let rel = path.strip_prefix(&beneath.path).map_err(|_| outside())?;
        beneath.open(rel, flags).map_err(|err| match err {
            Errno::XDEV => outside(),
            Errno::NOSYS => io::Error::new(
                io::ErrorKind::Unsupported,
                "this kernel lacks openat2 (Linux 5.6 or later is needed)",
            ),
            other => other.into(),
        })
    }

    /// A folder, to list.
    pub(crate) fn open_dir(&self, path: &Path) -> io::Result<OwnedFd> {
        self.open(path, true)
    }

    /// Opens `path` once and says what it is; a regular file is read from
    /// the [`Opened::File`] returned.
    pub(crate) fn open_file(&self, path: &Path) -> io::Result<Opened> {
        let fd = self.open(path, false)?;
        let stat = rustix::fs::fstat(&fd)?;
        Ok(match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => Opened::File(File::from(fd), stat.st_size.max(0) as u64),
            FileType::Directory => Opened::Dir,
            other => Opened::Other(kind(other)),
        })
    }
}

impl Beneath {
    /// `openat2` of `rel` beneath the workspace, following links to an
    /// absolute path inside it (each one opened beneath it again).
    fn open(&self, rel: &Path, flags: OFlags) -> Result<OwnedFd, Errno> {
        let mut rel = rel.to_path_buf();
        for _ in 0..MAX_ABSOLUTE_LINKS {
            match self.openat2(&rel, flags) {
                Err(Errno::XDEV) => match self.absolute_link_inside(&rel) {
                    Some(next) => rel = next,
                    None => return Err(Errno::XDEV),
                },
                other => return other,
            }
        }
        Err(Errno::LOOP)
    }

    fn openat2(&self, rel: &Path, flags: OFlags) -> Result<OwnedFd, Errno> {
        let rel = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        let mut tries = 1;
        loop {
            match rustix::fs::openat2(self.dir.as_fd(), rel, flags, Mode::empty(), RESOLVE) {
                Err(Errno::AGAIN) if tries < MAX_TRIES => tries += 1,
                other => return other,
            }
        }
    }

    /// `rel` with its first component that is a link to an absolute path
    /// inside the workspace replaced by that path, made relative; `None`
    /// when there is none (or the link leads outside). Only a name is
    /// rewritten here: what it names is opened beneath the workspace.
    fn absolute_link_inside(&self, rel: &Path) -> Option<PathBuf> {
        let components: Vec<Component<'_>> = rel.components().collect();
        let mut parent = PathBuf::from(".");
        for (i, component) in components.iter().enumerate() {
            let name = match component {
                Component::Normal(name) => name,
                Component::CurDir => continue,
                _ => return None,
            };
            let dir = self
                .openat2(&parent, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC)
                .ok()?;
            if let Ok(target) = rustix::fs::readlinkat(&dir, *name, Vec::new()) {
                let target = PathBuf::from(OsString::from_vec(target.into_bytes()));
                if target.is_absolute() {
                    let mut next = target.strip_prefix(&self.path).ok()?.to_path_buf();
                    next.extend(&components[i + 1..]);
                    return Some(next);
                }
            }
            parent.push(name);
        }
        None
    }
}

/// Why a regular file's bytes were not all read.
pub(crate) enum ReadError {
    /// Over the cap: its size (at least the cap plus one).
    TooBig(u64),
    Io(io::Error),
}

/// The bytes of an opened regular file of `size` bytes, at most `cap`.
pub(crate) fn read_capped(file: File, size: u64, cap: u64) -> Result<Vec<u8>, ReadError> {
    if size > cap {
        return Err(ReadError::TooBig(size));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::TooBig(bytes.len() as u64));
    }
    Ok(bytes)
}

/// What a file other than a regular file or a folder is.
fn kind(file_type: FileType) -> &'static str {
    match file_type {
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        FileType::Symlink => "a symbolic link",
        _ => "a special file",
    }
}
