//! The directories of a module's sources, watched with inotify: one
//! descriptor, read without waiting, its events read as the core reads a
//! watcher's ([`robotgate::load::watch::Event`]). nginx's loop watches it
//! as it watches a socket; the Envoy and HAProxy modules' reload thread
//! waits on it ([`crate::reloads`]). No `stat` of a file until one of its
//! directory's files changes.
//!
//! Watched: writes, creations, removals and renames in each directory, and
//! the directory itself going away. Not watched: reads and metadata (a
//! `touch`, a `chmod`), as the proxy's watcher leaves them out.

use std::collections::{BTreeSet, HashMap};
use std::ffi::{CString, OsStr};
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use robotgate::load::watch::Event;

/// What a watch on a directory reports.
const MASK: u32 = libc::IN_CLOSE_WRITE
    | libc::IN_MODIFY
    | libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR;

/// An inotify descriptor and its watches.
pub struct Inotify {
    file: std::fs::File,
    /// Each watch's directory.
    dirs: HashMap<i32, PathBuf>,
    /// The directories watched, and their watch.
    watched: std::collections::BTreeMap<PathBuf, i32>,
    /// A watch went away on its own (its directory gone) since [`Inotify::set`].
    lost: bool,
}

impl Inotify {
    /// A new descriptor, read without waiting, closed on exec.
    pub fn new() -> std::io::Result<Inotify> {
        // SAFETY: a new descriptor, owned by the file from here.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the descriptor just made.
        let file = unsafe { std::fs::File::from_raw_fd(fd) };
        Ok(Inotify { file, dirs: HashMap::new(), watched: std::collections::BTreeMap::new(), lost: false })
    }

    /// The descriptor, for the edge's loop or a `poll`.
    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// Whether a watch went away on its own since the last [`Inotify::set`]
    /// (its directory removed or moved): the next `set` places it again.
    pub fn lost_a_watch(&self) -> bool {
        self.lost
    }

    /// The directories watched now.
    pub fn watched(&self) -> BTreeSet<PathBuf> {
        self.watched.keys().cloned().collect()
    }

    /// Watch exactly `want`: new directories added, gone ones dropped.
    /// Returns the directories that could not be watched, and why (one
    /// `inotify_add_watch` each: a directory that does not exist, the
    /// user's limit of watches reached).
    pub fn set(&mut self, want: &BTreeSet<PathBuf>) -> Vec<(PathBuf, std::io::Error)> {
        self.lost = false;
        let gone: Vec<PathBuf> = self.watched.keys().filter(|d| !want.contains(*d)).cloned().collect();
        for dir in gone {
            if let Some(wd) = self.watched.remove(&dir) {
                // Forgotten first: the IN_IGNORED this raises is not a loss.
                self.dirs.remove(&wd);
                // SAFETY: a watch of this descriptor.
                unsafe { libc::inotify_rm_watch(self.fd(), wd) };
            }
        }
        let mut failed = Vec::new();
        for dir in want {
            if self.watched.contains_key(dir) {
                continue;
            }
            let Ok(name) = CString::new(dir.as_os_str().as_bytes()) else {
                failed.push((dir.clone(), std::io::Error::from(std::io::ErrorKind::InvalidInput)));
                continue;
            };
            // SAFETY: a NUL-terminated path, on this descriptor.
            let wd = unsafe { libc::inotify_add_watch(self.fd(), name.as_ptr(), MASK) };
            if wd < 0 {
                failed.push((dir.clone(), std::io::Error::last_os_error()));
                continue;
            }
            // The same directory under another name (a link) shares the watch.
            if let Some(other) = self.dirs.insert(wd, dir.clone()) {
                self.watched.remove(&other);
            }
            self.watched.insert(dir.clone(), wd);
        }
        failed
    }

    /// Read every event queued now, handing each to `each` as the core
    /// reads it. Never waits (the descriptor does not block).
    pub fn drain(&mut self, each: &mut dyn FnMut(Event<'_>)) {
        // Room for many events: each is 16 bytes and a name.
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match self.file.read(&mut buf) {
                Ok(n) if n > 0 => n,
                // Nothing more now (EAGAIN), or the descriptor failed: nothing to read.
                _ => return,
            };
            self.events(&buf[..n], each);
        }
    }

