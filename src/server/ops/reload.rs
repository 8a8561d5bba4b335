//! Hot reload: watch every file the snapshot was built from, and SIGHUP.
//!
//! Runs as a Pingora background service. A change (debounced, since editors
//! write in bursts and save by rename) triggers a full reload off the request
//! path: read (each file once it has settled, [`crate::load::file`]), parse,
//! validate, compile, then one `ArcSwap::store`. A reload that fails keeps
//! the last good snapshot, logs every problem with its file and line, and
//! counts `robotgate_reload_failures_total`.
//!
//! A partial reload is one that refused a robots.txt, humans.txt or
//! alternate-content file but had its last good version: that version is
//! kept and everything else is put in force, so one bad file never holds up
//! the others. It is stored and counted in `robotgate_reloads_total`, and,
//! since an edit of the operator's was not taken, also in
//! `robotgate_reload_failures_total`; the status page shows it as a failed
//! reload naming each kept file. Every refused file, in a partial or a
//! failed reload, counts once in `robotgate_reload_refused_total{file,
//! reason}`.
//!
//! The files of a directory that cannot be watched (inotify's limit of
//! watches, a directory robotgate may not read) are looked at in turn, a
//! few a second ([`crate::load::watch::Sweep`]), as in the nginx module.
//!
//! Settings that cannot change while running (listeners, threads, metrics
//! address, the violation log, the rate table size) are reported as needing
//! a restart.

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use async_trait::async_trait;
use notify::{RecursiveMode, Watcher};
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use tracing::{error, info, warn};

use crate::load::watch::{
    same_sources, spawn_below, watch_dirs, Burst, Event, Sources, Sweep, DEBOUNCE, SWEEP_EVERY, SWEEP_FILES,
};
use crate::load::{traps, Problem, Reason};
use crate::server::ops::memory;
use crate::server::snapshot::{self, Snapshot};
use crate::server::telemetry::metrics;

/// The reload service.
pub struct Reloader {
    /// The config file.
    pub config_path: PathBuf,
    /// The live snapshot.
    pub snapshot: Arc<ArcSwap<Snapshot>>,
}

/// Publish per-site robots.txt versions as `robotgate_robots_info`.
pub fn publish_info(snap: &Snapshot) {
    // Past `metrics.per_site_limit`, a site's version is not a series of
    // its own (nor its certificate's expiry: `_other` has the soonest).
    let other: std::collections::HashSet<&str> = snap
        .sites
        .iter()
        .zip(&snap.answers)
        .filter(|(_, a)| a.metric_site == crate::config::OTHER_SITES)
        .map(|(s, _)| s.conf.name.as_str())
        .collect();
    snap.certs.publish(&other);
    let m = metrics();
    m.robots_info.reset();
    for (site, hash) in snap.robots_versions() {
        m.robots_info.with_label_values(&[site, hash]).set(1);
    }
}

/// Remove from the registry the series of the sites that had series of
/// their own in `before` and have none in `snap` (removed, or now past
/// `metrics.per_site_limit`): without it, a removed site's counters stayed
/// in every scrape until a restart (issue 55). Cost: nothing when no such
/// site (most reloads); else one pass over each per-site family's series,
/// at most `metrics.per_site_limit` sites' worth.
pub fn forget_sites(snap: &Snapshot, before: &Snapshot) {
    let now: HashSet<&str> = snap.answers.iter().map(|a| a.metric_site.as_str()).collect();
    let gone: HashSet<&str> = (before.answers.iter().map(|a| a.metric_site.as_str()))
        .filter(|s| *s != crate::config::OTHER_SITES && !now.contains(s))
        .collect();
    if gone.is_empty() {
        return;
    }
    let m = metrics();
    for family in
        [&m.requests, &m.violations, &m.rate_limited, &m.preferences, &m.served, &m.upstream_errors, &m.stale_robots]
    {
        forget_in(family, &gone);
    }
    // robots_info and certificate_expiry are published whole on each reload.
}

/// Remove every series of `family` whose `site` label is in `gone`.
fn forget_in<T: prometheus::core::MetricVecBuilder>(family: &prometheus::core::MetricVec<T>, gone: &HashSet<&str>) {
    use prometheus::core::Collector;
    for mf in family.collect() {
        for metric in mf.get_metric() {
            let labels: std::collections::HashMap<&str, &str> =
                metric.get_label().iter().map(|l| (l.get_name(), l.get_value())).collect();
            if labels.get("site").is_some_and(|s| gone.contains(s)) {
                let _ = family.remove(&labels);
            }
        }
    }
}

