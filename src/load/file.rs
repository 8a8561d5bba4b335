//! The one way robotgate reads an operator's file: regular files only,
//! bounded in size and in time, and only once the file has stopped changing.
//!
//! Every file the loader and the certificate set read comes through
//! [`read`]: the config, robots.txt, humans.txt, alternate content, the bot
//! database, the IP range feeds, certificates and keys, the traps state.
//! What each guard is for (all measured, issue #32):
//!
//! - **Regular files only.** A FIFO at a watched path hung the reloader for
//!   good, and a link to `/dev/zero` filled memory. The file is opened with
//!   `O_NONBLOCK` (opening a FIFO then never waits for a writer), links are
//!   followed, and the *opened handle* is checked, so a swap between a check
//!   and the open cannot slip past: a FIFO, a device, a socket or a directory
//!   is refused.
//! - **Inside a customer's directory** ([`Confine`], issue 66). A file of a
//!   customer's document root is theirs to make a link of: such a file is
//!   read only if the links to it stay inside their directory, or only
//!   through links whose owner owns their target, as the operator chooses
//!   ([`crate::config::CustomerLinks`]). The check is of the opened handle
//!   again: the path is resolved after the open and the file at the
//!   resolved path must be the one opened, so a link swapped in between
//!   is refused too.
//! - **At most `limit + 1` bytes.** One byte more than the limit is enough to
//!   know the file is too large; a longer file is never read into memory.
//! - **A time bound.** Each open-and-read runs on a helper thread (one kept
//!   per calling thread) and is abandoned after [`Timing::timeout`] (a hung
//!   network filesystem); the next read gets a new helper. At most
//!   [`MAX_STUCK`] abandoned reads are outstanding; past that, reads are
//!   refused at once instead of piling up threads. A host that must stay
//!   single-threaded asks for [`Reader::Alone`] instead, load by load.
//! - **Settled.** A file is read once neither its size nor its times have
//!   changed for [`Timing::settle`], and read again if it changed while being
//!   read, for at most [`Timing::settle_limit`]: a `cp` over the file or an
//!   editor writing in place is never loaded half-written. Saving by rename
//!   (write a temporary file, rename it over) is atomic and needs none of it.

use std::fs::{File, Metadata, OpenOptions};
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::robots;

use super::confine::confined;
pub use super::confine::Confine;

/// The most robots.txt may hold: what crawlers must read (RFC 9309 2.5,
/// 500 KiB). A longer file is refused rather than cut, since the rules past
/// the cut would silently not be enforced.
pub const ROBOTS_MAX: u64 = robots::DEFAULT_MAX_BYTES as u64;
/// The config file (a thousand sites fit in well under 1 MiB).
pub const CONFIG_MAX: u64 = 4 << 20;
/// humans.txt: a short text by convention.
pub const HUMANS_MAX: u64 = 1 << 20;
/// An alternate-content file (a page served in place of the site's).
pub const ALTERNATE_MAX: u64 = 8 << 20;
/// The bot database (the built-in one is under 200 KiB of YAML).
pub const BOTS_MAX: u64 = 16 << 20;
/// One IP range feed (the largest published crawler feeds are a few hundred KiB).
pub const FEED_MAX: u64 = 16 << 20;
/// A certificate chain or a private key in PEM.
pub const PEM_MAX: u64 = 1 << 20;
/// The traps state file (`robotgate-traps.json`).
pub const TRAPS_MAX: u64 = 4 << 20;
/// The robots.txt versions file (`robotgate-robots-versions.json`).
pub const VERSIONS_MAX: u64 = 64 << 20;

/// Abandoned reads (stuck in the kernel) allowed at once; past that, reads
/// are refused without starting a thread.
pub const MAX_STUCK: usize = 8;

