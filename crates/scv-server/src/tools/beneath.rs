//! File access confined to the session workspace by the kernel.
//!
//! Every open goes through `openat2(2)` relative to a handle on the
//! workspace with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`: `..`, absolute
//! symlinks and links leading outside are refused at the moment of the open,
//! not checked beforehand, so a link planted or swapped in after approval
//! (or a dangling link a cloned repository ships) cannot lead outside.
//! Relative links that stay inside work as usual. Opens never block (FIFOs
//! and devices are refused once opened) and only regular files are read or
//! written.
//!
//! A file with more than one hard link may share its inode with a file
//! anywhere on the same filesystem (pnpm's store links into
//! `node_modules`); the path check cannot see that. Such a file is never
//! written in place: [`Workspace::replace`] writes a new file beside it and
//! renames it over the name, so only the workspace's name changes.

use rustix::fd::{AsFd, AsRawFd, OwnedFd};
use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use std::fs::File;
use std::io::Read;
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};

const RESOLVE: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

/// A handle on the workspace directory; paths are resolved beneath it.
pub(crate) struct Workspace {
    root: OwnedFd,
    path: PathBuf,
    /// Trees the file tools never write although they lie inside (SCV's
    /// own `$SCV_HOME`); every `.git` is refused besides.
    protected: Vec<PathBuf>,
}

/// A path the model named, made relative to the workspace.
#[derive(Debug, Clone)]
pub(crate) struct Rel {
    /// Relative to the workspace; `.` for the workspace itself.
    pub path: PathBuf,
    /// How messages show it.
    pub shown: String,
}

impl Workspace {
    /// Opens a handle on `path` (canonical).
    pub(crate) fn open(path: &Path) -> Result<Workspace, String> {
        let root = rustix::fs::open(
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|err| format!("cannot open the workspace {}: {err}", path.display()))?;
        Ok(Workspace {
            root,
            path: path.to_path_buf(),
            protected: Vec::new(),
        })
    }

    /// The same handle, refusing writes into `protected` too.
    pub(crate) fn protecting(mut self, protected: &Path) -> Workspace {
        self.protected
            .push(std::fs::canonicalize(protected).unwrap_or_else(|_| protected.to_path_buf()));
        self
    }

