//! `state.redis` from inside nginx: the same keys, values, expiries and
//! announcements as the proxy's store (robotgate's `server::store::redis`),
//! so nginx workers and `robotgate serve` instances share one state.
//!
//! Each worker runs two helper threads, started with the worker when the
//! config names a store (a worker without one stays single-threaded):
//!
//! * the **asker** puts rate questions to the store (`SET key now NX PX
//!   interval`, then `PTTL` when refused), for requests parked meanwhile
//!   ([`crate::park`]), and writes and announces bans and robots.txt reads
//!   (`SET ... PX`, `PUBLISH`), which no request waits for;
//! * the **keeper** subscribes to the announcements and applies them to the
//!   workers' shared zone, loads the live keys when it (re)connects, checks
//!   the store every second, and reconnects after an outage.
//!
//! While the store is down (a failed or late command marks it so, logged
//! once), nothing waits on it: rate questions go to the zone, bans and reads
//! stay in this nginx; once it answers again, its keys are loaded again.
//! A question that waited in the asker's queue past its deadline is
//! answered "out of reach" without being sent.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use robotgate::config::SharedState;
use robotgate::state::series::Series;
use robotgate::state::shared::{Event, Question};
use robotgate::state::MemoryState;

use crate::park::{Found, Ticket, Waker};

/// How often the keeper checks a store that is up, and retries one that is down.
const KEEP_EVERY: Duration = Duration::from_secs(1);

/// The most keys of each kind loaded when connecting (as the proxy).
const LOAD_MAX: usize = 100_000;

/// Jobs the asker holds before it answers new questions "out of reach" at
/// once: a store slower than the traffic sheds load, not memory.
const QUEUE_MAX: usize = 10_000;

enum Job {
    Rate { question: Question, ticket: Ticket, deadline: Instant },
    Announce(Event),
}

/// Where the threads put what they learn: the zone's tables and counters,
/// which outlive them (the threads are joined at the worker's exit).
#[derive(Clone, Copy)]
pub struct Zone {
    pub state: &'static MemoryState,
    pub series: &'static Series,
}

/// This worker's store.
pub struct Store {
    shared: Arc<Inner>,
    jobs: Sender<Job>,
    threads: Vec<JoinHandle<()>>,
}

struct Inner {
    settings: SharedState,
    client: redis::Client,
    up: AtomicBool,
    /// Bumped by the keeper at each (re)connection: the asker's older
    /// connection (maybe to a server since restarted) is not used again.
    generation: AtomicU64,
    stop: AtomicBool,
    queued: std::sync::atomic::AtomicUsize,
    zone: Zone,
    waker: Arc<Waker>,
}

impl Store {
    /// Start the worker's threads for `settings`.
    ///
    /// # Errors
    /// The URL is not one the client accepts, or a thread cannot start.
    pub fn start(settings: &SharedState, zone: Zone, waker: Arc<Waker>) -> Result<Store, String> {
        let client = redis::Client::open(settings.url.as_str())
            .map_err(|e| format!("state.redis {}: {e}", settings.redacted_url()))?;
        let shared = Arc::new(Inner {
            settings: settings.clone(),
            client,
            up: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            queued: std::sync::atomic::AtomicUsize::new(0),
            zone,
            waker,
        });
        let (jobs, queue) = std::sync::mpsc::channel();
        let mut threads = Vec::new();
        let keeper = shared.clone();
        threads.push(
            std::thread::Builder::new()
                .name("robotgate-keeper".into())
                .spawn(move || keep(&keeper))
                .map_err(|e| e.to_string())?,
        );
        let asker = shared.clone();
        threads.push(
            std::thread::Builder::new()
                .name("robotgate-asker".into())
                .spawn(move || ask(&asker, &queue))
                .map_err(|e| e.to_string())?,
        );
        Ok(Store { shared, jobs, threads })
    }

    /// Whether the store answered lately: rate questions go to it only then.
    pub fn is_up(&self) -> bool {
        self.shared.up.load(Ordering::Relaxed)
    }

    /// Whether a rate question would be sent now: the store is up and the
    /// asker's queue has room (else the caller asks the zone).
    pub fn takes_questions(&self) -> bool {
        self.is_up() && self.shared.queued.load(Ordering::Relaxed) < QUEUE_MAX
    }

    /// Put `question` to the store for the parked request of `ticket`; its
    /// answer comes back through the waker. `false`: the asker is gone, and
    /// nothing will answer.
    pub fn ask(&self, question: Question, ticket: Ticket) -> bool {
        let deadline = Instant::now() + self.shared.settings.timeout;
        self.shared.queued.fetch_add(1, Ordering::Relaxed);
        self.jobs.send(Job::Rate { question, ticket, deadline }).is_ok()
    }

