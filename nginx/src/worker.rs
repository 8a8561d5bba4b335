//! What a worker keeps between requests, on nginx's thread.

use std::cell::RefCell;
use std::sync::Arc;

use robotgate::agent::{Category, Memo};
use robotgate::load::Snapshot;
use robotgate::state::series::{Counter, Series};

use crate::{store, MainConf};

thread_local! {
    /// This worker's shared store (`state.redis`), if any.
    pub(crate) static STORE: RefCell<Option<store::Store>> = const { RefCell::new(None) };
}

/// What a worker keeps between requests, on nginx's thread: one
/// thread-local, borrowed once per request (each thread-local costs a
/// lookup through the dynamic loader in a module).
pub(crate) struct Worker {
    /// The snapshot it decides with ([`current`]), replaced by a reload
    /// off the request path ([`crate::reload`], [`install`]).
    pub(crate) live: Option<Arc<Snapshot>>,
    /// What it found for the last requests.
    pub(crate) hot: Hot,
    /// Its classifications, by User-Agent.
    pub(crate) memo: Memo,
    /// The record each refusal is written into ([`crate::books::record`]).
    pub(crate) scratch: Scratch,
}

/// The record [`crate::books::record`] writes each refusal into.
#[derive(Default)]
pub(crate) struct Scratch {
    pub(crate) record: robotgate::record::Record,
}

/// Slots of a worker's [`Memo`]: the distinct User-Agents a busy site sees
/// at once (each costs a classification when it returns after being
/// pushed out), for about 150 KiB.
pub(crate) const MEMO_SLOTS: usize = 512;

thread_local! {
    pub(crate) static WORKER: RefCell<Worker> = RefCell::new(Worker {
        live: None,
        hot: Hot { snap: None, host: None, counters: Vec::new(), requests: Vec::new() },
        memo: Memo::new(MEMO_SLOTS),
        scratch: Scratch::default(),
    });
}

/// What this worker found for the last requests, kept for the next ones
/// while the snapshot is the same: the site of the last `Host`, and the
/// counters it counted into (finding a series hashes its name and labels;
/// each request would otherwise pay that).
pub(crate) struct Hot {
    /// The snapshot these were found in (held, so its address is not reused).
    pub(crate) snap: Option<Arc<Snapshot>>,
    /// The last `Host` looked up, and its site.
    pub(crate) host: Option<(Vec<u8>, Option<usize>)>,
    /// Counters by [`CounterKey`] (indices into the held snapshot and
    /// fixed words), in [`COUNTER_SLOTS`] direct-mapped slots: a collision
    /// only finds again.
    pub(crate) counters: Vec<Option<(CounterKey, Option<Counter>)>>,
    /// `robotgate_requests_total` by site and category (every decided
    /// request counts there): `site * CATEGORIES + category`.
    pub(crate) requests: Vec<Option<Counter>>,
}

/// Categories of [`Hot::requests`].
pub(crate) const CATEGORIES: usize = Category::ALL.len();

/// What names a counter in [`Hot::counters`]: its family, the site by its
/// index in the snapshot, the robot by its index in the database
/// ([`NO_ROBOT`] for none or `other`), and the other label values, which
/// are fixed words. No text a snapshot or a request holds is in it, so a
/// key cannot outlive what it names; the indices are the held snapshot's
/// (the cache is emptied with each snapshot, [`Hot::for_snapshot`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct CounterKey {
    pub(crate) family: &'static str,
    pub(crate) site: usize,
    pub(crate) robot: usize,
    pub(crate) words: [&'static str; 4],
}

/// [`CounterKey::robot`] of a counter with no `bot` label, or `other`.
pub(crate) const NO_ROBOT: usize = usize::MAX;

impl CounterKey {
    /// A counter of site `site` with fixed words after it (no robot).
    pub(crate) fn of_site(family: &'static str, site: usize, word: &'static str) -> CounterKey {
        CounterKey { family, site, robot: NO_ROBOT, words: [word, "", "", ""] }
    }

    /// A record's counter ([`robotgate::policy::Tally`]) at site `site`.
    pub(crate) fn of_tally(tally: &robotgate::policy::Tally<'_>, site: usize) -> CounterKey {
        CounterKey { family: tally.family().0, site, robot: tally.robot.unwrap_or(NO_ROBOT), words: tally.words }
    }

