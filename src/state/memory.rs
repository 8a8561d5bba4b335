//! State in process, in a fixed amount of memory: rate-limit clocks, bans,
//! and who has read robots.txt.
//!
//! Each is a [`TimeTable`]: "key -> a time" in a set-associative table
//! allocated once, with `capacity` entries in buckets of [`WAYS`]; a new key
//! takes the empty or oldest entry of its bucket. Memory never grows with the
//! number of distinct clients (an attacker rotating addresses only evicts),
//! and a lookup is one hash and one short lock on a bucket.
//!
//! A table lives on the heap ([`MemoryState::new`]), or in a region of
//! memory that several processes map at one address
//! ([`MemoryState::in_region`]): the workers of one nginx share their rates,
//! bans and robots.txt reads that way, as `limit_req_zone` shares its
//! counters. In a region, each bucket has a spin lock of its own (held for a
//! few loads and stores, never across a call out), and keys are hashed with
//! a seed kept in the region, so every process finds the same bucket.
//!
//! The cost of eviction is leniency: an evicted rate clock lets a client's
//! next request through early, an evicted ban ends early, an evicted
//! robots.txt read is forgotten. Each errs towards letting a client work,
//! never towards blocking it.

use std::cell::UnsafeCell;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{BanKey, RateKey, SeenKey, State};

/// Entries per bucket.
pub const WAYS: usize = 4;

#[derive(Clone, Copy, Default)]
#[repr(C)]
struct Entry<T> {
    /// Hash of the key; 0 = empty.
    key: u64,
    /// Nanoseconds since the table's epoch (a time whose meaning is the
    /// table's: last request, ban end, last read).
    at: u64,
    /// What the table keeps beside the time (`()` for most tables; the
    /// robots.txt version read, for reads).
    tag: T,
}

/// A bounded map from keys to times (and a small `T` beside each), the
/// building block of the in-process state. Keys are kept as 64-bit hashes
/// with a per-process random seed, so clients cannot aim collisions.
pub struct TimeTable<T: 'static = ()> {
    buckets: Buckets<T>,
    hasher: Hashing,
    epoch: Instant,
}

/// Where a table's buckets are.
enum Buckets<T: 'static> {
    /// On this process's heap.
    Heap(Box<[Mutex<[Entry<T>; WAYS]>]>),
    /// In a region shared with other processes ([`MemoryState::in_region`]).
    Mapped(&'static [Mapped<T>]),
}

/// A bucket in shared memory: a spin lock and its entries.
#[repr(C)]
struct Mapped<T> {
    /// 0: free; else the holder ([`Holder`]: its process id, and when that
    /// process started, so that a dead holder's id reused by a new process
    /// does not keep the lock).
    lock: AtomicU64,
    entries: UnsafeCell<[Entry<T>; WAYS]>,
}

// SAFETY: the entries are reached only with the bucket's lock held.
unsafe impl<T: Send> Sync for Mapped<T> {}

/// Who holds a bucket's lock: a process id in the low 32 bits, and the low
/// 32 bits of that process's start time (clock ticks after boot, as
/// `/proc/PID/stat` says it) above. Never 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Holder(u64);

impl Holder {
    fn of(pid: u32, started: u32) -> Holder {
        Holder(u64::from(pid) | u64::from(started) << 32)
    }

    fn pid(self) -> u32 {
        self.0 as u32
    }