/// Keep the snapshot's first-served times, when any site has traps, and
/// its robots.txt versions of the last 24 hours; a failure is logged
/// (arming then restarts with the process, which only delays bans; a
/// crawler holding an earlier robots.txt then gets no grace). After a
/// reload, each file is written only when what it keeps differs from
/// `before`'s, and the versions file only for the sites that changed
/// ([`crate::load::versions::keep`]): at 10,000 sites it is megabytes.
/// At start, and after a write that failed, the versions file is written
/// whole.
pub fn persist_traps(snap: &Snapshot, before: Option<&Snapshot>) {
    use crate::load::versions;
    /// The last write of the versions file failed: the file may lack a change.
    static BEHIND: AtomicBool = AtomicBool::new(false);
    let path = versions::state_path(&snap.traps_state);
    let kept = match before.filter(|_| !BEHIND.load(Ordering::Relaxed)) {
        Some(b) => versions::keep(&path, &b.robots_versions, &snap.robots_versions),
        None => versions::write(&path, &snap.robots_versions),
    };
    BEHIND.store(kept.is_err(), Ordering::Relaxed);
    if let Err(e) = kept {
        tracing::warn!(target: "robotgate::robots", file = %path.display(), error = %e, "cannot keep the robots.txt versions of the last 24 hours");
    }
    persist_site_hosts(snap, before);
    if snap.sites.iter().all(|s| s.conf.traps.is_none())
        || before.is_some_and(|b| b.traps_first_served == snap.traps_first_served)
    {
        return;
    }
    if let Err(e) = traps::write(&snap.traps_state, &snap.traps_first_served) {
        tracing::warn!(target: "robotgate::traps", file = %snap.traps_state.display(), error = %e, "cannot keep when traps were first served; arming restarts with the process");
    }
}

/// Keep which file of `sites_dir` holds each host (issue 66) when it
/// changed ([`crate::load::sites_dir::keep`]). A failure is logged; the
/// next start then reads the record it finds.
fn persist_site_hosts(snap: &Snapshot, before: Option<&Snapshot>) {
    use crate::load::sites_dir;
    if let Err(e) = sites_dir::keep(&snap.files, before.map(|b| &b.files), crate::load::file::Reader::Helper) {
        let path = sites_dir::held_path(&snap.traps_state);
        tracing::warn!(target: "robotgate::reload", file = %path.display(), error = %e, "cannot keep which site file holds each host; a restart takes the files in name order");
    }
}

/// What a reload put in force asks of the watch: `None` when the new
/// snapshot's sources are the old one's (an edit), else the new ones as
/// the watch reads them (worked out on the reload's thread).
type NewWatch = Option<(Sources, BTreeSet<PathBuf>)>;

/// Run `work` on a reload thread ([`spawn_below`]) and wait for its result
/// without holding a runtime thread; `None` if it could not run or did not
/// finish (a panic).
async fn below<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    if let Err(e) = spawn_below("robotgate-reload", move || {
        let _ = tx.send(work());
    }) {
        error!(target: "robotgate::reload", error = %e, "no thread for the reload");
        return None;
    }
    rx.await.ok()
}

impl Reloader {
    /// Reload now, looking at every file. Returns whether the new snapshot
    /// is in force.
    pub async fn reload(&self, why: &str) -> bool {
        self.reload_seen(why, HashSet::new(), None, false).await.is_some()
    }

