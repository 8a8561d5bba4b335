//! What a host watches for changes, and how it reads what its watcher saw:
//! the part of a hot reload that is the same in every host (the proxy's
//! reloader over `notify`, the nginx module over inotify on nginx's loop).
//!
//! * [`watch_dirs`]: the directories to watch, the parents of every source
//!   (editors save by renaming a new file over the old one, which a watch
//!   on the file itself would miss);
//! * [`Sources`]: which paths an event must name to count;
//! * [`Burst`]: the events of one burst, joined until [`DEBOUNCE`] passes
//!   without one: whether it changed a source, and which sources it put in
//!   place whole ([`crate::load::reload_whole`] reads those at once);
//! * [`Sweep`]: a bounded look at the sources no watch covers, a few files
//!   at a time, for a host whose watches could not all be placed;
//! * [`same_sources`]: whether a reload left the watch as it was;
//! * [`spawn_below`]: the thread a reload runs on, below the requests.
//!
//! No watcher here (the core names no `notify`): each host turns its
//! watcher's events into an [`Event`].

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Quiet time after the last event of a burst before reloading. Editors
/// save by renaming a whole file (one event) or write in place (a burst,
/// which [`crate::load::file`]'s settling covers); 50 ms joins a burst into
/// one reload without holding up an edit saved by rename.
pub const DEBOUNCE: Duration = Duration::from_millis(50);

/// The directories to watch: the parents of every source, absolute.
pub fn watch_dirs(sources: &[PathBuf]) -> BTreeSet<PathBuf> {
    sources
        .iter()
        .map(|p| {
            let abs = std::path::absolute(p).unwrap_or_else(|_| p.clone());
            abs.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."))
        })
        .collect()
}

/// The sources as a watcher names them (absolute paths), and the
/// directories whose every file of an extension counts (`dir/*.json`: the
/// feeds directory; `dir/*.yaml`: `sites_dir`): built once per snapshot, so
/// an event costs a lookup, not a pass over every source.
///
/// A source that is a symbolic link is also swept ([`Sources::swept`]):
/// what it leads to may change with no event in the source's directory (a
/// Kubernetes ConfigMap's files lead through `..data`, a link the kubelet
/// swaps for each update; a link to a file elsewhere, edited there).
#[derive(Debug, Default)]
pub struct Sources {
    files: HashSet<PathBuf>,
    any: HashSet<(PathBuf, String)>,
    /// The files that are symbolic links (when the sources were taken).
    links: Vec<PathBuf>,
}

impl Sources {
    /// The sources of a snapshot ([`crate::load::Snapshot::sources`]).
    pub fn of(sources: &[PathBuf]) -> Sources {
        let (mut files, mut any) = (HashSet::new(), HashSet::new());
        for s in sources {
            let abs = std::path::absolute(s).unwrap_or_else(|_| s.clone());
            match pattern(&abs) {
                Some(ext) => {
                    any.insert((abs.parent().map(Path::to_path_buf).unwrap_or_default(), ext.to_owned()));
                }
                None => {
                    files.insert(abs);
                }
            }
        }
        // An `lstat` each, once per new set of sources (off the requests).
        let mut links: Vec<PathBuf> = (files.iter())
            .filter(|f| std::fs::symlink_metadata(f).is_ok_and(|m| m.file_type().is_symlink()))
            .cloned()
            .collect();
        links.sort_unstable();
        Sources { files, any, links }
    }

    /// Whether an event naming `path` (absolute) may concern a source.
    pub fn contains(&self, path: &Path) -> bool {
        if self.files.contains(path) {
            return true;
        }
        let (Some(dir), Some(ext)) = (path.parent(), path.extension()) else { return false };
        !self.any.is_empty() && self.any.contains(&(dir.to_path_buf(), ext.to_string_lossy().into_owned()))
    }

    /// The sources whose directory is not among `watched`: what no watch
    /// covers (a directory's pattern, `dir/*.ext`, is left out: it names no
    /// file).
    pub fn outside(&self, watched: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> =
            self.files.iter().filter(|f| f.parent().is_none_or(|d| !watched.contains(d))).cloned().collect();
        out.sort_unstable();
        out
    }