    fn started(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// Whether the holder is still running: its process exists and is the
    /// one that started then (a process id is reused once its process is
    /// gone). Where `/proc` cannot say when a process started, existing is
    /// taken for running.
    fn alive(self) -> bool {
        if !exists(self.pid()) {
            return false;
        }
        match start_ticks(self.pid()) {
            Some(t) => t == self.started(),
            None => true,
        }
    }
}

/// This process, as the buckets' locks record their holder (0: not known
/// yet). Read once, then cached; forgotten in a child that `fork` makes
/// (which inherits its parent's cache: nginx forks its workers from the
/// master), by a handler [`process_id`] registers with `pthread_atfork`, so
/// no host has to say when it forked.
static PROCESS: AtomicU64 = AtomicU64::new(0);

/// In a child of `fork`: the cached holder is the parent's.
extern "C" fn forget_process() {
    PROCESS.store(0, Ordering::Relaxed);
}

fn me_now() -> Holder {
    let pid = std::process::id();
    Holder::of(pid, start_ticks(pid).unwrap_or(0))
}

fn process_id() -> Holder {
    match PROCESS.load(Ordering::Relaxed) {
        0 => {
            static ON_FORK: std::sync::Once = std::sync::Once::new();
            // SAFETY: registers a handler that only stores to an atomic
            // (async-signal-safe), once per process.
            ON_FORK.call_once(|| unsafe {
                libc::pthread_atfork(None, None, Some(forget_process));
            });
            let me = me_now();
            PROCESS.store(me.0, Ordering::Relaxed);
            me
        }
        me => Holder(me),
    }
}

/// Whether process `pid` exists (a signal 0 reaches it, or would if this
/// process were allowed to send it).
fn exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 checks only that the process exists.
    unsafe { libc::kill(pid, 0) == 0 || *libc::__errno_location() != libc::ESRCH }
}

/// When process `pid` started (field 22 of `/proc/PID/stat`, low 32 bits).
fn start_ticks(pid: u32) -> Option<u32> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    stat_start_ticks(&stat)
}

/// Field 22 of a `/proc/PID/stat` line: the fields after the command's
/// closing parenthesis (the command may hold anything) start at field 3.
fn stat_start_ticks(stat: &[u8]) -> Option<u32> {
    let after = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[after + 1..]).ok()?;
    let ticks: u64 = rest.split_ascii_whitespace().nth(22 - 3)?.parse().ok()?;
    Some(ticks as u32)
}

/// Spins between two looks at whether a bucket's holder is still alive.
const LOOK_AFTER_SPINS: u32 = 1 << 12;

impl<T> Mapped<T> {
    fn with<R>(&self, f: impl FnOnce(&mut [Entry<T>; WAYS]) -> R) -> R {
        let me = process_id().0;
        let mut spins = 0u32;
        while let Err(holder) = self.lock.compare_exchange_weak(0, me, Ordering::Acquire, Ordering::Relaxed) {
            spins = spins.wrapping_add(1);
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                // The holder may be a process the scheduler took off its CPU.
                std::thread::yield_now();
            }
            // A worker that died holding the lock (a crash, `kill -9`) would
            // hold it for ever: once in a while, see whether it still exists,
            // and take the lock from a dead one. Its entries may be half
            // written: a wrong time in one entry of one bucket, no more.
            if spins.is_multiple_of(LOOK_AFTER_SPINS)
                && holder != 0
                && holder != me
                && !Holder(holder).alive()
                && self.lock.compare_exchange(holder, me, Ordering::Acquire, Ordering::Relaxed).is_ok()
            {
                break;
            }
        }
        struct Unlock<'a>(&'a AtomicU64);
        impl Drop for Unlock<'_> {
            fn drop(&mut self) {
                self.0.store(0, Ordering::Release);
            }
        }
        let _unlock = Unlock(&self.lock);
        // SAFETY: the lock is held, so no other process or thread is in the entries.
        f(unsafe { &mut *self.entries.get() })
    }
}

/// How a table hashes keys: foldhash, with a seed clients cannot learn.
enum Hashing {
    /// A per-process random seed (a table on the heap).
    Random(foldhash::fast::RandomState),
    /// A seed kept in the shared region, the same in every process that maps it.
    Seeded(foldhash::fast::FixedState),
}

impl Hashing {
    fn hash(&self, key: impl Hash) -> u64 {
        match self {
            Hashing::Random(r) => r.hash_one(key),
            Hashing::Seeded(s) => s.hash_one(key),
        }
    }
}

impl<T: Copy + Default> TimeTable<T> {
    /// A table that holds at most `capacity` keys (rounded up to whole buckets).
    pub fn new(capacity: usize) -> TimeTable<T> {
        let n = capacity.div_ceil(WAYS).max(1);
        TimeTable {
            buckets: Buckets::Heap((0..n).map(|_| Mutex::new([Entry::default(); WAYS])).collect()),
            hasher: Hashing::Random(foldhash::fast::RandomState::default()),
            epoch: Instant::now(),
        }
    }

    fn buckets(&self) -> usize {
        match &self.buckets {
            Buckets::Heap(b) => b.len(),
            Buckets::Mapped(b) => b.len(),
        }
    }