/// Why a file was refused, as a stable word: the `reason` label of
/// `robotgate_reload_refused_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// It could not be opened or read (missing, no permission, I/O error).
    Unreadable,
    /// Not a regular file after following links: a FIFO, a device, a socket, a directory.
    NotRegular,
    /// Larger than its limit.
    TooLarge,
    /// Reading it did not finish in time.
    Timeout,
    /// It kept changing for longer than the settle limit.
    Changing,
    /// robots.txt whose content is not a robots.txt (HTML, UTF-16, binary).
    NotRobotsTxt,
    /// A file in a customer's directory reached through a link the
    /// operator's `customer_links` does not follow.
    CustomerLink,
}

impl Reason {
    /// The label value: `unreadable`, `not-regular`, `too-large`, `timeout`,
    /// `changing`, `not-robots-txt` or `customer-link`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Unreadable => "unreadable",
            Reason::NotRegular => "not-regular",
            Reason::TooLarge => "too-large",
            Reason::Timeout => "timeout",
            Reason::Changing => "changing",
            Reason::NotRobotsTxt => "not-robots-txt",
            Reason::CustomerLink => "customer-link",
        }
    }
}

/// Why a file was not taken; the text says what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Opening or reading failed (the system's reason).
    #[error("{0}")]
    Unreadable(String),
    /// The path leads to something other than a regular file.
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    /// More than `limit` bytes (`size` when the file system says how many).
    #[error("it is {}, more than the {limit} bytes allowed", size.map_or_else(|| "larger".to_owned(), |s| format!("{s} bytes")))]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
        /// The size the file system gave, when it gave one over the limit.
        size: Option<u64>,
    },
    /// The read did not finish within the bound and was abandoned.
    #[error("reading it did not finish within {} ms and was abandoned", .0.as_millis())]
    Timeout(Duration),
    /// Not tried: this many earlier reads are still stuck.
    #[error("not read: {0} earlier reads are still stuck (a file system that does not answer?)")]
    Stuck(usize),
    /// The file kept changing (an in-place write still under way).
    #[error("it kept changing for {} ms (is it still being written? save by renaming a complete file over it)", .0.as_millis())]
    Changing(Duration),
    /// The content is not a robots.txt ([`super::check_robots_body`]).
    #[error("{0}")]
    NotRobotsTxt(String),
    /// A link out of a customer's directory ([`Confine`]): what it leads to
    /// and the rule.
    #[error("{0}")]
    CustomerLink(String),
}

impl Refusal {
    /// The stable word for it.
    pub fn reason(&self) -> Reason {
        match self {
            Refusal::Unreadable(_) => Reason::Unreadable,
            Refusal::NotRegular(_) => Reason::NotRegular,
            Refusal::TooLarge { .. } => Reason::TooLarge,
            Refusal::Timeout(_) | Refusal::Stuck(_) => Reason::Timeout,
            Refusal::Changing(_) => Reason::Changing,
            Refusal::NotRobotsTxt(_) => Reason::NotRobotsTxt,
            Refusal::CustomerLink(_) => Reason::CustomerLink,
        }
    }
}

/// A file as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contents {
    /// All of it (at most the limit).
    pub body: Vec<u8>,
    /// Its modification time (for `Last-Modified`).
    pub mtime: SystemTime,
}

/// How long to wait for a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timing {
    /// A file is read once it has not changed for this long.
    pub settle: Duration,
    /// Waiting for a file to settle ends after this long, with
    /// [`Refusal::Changing`].
    pub settle_limit: Duration,
    /// One open-and-read is abandoned after this long (with
    /// [`Reader::Helper`]).
    pub timeout: Duration,
    /// Which thread opens and reads the file.
    pub reader: Reader,
}

