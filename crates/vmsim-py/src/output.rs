//! Writing a result file whole or not at all, and never replacing what is not a
//! regular file: the rules of the Python package's `vmsim.atomic`, for the trace
//! the extension writes.
//!
//! - A path that does not exist, or is a regular file: a temporary file in its
//!   directory, then a rename over it.
//! - A symbolic link to a regular file (or a dangling one): the same in the
//!   directory of the file the link names, so the link stays.
//! - A path that exists and is not a regular file (a device, a FIFO, a link to one,
//!   `/dev/stdout`, anything under `/proc/*/fd` or `/dev/fd`): the result is made
//!   whole in a temporary file first, then written through (opened for writing,
//!   never replaced; a descriptor of this process such as `/dev/stdout` is written
//!   as it is, sharing its offset, as a shell does).
//! - A directory or a link loop: an error; nothing is written.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Links followed on the way to a path's file (the kernel's MAXSYMLINKS).
const MAX_LINKS: usize = 40;

/// How a result reaches its path.
#[derive(Debug, PartialEq, Eq)]
pub enum Target {
    /// Written to a temporary file beside this regular file, then renamed over it.
    Replace(PathBuf),
    /// Opened and written: the path is not a regular file.
    Through(PathBuf),
}

/// `p` made absolute and lexically normal (`.` and `..` folded), as Python's
/// `os.path.normpath(os.path.abspath(p))`.
fn normal(p: &Path) -> PathBuf {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Whether `p` is `/proc/PID/fd/N` or `/dev/fd/N`: it names an open file, not a place.
fn is_fd_link(p: &Path) -> bool {
    let parts: Vec<_> = p.components().collect();
    let name_is = |i: usize, s: &str| parts.get(i).is_some_and(|c| c.as_os_str() == s);
    let numeric = |i: usize| {
        parts.get(i).is_some_and(|c| {
            let s = c.as_os_str().to_string_lossy();
            !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
        })
    };
    match parts.len() {
        5 => name_is(1, "proc") && name_is(3, "fd") && numeric(4),
        4 => name_is(1, "dev") && name_is(2, "fd") && numeric(3),
        _ => false,
    }
}

/// The links on the way from `path` to its file: the last path reached, and whether a
/// `/proc/*/fd` or `/dev/fd` link was among them.
fn follow_links(path: &Path) -> (PathBuf, bool) {
    let mut p = normal(path);
    for _ in 0..MAX_LINKS {
        if is_fd_link(&p) {
            return (p, true);
        }
        match fs::read_link(&p) {
            Ok(to) => p = normal(&p.parent().unwrap_or(Path::new("/")).join(to)),
            Err(_) => return (p, false),
        }
    }
    (p, false)
}

/// The descriptor N of this process that `path` names (`/dev/stdout`, `/dev/fd/N`,
/// `/proc/self/fd/N`): written through as it is, sharing its offset, as a shell does.
fn own_fd(path: &Path) -> Option<i32> {
    let (link, is_fd) = follow_links(path);
    if !is_fd {
        return None;
    }
    let parts: Vec<String> = link
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let me = std::process::id().to_string();
    let own =
        parts[1] == "dev" || ["self", "thread-self", me.as_str()].contains(&parts[2].as_str());
    if own {
        parts.last()?.parse().ok()
    } else {
        None
    }
}

/// `path` opened for writing through: a duplicate of this process's descriptor for
/// `/dev/stdout` and its kind, else the path opened (never created or truncated).
fn open_through(path: &Path) -> io::Result<File> {
    use std::os::fd::BorrowedFd;
    match own_fd(path) {
        // SAFETY: the descriptor is open (the path naming it exists) for the borrow's
        // short life; it is duplicated, never closed here.
        Some(fd) => Ok(File::from(
            unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()?,
        )),
        None => OpenOptions::new().write(true).open(path),
    }
}

/// Where a result for `path` goes (see the module's rules).
pub fn output_target(path: &Path) -> io::Result<Target> {
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(io::Error::other("is a directory")),
        Ok(m) if m.is_file() && !follow_links(path).1 => {
            Ok(Target::Replace(fs::canonicalize(path)?))
        }
        Ok(_) => Ok(Target::Through(path.to_path_buf())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if fs::symlink_metadata(path).is_ok() {
                Ok(Target::Replace(follow_links(path).0)) // a dangling link: make its file
            } else {
                Ok(Target::Replace(path.to_path_buf()))
            }
        }
        Err(e) => Err(e),
    }
}