    /// How many keys the table can hold.
    pub fn capacity(&self) -> usize {
        self.buckets() * WAYS
    }

    /// Bytes of the table itself (it never grows).
    pub fn memory_bytes(&self) -> usize {
        match &self.buckets {
            Buckets::Heap(b) => std::mem::size_of_val(&**b),
            Buckets::Mapped(b) => std::mem::size_of_val(*b),
        }
    }

    fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.epoch).as_nanos().min(u128::from(u64::MAX - 1)) as u64 + 1
    }

    fn instant(&self, ns: u64) -> Instant {
        self.epoch + Duration::from_nanos(ns.saturating_sub(1))
    }

    /// Run `f` on the key's time (`None`: not in the table); a `Some`
    /// returned by `f` is stored, taking the empty or oldest entry of the
    /// bucket for a new key.
    pub fn update<R>(&self, key: impl Hash, f: impl FnOnce(Option<Instant>) -> (Option<Instant>, R)) -> R {
        self.update_tagged(key, |found| {
            let (store, r) = f(found.map(|(t, _)| t));
            (store.map(|t| (t, T::default())), r)
        })
    }

    /// [`TimeTable::update`] with the tag kept beside the time.
    pub fn update_tagged<R>(
        &self,
        key: impl Hash,
        f: impl FnOnce(Option<(Instant, T)>) -> (Option<(Instant, T)>, R),
    ) -> R {
        let h = self.hasher.hash(key) | 1; // never 0, which marks an empty entry
        let i = (h >> 7) as usize % self.buckets();
        match &self.buckets {
            Buckets::Heap(b) => self.update_in(&mut b[i].lock().unwrap_or_else(|e| e.into_inner()), h, f),
            Buckets::Mapped(b) => b[i].with(|entries| self.update_in(entries, h, f)),
        }
    }

    fn update_in<R>(
        &self,
        entries: &mut [Entry<T>; WAYS],
        h: u64,
        f: impl FnOnce(Option<(Instant, T)>) -> (Option<(Instant, T)>, R),
    ) -> R {
        let found = entries.iter().position(|e| e.key == h);
        let (store, r) = f(found.map(|i| (self.instant(entries[i].at), entries[i].tag)));
        if let Some((t, tag)) = store {
            let at = self.ns(t);
            let i = found.unwrap_or_else(|| {
                let oldest = entries.iter().enumerate().min_by_key(|(_, e)| if e.key == 0 { 0 } else { e.at });
                oldest.map_or(0, |(i, _)| i)
            });
            entries[i] = Entry { key: h, at, tag };
        }
        r
    }
}

/// Last-request times for rate limits.
pub struct RateTable(TimeTable);

impl RateTable {
    /// A table that tracks at most `max_clients` clients (rounded up to whole buckets).
    pub fn new(max_clients: usize) -> RateTable {
        RateTable(TimeTable::new(max_clients))
    }

    /// How many clients the table can hold.
    pub fn capacity(&self) -> usize {
        self.0.capacity()
    }

    /// Bytes of the table itself (it never grows).
    pub fn memory_bytes(&self) -> usize {
        self.0.memory_bytes()
    }

    /// Admit a request from `key` at `now` if at least `interval` has passed
    /// since its last admitted request; otherwise return how long to wait.
    /// Refused requests do not move the clock.
    pub fn admit(&self, key: impl Hash, interval: Duration, now: Instant) -> Result<(), Duration> {
        self.0.update(key, |last| match last {
            Some(last) if now.saturating_duration_since(last) < interval => {
                (None, Err(interval - now.saturating_duration_since(last)))
            }
            _ => (Some(now), Ok(())),
        })
    }
}

/// All in-process state, each table bounded.
pub struct MemoryState {
    rates: RateTable,
    bans: TimeTable,
    /// Robots.txt reads: when, and which version ([`crate::robots::RobotsTxt::hash`]).
    seen: TimeTable<u64>,
}

impl MemoryState {
    /// Tables of at most `max_clients` entries each.
    pub fn new(max_clients: usize) -> MemoryState {
        MemoryState {
            rates: RateTable::new(max_clients),
            bans: TimeTable::new(max_clients),
            seen: TimeTable::new(max_clients),
        }
    }

    /// The rate table (its size is reported by the fault tests).
    pub fn rates(&self) -> &RateTable {
        &self.rates
    }

