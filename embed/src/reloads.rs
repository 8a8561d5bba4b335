//! A module's reloads, the same in every edge (issues 52, 54, 55, 69): the
//! watch of the snapshot's sources, its bursts and sweep, one reload at a
//! time, and what a reload says. The edge only says where its events come
//! from and when its timers fire: the nginx module watches the inotify
//! descriptor on nginx's loop and reloads on a helper thread, handing the
//! new snapshot back to nginx's thread ([`crate::reloads`]'s [`Job`] and
//! [`Reloads::finished`]); the Envoy and HAProxy modules wait on it in
//! their reload thread, which reloads itself ([`crate::module`]).
//!
//! A request only uses the snapshot in force: it never looks at a file,
//! reads one or builds anything. Changes are noticed by inotify on the
//! directories of the snapshot's sources ([`Inotify`]): an event that names
//! a source starts (or extends) a burst, and [`DEBOUNCE`] after its last
//! event a reload runs ([`robotgate::load::reload_named`]: a site none of
//! whose files the events named is kept without a `stat`; the classifier is
//! built again only when the bot database changed; a file renamed into
//! place is read at once, one written in place once it settles). A file
//! refused on the way keeps its last good version; a reload refused whole
//! keeps the old snapshot and says why, once until it changes.
//!
//! Events may be lost (a queue that overflowed, a watched directory that
//! went away): that counts as a change of anything. A directory that could
//! not be watched (the user's limit of watches reached) has its files
//! looked at by a once-a-second sweep, [`SWEEP_FILES`] `stat`s a tick,
//! going round ([`Sweep`]); with every directory watched an idle module
//! makes no `stat` at all.

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use robotgate::load::file::Reader;
use robotgate::load::watch::{same_sources, watch_dirs, Burst, Event, Sources, Sweep};
pub use robotgate::load::watch::{DEBOUNCE, SWEEP_EVERY, SWEEP_FILES};
use robotgate::load::{Problem, Snapshot};
use robotgate::metric;
use robotgate::state::series::Series;

use crate::inotify::Inotify;
use crate::Level;

/// Where what a reload says goes: the edge's log.
pub type Say<'a> = &'a mut dyn FnMut(Level, &str);

/// A module's watch and reloads, on the thread that owns them (nginx's,
/// or the module's reload thread).
pub struct Reloads {
    config: PathBuf,
    /// The snapshot in force (the next reload's previous one).
    current: Arc<Snapshot>,
    /// `None`: no watch could be made, the sweep looks at every source.
    inotify: Option<Inotify>,
    sources: Sources,
    burst: Burst,
    sweep: Sweep,
    /// A reload is under way.
    running: bool,
    /// A burst ended while one was: reload again when it ends.
    again: bool,
    /// What a refused reload said last: said once until it changes.
    said: Vec<String>,
    /// A burst's changes were not put in force (its reload was refused, or
    /// had no thread): the next reload looks at every file, not only at
    /// those its own events named.
    unsure: bool,
    /// Some sources are outside every watch (the sweep looks at them).
    unwatched: bool,
    /// This module keeps which site file holds each host for the next start
    /// ([`robotgate::load::sites_dir::keep`]), as the proxy does after each
    /// reload (one nginx worker; each Envoy or HAProxy module).
    keeper: bool,
}

/// A reload to run off the edge's threads ([`Job::run`]).
pub struct Job {
    config: PathBuf,
    previous: Arc<Snapshot>,
    whole: HashSet<PathBuf>,
    /// The files the events named, when they named every change.
    named: Option<HashSet<PathBuf>>,
    keeper: bool,
}

/// What a [`Job`] made, for [`Reloads::finished`].
pub struct Done {
    outcome: Result<Snapshot, Vec<Problem>>,
    /// The host record could not be written.
    not_kept: Option<std::io::Error>,
    /// What the watch needs of the new snapshot, `Some(None)` when its
    /// sources are the old one's.
    watch: Option<Option<(Sources, BTreeSet<PathBuf>)>>,
}