/// Which thread opens and reads a file: a choice of the host, made where it
/// starts a load ([`crate::load::reload_for`]), never a switch of the
/// process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Reader {
    /// A helper thread kept per calling thread, abandoned after
    /// [`Timing::timeout`]: a read stuck in the kernel (a hung network file
    /// system) never holds the caller longer than that.
    #[default]
    Helper,
    /// The caller's own thread, without a deadline (a read stuck in the
    /// kernel holds the caller, as the host's own reads of its files
    /// would): for a host whose loading thread is a helper of its own
    /// already (nginx's reload thread).
    Caller,
    /// As [`Reader::Caller`], and the load starts no thread at all (the
    /// classifier is compiled on the caller's thread too, after the
    /// sites). For a host that must stay single-threaded: once a process
    /// has started a second thread, glibc takes its multi-threaded paths
    /// for good (a cancellation check around every system call, locked
    /// allocations), in that process and in every child it forks
    /// afterwards (glibc 2.36: `__libc_single_threaded` stays false in the
    /// child). nginx's master reads the config and forks the workers, so
    /// one thread there would cost every request of every worker.
    Alone,
}

impl Default for Timing {
    /// 250 ms to settle, at most 1 s of waiting for it, 1 s per read. With
    /// the reloader's 50 ms debounce, a file written at once is in force
    /// about 250 ms after the save (one renamed into place is read without
    /// waiting: [`crate::load::reload_whole`]), and one still being written when the reload
    /// starts is either loaded whole or refused within about 1.3 s: inside
    /// the promise that an edit is in force within 2 s.
    fn default() -> Self {
        Timing {
            settle: Duration::from_millis(250),
            settle_limit: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            reader: Reader::Helper,
        }
    }
}

/// Read the regular file at `path` (links followed), at most `limit` bytes,
/// once it has settled, with the default [`Timing`].
///
/// # Errors
/// A [`Refusal`] saying why.
pub fn read(path: &Path, limit: u64) -> Result<Contents, Refusal> {
    read_with(path, limit, &Timing::default())
}

/// [`read`] with explicit timing.
///
/// Cost: one hand-over to the caller's reader thread per look at the file
/// (a look is an open and an fstat, plus the read once the file has
/// settled; none with [`Reader::Caller`] or [`Reader::Alone`]); a file older than the settle
/// time is read in one look.
///
/// # Errors
/// As [`read`].
pub fn read_with(path: &Path, limit: u64, timing: &Timing) -> Result<Contents, Refusal> {
    read_in(path, limit, timing, None)
}

/// [`read_with`] of a file in a customer's directory, when `confine` says
/// which: the file opened must be reached as [`Confine::links`] allows.
///
/// Cost: with `confine`, a `realpath` of the file and of its directory, or
/// an `lstat` a component below the directory, per look.
///
/// # Errors
/// As [`read`], and [`Refusal::CustomerLink`].
pub fn read_in(path: &Path, limit: u64, timing: &Timing, confine: Option<&Confine>) -> Result<Contents, Refusal> {
    let deadline = Instant::now() + timing.settle_limit;
    // A file whose times say nothing useful (modified "in the future") counts
    // as settled once it is unchanged over a whole settle time.
    let mut unchanged_since: Option<Stamp> = None;
    loop {
        let (owned, settle, known) = (path.to_path_buf(), timing.settle, unchanged_since);
        let confine = confine.cloned();
        let wait = match bounded(timing, move || look(&owned, limit, settle, known, confine.as_ref()))? {
            Look::Read(contents) => return Ok(contents),
            Look::Young { age: Some(age), .. } => {
                unchanged_since = None;
                timing.settle.saturating_sub(age)
            }
            Look::Young { stamp, age: None } => {
                unchanged_since = Some(stamp);
                timing.settle
            }
        };
        let now = Instant::now();
        if now >= deadline {
            return Err(Refusal::Changing(timing.settle_limit));
        }
        // At least a tick, so a file changing faster than the clock still waits.
        std::thread::sleep(wait.max(Duration::from_millis(1)).min(deadline - now));
    }
}

/// What identifies one version of a file: its size, its times and its inode.
/// A reload compares a file's stamp with the one it had when last read
/// ([`stamp`]) and reads only the files whose stamp moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    /// Inode change time (s, ns): moves on every write and cannot be set
    /// back, unlike the modification time (`touch -d`, `cp -p`).
    changed: (i64, i64),
    /// Device and inode: a rename over the file is a new version.
    pub(super) node: (u64, u64),
}