    /// Bytes of a region ([`MemoryState::in_region`]) with tables of
    /// `max_clients` entries each.
    pub fn region_bytes(max_clients: usize) -> usize {
        let n = max_clients.div_ceil(WAYS).max(1);
        REGION_HEADER + n * (2 * std::mem::size_of::<Mapped<()>>() + std::mem::size_of::<Mapped<u64>>())
    }

    /// The state in a region of memory that several processes map: tables
    /// of `max_clients` entries each, as [`MemoryState::new`] makes them.
    /// A region that holds no such tables yet (any bytes but the ones this
    /// function writes) is formatted; one that does is used as it is, so
    /// the state outlives the processes that use it (nginx keeps a zone
    /// across `nginx -s reload`). `None`: the region is too small or not
    /// aligned to 8.
    ///
    /// # Safety
    /// `base` is valid for reads and writes of `len` bytes for as long as
    /// the state is used, and every process using it maps the same memory
    /// (`MAP_SHARED`) whose monotonic clock is the same (one machine). The
    /// first call, which formats, must not race with another: make it in
    /// one process before the others start (nginx: the zone's `init`, in
    /// the master).
    pub unsafe fn in_region(base: *mut u8, len: usize, max_clients: usize) -> Option<MemoryState> {
        let n = max_clients.div_ceil(WAYS).max(1);
        if len < Self::region_bytes(max_clients) || base.align_offset(8) != 0 {
            return None;
        }
        let header = base as *mut RegionHeader;
        // SAFETY: the caller's region, large and aligned enough for the
        // header; it is plain integers, so any bytes there read as one.
        let found = unsafe { std::ptr::read(header) };
        let epoch = match found.check(n as u64) {
            Some(epoch) => epoch,
            None => {
                let (now, epoch) = (monotonic_ns(), Instant::now());
                remember_epoch(now, epoch);
                let h = RegionHeader {
                    magic: REGION_MAGIC,
                    buckets: n as u64,
                    seed: std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64),
                    epoch_ns: now,
                };
                // SAFETY: as above; zero is an empty, unlocked bucket.
                unsafe {
                    std::ptr::write_bytes(base.add(REGION_HEADER), 0, len - REGION_HEADER);
                    std::ptr::write(header, h);
                }
                epoch
            }
        };
        // SAFETY: written above, or checked as ours.
        let h = unsafe { std::ptr::read(header) };
        // SAFETY: the three tables follow the header, each `n` buckets,
        // inside `len` (checked above); `Mapped` is aligned to 8 at most.
        unsafe {
            let rates = base.add(REGION_HEADER) as *const Mapped<()>;
            let bans = rates.add(n);
            let seen = bans.add(n) as *const Mapped<u64>;
            let table = |buckets| TimeTable {
                buckets,
                hasher: Hashing::Seeded(foldhash::fast::FixedState::with_seed(h.seed)),
                epoch,
            };
            Some(MemoryState {
                rates: RateTable(table(Buckets::Mapped(std::slice::from_raw_parts(rates, n)))),
                bans: table(Buckets::Mapped(std::slice::from_raw_parts(bans, n))),
                seen: TimeTable {
                    buckets: Buckets::Mapped(std::slice::from_raw_parts(seen, n)),
                    hasher: Hashing::Seeded(foldhash::fast::FixedState::with_seed(h.seed)),
                    epoch,
                },
            })
        }
    }
}

/// The start of a region: what every process needs to find the same
/// entries. Plain integers only (any bytes are a header, to be checked),
/// in a layout of robotgate's own.
#[derive(Clone, Copy)]
#[repr(C)]
struct RegionHeader {
    magic: u64,
    /// Buckets per table.
    buckets: u64,
    /// The hash seed.
    seed: u64,
    /// The tables' epoch: the machine's monotonic clock (`CLOCK_MONOTONIC`,
    /// the same for every process), in nanoseconds.
    epoch_ns: u64,
}