impl Job {
    /// Reload (only what changed is read and compiled again), and keep the
    /// host record when it changed; made off the edge's threads.
    pub fn run(self) -> Done {
        let Job { config, previous, whole, named, keeper } = self;
        let outcome = match &named {
            Some(named) => robotgate::load::reload_named(&config, Some(&previous), &whole, named, Reader::Caller),
            None => robotgate::load::reload_whole(&config, Some(&previous), &whole, Reader::Caller),
        };
        // Written here, when it changed (a site file moved); a snapshot
        // that then cannot be put in force leaves the record one reload
        // ahead, which the next start reads as this reload's decision.
        let not_kept = match (&outcome, keeper) {
            (Ok(s), true) => robotgate::load::sites_dir::keep(s, Some(&previous), Reader::Caller).err(),
            _ => None,
        };
        // What the watch needs of the new snapshot, made here rather than
        // on the edge's thread; nothing when its sources are the old one's
        // (an edit): at 10,000 sites, setting up the same 10,000
        // directories again was most of an edit's time on nginx's thread.
        let watch = outcome.as_ref().ok().map(|s| {
            (!same_sources(&s.sources, &previous.sources)).then(|| (Sources::of(&s.sources), watch_dirs(&s.sources)))
        });
        Done { outcome, not_kept, watch }
    }
}

/// Keep the host record of the first snapshot (a module's start): the
/// loader decided by the record it read; what it decided is the record from
/// now on (at a first start there was none). Off the edge's threads.
///
/// # Errors
/// The record cannot be written.
pub fn keep_first(snap: &Snapshot) -> std::io::Result<()> {
    robotgate::load::sites_dir::keep(snap, None, Reader::Caller).map(|_| ())
}

/// Say that the host record could not be written.
pub fn not_kept(e: &std::io::Error, say: Say<'_>) {
    say(
        Level::Warn,
        &format!("robotgate: cannot keep which site file holds each host (state_dir must be writable by the edge's processes); a restart takes the files in name order: {e}"),
    );
}

impl Reloads {
    /// Watch `snap`'s sources. When one changed since `snap` was read (an
    /// edit between the load and this watch raised no event it could see),
    /// every file is looked at: [`Reloads::begin`] reloads at once.
    pub fn new(config: PathBuf, snap: Arc<Snapshot>, keeper: bool, say: Say<'_>) -> Reloads {
        let inotify = match Inotify::new() {
            Ok(i) => Some(i),
            Err(e) => {
                say(Level::Warn, &format!("robotgate: cannot watch files ({e}): each is looked at in turn"));
                None
            }
        };
        let stale = snap.stale();
        let mut r = Reloads {
            config,
            // What the first load refused was said by the loader.
            said: snap.refused.iter().map(ToString::to_string).collect(),
            current: snap.clone(),
            inotify,
            sources: Sources::default(),
            burst: Burst::default(),
            sweep: Sweep::default(),
            running: false,
            again: false,
            unsure: false,
            unwatched: false,
            keeper,
        };
        r.watch(&snap, Sources::of(&snap.sources), watch_dirs(&snap.sources), say);
        if stale {
            // Whatever changed raised no event here: every file is looked at.
            r.burst.note(Event::Lost, &r.sources);
        }
        r
    }

    /// The inotify descriptor, for the edge's loop to watch (or a `poll`).
    pub fn inotify(&self) -> Option<&Inotify> {
        self.inotify.as_ref()
    }

    /// Watch nothing (the edge could not wait on the descriptor): every
    /// source is swept from now.
    pub fn unwatch(&mut self, say: Say<'_>) {
        self.inotify = None;
        let current = self.current.clone();
        self.watch(&current, Sources::of(&current.sources), BTreeSet::new(), say);
    }