    /// [`Reloader::reload`], after what the watcher saw: the files renamed
    /// into place whole ([`crate::load::reload_whole`]) and, when it lost
    /// nothing, every source it named ([`crate::load::reload_named`]).
    /// `Some` when the new snapshot is in force, with what the watch needs
    /// when its sources changed, or always with `rewatch`.
    async fn reload_seen(
        &self,
        why: &str,
        whole: HashSet<PathBuf>,
        named: Option<HashSet<PathBuf>>,
        rewatch: bool,
    ) -> Option<NewWatch> {
        let path = self.config_path.clone();
        let previous = self.snapshot.load_full();
        let loaded = below(move || {
            let loaded = snapshot::reload_seen(&path, Some(&previous), &whole, named.as_ref());
            loaded.map(|s| {
                let watch = (rewatch || !same_sources(&s.sources, &previous.sources))
                    .then(|| (Sources::of(&s.sources), watch_dirs(&s.sources)));
                (s, watch)
            })
        })
        .await;
        let (new, watch) = match loaded {
            Some(Ok(s)) => s,
            // Log before counting: whoever sees the counter move can read why.
            Some(Err(problems)) => {
                for p in &problems {
                    error!(target: "robotgate::reload", file = %p.file.display(), line = p.line, reason = p.reason.map(Reason::as_str), problem = %p.message, "reload refused; the last good configuration stays in force");
                }
                count_refused(&problems);
                let why: Vec<String> = problems.iter().map(ToString::to_string).collect();
                crate::server::ops::status::board().reloaded(false, why.join("; "));
                metrics().reload_failures.inc();
                return None;
            }
            None => {
                error!(target: "robotgate::reload", "reload task failed; the last good configuration stays in force");
                crate::server::ops::status::board().reloaded(false, "reload task failed".to_owned());
                metrics().reload_failures.inc();
                return None;
            }
        };
        let old = self.snapshot.load();
        for field in restart_only_changes(&old.settings, &new.settings) {
            warn!(target: "robotgate::reload", setting = field, "changed, but takes effect only after a restart");
        }
        for p in &new.refused {
            error!(target: "robotgate::reload", file = %p.file.display(), line = p.line, reason = p.reason.map(Reason::as_str), problem = %p.message, "file refused; its last good version stays in force and the other files are reloaded");
        }
        let refused = new.refused.clone();
        let summary = Summary::of(&new);
        // In force first; what is kept and published for it follows.
        let new = Arc::new(new);
        self.snapshot.store(Arc::clone(&new));
        publish_info(&new);
        forget_sites(&new, &old);
        // Off the runtime's threads: at 10,000 sites the versions file is
        // megabytes, written after every robots.txt edit.
        let (kept, before) = (Arc::clone(&new), Arc::clone(&old));
        drop(old);
        let done = below(move || {
            persist_traps(&kept, Some(&before));
            // The replaced snapshot's own parts (the sites that changed) go
            // with it, unless a request still holds it; then once per reload
            // the freed memory goes back (issue 55).
            drop(before);
            memory::give_back();
        });
        if done.await.is_none() {
            error!(target: "robotgate::reload", "keeping the reload's state failed");
        }
        metrics().reloads.inc();
        if refused.is_empty() {
            crate::server::ops::status::board().reloaded(true, why.to_owned());
            info!(target: "robotgate::reload", reason = why, sites = summary.sites, added = summary.added, rebuilt = summary.rebuilt, removed = summary.removed, changed = %summary.changed, "reloaded");
        } else {
            count_refused(&refused);
            metrics().reload_failures.inc();
            let kept: Vec<String> = refused.iter().map(ToString::to_string).collect();
            let message = format!("{why}: reloaded except {}", kept.join("; "));
            crate::server::ops::status::board().reloaded(false, message);
            info!(target: "robotgate::reload", reason = why, sites = summary.sites, added = summary.added, rebuilt = summary.rebuilt, removed = summary.removed, changed = %summary.changed, kept = refused.len(), "reloaded, keeping the last good version of refused files");
        }
        Some(watch)
    }
}

/// The most bytes of site names a reload's log line carries.
const SUMMARY_NAMES_MAX: usize = 2048;

/// What a reload's log line says of the sites: counts, and the first
/// [`crate::load::Changes::NAMED`] added or rebuilt sites with their
/// robots.txt version (`name=hash`, `name=-` without one), so the line stays
/// short at any number of sites.
struct Summary {
    sites: usize,
    added: usize,
    rebuilt: usize,
    removed: usize,
    changed: String,
}

impl Summary {
    fn of(snap: &Snapshot) -> Summary {
        let c = &snap.changes;
        let hash = |name: &str| {
            snap.sites
                .iter()
                .find(|s| s.conf.name == name)
                .and_then(|s| s.robots.as_ref())
                .map_or_else(|| "-".to_owned(), |r| r.hash.clone())
        };
        // Names are the operator's (as long as they like): at most 2 KiB of
        // them, whole, the rest counted.
        let mut changed = String::new();
        let mut named = 0;
        for n in &c.named {
            let item = format!("{n}={}", hash(n));
            if changed.len() + item.len() + 1 > SUMMARY_NAMES_MAX {
                break;
            }
            if !changed.is_empty() {
                changed.push(' ');
            }
            changed.push_str(&item);
            named += 1;
        }
        let more = (c.added + c.rebuilt).saturating_sub(named);
        if more > 0 {
            changed.push_str(&format!("{}and {more} more", if changed.is_empty() { "" } else { " " }));
        }
        Summary { sites: snap.sites.len(), added: c.added, rebuilt: c.rebuilt, removed: c.removed, changed }
    }
}