impl RegionHeader {
    /// The epoch, as this process's [`Instant`], if the header is one this
    /// layout wrote for `buckets` buckets a table (and its epoch is not in
    /// the future).
    fn check(&self, buckets: u64) -> Option<Instant> {
        if self.magic != REGION_MAGIC || self.buckets != buckets {
            return None;
        }
        if let Some(&(_, epoch)) = epochs().iter().find(|(ns, _)| *ns == self.epoch_ns) {
            return Some(epoch);
        }
        let (now, instant) = (monotonic_ns(), Instant::now());
        let ago = now.checked_sub(self.epoch_ns)?;
        let epoch = instant.checked_sub(Duration::from_nanos(ago))?;
        remember_epoch(self.epoch_ns, epoch);
        Some(epoch)
    }
}

/// The region epochs this process read or wrote, as its `Instant`s (the
/// newest last, at most [`EPOCHS_KEPT`]): the two clocks cannot be read at
/// once, so an epoch converted again would move by the time between the two
/// reads. Kept, every view of a region in a process, and in the processes
/// it forks (nginx's workers, from the master that formats the zone and
/// reads it again at each reload), has the very same epoch.
static EPOCHS: Mutex<Vec<(u64, Instant)>> = Mutex::new(Vec::new());
const EPOCHS_KEPT: usize = 1024;

fn epochs() -> std::sync::MutexGuard<'static, Vec<(u64, Instant)>> {
    EPOCHS.lock().unwrap_or_else(|e| e.into_inner())
}

fn remember_epoch(ns: u64, epoch: Instant) {
    let mut kept = epochs();
    if kept.len() >= EPOCHS_KEPT {
        kept.remove(0);
    }
    kept.push((ns, epoch));
}

/// The monotonic clock `Instant` reads on Linux, in nanoseconds.
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec to fill; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

/// "robotgate state, layout 2" (1 kept a `std::time::Instant`, and a
/// holder's id without its start time).
const REGION_MAGIC: u64 = u64::from_be_bytes(*b"rgstate2");

/// Bytes the header takes (a cache line, so buckets start aligned).
const REGION_HEADER: usize = 64;

const _: () = assert!(std::mem::size_of::<RegionHeader>() <= REGION_HEADER);

impl State for MemoryState {
    fn admit(&self, key: &RateKey<'_>, interval: Duration, now: Instant) -> Result<(), Duration> {
        self.rates.admit(key, interval, now)
    }

    fn ban(&self, key: &BanKey<'_>, until: Instant) {
        self.bans.update(key, |old| (Some(old.map_or(until, |o| o.max(until))), ()));
    }

    fn banned(&self, key: &BanKey<'_>, now: Instant) -> Option<Duration> {
        self.bans.update(key, |until| (None, until.filter(|u| *u > now).map(|u| u - now)))
    }

    fn saw_robots(&self, key: &SeenKey<'_>, version: u64, now: Instant) {
        // A read announced late (by another instance) never replaces a later one.
        self.seen.update_tagged(key, |last| match last {
            Some((t, _)) if t > now => (None, ()),
            _ => (Some((now, version)), ()),
        });
    }

    fn robots_read(&self, key: &SeenKey<'_>) -> Option<(Instant, u64)> {
        self.seen.update_tagged(key, |last| (None, last))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    /// A child of `fork` (nginx's worker of its master) names itself in the
    /// locks it takes, not the parent whose cache it inherited.
    #[test]
    fn a_forked_child_names_itself() {
        let parent = process_id();
        assert_eq!(parent.pid(), std::process::id());
        // SAFETY: the child only reads its own id and /proc, then exits
        // without unwinding.
        match unsafe { libc::fork() } {
            0 => {
                let me = process_id();
                let ok = me.pid() == std::process::id() && me != parent;
                // SAFETY: ends the child at once.
                unsafe { libc::_exit(i32::from(!ok)) }
            }
            -1 => panic!("fork: {}", std::io::Error::last_os_error()),
            child => {
                let mut status = 0;
                // SAFETY: waits for the child made above.
                assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
                assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "the child named its parent");
            }
        }
        assert_eq!(process_id(), parent);
    }

    #[test]
    fn second_request_within_the_interval_waits() {
        let t = RateTable::new(16);
        let t0 = Instant::now();
        let i = Duration::from_secs(5);
        assert!(t.admit(("1.2.3.4", "bingbot"), i, t0).is_ok());
        let wait = t.admit(("1.2.3.4", "bingbot"), i, t0 + Duration::from_secs(2)).unwrap_err();
        assert_eq!(wait, Duration::from_secs(3));
        // Another client, or the same after the interval, is admitted.
        assert!(t.admit(("1.2.3.5", "bingbot"), i, t0 + Duration::from_secs(2)).is_ok());
        assert!(t.admit(("1.2.3.4", "bingbot"), i, t0 + Duration::from_secs(5)).is_ok());
    }