    /// What a [`Sweep`] looks at: the sources no watch covers
    /// ([`Sources::outside`]) and every symbolic link among them.
    pub fn swept(&self, watched: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
        let mut out = self.outside(watched);
        out.extend(self.links.iter().cloned());
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// One event of a watcher, as a host reads it.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// Events may have been lost (the watcher's error, its queue overflowed,
    /// a watched directory went away): count it as a change of anything.
    Lost,
    /// Read, opened or its metadata changed: never a change of content
    /// (robotgate's own reload opens every source, and the first read after
    /// a write moves the access time: counted, they would reload for ever).
    Touched,
    /// Renamed: the last path is where it went, put there whole.
    Renamed(&'a [PathBuf]),
    /// Written, created, removed (or anything else) at these paths.
    Written(&'a [PathBuf]),
}

/// The events of one burst ([`DEBOUNCE`]).
#[derive(Debug, Default)]
pub struct Burst {
    renamed: HashSet<PathBuf>,
    written: HashSet<PathBuf>,
    /// Every source an event named (written, created, removed, renamed from
    /// or to).
    named: HashSet<PathBuf>,
    /// Events may have been lost: `named` is not the whole change.
    lost: bool,
    changed: bool,
}

impl Burst {
    /// Note `event`; whether it may change a source (and so starts or
    /// extends the burst).
    pub fn note(&mut self, event: Event<'_>, sources: &Sources) -> bool {
        let changes = match event {
            Event::Lost => {
                self.lost = true;
                true
            }
            Event::Touched => false,
            Event::Renamed(paths) => {
                if let Some(to) = paths.last().filter(|p| sources.contains(p)) {
                    self.renamed.insert(to.clone());
                }
                self.name(paths, sources)
            }
            Event::Written(paths) => {
                self.written.extend(paths.iter().filter(|p| sources.contains(p)).cloned());
                self.name(paths, sources)
            }
        };
        self.changed |= changes;
        changes
    }

    /// Note the sources among `paths`; whether there was one.
    fn name(&mut self, paths: &[PathBuf], sources: &Sources) -> bool {
        let mut any = false;
        for p in paths.iter().filter(|p| sources.contains(p)) {
            self.named.insert(p.clone());
            any = true;
        }
        any
    }

    /// Whether anything in the burst may have changed a source.
    pub fn changed(&self) -> bool {
        self.changed
    }

    /// End the burst: the sources it put in place whole (renamed over their
    /// path and not written afterwards), for [`crate::load::reload_whole`].
    pub fn take_whole(&mut self) -> HashSet<PathBuf> {
        let mut whole = std::mem::take(&mut self.renamed);
        let written = std::mem::take(&mut self.written);
        whole.retain(|p| !written.contains(p));
        self.changed = false;
        self.named.clear();
        self.lost = false;
        whole
    }

    /// End the burst: the sources put in place whole ([`Burst::take_whole`])
    /// and, unless events may have been lost, every source an event named
    /// (for [`crate::load::reload_named`]: the others are as they were).
    pub fn take(&mut self) -> (HashSet<PathBuf>, Option<HashSet<PathBuf>>) {
        let named = (!self.lost).then(|| std::mem::take(&mut self.named));
        (self.take_whole(), named)
    }
}

/// Whether the file at `path` may have been modified (or became
/// unreadable) at or after `since`: one `stat`.
pub fn modified_since(path: &Path, since: SystemTime) -> bool {
    std::fs::metadata(path).and_then(|m| m.modified()).map_or(true, |t| t >= since)
}

/// Files a [`Sweep`] looks at a tick, at most: 64 `stat`s a second find an
/// edit among 20,000 unwatched files within about five minutes, and cost
/// well under a millisecond a second.
pub const SWEEP_FILES: usize = 64;

/// How often a [`Sweep`] looks.
pub const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// A look at the sources no watch covers, at most a given number of files
/// each time, going round: what finds an edit there without a `stat` of
/// every file at once. Empty (and free) when every directory is watched.
#[derive(Debug, Default)]
pub struct Sweep {
    files: Vec<PathBuf>,
    since: Option<SystemTime>,
    next: usize,
}

impl Sweep {
    /// A sweep of `files`, read into the snapshot at `read_at`
    /// ([`crate::load::Snapshot::read_at`]).
    pub fn new(files: Vec<PathBuf>, read_at: SystemTime) -> Sweep {
        let mut sweep = Sweep { files, since: None, next: 0 };
        sweep.again(read_at);
        sweep
    }

    /// Go round again from the first file, finding what changes at or after
    /// `from` (when the snapshot was read, or when a reload the sweep set
    /// off began: should that reload be refused, the fix that follows is
    /// still found).
    pub fn again(&mut self, from: SystemTime) {
        // The kernel's coarse clock may stamp a file up to a tick before
        // `from` (as [`crate::load::Snapshot::stale`] allows).
        self.since = Some(from.checked_sub(Duration::from_millis(10)).unwrap_or(from));
        self.next = 0;
    }

    /// Nothing to look at.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// How many files it looks at.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Look at up to `max` files (a `stat` each), from where the last look
    /// stopped; whether one changed since the snapshot was read.
    pub fn look(&mut self, max: usize) -> bool {
        let Some(since) = self.since else { return false };
        for _ in 0..max.min(self.files.len()) {
            let path = &self.files[self.next % self.files.len()];
            self.next = (self.next + 1) % self.files.len();
            if modified_since(path, since) {
                return true;
            }
        }
        false
    }
}

/// Whether two snapshots' sources are the same paths, byte for byte (both
/// are in load order, [`crate::load::Snapshot::sources`]): then the watch
/// stays as it is. An edit leaves them so; at 10,000 sites, working out
/// the same 20,000 paths' directories and lookup table again was a third
/// of an edit's reload (issue 55).
pub fn same_sources(a: &[PathBuf], b: &[PathBuf]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.as_os_str() == b.as_os_str())
}

/// How far below the threads that answer requests a reload's thread runs
/// (the `nice` value it takes).
pub const RELOAD_NICE: i32 = 10;

/// Run `work` on a new thread named `name`, at [`RELOAD_NICE`] below the
/// threads that answer requests (threads it starts inherit that). A reload
/// at 10,000 sites is tens of milliseconds of work; at the same priority it
/// took a core from the requests of a two-core machine, whose p99 was 2.7
/// times the quiet one during edits (issue 55). Below them, a request
/// thread that wakes gets the core first; the reload still gets about a
/// tenth of a core that requests keep busy, and all of an idle one.
///
/// # Errors
/// No thread could be started.
pub fn spawn_below(name: &str, work: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    std::thread::Builder::new().name(name.to_owned()).spawn(move || {
        lower_priority();
        work();
    })?;
    Ok(())
}

/// Lower the calling thread's priority to [`RELOAD_NICE`]. On Linux a nice
/// value is the thread's own, not the process's; where it cannot be set,
/// the work runs at the priority it has.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: `gettid` and `setpriority` take no pointers; a thread may
    // always lower its own priority.
    unsafe {
        let tid = libc::gettid();
        let _ = libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, RELOAD_NICE);
    }
}