    /// Write and announce a ban or a robots.txt read, in the background.
    pub fn announce(&self, event: Event) {
        if self.takes_questions() {
            self.shared.queued.fetch_add(1, Ordering::Relaxed);
            let _ = self.jobs.send(Job::Announce(event));
        }
    }

    /// Stop the threads and wait for them (at most about a second: each
    /// blocking read is bounded).
    pub fn stop(self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        drop(self.jobs);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

impl Inner {
    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.settings.prefix)
    }

    fn channel(&self) -> String {
        self.key("events")
    }

    fn timeout(&self) -> Duration {
        self.settings.timeout.max(Duration::from_millis(100))
    }

    /// A connection with every read and write bounded by the timeout.
    fn connect(&self) -> redis::RedisResult<redis::Connection> {
        let timeout = self.timeout().max(Duration::from_secs(1));
        let conn = self.client.get_connection_with_timeout(timeout)?;
        conn.set_read_timeout(Some(self.timeout()))?;
        conn.set_write_timeout(Some(self.timeout()))?;
        Ok(conn)
    }

    /// A command failed: count it and, the first time since the store was
    /// up, say so and mark it down.
    fn failed(&self, during: &str, error: &str) {
        self.zone.series.add("robotgate_state_errors_total", &[], &[], 1);
        if self.up.swap(false, Ordering::Relaxed) {
            self.waker.note(
                ngx::ffi::NGX_LOG_WARN as usize,
                format!(
                    "shared state store {} unreachable ({during}: {error}): serving from this nginx's memory until it is back",
                    self.settings.redacted_url()
                ),
            );
        }
    }

    fn apply(&self, payload: &[u8]) -> bool {
        match serde_json::from_slice::<Event>(payload) {
            Ok(event) => {
                event.apply(self.zone.state, Instant::now(), unix_ms());
                true
            }
            Err(_) => false,
        }
    }

    /// Apply the events stored under `pattern` (at most [`LOAD_MAX`]).
    fn load(&self, conn: &mut redis::Connection, pattern: &str) -> redis::RedisResult<usize> {
        let (mut cursor, mut n) = (0u64, 0);
        loop {
            let (next, keys): (u64, Vec<String>) =
                redis::cmd("SCAN").arg(cursor).arg("MATCH").arg(pattern).arg("COUNT").arg(1000).query(conn)?;
            if !keys.is_empty() {
                let values: Vec<Option<Vec<u8>>> = redis::cmd("MGET").arg(&keys).query(conn)?;
                n += values.iter().flatten().filter(|v| self.apply(v)).count();
            }
            cursor = next;
            if cursor == 0 || n >= LOAD_MAX {
                return Ok(n);
            }
        }
    }
}

/// Now, in Unix milliseconds.
fn unix_ms() -> u64 {
    robotgate::policy::Clock::System.unix_ms()
}