    /// Refuses a write to what `fd` is, where it really is: inside a
    /// repository's `.git` (a change there can make the user's next plain
    /// `git` run code: `core.fsmonitor`, hooks) or a protected tree. Asked
    /// of the very descriptor that is written (or the directory it is
    /// made in), so no link swapped in meanwhile leads around it.
    fn guard(&self, fd: &impl AsFd, rel: &Rel) -> Result<(), String> {
        let link = format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd());
        let real = std::fs::read_link(&link)
            .map_err(|err| format!("cannot tell where {} is: {err}", rel.shown))?;
        if real.components().any(|c| c.as_os_str() == ".git") {
            return Err(format!(
                "{} is inside a repository's .git; SCV's file tools do not write there (a change there can make your next git run code) — use git commands",
                rel.shown
            ));
        }
        if self.protected.iter().any(|p| real.starts_with(p)) {
            return Err(format!(
                "{} is inside SCV's own settings ($SCV_HOME); the file tools do not write there",
                rel.shown
            ));
        }
        Ok(())
    }

    /// Opens the regular file `rel` for writing (`flags`), checked by
    /// [`Workspace::guard`] before anything is written: the file is
    /// found with `O_PATH`, checked, then that very inode is opened.
    fn open_guarded(&self, rel: &Rel, flags: OFlags, verb: &str) -> Result<OwnedFd, String> {
        let found = self
            .openat(rel, OFlags::PATH, Mode::empty())
            .map_err(|err| describe(err, rel, verb))?;
        self.guard(&found, rel)?;
        let link = format!("/proc/self/fd/{}", found.as_raw_fd());
        rustix::fs::open(
            link.as_str(),
            flags | OFlags::CLOEXEC | OFlags::NOCTTY,
            Mode::empty(),
        )
        .map_err(|err| describe(err, rel, verb))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// `path` (relative, or absolute inside the workspace) as a path below
    /// the workspace. Lexical only; the kernel decides at the open.
    pub(crate) fn relative(&self, path: &str) -> Result<Rel, String> {
        let given = path.trim();
        let path = Path::new(given);
        let rel = if path.is_absolute() {
            path.strip_prefix(&self.path).map_err(|_| outside(given))?
        } else {
            path
        };
        // Normalized for display, and refused early when `..` climbs out.
        let mut normal = PathBuf::new();
        for component in rel.components() {
            match component {
                Component::ParentDir => {
                    if !normal.pop() {
                        return Err(outside(given));
                    }
                }
                Component::Normal(name) => normal.push(name),
                Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            }
        }
        let shown = if normal.as_os_str().is_empty() {
            ".".to_string()
        } else {
            normal.display().to_string()
        };
        let path = if rel.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            rel.to_path_buf()
        };
        Ok(Rel { path, shown })
    }

    /// `rel` resolved against the workspace path, for walking with path
    /// names (search); opens still go through this handle.
    pub(crate) fn join(&self, rel: &Rel) -> PathBuf {
        self.path.join(&rel.path)
    }

    fn openat(&self, rel: &Rel, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
        // openat2 refuses O_PATH with any flag but these few.
        let extra = if flags.contains(OFlags::PATH) {
            OFlags::CLOEXEC
        } else {
            OFlags::CLOEXEC | OFlags::NOCTTY
        };
        rustix::fs::openat2(self.root.as_fd(), &rel.path, flags | extra, mode, RESOLVE)
    }

    /// A regular file for reading, with its size.
    pub(crate) fn open_read(&self, rel: &Rel) -> Result<(File, u64), String> {
        let fd = self
            .openat(rel, OFlags::RDONLY | OFlags::NONBLOCK, Mode::empty())
            .map_err(|err| describe(err, rel, "read"))?;
        let size = regular(&fd, rel)?;
        Ok((File::from(fd), size))
    }

    /// A regular file for reading and rewriting in place (edit_file): the
    /// same open file is read and written, so no swap can come between.
    pub(crate) fn open_read_write(&self, rel: &Rel) -> Result<(File, u64), String> {
        self.check(rel)?;
        let fd = self.open_guarded(rel, OFlags::RDWR | OFlags::NONBLOCK, "open")?;
        let size = regular(&fd, rel)?;
        Ok((File::from(fd), size))
    }

    /// Creates or truncates a regular file, creating missing parent
    /// directories (each one beneath the workspace). True when it existed.
    pub(crate) fn create(&self, rel: &Rel) -> Result<(File, bool), String> {
        self.create_through(rel, 0)
    }

    /// [`Workspace::create`], `hops` links followed so far: a link that
    /// dangles beneath the workspace has its target made (as `open` with
    /// `O_CREAT` would), checked like any other path.
    fn create_through(&self, rel: &Rel, hops: u8) -> Result<(File, bool), String> {
        self.check(rel)?;
        // Folders are made for the path asked, not for a link's target.
        if let Some(parent) = rel
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty() && hops == 0)
        {
            self.create_dirs(parent, rel)?;
        }
        // A new file: made in its directory, which is checked first.
        let (parent, name) = self.parent_of(rel)?;
        self.guard(&parent, rel)?;
        let made = rustix::fs::openat(
            &parent,
            &name,
            OFlags::WRONLY
                | OFlags::CREATE
                | OFlags::EXCL
                | OFlags::NOFOLLOW
                | OFlags::NONBLOCK
                | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o666),
        );
        let (fd, existed) = match made {
            Ok(fd) => (fd, false),
            // There already (perhaps a link beneath the workspace): the
            // file it is, checked, then truncated.
            Err(Errno::EXIST) => {
                let found = self.openat(rel, OFlags::PATH, Mode::empty());
                if matches!(found, Err(Errno::NOENT)) && hops < 8 {
                    if let Some(target) = self.dangling_target(&parent, &name, rel) {
                        return self.create_through(&target, hops + 1);
                    }
                }
                let fd = self.open_guarded(rel, OFlags::WRONLY | OFlags::NONBLOCK, "write")?;
                regular(&fd, rel)?;
                rustix::fs::ftruncate(&fd, 0).map_err(|err| describe(err, rel, "write"))?;
                (fd, true)
            }
            Err(err) => return Err(describe(err, rel, "write")),
        };
        regular(&fd, rel)?;
        Ok((File::from(fd), existed))
    }

    /// Where the dangling link `name` in `parent` leads, relative to the
    /// workspace; None for an absolute target (never beneath: refused
    /// as outside when it is opened).
    fn dangling_target(&self, parent: &OwnedFd, name: &std::ffi::OsStr, rel: &Rel) -> Option<Rel> {
        let target = rustix::fs::readlinkat(parent, name, Vec::new()).ok()?;
        let target = PathBuf::from(std::ffi::OsString::from_vec(target.into_bytes()));
        if target.is_absolute() {
            return None;
        }
        let joined = rel.path.parent().unwrap_or(Path::new("")).join(target);
        self.relative(joined.to_str()?).ok()
    }

    /// Refuses, before anything is opened, a path that names a `.git`.
    fn check(&self, rel: &Rel) -> Result<(), String> {
        if rel.path.components().any(|c| c.as_os_str() == ".git") {
            return Err(format!(
                "{} is inside a repository's .git; SCV's file tools do not write there (a change there can make your next git run code) — use git commands",
                rel.shown
            ));
        }
        Ok(())
    }

    /// The directory `rel` is in (opened beneath the workspace) and its
    /// last name.
    fn parent_of(&self, rel: &Rel) -> Result<(OwnedFd, std::ffi::OsString), String> {
        let name = match rel.path.file_name() {
            Some(name) => name.to_owned(),
            None => return Err(format!("{} is not a file", rel.shown)),
        };
        let parent = Rel {
            path: match rel.path.parent().filter(|p| !p.as_os_str().is_empty()) {
                Some(parent) => parent.to_path_buf(),
                None => PathBuf::from("."),
            },
            shown: rel.shown.clone(),
        };
        let dir = self
            .openat(&parent, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())
            .map_err(|err| describe(err, rel, "write"))?;
        Ok((dir, name))
    }

    /// Hard links of `rel` and its permission bits, when it is a regular
    /// file (not reached through a final symbolic link) with more than one.
    pub(crate) fn shared(&self, rel: &Rel) -> Result<Option<u32>, String> {
        let fd = match self.openat(rel, OFlags::PATH | OFlags::NOFOLLOW, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(err) => return Err(describe(err, rel, "open")),
        };
        let stat = rustix::fs::fstat(&fd).map_err(|err| describe(err, rel, "inspect"))?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile if stat.st_nlink > 1 => Ok(Some(stat.st_mode & 0o7777)),
            FileType::Symlink => {
                let target = self.openat(rel, OFlags::PATH, Mode::empty()).ok();
                let shared = target
                    .and_then(|fd| rustix::fs::fstat(&fd).ok())
                    .is_some_and(|stat| stat.st_nlink > 1);
                if shared {
                    return Err(format!(
                        "{} is a symbolic link to a file with other hard links; not written (edit the file it names)",
                        rel.shown
                    ));
                }
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// Replaces the file `rel` with `contents` (permission bits `mode`):
    /// written to a new file in the same directory, then renamed over the
    /// name, so other hard links keep their content.
    pub(crate) fn replace(&self, rel: &Rel, contents: &[u8], mode: u32) -> Result<(), String> {
        self.check(rel)?;
        let (dir, name) = self.parent_of(rel)?;
        self.guard(&dir, rel)?;
        let temp = format!(
            ".{}.scv-{}",
            name.to_string_lossy(),
            uuid::Uuid::new_v4().simple()
        );
        let fd = rustix::fs::openat(
            &dir,
            &temp,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )
        .map_err(|err| describe(err, rel, "write"))?;
        let written = (|| {
            use std::io::Write;
            let mut file = File::from(fd);
            file.write_all(contents)?;
            rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))?;
            rustix::fs::renameat(&dir, &temp, &dir, &name)?;
            Ok::<_, std::io::Error>(())
        })();
        if let Err(err) = written {
            let _ = rustix::fs::unlinkat(&dir, &temp, rustix::fs::AtFlags::empty());
            return Err(format!("cannot write {}: {err}", rel.shown));
        }
        Ok(())
    }

    /// `mkdir -p` beneath the workspace: each missing directory is made
    /// with `mkdirat` in a parent opened beneath it.
    fn create_dirs(&self, dirs: &Path, rel: &Rel) -> Result<(), String> {
        let mut prefix = PathBuf::new();
        for component in dirs.components() {
            let Component::Normal(name) = component else {
                prefix.push(component);
                continue;
            };
            let parent = Rel {
                path: if prefix.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    prefix.clone()
                },
                shown: rel.shown.clone(),
            };
            prefix.push(name);
            let here = Rel {
                path: prefix.clone(),
                shown: rel.shown.clone(),
            };
            match self.openat(&here, OFlags::PATH | OFlags::DIRECTORY, Mode::empty()) {
                Ok(_) => continue,
                Err(Errno::NOENT) => {}
                Err(err) => return Err(describe(err, rel, "create a directory for")),
            }
            let parent_fd = self
                .openat(&parent, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())
                .map_err(|err| describe(err, rel, "create a directory for"))?;
            match rustix::fs::mkdirat(&parent_fd, name, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(err) => return Err(describe(err, rel, "create a directory for")),
            }
        }
        Ok(())
    }

    /// What `rel` is (following links beneath the workspace).
    pub(crate) fn stat(&self, rel: &Rel) -> Result<FileType, String> {
        let fd = self
            .openat(rel, OFlags::PATH, Mode::empty())
            .map_err(|err| describe(err, rel, "open"))?;
        let stat = rustix::fs::fstat(&fd).map_err(|err| describe(err, rel, "inspect"))?;
        Ok(FileType::from_raw_mode(stat.st_mode))
    }

    /// A directory for listing.
    pub(crate) fn open_dir(&self, rel: &Rel) -> Result<OwnedFd, String> {
        self.openat(rel, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())
            .map_err(|err| match err {
                Errno::NOTDIR => format!("{} is not a directory", rel.shown),
                other => describe(other, rel, "list"),
            })
    }

    /// The whole of a small regular file, or `None` when it is missing,
    /// outside, not a regular file or over `max` bytes (ignore files).
    pub(crate) fn read_small(&self, rel: &Rel, max: u64) -> Option<Vec<u8>> {
        let (file, size) = self.open_read(rel).ok()?;
        if size > max {
            tracing::info!("{}: {size} bytes; not read (limit {max})", rel.shown);
            return None;
        }
        let mut bytes = Vec::with_capacity(size as usize);
        file.take(max + 1).read_to_end(&mut bytes).ok()?;
        (bytes.len() as u64 <= max).then_some(bytes)
    }
}