    /// Read the events queued on the descriptor. `true`: one may change a
    /// source, and the quiet time ([`DEBOUNCE`]) starts again.
    pub fn drain(&mut self) -> bool {
        let Some(inotify) = &mut self.inotify else { return false };
        let (sources, burst) = (&self.sources, &mut self.burst);
        let mut changed = false;
        inotify.drain(&mut |event| changed |= burst.note(event, sources));
        changed
    }

    /// Whether a burst is waiting for its reload.
    pub fn pending(&self) -> bool {
        self.burst.changed()
    }

    /// Whether some files are looked at by the sweep (its timer runs).
    pub fn sweeping(&self) -> bool {
        !self.sweep.is_empty()
    }

    /// The sweep's tick: a few files no watch covers looked at. `true`: one
    /// changed, reload ([`Reloads::begin`]).
    pub fn sweep(&mut self) -> bool {
        if !self.sweep.look(SWEEP_FILES) {
            return false;
        }
        // No event named it. The reload, once in force, builds a new sweep;
        // till then it goes round finding what changes from now (should the
        // reload be refused, the fix that follows).
        self.burst.note(Event::Lost, &self.sources);
        self.sweep.again(std::time::SystemTime::now());
        true
    }

    /// A burst ended: the reload to run now, or `None` when one is under
    /// way (this one runs once it ends: [`Reloads::again`]).
    pub fn begin(&mut self) -> Option<Job> {
        if self.running {
            self.again = true;
            return None;
        }
        let (whole, named) = self.burst.take();
        // The events named every change only when every directory is
        // watched and none was lost since the snapshot in force was read:
        // then a site none of whose files they named is kept without a
        // `stat` (20,000 of them a reload at 10,000 sites of two files each).
        let named = named.filter(|_| self.inotify.is_some() && !self.unwatched && !self.unsure);
        self.unsure = true;
        self.running = true;
        Some(Job { config: self.config.clone(), previous: self.current.clone(), whole, named, keeper: self.keeper })
    }

    /// The [`Job`] of [`Reloads::begin`] could not be run (no thread):
    /// tried again at the next change.
    pub fn not_begun(&mut self, e: &std::io::Error, say: Say<'_>) {
        self.running = false;
        say(Level::Error, &format!("robotgate: no thread for a reload, tried at the next change: {e}"));
    }

    /// Whether a burst ended while the reload was under way: begin again
    /// (unless another burst's quiet time is running, which begins it).
    pub fn again(&mut self) -> bool {
        !self.running && std::mem::take(&mut self.again)
    }