/// The keeper thread.
fn keep(s: &Inner) {
    let mut said_down = false;
    while !s.stop.load(Ordering::Relaxed) {
        match keep_connected(s) {
            Ok(()) => return,
            Err(lost) => {
                let was_up = s.up.load(Ordering::Relaxed);
                // Counted, and said if the store was up (else the asker's
                // failure was counted and said already).
                if let Some((during, e)) = &lost {
                    s.failed(during, e);
                }
                s.up.store(false, Ordering::Relaxed);
                if !was_up && !said_down {
                    let why = lost.map_or_else(String::new, |(during, e)| format!(" ({during}: {e})"));
                    s.waker.note(
                        ngx::ffi::NGX_LOG_WARN as usize,
                        format!(
                            "shared state store {} unreachable{why}: serving from this nginx's memory; retrying every second",
                            s.settings.redacted_url()
                        ),
                    );
                }
                said_down = true;
            }
        }
        let until = Instant::now() + KEEP_EVERY;
        while Instant::now() < until && !s.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// What ended a connection: the step and the error, or `None` when a
/// command of the asker failed (counted and said by it).
type Lost = Option<(&'static str, String)>;

/// Connect, subscribe, load, mark up, and apply announcements until the
/// store fails (`Err`) or the worker stops (`Ok`).
fn keep_connected(s: &Inner) -> Result<(), Lost> {
    let lost = |during: &'static str| move |e: redis::RedisError| Some((during, e.to_string()));
    let mut conn = s.connect().map_err(lost("connect"))?;
    let mut sub = s.connect().map_err(lost("connect"))?;
    let mut pubsub = sub.as_pubsub();
    pubsub.subscribe(s.channel()).map_err(lost("subscribe"))?;
    // Subscribed first, then loaded: nothing announced in between is missed.
    let mut loaded = 0;
    for pattern in ["ban:*", "robots:*"] {
        loaded += s.load(&mut conn, &s.key(pattern)).map_err(lost("load"))?;
    }
    pubsub.set_read_timeout(Some(Duration::from_millis(250))).map_err(lost("subscribe"))?;
    s.generation.fetch_add(1, Ordering::AcqRel);
    s.up.store(true, Ordering::Relaxed);
    s.waker.note(
        ngx::ffi::NGX_LOG_NOTICE as usize,
        format!("shared state store {} connected ({loaded} keys loaded)", s.settings.redacted_url()),
    );
    let mut pinged = Instant::now();
    loop {
        if s.stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        match pubsub.get_message() {
            Ok(msg) => {
                s.apply(msg.get_payload_bytes());
            }
            Err(e) if e.is_timeout() => {}
            Err(e) => return Err(lost("subscription")(e)),
        }
        if pinged.elapsed() >= KEEP_EVERY {
            pinged = Instant::now();
            redis::cmd("PING").query::<String>(&mut conn).map_err(lost("ping"))?;
            // A command of the asker failed meanwhile: connect afresh.
            if !s.up.load(Ordering::Relaxed) {
                return Err(None);
            }
        }
    }
}

/// The asker thread: one connection, made when the store is up and a job
/// comes, dropped at a failure.
fn ask(s: &Inner, queue: &Receiver<Job>) {
    let mut conn: Option<(u64, redis::Connection)> = None;
    loop {
        let job = match queue.recv_timeout(Duration::from_millis(250)) {
            Ok(job) => job,
            Err(RecvTimeoutError::Timeout) => {
                if s.stop.load(Ordering::Relaxed) {
                    return;
                }
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
        s.queued.fetch_sub(1, Ordering::Relaxed);
        match job {
            Job::Rate { question, ticket, deadline } => {
                let answer = if Instant::now() >= deadline || !s.up.load(Ordering::Relaxed) {
                    None
                } else {
                    with_connection(s, &mut conn, "rate", |c| admit(s, c, &question))
                };
                s.waker.finish(ticket, Found::Rate(answer));
            }
            Job::Announce(event) => {
                if s.up.load(Ordering::Relaxed) {
                    let _ = with_connection(s, &mut conn, "announce", |c| announce(s, c, &event));
                }
            }
        }
    }
}

/// Run `f` on the asker's connection, made afresh when the keeper has
/// connected since; a failure drops it and marks the store down.
fn with_connection<T>(
    s: &Inner,
    conn: &mut Option<(u64, redis::Connection)>,
    during: &str,
    f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
) -> Option<T> {
    let generation = s.generation.load(Ordering::Acquire);
    if conn.as_ref().is_none_or(|(g, _)| *g != generation) {
        *conn = None;
        match s.connect() {
            Ok(c) => *conn = Some((generation, c)),
            Err(e) => {
                s.failed(during, &e.to_string());
                return None;
            }
        }
    }
    match f(&mut conn.as_mut()?.1) {
        Ok(v) => Some(v),
        Err(e) => {
            *conn = None;
            s.failed(during, &e.to_string());
            None
        }
    }
}

/// The proxy's rate question: `SET key now NX PX interval` admits (only one
/// instance can make the key); a refused one asks `PTTL` for its wait.
fn admit(s: &Inner, conn: &mut redis::Connection, q: &Question) -> redis::RedisResult<Result<(), Duration>> {
    let ms = q.interval.as_millis().clamp(1, u128::from(u64::MAX)) as u64;
    let key = s.key(&q.key);
    let admitted: Option<String> =
        redis::cmd("SET").arg(&key).arg(unix_ms()).arg("NX").arg("PX").arg(ms).query(conn)?;
    if admitted.is_some() {
        return Ok(Ok(()));
    }
    let left: i64 = redis::cmd("PTTL").arg(&key).query(conn)?;
    // -2: the key expired in between, so the wait is over; wait a moment anyway.
    Ok(Err(Duration::from_millis(left.clamp(1, ms as i64) as u64)))
}

/// Write an event under its key, for its time, and announce it.
fn announce(s: &Inner, conn: &mut redis::Connection, event: &Event) -> redis::RedisResult<()> {
    let Ok(value) = serde_json::to_string(event) else { return Ok(()) };
    let ttl = event.ttl(unix_ms()).as_millis() as u64;
    redis::pipe()
        .cmd("SET")
        .arg(s.key(&event.key()))
        .arg(&value)
        .arg("PX")
        .arg(ttl)
        .ignore()
        .cmd("PUBLISH")
        .arg(s.channel())
        .arg(&value)
        .ignore()
        .query(conn)
}