/// Refuses anything but a regular file; returns its size.
fn regular(fd: &OwnedFd, rel: &Rel) -> Result<u64, String> {
    let stat = rustix::fs::fstat(fd).map_err(|err| describe(err, rel, "inspect"))?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Ok(stat.st_size as u64),
        FileType::Directory => Err(format!("{} is a directory; use list_dir", rel.shown)),
        other => Err(format!(
            "{} is not a regular file ({}); not opened",
            rel.shown,
            kind(other)
        )),
    }
}

fn kind(file_type: FileType) -> &'static str {
    match file_type {
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        FileType::Symlink => "a symbolic link",
        _ => "a special file",
    }
}

pub(crate) fn outside(path: &str) -> String {
    format!("path `{path}` is outside the workspace; only paths inside it can be used")
}

fn describe(err: Errno, rel: &Rel, verb: &str) -> String {
    let shown = &rel.shown;
    match err {
        Errno::XDEV => outside(shown),
        Errno::NOENT => format!("cannot {verb} {shown}: it does not exist"),
        Errno::ISDIR => format!("{shown} is a directory"),
        Errno::NOTDIR => format!("cannot {verb} {shown}: a parent is not a directory"),
        Errno::LOOP => format!("cannot {verb} {shown}: too many levels of symbolic links"),
        Errno::NXIO => format!("{shown} is not a regular file; not opened"),
        Errno::ACCESS | Errno::PERM => format!("cannot {verb} {shown}: permission denied"),
        Errno::NOSYS => "this kernel lacks openat2 (Linux 5.6 or later is needed)".into(),
        other => format!("cannot {verb} {shown}: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn ws() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().canonicalize().unwrap();
        let ws = Workspace::open(&path).unwrap();
        (dir, ws)
    }

    #[test]
    fn relative_paths_stay_inside() {
        let (_dir, ws) = ws();
        let abs = ws.path().join("src/a.rs");
        assert_eq!(ws.relative("src/../a.txt").unwrap().shown, "a.txt");
        assert_eq!(ws.relative("").unwrap().shown, ".");
        assert_eq!(
            ws.relative(abs.to_str().unwrap()).unwrap().shown,
            "src/a.rs"
        );
        assert!(ws.relative("../x").is_err());
        assert!(ws.relative("src/../../x").is_err());
        assert!(ws.relative("/etc/passwd").is_err());
    }

    #[test]
    fn links_leading_outside_are_refused_even_dangling() {
        let (_dir, ws) = ws();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("x.txt");
        symlink(&target, ws.path().join("dangling")).unwrap();
        symlink(
            "../../../../../../../tmp/nowhere-scv",
            ws.path().join("rel"),
        )
        .unwrap();
        symlink(ws.path().join("dangling"), ws.path().join("chain")).unwrap();
        for name in ["dangling", "rel", "chain"] {
            let rel = ws.relative(name).unwrap();
            let err = ws.create(&rel).unwrap_err();
            assert!(err.contains("outside the workspace"), "{name}: {err}");
        }
        assert!(!target.exists());
        // A relative link that stays inside works, dangling or not.
        symlink("sub/new.txt", ws.path().join("inside")).unwrap();
        let rel = ws.relative("inside").unwrap();
        assert!(ws.create(&rel).is_err(), "sub/ does not exist yet");
        std::fs::create_dir(ws.path().join("sub")).unwrap();
        ws.create(&rel).unwrap();
        assert!(ws.path().join("sub/new.txt").is_file());
    }

    #[test]
    fn fifos_are_refused_without_blocking() {
        let (_dir, ws) = ws();
        let fifo = ws.path().join("pipe");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, Mode::from_raw_mode(0o600)).unwrap();
        let rel = ws.relative("pipe").unwrap();
        assert!(ws.open_read(&rel).unwrap_err().contains("a FIFO"));
        assert!(ws.create(&rel).is_err());
        assert!(ws.read_small(&rel, 10).is_none());
    }

    #[test]
    fn parents_are_created_beneath() {
        let (_dir, ws) = ws();
        let outside = tempfile::tempdir().unwrap();
        symlink(outside.path(), ws.path().join("out")).unwrap();
        let rel = ws.relative("a/b/c.txt").unwrap();
        ws.create(&rel).unwrap();
        assert!(ws.path().join("a/b/c.txt").is_file());
        let rel = ws.relative("out/deeper/x.txt").unwrap();
        assert!(ws.create(&rel).unwrap_err().contains("outside"));
        assert!(!outside.path().join("deeper").exists());
    }
}