impl Stamp {
    pub(super) fn of(meta: &Metadata) -> Stamp {
        #[cfg(unix)]
        let (changed, node) = {
            use std::os::unix::fs::MetadataExt;
            ((meta.ctime(), meta.ctime_nsec()), (meta.dev(), meta.ino()))
        };
        #[cfg(not(unix))]
        let (changed, node) = ((0, 0), (0, 0));
        Stamp { len: meta.len(), modified: meta.modified().ok(), changed, node }
    }

    /// When the file last changed: the later of its modification and
    /// inode-change times.
    fn last_change(&self) -> Option<SystemTime> {
        let (s, ns) = self.changed;
        let changed = u64::try_from(s)
            .ok()
            .filter(|&s| s > 0)
            .map(|s| SystemTime::UNIX_EPOCH + Duration::new(s, u32::try_from(ns).unwrap_or(0)));
        match (self.modified, changed) {
            (Some(m), Some(c)) => Some(m.max(c)),
            (m, c) => m.or(c),
        }
    }
}

/// The stamp of the file at `path` (links followed), without opening it;
/// `None` when it cannot be had (gone, no permission). One `stat`: take it
/// before reading, so a change during the read moves it for the next look.
pub fn stamp(path: &Path) -> Option<Stamp> {
    std::fs::metadata(path).ok().map(|m| Stamp::of(&m))
}

/// What one look at a file found.
enum Look {
    /// Read whole, unchanged during the read.
    Read(Contents),
    /// Changed too recently (`age`: how long ago; `None`: its time is in
    /// the future), or changed while being read.
    Young { stamp: Stamp, age: Option<Duration> },
}

/// Open `path`, check what it is, and read it if it has settled: its last
/// change is `settle` old, or it is still `known` (unchanged over a whole
/// settle time). Runs on a helper thread ([`bounded`]).
fn look(
    path: &Path,
    limit: u64,
    settle: Duration,
    known: Option<Stamp>,
    confine: Option<&Confine>,
) -> Result<Look, Refusal> {
    let mut file = open(path).map_err(|e| Refusal::Unreadable(e.to_string()))?;
    let meta = file.metadata().map_err(|e| Refusal::Unreadable(e.to_string()))?;
    if let Some(confine) = confine {
        confined(path, &meta, confine).map_err(|r| match r {
            super::confine::Refusal::Unreadable(why) => Refusal::Unreadable(why),
            super::confine::Refusal::CustomerLink(why) => Refusal::CustomerLink(why),
        })?;
    }
    if !meta.is_file() {
        return Err(Refusal::NotRegular(kind(&meta)));
    }
    if meta.len() > limit {
        return Err(Refusal::TooLarge { limit, size: Some(meta.len()) });
    }
    let stamp = Stamp::of(&meta);
    let age = stamp.last_change().and_then(|t| SystemTime::now().duration_since(t).ok());
    let settled = age.is_some_and(|a| a >= settle) || known == Some(stamp);
    if !settled {
        return Ok(Look::Young { stamp, age });
    }
    // One byte past the limit is enough to know the file is too large.
    let cap = usize::try_from(meta.len().min(limit) + 1).unwrap_or(usize::MAX);
    let mut body = Vec::with_capacity(cap);
    (&mut file).take(limit.saturating_add(1)).read_to_end(&mut body).map_err(|e| Refusal::Unreadable(e.to_string()))?;
    if body.len() as u64 > limit {
        return Err(Refusal::TooLarge { limit, size: None });
    }
    let after = Stamp::of(&file.metadata().map_err(|e| Refusal::Unreadable(e.to_string()))?);
    if after != stamp || body.len() as u64 != after.len {
        // Written to while being read: look again once it settles.
        return Ok(Look::Young { stamp: after, age: Some(Duration::ZERO) });
    }
    Ok(Look::Read(Contents { body, mtime: stamp.modified.unwrap_or(SystemTime::UNIX_EPOCH) }))
}