    #[test]
    fn refused_requests_do_not_reset_the_clock() {
        let t = RateTable::new(16);
        let t0 = Instant::now();
        let i = Duration::from_secs(10);
        t.admit(1u32, i, t0).unwrap();
        t.admit(1u32, i, t0 + Duration::from_secs(9)).unwrap_err();
        assert!(t.admit(1u32, i, t0 + Duration::from_secs(10)).is_ok());
    }

    /// Two views of one region (two processes of nginx, here two threads)
    /// see each other's bans, clocks and reads; a view made again finds
    /// them (a reload).
    #[test]
    fn views_of_one_region_share_everything() {
        let words = MemoryState::region_bytes(100).div_ceil(8);
        let region: &'static mut [u64] = Box::leak(vec![0u64; words].into_boxed_slice());
        let (base, len) = (region.as_mut_ptr() as *mut u8, words * 8);
        // SAFETY: a leaked, aligned region of `len` bytes, formatted here first.
        let a = unsafe { MemoryState::in_region(base, len, 100) }.unwrap();
        let b = unsafe { MemoryState::in_region(base, len, 100) }.unwrap();
        let client: IpAddr = "192.0.2.7".parse().unwrap();
        let now = Instant::now();
        let ban = BanKey { client, site: "s" };
        a.ban(&ban, now + Duration::from_secs(60));
        let rate = RateKey { client, site: "s", bot: "Bingbot" };
        a.admit(&rate, Duration::from_secs(5), now).unwrap();
        let seen = SeenKey::Bot { site: "s", name: "Googlebot" };
        std::thread::scope(|s| {
            s.spawn(|| {
                assert_eq!(b.banned(&ban, now + Duration::from_secs(10)), Some(Duration::from_secs(50)));
                assert_eq!(
                    b.admit(&rate, Duration::from_secs(5), now + Duration::from_secs(1)),
                    Err(Duration::from_secs(4))
                );
                b.saw_robots(&seen, 7, now);
            });
        });
        assert_eq!(a.robots_read(&seen).map(|(_, v)| v), Some(7));
        let again = unsafe { MemoryState::in_region(base, len, 100) }.unwrap();
        assert!(again.banned(&ban, now).is_some());
        assert_eq!(again.rates().capacity(), 100);
        // Too small, or another size: refused, or formatted afresh.
        assert!(unsafe { MemoryState::in_region(base, 64, 100) }.is_none());
        let other = unsafe { MemoryState::in_region(base, len, 50) }.unwrap();
        assert!(other.banned(&ban, now).is_none());
    }