    /// A reload ended: put the new snapshot in force with `install` (which
    /// gives back what it replaced, or `None` when it could not), count it
    /// in `counts` (as the proxy counts one), and say what the reload said.
    /// Returns what the new snapshot replaced, to be dropped off the edge's
    /// threads (freeing a classifier takes a while).
    pub fn finished<T>(
        &mut self,
        done: Done,
        install: impl FnOnce(Arc<Snapshot>) -> Option<T>,
        counts: Option<&Series>,
        say: Say<'_>,
    ) -> Option<(T, Arc<Snapshot>)> {
        self.running = false;
        let Done { outcome, not_kept: failed, watch } = done;
        if let Some(e) = failed {
            not_kept(&e, say);
        }
        match (outcome, watch) {
            (Ok(new), Some(sources)) => {
                let kept: Vec<String> = new.refused.iter().map(ToString::to_string).collect();
                for problem in self.fresh(kept) {
                    say(Level::Error, &format!("robotgate: kept the last good version: {problem}"));
                }
                let c = &new.changes;
                say(
                    Level::Info,
                    &format!(
                        "robotgate: reloaded {}: {} sites, {} added, {} rebuilt, {} removed",
                        self.config.display(),
                        new.sites.len(),
                        c.added,
                        c.rebuilt,
                        c.removed
                    ),
                );
                // What a running module cannot change (the proxy says the
                // same of a restart): said, so an edit that is not in force
                // does not pass for one.
                let later = self.current.settings.boot.changes(&new.settings.boot);
                if !later.is_empty() {
                    say(
                        Level::Warn,
                        &format!(
                            "robotgate: not in force until the edge loads the module's configuration again: {}",
                            later.join(", ")
                        ),
                    );
                }
                let new = Arc::new(new);
                let Some(old) = install(new.clone()) else {
                    say(Level::Error, "robotgate: the reloaded snapshot could not be put in force");
                    return None;
                };
                count(counts, true, &new.refused);
                let old = (old, std::mem::replace(&mut self.current, new.clone()));
                // The same sources, every directory still watched and
                // nothing swept: the watch stays as it is.
                let keep =
                    sources.is_none() && !self.unwatched && self.inotify.as_ref().is_some_and(|i| !i.lost_a_watch());
                if !keep {
                    let moved = sources.is_some();
                    let (sources, dirs) =
                        sources.unwrap_or_else(|| (Sources::of(&new.sources), watch_dirs(&new.sources)));
                    self.watch(&new, sources, dirs, say);
                    // A new source (a site's file, a site file's directory)
                    // changed between this reload's read and its watch: no
                    // event named it, so it is looked at once more
                    // ([`Reloads::pending`]).
                    if moved && new.stale() {
                        self.burst.note(Event::Lost, &self.sources);
                    }
                }
                self.unsure = false;
                Some(old)
            }
            (Err(problems), _) => {
                count(counts, false, &problems);
                let lines = problems.iter().map(ToString::to_string).collect();
                for problem in self.fresh(lines) {
                    say(Level::Error, &format!("robotgate: reload refused, the last good snapshot stays: {problem}"));
                }
                None
            }
            (Ok(_), None) => None,
        }
    }

    /// Watch the directories of `snap`'s sources; sweep the sources none covers.
    fn watch(&mut self, snap: &Snapshot, sources: Sources, dirs: BTreeSet<PathBuf>, say: Say<'_>) {
        let watched = match &mut self.inotify {
            Some(inotify) => {
                let failed = inotify.set(&dirs);
                if let Some((dir, e)) = failed.first() {
                    say(
                        Level::Warn,
                        &format!(
                            "robotgate: cannot watch {} directories ({}: {e}): their files are looked at in turn, {SWEEP_FILES} a second",
                            failed.len(),
                            dir.display(),
                        ),
                    );
                }
                inotify.watched()
            }
            None => BTreeSet::new(),
        };
        self.unwatched = !sources.outside(&watched).is_empty();
        // Those, and the sources that are links (what they lead to may
        // change with no event here).
        self.sweep = Sweep::new(sources.swept(&watched), snap.read_at);
        self.sources = sources;
    }

    /// `lines`, unless they are what was said last; remembered.
    fn fresh(&mut self, lines: Vec<String>) -> Vec<String> {
        if lines == self.said {
            return Vec::new();
        }
        self.said.clone_from(&lines);
        lines
    }
}

/// Count a reload as the proxy counts one: `robotgate_reloads_total` when
/// it was put in force, `robotgate_reload_failures_total` when it was
/// refused or kept some file's last good version, and each refused file.
/// (nginx's workers each reload the same files: one of them counts, so an
/// edit counts once.)
pub fn count(series: Option<&Series>, in_force: bool, refused: &[Problem]) {
    let Some(series) = series else { return };
    if in_force {
        series.add(metric::RELOADS.name, &[], &[], 1);
    }
    if !in_force || !refused.is_empty() {
        series.add(metric::RELOAD_FAILURES.name, &[], &[], 1);
    }
    for (file, reason) in refused.iter().filter_map(Problem::refused_series) {
        series.add(metric::RELOAD_REFUSED.name, &metric::RELOAD_REFUSED_LABELS, &[&file, reason], 1);
    }
}
