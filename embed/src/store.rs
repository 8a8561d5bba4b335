//! `state.redis` from inside an edge (the nginx, Envoy and HAProxy
//! modules): the same keys, values, expiries and announcements as the
//! proxy's store (robotgate's `server::store::redis`), so the edges'
//! processes and `robotgate serve` instances share one state.
//!
//! A store runs two helper threads (an nginx worker's, a module's in Envoy
//! or HAProxy), started when the config names a store:
//!
//! * the **asker** puts rate questions to the store (`SET key now NX PX
//!   interval`, then `PTTL` when refused), for requests parked meanwhile
//!   (each answered through the [`Answered`] it came with), and writes and
//!   announces bans and robots.txt reads (`SET ... PX`, `PUBLISH`), which no
//!   request waits for;
//! * the **keeper** subscribes to the announcements and applies them to the
//!   edge's state ([`Host::apply`]), loads the live keys when it
//!   (re)connects, checks the store every second, and reconnects after an
//!   outage.
//!
//! While the store is down (a failed or late command marks it so, logged
//! once), nothing waits on it: rate questions go to the edge's own tables,
//! bans and reads stay in its process; once it answers again, its keys are
//! loaded again (within [`wire::LOAD_FOR`]).
//!
//! Every command has a deadline of its own, whatever the store sends
//! meanwhile ([`crate::conn`]): a rate question `state.timeout_ms` from
//! when it was asked (a question that waited in the asker's queue past it
//! is answered "out of reach" without being sent), the rest
//! [`wire::background_within`]. The asker never connects: the keeper makes
//! its connection beside its own, so no question waits for a handshake. The
//! commands themselves are the core's ([`robotgate::state::wire`]), as the
//! proxy's are.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use std::sync::Mutex;

use robotgate::config::SharedState;
use robotgate::state::shared::{Event, Question};
use robotgate::state::wire::{self, Endpoint};

use crate::conn::Conn;
use crate::Level;

/// How often the keeper checks a store that is up, and retries one that is down.
const KEEP_EVERY: Duration = Duration::from_secs(1);

/// Jobs the asker holds before it answers new questions "out of reach" at
/// once: a store slower than the traffic sheds load, not memory.
const QUEUE_MAX: usize = 10_000;

/// The store's answer to a rate question: admitted, refused for this long,
/// or none (out of reach, or past its deadline: the edge's own tables answer).
pub type RateAnswer = Option<Result<(), Duration>>;

/// Takes a rate question's answer, on the asker's thread: it wakes the
/// request parked for it.
pub type Answered = Box<dyn FnOnce(RateAnswer) + Send>;

enum Job {
    Rate { question: Question, answered: Answered, deadline: Instant },
    Announce(Event),
}

/// The edge's side of a store: where the threads put what they learn, and
/// how they speak. Called from the store's threads.
pub trait Host: Send + Sync + 'static {
    /// An announcement of another instance's, or a live key loaded: put it
    /// in the edge's state.
    fn apply(&self, event: &Event);
    /// A command failed (`robotgate_state_errors_total`).
    fn failed(&self);
    /// Say `message` in the edge's log.
    fn say(&self, level: Level, message: String);
}

/// A store's two threads, and their queue.
pub struct Store<H> {
    shared: Arc<Inner<H>>,
    jobs: Sender<Job>,
    threads: Vec<JoinHandle<()>>,
}

struct Inner<H> {
    settings: SharedState,
    endpoint: Endpoint,
    tls: Arc<rustls::ClientConfig>,
    wire: wire::Store,
    up: AtomicBool,
    /// Bumped by the keeper at each (re)connection: the asker's older
    /// connection (maybe to a server since restarted) is not used again.
    generation: AtomicU64,
    /// The asker's connection, made by the keeper with its own.
    handoff: Mutex<Option<(u64, Conn)>>,
    stop: AtomicBool,
    queued: std::sync::atomic::AtomicUsize,
    host: H,
    /// Whose memory serves while the store is down ("this nginx").
    here: &'static str,
}