/// The extension of a source that stands for every file of it in its
/// directory (`dir/*.json`, `dir/*.yaml`), or `None` for a file.
pub fn pattern(source: &Path) -> Option<&str> {
    source.file_name()?.to_str()?.strip_prefix("*.")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(dir: &Path) -> Sources {
        Sources::of(&[dir.join("robots.txt"), dir.join("feeds").join(super::super::ANY_JSON)])
    }

    #[test]
    fn an_event_counts_only_when_it_names_a_source_and_may_change_it() {
        let dir = Path::new("/srv/site");
        let s = sources(dir);
        let mut b = Burst::default();
        assert!(!b.note(Event::Touched, &s), "a read is no change");
        assert!(!b.note(Event::Written(&[dir.join("access.log")]), &s), "another file");
        assert!(!b.changed());
        assert!(b.note(Event::Written(&[dir.join("feeds/google.json")]), &s), "any feed");
        assert!(b.note(Event::Lost, &s), "lost events count");
        assert!(b.changed());
        assert!(b.take_whole().is_empty());
        assert!(!b.changed(), "a new burst");
    }

    #[test]
    fn a_source_renamed_into_place_and_not_written_after_is_whole() {
        let dir = Path::new("/srv/site");
        let (s, robots) = (sources(dir), dir.join("robots.txt"));
        let mut b = Burst::default();
        assert!(b.note(Event::Renamed(&[dir.join("robots.tmp"), robots.clone()]), &s));
        assert_eq!(b.take_whole(), HashSet::from([robots.clone()]));
        // Written after the rename, in the same burst: read once settled.
        b.note(Event::Renamed(&[dir.join("robots.tmp"), robots.clone()]), &s);
        b.note(Event::Written(std::slice::from_ref(&robots)), &s);
        assert!(b.take_whole().is_empty());
    }

    #[test]
    fn a_burst_names_the_sources_it_changed_unless_events_were_lost() {
        let dir = Path::new("/srv/site");
        let (s, robots) = (sources(dir), dir.join("robots.txt"));
        let mut b = Burst::default();
        b.note(Event::Written(&[dir.join("access.log")]), &s);
        b.note(Event::Renamed(&[dir.join("robots.tmp"), robots.clone()]), &s);
        b.note(Event::Written(&[dir.join("feeds/google.json")]), &s);
        let (whole, named) = b.take();
        assert_eq!(whole, HashSet::from([robots.clone()]));
        assert_eq!(named, Some(HashSet::from([robots.clone(), dir.join("feeds/google.json")])));
        // A new burst starts empty; a loss means anything may have changed.
        b.note(Event::Written(std::slice::from_ref(&robots)), &s);
        b.note(Event::Lost, &s);
        assert_eq!(b.take(), (HashSet::new(), None));
        assert_eq!(b.take(), (HashSet::new(), Some(HashSet::new())));
    }

    #[test]
    fn a_reload_thread_runs_below_the_caller() {
        let (tx, rx) = std::sync::mpsc::channel();
        // SAFETY: `getpriority` takes no pointers.
        let own = || unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) };
        let caller = own();
        spawn_below("test-reload", move || tx.send(own()).unwrap()).unwrap();
        let below = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(below, RELOAD_NICE.max(caller), "the reload thread's nice value");
        assert_eq!(own(), caller, "the caller's own priority is unchanged");
    }

    #[test]
    fn the_same_sources_keep_the_watch() {
        let a = vec![PathBuf::from("/srv/a/robots.txt"), PathBuf::from("/srv/b/robots.txt")];
        assert!(same_sources(&a, &a.clone()));
        assert!(!same_sources(&a, &a[..1]));
        assert!(!same_sources(&a, &[a[1].clone(), a[0].clone()]));
    }

    #[test]
    fn the_sweep_looks_at_a_bounded_number_of_files_and_finds_an_edit() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<PathBuf> = (0..5).map(|i| dir.path().join(format!("r{i}.txt"))).collect();
        for f in &files {
            std::fs::write(f, "User-agent: *\n").unwrap();
        }
        std::thread::sleep(Duration::from_millis(30));
        let s = Sources::of(&files);
        let watched = BTreeSet::new();
        let mut sweep = Sweep::new(s.outside(&watched), SystemTime::now());
        assert_eq!(sweep.len(), 5);
        assert!(!sweep.look(100), "nothing changed");
        std::thread::sleep(Duration::from_millis(30));
        std::fs::write(&files[4], "User-agent: *\nDisallow: /\n").unwrap();
        // Two at a time: the edited file is the fifth, found on the third look.
        assert!(!sweep.look(2) && !sweep.look(2));
        assert!(sweep.look(2));
        // Gone round again from after that edit: nothing until another.
        std::thread::sleep(Duration::from_millis(30));
        sweep.again(SystemTime::now());
        assert!(!sweep.look(100), "the edit found is behind it");
        std::thread::sleep(Duration::from_millis(30));
        std::fs::write(&files[1], "User-agent: *\nDisallow: /b/\n").unwrap();
        assert!(!sweep.look(1) && sweep.look(1), "the next edit, the second file");
        // A watched directory's files are not swept.
        let watched = BTreeSet::from([dir.path().to_path_buf()]);
        assert!(Sweep::new(s.outside(&watched), SystemTime::now()).is_empty());
    }

    #[test]
    fn a_source_that_is_a_link_is_swept_though_its_directory_is_watched() {
        // A ConfigMap's layout: the file leads through `..data`, a link to
        // the current version's directory, swapped whole by an update.
        let dir = tempfile::tempdir().unwrap();
        let (v1, v2) = (dir.path().join("..v1"), dir.path().join("..v2"));
        for v in [&v1, &v2] {
            std::fs::create_dir(v).unwrap();
            std::fs::write(v.join("robots.txt"), "User-agent: *\n").unwrap();
        }
        std::os::unix::fs::symlink("..v1", dir.path().join("..data")).unwrap();
        let robots = dir.path().join("robots.txt");
        std::os::unix::fs::symlink("..data/robots.txt", &robots).unwrap();
        std::fs::write(dir.path().join("plain.txt"), "x").unwrap();
        let s = Sources::of(&[robots.clone(), dir.path().join("plain.txt")]);
        let watched = BTreeSet::from([dir.path().to_path_buf()]);
        assert!(s.outside(&watched).is_empty(), "every directory is watched");
        assert_eq!(s.swept(&watched), std::slice::from_ref(&robots), "only the link is swept");

        let read_at = SystemTime::now() + Duration::from_millis(20);
        let mut sweep = Sweep::new(s.swept(&watched), read_at);
        assert!(!sweep.look(SWEEP_FILES), "nothing changed since");
        // The update: `..data` swapped for a link to a version written after.
        std::thread::sleep(Duration::from_millis(40));
        std::fs::write(v2.join("robots.txt"), "User-agent: *\nDisallow: /\n").unwrap();
        std::os::unix::fs::symlink("..v2", dir.path().join("..data_tmp")).unwrap();
        std::fs::rename(dir.path().join("..data_tmp"), dir.path().join("..data")).unwrap();
        let mut b = Burst::default();
        assert!(!b.note(Event::Renamed(&[dir.path().join("..data_tmp"), dir.path().join("..data")]), &s));
        assert!(sweep.look(SWEEP_FILES), "the sweep finds what the events do not name");
    }
}