    /// The events of one read.
    fn events(&mut self, mut bytes: &[u8], each: &mut dyn FnMut(Event<'_>)) {
        const HEAD: usize = std::mem::size_of::<libc::inotify_event>();
        while bytes.len() >= HEAD {
            // SAFETY: the kernel writes whole events; the head is read
            // unaligned from the buffer's bytes.
            let head = unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<libc::inotify_event>()) };
            let len = HEAD + head.len as usize;
            let Some(name) = bytes.get(HEAD..len) else { return };
            bytes = &bytes[len..];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
            let mask = head.mask;
            if mask & libc::IN_Q_OVERFLOW != 0 {
                each(Event::Lost);
                continue;
            }
            // A watch dropped here ([`Inotify::set`]) may still report.
            let Some(dir) = self.dirs.get(&head.wd) else { continue };
            if mask & (libc::IN_IGNORED | libc::IN_DELETE_SELF | libc::IN_MOVE_SELF) != 0 {
                if mask & libc::IN_IGNORED != 0 {
                    // The directory is gone: watched again by the next reload, if it is back.
                    let dir = self.dirs.remove(&head.wd).unwrap_or_default();
                    self.watched.remove(&dir);
                    self.lost = true;
                }
                each(Event::Lost);
                continue;
            }
            let path = [Path::new(dir).join(OsStr::from_bytes(name))];
            if mask & libc::IN_MOVED_TO != 0 {
                each(Event::Renamed(&path));
            } else {
                each(Event::Written(&path));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `inotify` reports of `dir` now, as the core reads it.
    fn events(inotify: &mut Inotify) -> Vec<String> {
        let mut out = Vec::new();
        inotify.drain(&mut |e| {
            out.push(match e {
                Event::Lost => "lost".to_owned(),
                Event::Touched => "touched".to_owned(),
                Event::Renamed(p) => format!("renamed {}", p.last().unwrap().file_name().unwrap().to_string_lossy()),
                Event::Written(p) => format!("written {}", p[0].file_name().unwrap().to_string_lossy()),
            })
        });
        out.dedup();
        out
    }

    #[test]
    fn writes_renames_and_a_directory_gone_are_read_as_the_core_reads_them() {
        let top = tempfile::tempdir().unwrap();
        let dir = top.path().join("site");
        std::fs::create_dir(&dir).unwrap();
        let mut inotify = Inotify::new().unwrap();
        let missing = top.path().join("missing");
        let failed = inotify.set(&BTreeSet::from([dir.clone(), missing.clone()]));
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].0, missing);
        assert_eq!(inotify.watched(), BTreeSet::from([dir.clone()]));
        assert!(events(&mut inotify).is_empty(), "nothing yet, and no wait");

        std::fs::write(dir.join("robots.txt"), "User-agent: *\n").unwrap();
        assert_eq!(events(&mut inotify), ["written robots.txt"]);
        std::fs::write(dir.join("robots.tmp"), "User-agent: *\nDisallow: /\n").unwrap();
        std::fs::rename(dir.join("robots.tmp"), dir.join("robots.txt")).unwrap();
        assert_eq!(events(&mut inotify), ["written robots.tmp", "renamed robots.txt"]);
        // Reads and metadata are not watched.
        std::fs::read(dir.join("robots.txt")).unwrap();
        let mut perms = std::fs::metadata(dir.join("robots.txt")).unwrap().permissions();
        perms.set_readonly(true);
        std::fs::set_permissions(dir.join("robots.txt"), perms).unwrap();
        let seen = events(&mut inotify);
        assert!(seen.is_empty(), "{seen:?}");

        // The directory gone: events may be lost, and it is no longer watched.
        std::fs::remove_file(dir.join("robots.txt")).unwrap();
        std::fs::remove_dir(&dir).unwrap();
        let seen = events(&mut inotify);
        assert_eq!(seen.first().map(String::as_str), Some("written robots.txt"), "{seen:?}");
        assert!(seen.contains(&"lost".to_owned()), "{seen:?}");
        assert!(inotify.watched().is_empty());
    }

    #[test]
    fn a_directory_no_longer_wanted_is_dropped_quietly() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut inotify = Inotify::new().unwrap();
        assert!(inotify.set(&BTreeSet::from([a.path().to_path_buf(), b.path().to_path_buf()])).is_empty());
        assert!(inotify.set(&BTreeSet::from([b.path().to_path_buf()])).is_empty());
        std::fs::write(a.path().join("x"), "x").unwrap();
        // The watch's removal is not a loss, and `a` is not watched.
        assert!(events(&mut inotify).is_empty());
        std::fs::write(b.path().join("y"), "y").unwrap();
        assert_eq!(events(&mut inotify), ["written y"]);
    }
}