/// A new file named `.{stem}.{pid}.{n}.tmp` in `dir`, created exclusively.
fn temp_file(dir: &Path, stem: &str) -> io::Result<(PathBuf, File)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let p = dir.join(format!(".{stem}.{}.{n}.tmp", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&p) {
            Ok(f) => return Ok((p, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Fills a temporary file in `dir` with `f` and syncs it; the file is removed on error.
fn fill_temp(
    dir: &Path,
    stem: &str,
    f: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<PathBuf> {
    let (tmp, file) = temp_file(dir, stem)?;
    let result = (|| {
        let mut w = BufWriter::new(file);
        f(&mut w)?;
        w.flush()?;
        w.get_ref().sync_all() // a full disk shows here at the latest
    })();
    match result {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Writes a file whole or not at all by the module's rules: on an error the path is
/// left as it was and no temporary file stays.
pub fn write_whole(
    path: &Path,
    f: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "result".into());
    match output_target(path)? {
        Target::Replace(target) => {
            let dir = match target.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => PathBuf::from("."),
            };
            let stem = target
                .file_name()
                .map_or(name, |n| n.to_string_lossy().into_owned());
            let tmp = fill_temp(&dir, &stem, f)?;
            fs::rename(&tmp, &target).inspect_err(|_| {
                let _ = fs::remove_file(&tmp);
            })
        }
        Target::Through(target) => {
            let tmp = fill_temp(&std::env::temp_dir(), "vmsim-result", f)?;
            let result = (|| {
                let mut out = open_through(&target)?;
                io::copy(&mut File::open(&tmp)?, &mut out)?;
                out.flush()
            })();
            let _ = fs::remove_file(&tmp);
            result
        }
    }
}

/// The words of an I/O error without Rust's " (os error N)" tail, as Python's strerror.
pub fn reason(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fd_links_are_recognised() {
        assert!(is_fd_link(Path::new("/proc/self/fd/1")));
        assert!(is_fd_link(Path::new("/proc/42/fd/3")));
        assert!(is_fd_link(Path::new("/dev/fd/2")));
        assert!(!is_fd_link(Path::new("/proc/self/fdinfo/1")));
        assert!(!is_fd_link(Path::new("/tmp/fd/1")));
    }

    /// A fresh directory under the system's temporary directory.
    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("vmsim-output-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_link_to_a_file_stays_a_link() {
        let d = scratch("link");
        fs::create_dir(d.join("real")).unwrap();
        fs::write(d.join("real/t.txt"), "old").unwrap();
        std::os::unix::fs::symlink(d.join("real/t.txt"), d.join("link.txt")).unwrap();
        write_whole(&d.join("link.txt"), |w| w.write_all(b"new")).unwrap();
        assert!(fs::symlink_metadata(d.join("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(d.join("real/t.txt")).unwrap(), "new");
        assert_eq!(fs::read_dir(d.join("real")).unwrap().count(), 1); // no temporary left
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let d = scratch("fail");
        fs::write(d.join("r.txt"), "old").unwrap();
        let e = write_whole(&d.join("r.txt"), |w| {
            w.write_all(b"half")?;
            Err(io::Error::other("disk full"))
        });
        assert!(e.is_err());
        assert_eq!(fs::read_to_string(d.join("r.txt")).unwrap(), "old");
        assert_eq!(fs::read_dir(&d).unwrap().count(), 1);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn targets_follow_the_rules() {
        let d = scratch("targets");
        assert!(output_target(&d).is_err()); // a directory
        std::os::unix::fs::symlink("loop", d.join("loop")).unwrap();
        assert!(output_target(&d.join("loop")).is_err());
        std::os::unix::fs::symlink("nowhere.txt", d.join("dangling")).unwrap();
        assert_eq!(
            output_target(&d.join("dangling")).unwrap(),
            Target::Replace(d.join("nowhere.txt"))
        );
        assert_eq!(
            output_target(Path::new("/dev/stdout")).unwrap_or(Target::Through("x".into())),
            Target::Through("/dev/stdout".into())
        );
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn normal_folds_dots() {
        assert_eq!(normal(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    }
}