/// Count each refused file in `robotgate_reload_refused_total{file, reason}`.
fn count_refused(problems: &[Problem]) {
    for (file, reason) in problems.iter().filter_map(Problem::refused_series) {
        metrics().reload_refused.with_label_values(&[file.as_ref(), reason]).inc();
    }
}

/// Settings the running process cannot change: the [`crate::config::Boot`] part.
pub fn restart_only_changes(old: &crate::config::Settings, new: &crate::config::Settings) -> Vec<&'static str> {
    old.boot.changes(&new.boot)
}

/// A `notify` event as the core's watch reads it ([`crate::load::watch::Event`]).
fn event(ev: &notify::Result<notify::Event>) -> Event<'_> {
    use notify::event::{EventKind, ModifyKind, RenameMode};
    match ev {
        // An error from the watcher, or a queue that overflowed: events may be lost.
        Err(_) => Event::Lost,
        Ok(ev) if ev.need_rescan() => Event::Lost,
        Ok(ev) => match ev.kind {
            EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(_)) => Event::Touched,
            EventKind::Modify(ModifyKind::Name(RenameMode::To | RenameMode::Both)) => Event::Renamed(&ev.paths),
            _ => Event::Written(&ev.paths),
        },
    }
}

#[async_trait]
impl BackgroundService for Reloader {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        // The watcher's events are noted into the burst on notify's own
        // thread as they come (a lookup each), so none waits in a queue
        // that could overflow: a busy violation log beside robots.txt
        // raises an event a request.
        let seen = Arc::new(Mutex::new(Seen::default()));
        let wake = Arc::new(tokio::sync::Notify::new());
        let (noting, waking) = (Arc::clone(&seen), Arc::clone(&wake));
        let watcher = notify::recommended_watcher(move |ev| {
            let mut seen = noting.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let Seen { burst, sources, last } = &mut *seen;
            if burst.note(event(&ev), sources) {
                *last = tokio::time::Instant::now();
                waking.notify_one();
            }
        });
        let mut watcher = match watcher {
            Ok(w) => Some(w),
            Err(e) => {
                error!(target: "robotgate::reload", error = %e, files_a_second = SWEEP_FILES, "cannot watch files: they are looked at in turn (SIGHUP reloads at once)");
                None
            }
        };
        let mut watch = Watch { seen: Arc::clone(&seen), ..Watch::default() };
        let snap = self.snapshot.load_full();
        watch.set(&mut watcher, Sources::of(&snap.sources), watch_dirs(&snap.sources), snap.read_at);
        // A file edited after the first load but before the watches were in
        // place raised no event: catch up once, now that they are.
        if snap.stale() {
            let rewatch = watch.rewatch(&watcher);
            if let Some(Some((sources, dirs))) =
                self.reload_seen("changed while starting", HashSet::new(), None, rewatch).await
            {
                watch.set(&mut watcher, sources, dirs, self.snapshot.load().read_at);
            }
        }
        drop(snap);
        // The files no watch covers are looked at in turn, a few a tick.
        let mut tick = tokio::time::interval(SWEEP_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);