    /// Its slot among [`COUNTER_SLOTS`]: the words by where they are
    /// (each is static, so one word is always at one place).
    fn slot(&self) -> usize {
        let mut h = (self.family.as_ptr() as usize) ^ self.site.rotate_left(17) ^ self.robot.rotate_left(33);
        for w in self.words {
            h = (h ^ w.as_ptr() as usize ^ w.len()).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
        (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) % COUNTER_SLOTS
    }
}

/// Slots of [`Hot::counters`].
pub(crate) const COUNTER_SLOTS: usize = 64;

/// A `Host` longer than this is looked up every time.
pub(crate) const HOT_HOST_MAX: usize = 255;

impl Hot {
    /// Forget what was found in another snapshot.
    fn for_snapshot(&mut self, snap: &Arc<Snapshot>) {
        if !self.snap.as_ref().is_some_and(|s| Arc::ptr_eq(s, snap)) {
            *self = Hot { snap: Some(snap.clone()), host: None, counters: Vec::new(), requests: Vec::new() };
        }
    }
}

/// The site of `host` in `snap` ([`robotgate::config::Settings::site_for_host`]),
/// found once per host and snapshot by each worker.
pub(crate) fn site_of(hot: &mut Hot, snap: &Arc<Snapshot>, host: &str) -> Option<usize> {
    hot.for_snapshot(snap);
    match &hot.host {
        Some((last, site)) if last == host.as_bytes() => *site,
        _ => {
            let site = snap.settings.site_for_host(host);
            if host.len() <= HOT_HOST_MAX {
                hot.host = Some((host.as_bytes().to_vec(), site));
            }
            site
        }
    }
}

/// Count one in `name{labels=values}`, the counter `key` names
/// ([`CounterKey`]): a repeat finds it without hashing the text. `hot`: the
/// worker's, for the snapshot `key`'s indices are of ([`Hot::for_snapshot`]).
pub(crate) fn count(hot: &mut Hot, series: &Series, key: CounterKey, labels: &[&str], values: &[&str]) {
    if hot.counters.is_empty() {
        hot.counters.resize(COUNTER_SLOTS, None);
    }
    let entry = &mut hot.counters[key.slot()];
    let counter = match entry {
        Some((k, c)) if *k == key => *c,
        _ => {
            let c = series.counter(key.family, labels, values);
            *entry = Some((key, c));
            c
        }
    };
    match counter {
        Some(c) => c.add(1),
        None => series.add(key.family, labels, values, 1),
    }
}

/// Count one decided request of `category` at site `at` (its name `site`):
/// the one count every request makes, found by index.
pub(crate) fn count_request(hot: &mut Hot, series: &Series, (at, site): (usize, &str), category: Category) {
    let i = at * CATEGORIES + category as usize;
    if hot.requests.len() <= i {
        hot.requests.resize(i + 1, None);
    }
    let counter = match hot.requests[i] {
        Some(c) => Some(c),
        None => {
            let c = series.counter("robotgate_requests_total", &["site", "category"], &[site, category.as_str()]);
            hot.requests[i] = c;
            c
        }
    };
    match counter {
        Some(c) => c.add(1),
        None => series.add("robotgate_requests_total", &["site", "category"], &[site, category.as_str()], 1),
    }
}

/// The snapshot to decide with: the master's, or the newer one a reload
/// put in force ([`install`]). Nothing else: no file is looked at, read or
/// built on the request path ([`crate::reload`]).
pub(crate) fn current<'w>(main: &MainConf, live: &'w mut Option<Arc<Snapshot>>) -> Option<&'w Arc<Snapshot>> {
    let master = main.snapshot.as_ref()?;
    Some(live.get_or_insert_with(|| master.clone()))
}

/// Put a reloaded snapshot in force in this worker (on nginx's thread,
/// between requests); what it replaced is given back, to be freed off
/// nginx's thread. `None`: the worker's state is in use (never between
/// requests).
pub(crate) fn install(new: Arc<Snapshot>) -> Option<Vec<Arc<Snapshot>>> {
    WORKER.with(|worker| {
        let mut worker = worker.try_borrow_mut().ok()?;
        let mut old: Vec<Arc<Snapshot>> = worker.live.replace(new).into_iter().collect();
        // What was found in the old snapshot goes with it.
        old.extend(worker.hot.snap.take());
        worker.hot = Hot { snap: None, host: None, counters: Vec::new(), requests: Vec::new() };
        Some(old)
    })
}
