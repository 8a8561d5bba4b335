//! The directories of a worker's sources, watched with inotify: one
//! descriptor that nginx's loop watches as it watches a socket
//! ([`crate::reload`]), read without waiting, its events read as the core
//! reads a watcher's ([`robotgate::load::watch::Event`]). No thread, and
//! no `stat` of a file until one of its directory's files changes.
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
        Ok(Inotify { file, dirs: HashMap::new(), watched: std::collections::BTreeMap::new() })
    }

    /// The descriptor, for nginx's loop.
    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
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