        let mut hup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
            Ok(s) => Some(s),
            Err(e) => {
                warn!(target: "robotgate::reload", error = %e, "cannot listen for SIGHUP");
                None
            }
        };
        loop {
            let why = tokio::select! {
                _ = shutdown.changed() => return,
                _ = async { match hup.as_mut() { Some(h) => { h.recv().await; } None => std::future::pending::<()>().await } } => "SIGHUP",
                _ = wake.notified() => {
                    // Debounce: wait until the burst of relevant events is
                    // over (other files in the same directories, such as a
                    // log, do not count).
                    loop {
                        let until = watch.seen().last + DEBOUNCE;
                        if tokio::time::Instant::now() >= until {
                            break;
                        }
                        tokio::time::sleep_until(until).await;
                    }
                    // A wake left by an event of a burst already taken.
                    if !watch.seen().burst.changed() {
                        continue;
                    }
                    "file changed"
                }
                _ = tick.tick(), if !watch.sweep.is_empty() => {
                    if !watch.sweep.look(SWEEP_FILES) {
                        continue;
                    }
                    // No event named it. A reload in force builds a new
                    // sweep; till then it finds what changes from now
                    // (should this reload be refused, the fix that follows).
                    let mut seen = watch.seen();
                    let Seen { burst, sources, .. } = &mut *seen;
                    burst.note(Event::Lost, sources);
                    drop(seen);
                    watch.sweep.again(std::time::SystemTime::now());
                    "file changed (found by the sweep of unwatched files and links)"
                }
            };
            let (whole, named) = watch.seen().burst.take();
            // The events name every change only when every directory is
            // watched and none was lost since the snapshot in force was
            // read (a refused reload's changes are not in force: the next
            // one looks at every file). Then a site none of whose files
            // they named is kept without a `stat` (issue 55: 20,000 a
            // reload at 10,000 sites). A SIGHUP looks at every file.
            let trusted = why != "SIGHUP" && watcher.is_some() && !watch.unwatched && !watch.unsure;
            let named = named.filter(|_| trusted);
            watch.unsure = true;
            let rewatch = watch.rewatch(&watcher);
            if let Some(new) = self.reload_seen(why, whole, named, rewatch).await {
                watch.unsure = false;
                if let Some((sources, dirs)) = new {
                    let snap = self.snapshot.load_full();
                    watch.set(&mut watcher, sources, dirs, snap.read_at);
                    // A new source (a site's file, a site file's directory)
                    // changed between this reload's read and its watch:
                    // no event named it, so look once now that the watches
                    // are in place (a customer's robots.txt linked away
                    // right after their site was added went unseen).
                    if snap.stale() {
                        let mut seen = watch.seen();
                        let Seen { burst, sources, last } = &mut *seen;
                        burst.note(Event::Lost, sources);
                        *last = tokio::time::Instant::now();
                        wake.notify_one();
                    }
                }
            }
        }
    }
}

/// What the watcher saw since the last reload began.
struct Seen {
    burst: Burst,
    /// The sources of the snapshot in force, as events name them.
    sources: Sources,
    /// When the last event that may change a source came.
    last: tokio::time::Instant,
}

impl Default for Seen {
    fn default() -> Seen {
        Seen { burst: Burst::default(), sources: Sources::default(), last: tokio::time::Instant::now() }
    }
}

/// What the reloader watches.
#[derive(Default)]
struct Watch {
    /// What the watcher saw, and the sources it looks for.
    seen: Arc<Mutex<Seen>>,
    /// The directories watched.
    dirs: BTreeSet<PathBuf>,
    /// Some directory of a source could not be watched: an edit there
    /// raises no event.
    unwatched: bool,
    /// The sources no watch covers (every one without a watcher), looked
    /// at in turn.
    sweep: Sweep,
    /// A burst's changes are not in force (its reload was refused).
    unsure: bool,
}

impl Watch {
    /// What the watcher saw.
    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a reload in force should set the watch again though its
    /// sources are the same: some are swept, and a directory that could not
    /// be watched may be now.
    fn rewatch(&self, watcher: &Option<notify::RecommendedWatcher>) -> bool {
        watcher.is_none() || self.unwatched
    }

    /// Watch `want` (the directories of `sources`), leaving the others;
    /// sweep the sources none covers, for edits at or after `read_at`
    /// (when the snapshot in force was read).
    fn set(
        &mut self,
        watcher: &mut Option<notify::RecommendedWatcher>,
        sources: Sources,
        want: BTreeSet<PathBuf>,
        read_at: std::time::SystemTime,
    ) {
        if let Some(w) = watcher.as_mut() {
            self.watch(w, want);
        }
        // And the sources that are links: what they lead to may change
        // with no event in their directory.
        self.sweep = Sweep::new(sources.swept(&self.dirs), read_at);
        self.seen().sources = sources;
    }

    /// Watch the directories of `want` not yet watched, and no others; a
    /// directory that fails is tried again at the next [`Watch::set`].
    fn watch(&mut self, w: &mut notify::RecommendedWatcher, want: BTreeSet<PathBuf>) {
        for gone in self.dirs.difference(&want) {
            let _ = w.unwatch(gone);
        }
        let mut failed = Vec::new();
        for dir in want.difference(&self.dirs) {
            if let Err(e) = w.watch(dir, RecursiveMode::NonRecursive) {
                failed.push((dir.clone(), e));
            }
        }
        if let Some((dir, e)) = failed.first() {
            warn!(target: "robotgate::reload", directories = failed.len(), dir = %dir.display(), error = %e, files_a_second = SWEEP_FILES, "cannot watch directories: their files are looked at in turn");
        }
        self.unwatched = !failed.is_empty();
        self.dirs = want;
        for (dir, _) in failed {
            // Tried again when the sources next change.
            self.dirs.remove(&dir);
        }
    }
}