/// Open for reading without waiting: `O_NONBLOCK` makes opening a FIFO
/// return at once (reads of a regular file ignore it), `O_NOCTTY` keeps a
/// terminal from becoming the process's controlling terminal.
fn open(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    options.open(path)
}

/// What a file that is not a regular file is, for the message.
fn kind(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "something other than a file"
}

/// Reads abandoned and still running.
static STUCK: AtomicUsize = AtomicUsize::new(0);

/// A helper thread's state: running, done, or abandoned by its caller.
const RUNNING: u8 = 0;
const DONE: u8 = 1;
const ABANDONED: u8 = 2;

/// A job for a reader thread: it runs the read and sends its own answer.
type Job = Box<dyn FnOnce() + Send>;

thread_local! {
    /// This thread's reader: a helper thread kept between reads, so that a
    /// start reading 10,000 robots.txt files does not start 10,000 threads
    /// (each a clone, a stack, and allocator pages left behind when it
    /// ends: 4,500 abandoned mimalloc pages, about 290 MB, measured at
    /// 10,000 sites, issue 55). One per calling thread, so that one caller's
    /// deadline never includes another's read. Dropped with its caller's
    /// thread, which ends the reader.
    static READER: std::cell::RefCell<Option<std::sync::mpsc::Sender<Job>>> =
        const { std::cell::RefCell::new(None) };
}

/// Hand `job` to this thread's reader, starting one if there is none (or
/// the last one ended).
fn hand_over(job: Job) -> Result<(), Refusal> {
    READER.with(|reader| {
        let mut reader = reader.borrow_mut();
        let job = match reader.as_ref() {
            Some(jobs) => match jobs.send(job) {
                Ok(()) => return Ok(()),
                // Its thread ended (a read panicked): start another.
                Err(std::sync::mpsc::SendError(job)) => job,
            },
            None => job,
        };
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("robotgate-read".into())
            .spawn(move || {
                while let Ok(job) = queue.recv() {
                    job();
                }
            })
            .map_err(|e| Refusal::Unreadable(format!("cannot start a reader thread: {e}")))?;
        jobs.send(job).map_err(|_| Refusal::Unreadable("the reader thread ended at once".into()))?;
        *reader = Some(jobs);
        Ok(())
    })
}

/// Forget this thread's reader: it is stuck in a read, so the next read
/// gets a new one. The stuck one ends once its read returns (it finds no
/// more jobs).
fn abandon_reader() {
    READER.with(|reader| reader.borrow_mut().take());
}