    /// Threads hammering one region's buckets lose no update.
    #[test]
    fn region_locks_hold_under_contention() {
        let words = MemoryState::region_bytes(8).div_ceil(8);
        let region: &'static mut [u64] = Box::leak(vec![0u64; words].into_boxed_slice());
        // SAFETY: as above.
        let s = unsafe { MemoryState::in_region(region.as_mut_ptr() as *mut u8, words * 8, 8) }.unwrap();
        let t0 = Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..10_000 {
                        s.bans.update(1u8, |old| {
                            let next = old.unwrap_or(t0) + Duration::from_nanos(1);
                            (Some(next), ())
                        });
                    }
                });
            }
        });
        let last = s.bans.update(1u8, |old| (None, old)).unwrap();
        assert_eq!(last.duration_since(t0), Duration::from_nanos(40_000));
    }

    /// A bucket whose holder died (a worker killed while it held the lock)
    /// is taken from it: the next process waits a moment, not for ever.
    #[test]
    fn a_lock_held_by_a_dead_process_is_taken_back() {
        let words = MemoryState::region_bytes(8).div_ceil(8);
        let region: &'static mut [u64] = Box::leak(vec![0u64; words].into_boxed_slice());
        // SAFETY: as above.
        let s = unsafe { MemoryState::in_region(region.as_mut_ptr() as *mut u8, words * 8, 8) }.unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let Buckets::Mapped(buckets) = &s.bans.buckets else { panic!("a region's table is mapped") };
        for b in buckets.iter() {
            b.lock.store(Holder::of(dead, start_ticks(dead).unwrap_or(0)).0, Ordering::SeqCst);
        }
        let t0 = Instant::now();
        s.bans.update(1u8, |_| (Some(t0), ()));
        assert_eq!(s.bans.update(1u8, |old| (None, old)), Some(t0));
        // A live holder (this process, on another thread) is waited for.
        assert!(process_id().alive());
    }

    /// A holder's process id that a new process took after the holder died
    /// does not keep the lock: the start time tells them apart.
    #[test]
    fn a_reused_process_id_does_not_keep_a_lock() {
        let me = process_id();
        assert!(me.alive());
        assert_ne!(me.started(), 0, "/proc says when this process started");
        let reused = Holder::of(me.pid(), me.started().wrapping_add(1));
        assert!(!reused.alive());
        assert!(!Holder::of(0, 0).alive());
        let words = MemoryState::region_bytes(8).div_ceil(8);
        let region: &'static mut [u64] = Box::leak(vec![0u64; words].into_boxed_slice());
        // SAFETY: as above.
        let s = unsafe { MemoryState::in_region(region.as_mut_ptr() as *mut u8, words * 8, 8) }.unwrap();
        let Buckets::Mapped(buckets) = &s.bans.buckets else { panic!("a region's table is mapped") };
        for b in buckets.iter() {
            b.lock.store(reused.0, Ordering::SeqCst);
        }
        let t0 = Instant::now();
        s.bans.update(1u8, |_| (Some(t0), ()));
        assert_eq!(s.bans.update(1u8, |old| (None, old)), Some(t0));
    }

    #[test]
    fn a_start_time_is_read_past_any_command_name() {
        let line = b"4242 (a) b) (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(stat_start_ticks(line), Some(987_654));
        assert_eq!(stat_start_ticks(b"4242 (x) S 1 2"), None);
        assert_eq!(stat_start_ticks(b""), None);
    }

    proptest::proptest! {
        /// Whatever bytes a region holds (a zone nginx kept from another
        /// build, or garbage), it is read as plain integers and either used
        /// or formatted: never undefined behaviour, always a working state.
        #[test]
        fn a_region_of_any_bytes_is_used_or_formatted(
            words in proptest::collection::vec(proptest::num::u64::ANY, 64..200),
            keep_magic in proptest::bool::ANY,
        ) {
            let n = 40usize;
            let need = MemoryState::region_bytes(n).div_ceil(8);
            let mut words = words;
            words.resize(need.max(words.len()), 0x5a5a_5a5a_5a5a_5a5a);
            if keep_magic {
                words[0] = REGION_MAGIC;
                words[1] = n.div_ceil(WAYS) as u64;
                // An epoch long past: the header is taken as it is, over
                // buckets of garbage (locks included).
                words[3] = 1;
            }
            let region: &'static mut [u64] = Box::leak(words.into_boxed_slice());
            let len = region.len() * 8;
            // SAFETY: a leaked, aligned region of `len` bytes.
            let s = unsafe { MemoryState::in_region(region.as_mut_ptr() as *mut u8, len, n) }.unwrap();
            let client: IpAddr = "192.0.2.9".parse().unwrap();
            let now = Instant::now();
            let rate = RateKey { client, site: "s", bot: "b" };
            // A table whose entries are garbage may hold any time for the
            // key; once answered, the clock it set is kept.
            let _ = s.admit(&rate, Duration::from_secs(5), now);
            proptest::prop_assert!(s.admit(&rate, Duration::from_secs(5), now + Duration::from_secs(1)).is_err());
            let ban = BanKey { client, site: "s" };
            s.ban(&ban, now + Duration::from_secs(60));
            proptest::prop_assert!(s.banned(&ban, now).is_some());
        }
    }

    #[test]
    fn memory_is_fixed_whatever_the_number_of_clients() {
        let t = RateTable::new(1000);
        let before = t.memory_bytes();
        let t0 = Instant::now();
        for i in 0..100_000u32 {
            let _ = t.admit(i, Duration::from_secs(1), t0);
        }
        assert_eq!(t.memory_bytes(), before);
        assert_eq!(t.capacity(), 1000);
    }
}