impl<H: Host> Store<H> {
    /// Start the threads for `settings`, with `host` (the edge's state and
    /// log); `here` names the process in what is said ("this nginx").
    ///
    /// # Errors
    /// The URL is not one the client accepts, or a thread cannot start.
    pub fn start(settings: &SharedState, host: H, here: &'static str) -> Result<Store<H>, String> {
        let endpoint =
            Endpoint::parse(&settings.url).map_err(|e| format!("state.redis {}: {e}", settings.redacted_url()))?;
        let tls = if endpoint.tls { crate::keys::tls_config() } else { Arc::new(plain_config()) };
        let shared = Arc::new(Inner {
            settings: settings.clone(),
            endpoint,
            tls,
            wire: wire::Store::new(&settings.prefix),
            up: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            handoff: Mutex::new(None),
            stop: AtomicBool::new(false),
            queued: std::sync::atomic::AtomicUsize::new(0),
            host,
            here,
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
    /// asker's queue has room (else the edge's own tables answer).
    pub fn takes_questions(&self) -> bool {
        self.is_up() && self.shared.queued.load(Ordering::Relaxed) < QUEUE_MAX
    }

    /// Put `question` to the store for a parked request; `answered` takes
    /// the answer, on the asker's thread, whatever it is. `false`: the
    /// asker is gone, and nothing will answer.
    pub fn ask(&self, question: Question, answered: Answered) -> bool {
        let deadline = Instant::now() + self.shared.settings.timeout;
        self.shared.queued.fetch_add(1, Ordering::Relaxed);
        let sent = self.jobs.send(Job::Rate { question, answered, deadline });
        if sent.is_err() {
            self.shared.queued.fetch_sub(1, Ordering::Relaxed);
        }
        sent.is_ok()
    }

    /// The edge's side, as given to [`Store::start`].
    pub fn host(&self) -> &H {
        &self.shared.host
    }

    /// Write and announce a ban or a robots.txt read, in the background.
    pub fn announce(&self, event: Event) {
        if self.takes_questions() {
            self.shared.queued.fetch_add(1, Ordering::Relaxed);
            let _ = self.jobs.send(Job::Announce(event));
        }
    }

    /// Have the threads stop (within about a second), without waiting.
    pub fn halt(&self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }

    /// Stop the threads and wait for them (at most about a second: each
    /// blocking command is bounded).
    pub fn stop(self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        drop(self.jobs);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// A TLS configuration never used (the store is `redis://`): no roots read.
fn plain_config() -> rustls::ClientConfig {
    rustls::ClientConfig::builder().with_root_certificates(rustls::RootCertStore::empty()).with_no_client_auth()
}

impl<H: Host> Inner<H> {
    /// A connection, made within [`wire::connect_within`].
    fn connect(&self) -> Result<Conn, String> {
        Conn::open(&self.endpoint, &self.tls, Instant::now() + wire::connect_within(self.settings.timeout))
    }

    /// The deadline of a command no request waits for.
    fn background(&self) -> Instant {
        Instant::now() + wire::background_within(self.settings.timeout)
    }

    /// A command failed: count it and, the first time since the store was
    /// up, say so and mark it down.
    fn failed(&self, during: &str, error: &str) {
        self.host.failed();
        if self.up.swap(false, Ordering::Relaxed) {
            self.host.say(
                Level::Warn,
                format!(
                    "shared state store {} unreachable ({during}: {error}): serving from {}'s memory until it is back",
                    self.settings.redacted_url(),
                    self.here
                ),
            );
        }
    }

    /// Apply the live bans and reads ([`wire::Loading`]), all within
    /// [`wire::LOAD_FOR`].
    fn load(&self, conn: &mut Conn) -> Result<usize, String> {
        let deadline = Instant::now() + wire::LOAD_FOR;
        let mut loading = self.wire.loading();
        let mut next = loading.first();
        while let Some(c) = next {
            let reply = conn.one(&c, deadline).map_err(|e| {
                if Instant::now() >= deadline {
                    format!("loading the live keys took longer than {} s", wire::LOAD_FOR.as_secs())
                } else {
                    e
                }
            })?;
            next = loading.feed(reply, |e| self.host.apply(&e)).map_err(|e| e.to_string())?;
        }
        Ok(loading.loaded())
    }
}

/// Now, in Unix milliseconds.
fn unix_ms() -> u64 {
    robotgate::policy::Clock::System.unix_ms()
}

/// The keeper thread.
fn keep<H: Host>(s: &Inner<H>) {
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
                    s.host.say(
                        Level::Warn,
                        format!(
                            "shared state store {} unreachable{why}: serving from {}'s memory; retrying every second",
                            s.settings.redacted_url(),
                            s.here
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
fn keep_connected<H: Host>(s: &Inner<H>) -> Result<(), Lost> {
    let lost = |during: &'static str| move |e: String| Some((during, e));
    let mut conn = s.connect().map_err(lost("connect"))?;
    let mut sub = s.connect().map_err(lost("connect"))?;
    sub.send_only(&s.wire.subscribe(), s.background()).map_err(lost("subscribe"))?;
    sub.reply(Some(s.background())).map_err(lost("subscribe"))?;
    // Subscribed first, then loaded: nothing announced in between is missed.
    let loaded = s.load(&mut conn).map_err(lost("load"))?;
    let asker = s.connect().map_err(lost("connect"))?;
    let generation = s.generation.fetch_add(1, Ordering::AcqRel) + 1;
    *s.handoff.lock().unwrap_or_else(|e| e.into_inner()) = Some((generation, asker));
    s.up.store(true, Ordering::Relaxed);
    s.host
        .say(Level::Info, format!("shared state store {} connected ({loaded} keys loaded)", s.settings.redacted_url()));
    let mut pinged = Instant::now();
    loop {
        if s.stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        // A quarter of a second at most; a partial message is kept.
        if let Some(reply) = sub.reply(None).map_err(lost("subscription"))? {
            if let Some(event) = wire::message(&reply).and_then(|p| serde_json::from_slice::<Event>(p).ok()) {
                s.host.apply(&event);
            }
        }
        if pinged.elapsed() >= KEEP_EVERY {
            pinged = Instant::now();
            conn.one(&wire::Store::ping(), s.background()).map_err(lost("ping"))?;
            // A command of the asker failed meanwhile: connect afresh.
            if !s.up.load(Ordering::Relaxed) {
                return Err(None);
            }
        }
    }
}

/// The asker thread: the connection the keeper made for it, dropped at a
/// failure (the keeper then connects afresh).
fn ask<H: Host>(s: &Inner<H>, queue: &Receiver<Job>) {
    let mut conn: Option<(u64, Conn)> = None;
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
            Job::Rate { question, answered, deadline } => {
                let answer = if Instant::now() >= deadline || !s.up.load(Ordering::Relaxed) {
                    None
                } else {
                    with_connection(s, &mut conn, "rate", |c| admit(s, c, &question, deadline))
                };
                answered(answer);
            }
            Job::Announce(event) => {
                if s.up.load(Ordering::Relaxed) {
                    let _ = with_connection(s, &mut conn, "announce", |c| announce(s, c, &event));
                }
            }
        }
    }
}

/// Run `f` on the asker's connection, taken afresh when the keeper has
/// connected since; a failure drops it and marks the store down.
fn with_connection<H: Host, T>(
    s: &Inner<H>,
    conn: &mut Option<(u64, Conn)>,
    during: &str,
    f: impl FnOnce(&mut Conn) -> Result<T, String>,
) -> Option<T> {
    let generation = s.generation.load(Ordering::Acquire);
    if conn.as_ref().is_none_or(|(g, _)| *g != generation) {
        *conn = s.handoff.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
    let c = conn.as_mut().filter(|(g, _)| *g == generation)?;
    match f(&mut c.1) {
        Ok(v) => Some(v),
        Err(e) => {
            *conn = None;
            s.failed(during, &e);
            None
        }
    }
}

/// The rate question ([`wire::Store::admit`], then [`wire::Store::wait`]
/// when refused), both by the question's deadline.
fn admit<H: Host>(
    s: &Inner<H>,
    conn: &mut Conn,
    q: &Question,
    deadline: Instant,
) -> Result<Result<(), Duration>, String> {
    let set = conn.one(&s.wire.admit(q, unix_ms()), deadline)?;
    if wire::admitted(&set).map_err(|e| e.to_string())? {
        return Ok(Ok(()));
    }
    let left = conn.one(&s.wire.wait(q), deadline)?;
    Ok(Err(wire::wait(q, &left).map_err(|e| e.to_string())?))
}

/// Write an event under its key, for its time, and announce it.
fn announce<H: Host>(s: &Inner<H>, conn: &mut Conn, event: &Event) -> Result<(), String> {
    let Some(commands) = s.wire.announce(event, unix_ms()) else { return Ok(()) };
    for reply in conn.call(&commands, s.background())? {
        reply.ok().map_err(|e| e.to_string())?;
    }
    Ok(())
}