/// Run `f` as `timing.reader` says: on the caller's thread, or on this
/// thread's reader thread ([`READER`]), waiting at most `timing.timeout`
/// for it. A reader that does not answer in time is left behind (a read
/// stuck in the kernel cannot be cancelled) and counted in [`STUCK`] until
/// its read ends; while [`MAX_STUCK`] are, no read is started.
fn bounded<T: Send + 'static>(
    timing: &Timing,
    f: impl FnOnce() -> Result<T, Refusal> + Send + 'static,
) -> Result<T, Refusal> {
    if timing.reader != Reader::Helper {
        return f();
    }
    let timeout = timing.timeout;
    let stuck = STUCK.load(Ordering::SeqCst);
    if stuck >= MAX_STUCK {
        return Err(Refusal::Stuck(stuck));
    }
    let state = Arc::new(AtomicU8::new(RUNNING));
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let theirs = state.clone();
    hand_over(Box::new(move || {
        let _ = tx.send(f());
        if theirs.swap(DONE, Ordering::SeqCst) == ABANDONED {
            STUCK.fetch_sub(1, Ordering::SeqCst);
        }
    }))?;
    match rx.recv_timeout(timeout) {
        Ok(result) => result,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            // Counted before it is marked, so the reader's decrement never
            // comes first.
            STUCK.fetch_add(1, Ordering::SeqCst);
            if state.compare_exchange(RUNNING, ABANDONED, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                abandon_reader();
                return Err(Refusal::Timeout(timeout));
            }
            // It finished just now, after sending its answer.
            STUCK.fetch_sub(1, Ordering::SeqCst);
            rx.try_recv().unwrap_or_else(|_| Err(Refusal::Timeout(timeout)))
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            abandon_reader();
            Err(Refusal::Unreadable("the reader thread ended without an answer".into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn quick() -> Timing {
        Timing {
            settle: Duration::from_millis(60),
            settle_limit: Duration::from_millis(400),
            timeout: Duration::from_secs(2),
            reader: Reader::Helper,
        }
    }

    /// Reads on a helper thread, abandoned after `timeout`.
    fn helper(timeout: Duration) -> Timing {
        Timing { timeout, ..Timing::default() }
    }

    /// A file whose last change is `settle` in the past, so it is read at once.
    fn old_file(dir: &Path, name: &str, body: &[u8]) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, body).unwrap();
        std::thread::sleep(Duration::from_millis(80));
        path
    }

    #[test]
    fn a_regular_file_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = old_file(dir.path(), "robots.txt", b"User-agent: *\nDisallow: /a\n");
        let got = read_with(&path, ROBOTS_MAX, &quick()).unwrap();
        assert_eq!(got.body, b"User-agent: *\nDisallow: /a\n");
        assert_eq!(got.mtime, std::fs::metadata(&path).unwrap().modified().unwrap());
    }

    #[test]
    fn the_limit_is_inclusive_and_one_byte_more_is_too_large() {
        let dir = tempfile::tempdir().unwrap();
        let exact = old_file(dir.path(), "exact", &[b'a'; 100]);
        assert_eq!(read_with(&exact, 100, &quick()).unwrap().body.len(), 100);
        let over = old_file(dir.path(), "over", &[b'a'; 101]);
        let refused = read_with(&over, 100, &quick()).unwrap_err();
        assert_eq!(refused, Refusal::TooLarge { limit: 100, size: Some(101) });
        assert_eq!(refused.reason().as_str(), "too-large");
        assert!(refused.to_string().contains("101 bytes, more than the 100"), "{refused}");
    }

    #[test]
    fn a_link_to_dev_zero_is_refused_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("robots.txt");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let refused = read_with(&link, ROBOTS_MAX, &quick()).unwrap_err();
        assert_eq!(refused, Refusal::NotRegular("a character device"));
        assert_eq!(refused.reason(), Reason::NotRegular);
    }

    #[test]
    fn a_fifo_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("robots.txt");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let start = Instant::now();
        let refused = read_with(&fifo, ROBOTS_MAX, &quick()).unwrap_err();
        assert_eq!(refused, Refusal::NotRegular("a FIFO (named pipe)"));
        assert!(start.elapsed() < Duration::from_secs(1), "took {:?}", start.elapsed());
    }

    #[test]
    fn a_directory_is_refused_and_a_missing_file_is_unreadable() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_with(dir.path(), 10, &quick()).unwrap_err(), Refusal::NotRegular("a directory"));
        let missing = read_with(&dir.path().join("nope"), 10, &quick()).unwrap_err();
        assert_eq!(missing.reason(), Reason::Unreadable);
        assert!(missing.to_string().contains("No such file"), "{missing}");
    }

    #[test]
    fn a_fresh_file_is_read_only_once_it_has_settled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"new").unwrap();
        let start = Instant::now();
        assert_eq!(read_with(&path, 10, &quick()).unwrap().body, b"new");
        assert!(start.elapsed() >= Duration::from_millis(40), "read after {:?}", start.elapsed());
    }

    #[test]
    fn a_file_that_keeps_changing_is_refused_after_the_settle_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"").unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let (path, stop) = (path.clone(), stop.clone());
            std::thread::spawn(move || {
                use std::io::Write;
                let mut f = OpenOptions::new().append(true).open(&path).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    f.write_all(b"x").unwrap();
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        };
        let refused = read_with(&path, 1 << 20, &quick()).unwrap_err();
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        assert_eq!(refused, Refusal::Changing(Duration::from_millis(400)));
        assert_eq!(refused.reason().as_str(), "changing");
    }

    #[test]
    fn a_file_modified_in_the_future_is_read_once_unchanged_over_a_settle_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"later").unwrap();
        let future = SystemTime::now() + Duration::from_secs(86_400);
        File::options().write(true).open(&path).unwrap().set_modified(future).unwrap();
        let got = read_with(&path, 10, &quick()).unwrap();
        assert_eq!(got.body, b"later");
        assert_eq!(got.mtime, future);
    }

    #[test]
    fn a_read_that_does_not_answer_is_abandoned() {
        let start = Instant::now();
        let stuck = bounded(&helper(Duration::from_millis(50)), || {
            std::thread::sleep(Duration::from_millis(500));
            Ok(())
        });
        assert_eq!(stuck, Err(Refusal::Timeout(Duration::from_millis(50))));
        assert!(start.elapsed() < Duration::from_millis(400));
        assert_eq!(bounded(&helper(Duration::from_secs(1)), || Ok(7)), Ok(7));
    }

    #[test]
    fn reads_share_one_reader_thread_until_one_is_abandoned() {
        let on_reader = || bounded(&helper(Duration::from_secs(5)), || Ok(std::thread::current().id()));
        let first = on_reader().unwrap();
        assert_ne!(first, std::thread::current().id(), "a read runs on a helper thread");
        assert_eq!(on_reader().unwrap(), first, "the next read reuses it (issue 55: no thread per file)");
        let stuck = bounded(&helper(Duration::from_millis(20)), || {
            std::thread::sleep(Duration::from_millis(300));
            Ok(std::thread::current().id())
        });
        assert_eq!(stuck, Err(Refusal::Timeout(Duration::from_millis(20))));
        let after = on_reader().unwrap();
        assert_ne!(after, first, "a stuck reader is left behind; the next read gets another");
        assert_eq!(on_reader().unwrap(), after);
    }

    #[test]
    fn a_reader_that_panicked_is_replaced() {
        let panicked: Result<(), Refusal> = bounded(&helper(Duration::from_secs(5)), || panic!("a read that panics"));
        assert_eq!(panicked.unwrap_err().reason(), Reason::Unreadable);
        assert_eq!(bounded(&helper(Duration::from_secs(5)), || Ok(7)), Ok(7));
    }

    #[test]
    fn the_caller_chooses_its_own_thread_read_by_read() {
        let caller = Timing { reader: Reader::Caller, timeout: Duration::from_millis(20), ..Timing::default() };
        let here = std::thread::current().id();
        // On the caller's thread, without a deadline: a slow read is waited for.
        let slow = bounded(&caller, || {
            std::thread::sleep(Duration::from_millis(100));
            Ok(std::thread::current().id())
        });
        assert_eq!(slow, Ok(here));
        // The next read that asks for a helper gets one: the choice is the
        // read's, not the process's.
        let helped = bounded(&helper(Duration::from_secs(5)), || Ok(std::thread::current().id())).unwrap();
        assert_ne!(helped, here);
        assert_eq!(bounded(&caller, || Ok(std::thread::current().id())), Ok(here));
        let alone = Timing { reader: Reader::Alone, ..Timing::default() };
        assert_eq!(bounded(&alone, || Ok(std::thread::current().id())), Ok(here));
        // A file read on the caller's thread is the same file.
        let dir = tempfile::tempdir().unwrap();
        let path = old_file(dir.path(), "robots.txt", b"User-agent: *\n");
        let on_caller = read_with(&path, ROBOTS_MAX, &Timing { reader: Reader::Caller, ..quick() }).unwrap();
        assert_eq!(on_caller, read_with(&path, ROBOTS_MAX, &quick()).unwrap());
    }
}
