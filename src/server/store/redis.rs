//! State shared between instances in Redis or Valkey (`state.redis`), over
//! the Redis protocol with the `redis` crate's multiplexed tokio connection:
//! one connection carries every request's commands, pipelined.
//!
//! What lives there, under `state.prefix` (default `robotgate:`):
//!
//! | key                                   | value                    | expires                  |
//! |---------------------------------------|--------------------------|--------------------------|
//! | `rate:{site}:{bot}:{client}`          | admit time (Unix ms)     | after the bot's interval |
//! | `ban:{site}:{client}`                 | the ban event (JSON)     | when the ban ends        |
//! | `robots:{site}:bot:{name}`            | the read event (JSON)    | 24 h after the read      |
//! | `robots:{site}:client:{ip}:{ua hash}` | the read event (JSON)    | 24 h after the read      |
//! | `rdns:{ip}:{suffixes hash}`           | the DNS verdict (JSON)   | with the verdict         |
//!
//! and ban and read events are announced on the channel `{prefix}events`.
//!
//! * A rate question is one round trip (`SET NX PX`, and `PTTL` for the
//!   wait): two instances cannot both admit a bot within its interval.
//! * Bans and robots.txt reads are written and announced; every instance
//!   applies the announcements to its local tables, and loads the live keys
//!   when it (re)connects. Checking them never touches the store.
//! * DNS verdicts are looked up before a reverse-DNS check, and stored after one.
//!
//! Failure: a command that fails or takes longer than `state.timeout_ms`
//! marks the store down (logged once, counted in
//! `robotgate_state_errors_total`). While it is down, no request waits on
//! it: rate questions go to the local tables (fail-open), bans and reads
//! stay local. A keeper task reconnects every second and, once the store
//! answers, loads its keys again (within [`LOAD_FOR`]: a store whose SCAN
//! never ends is unreachable, logged once) and marks it up.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use async_trait::async_trait;
use futures_util::StreamExt;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use redis::aio::MultiplexedConnection;
use redis::AsyncConnectionConfig;
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use crate::config::SharedState;
use crate::identity::rdns::Failure;
use crate::server::telemetry::metrics;
use crate::server::verify::dns::DnsVerdict;
use crate::state::shared::{fnv1a, Event, Question};
use crate::state::MemoryState;

/// How often the keeper checks a store that is up, and retries one that is down.
const KEEP_EVERY: Duration = Duration::from_secs(1);

/// The most keys of each kind loaded when connecting; the rest arrive as
/// they are announced or not at all (as if evicted from the local tables).
const LOAD_MAX: usize = 100_000;

/// The longest loading the live keys may take (SCAN and MGET together, every
/// pattern): a store whose SCAN never ends, or that answers at a trickle,
/// is unreachable, not a keeper stuck for ever (issue #52).
pub const LOAD_FOR: Duration = Duration::from_secs(10);

/// The shared store of one process.
pub struct SharedStore {
    settings: SharedState,
    client: redis::Client,
    /// The keeper's connection, driven by the keeper's runtime.
    conn: ArcSwapOption<MultiplexedConnection>,
    /// The requests' connection, made from the proxy's runtime so that its
    /// driver runs beside the requests (no wake-up of another runtime's
    /// thread per command), with the generation it belongs to.
    request_conn: ArcSwapOption<(u64, MultiplexedConnection)>,
    /// Bumped at every (re)connection of the keeper: older request
    /// connections are not used again.
    generation: AtomicU64,
    /// A request is making `request_conn`.
    connecting: AtomicBool,
    up: AtomicBool,
    local: Arc<MemoryState>,
    check_now: Notify,
}

/// Now, in Unix milliseconds.
pub fn unix_ms() -> u64 {
    crate::policy::Clock::System.unix_ms()
}

impl SharedStore {
    /// A store for `settings` in front of the process's `local` tables. It
    /// is down until [`SharedStore::connect`] or the keeper reaches it.
    ///
    /// # Errors
    /// The URL is not one the client accepts.
    pub fn new(settings: &SharedState, local: Arc<MemoryState>) -> Result<SharedStore, String> {
        let client = redis::Client::open(settings.url.as_str())
            .map_err(|e| format!("state.redis {}: {e}", settings.redacted_url()))?;
        Ok(SharedStore {
            settings: settings.clone(),
            client,
            conn: ArcSwapOption::empty(),
            request_conn: ArcSwapOption::empty(),
            generation: AtomicU64::new(0),
            connecting: AtomicBool::new(false),
            up: AtomicBool::new(false),
            local,
            check_now: Notify::new(),
        })
    }

    /// Whether the store answered lately.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    /// The store's URL, password hidden.
    pub fn redacted_url(&self) -> String {
        self.settings.redacted_url()
    }

    /// The local tables.
    pub fn local(&self) -> &MemoryState {
        &self.local
    }

    fn key(&self, name: &str) -> String {
        let mut k = String::with_capacity(self.settings.prefix.len() + name.len());
        k.push_str(&self.settings.prefix);
        k.push_str(name);
        k
    }

    fn channel(&self) -> String {
        self.key("events")
    }

    /// The keeper's connection, while the store is up.
    fn connection(&self) -> Option<MultiplexedConnection> {
        if !self.is_up() {
            return None;
        }
        self.conn.load().as_deref().cloned()
    }

    fn connection_config(&self) -> AsyncConnectionConfig {
        let timeout = self.settings.timeout.max(Duration::from_secs(1));
        AsyncConnectionConfig::new().set_connection_timeout(Some(timeout)).set_response_timeout(Some(timeout))
    }

    /// The connection for a request, while the store is up: the requests'
    /// own. The first request that finds none for this generation starts
    /// making it, in a task on its own runtime, and uses the keeper's
    /// meanwhile: no request waits for a connection to be made.
    fn request_connection(self: &Arc<Self>) -> Option<MultiplexedConnection> {
        if !self.is_up() {
            return None;
        }
        let generation = self.generation.load(Ordering::Acquire);
        if let Some(c) = self.request_conn.load().as_deref().filter(|(g, _)| *g == generation) {
            return Some(c.1.clone());
        }
        if !self.connecting.swap(true, Ordering::AcqRel) {
            let this = self.clone();
            tokio::spawn(async move {
                let timeout = this.settings.timeout.max(Duration::from_secs(1));
                let config = this.connection_config();
                let made =
                    tokio::time::timeout(timeout, this.client.get_multiplexed_async_connection_with_config(&config));
                if let Ok(Ok(c)) = made.await {
                    this.request_conn.store(Some(Arc::new((generation, c))));
                }
                this.connecting.store(false, Ordering::Release);
            });
        }
        self.connection()
    }

    /// Count a failed command, and on the first since the store was up, say
    /// so and mark it down.
    fn failed(&self, what: &str, error: &str) {
        metrics().state_errors.inc();
        if self.up.swap(false, Ordering::Relaxed) {
            tracing::warn!(target: "robotgate::state", store = %self.settings.redacted_url(), during = what, error = %error,
                "shared state store unreachable: serving from this instance's memory until it is back");
            metrics().state_up.set(0);
            self.check_now.notify_one();
        }
    }

    /// Run a command future until `deadline`; `None` (counted, store marked
    /// down) when it fails or runs out.
    async fn bounded<T>(
        &self,
        what: &str,
        deadline: tokio::time::Instant,
        fut: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Option<T> {
        match tokio::time::timeout_at(deadline, fut).await {
            Ok(Ok(v)) => Some(v),
            Ok(Err(e)) => {
                self.failed(what, &e.to_string());
                None
            }
            Err(_) => {
                self.failed(what, "timed out");
                None
            }
        }
    }

    /// Put a rate question to the store: `Some(Ok)` admitted, `Some(Err)`
    /// wait that long, `None` the store cannot answer now (ask the local
    /// tables). Waits at most `state.timeout_ms`.
    ///
    /// `SET key now NX PX interval` admits atomically (only one instance
    /// can create the key): one round trip for an admitted request. A
    /// refused one asks `PTTL` next, for its `Retry-After`. (A Lua script
    /// would do both in one step, at about twice Redis's CPU per question.)
    pub async fn admit(self: &Arc<Self>, q: &Question) -> Option<Result<(), Duration>> {
        let deadline = tokio::time::Instant::now() + self.settings.timeout;
        let mut conn = self.request_connection()?;
        let ms = q.interval.as_millis().clamp(1, u128::from(u64::MAX)) as u64;
        let key = self.key(&q.key);
        let mut set = redis::cmd("SET");
        set.arg(&key).arg(unix_ms()).arg("NX").arg("PX").arg(ms);
        let admitted: Option<String> = self.bounded("rate", deadline, set.query_async(&mut conn)).await?;
        if admitted.is_some() {
            return Some(Ok(()));
        }
        let left: i64 = self.bounded("rate", deadline, redis::cmd("PTTL").arg(&key).query_async(&mut conn)).await?;
        // -2: the key expired in between, so the wait is over; wait a moment anyway.
        Some(Err(Duration::from_millis(left.clamp(1, ms as i64) as u64)))
    }

    /// Write an event and announce it, in the background: the request that
    /// made it does not wait.
    pub fn announce(self: &Arc<Self>, event: Event) {
        let Some(mut conn) = self.connection() else { return };
        let this = self.clone();
        tokio::spawn(async move {
            let Ok(value) = serde_json::to_string(&event) else { return };
            let ttl = event.ttl(unix_ms()).as_millis() as u64;
            let mut pipe = redis::pipe();
            pipe.cmd("SET").arg(this.key(&event.key())).arg(&value).arg("PX").arg(ttl).ignore();
            pipe.cmd("PUBLISH").arg(this.channel()).arg(&value).ignore();
            let deadline = tokio::time::Instant::now() + this.settings.timeout * 4;
            let _: Option<()> = this.bounded("announce", deadline, pipe.query_async(&mut conn)).await;
        });
    }

    fn rdns_key(&self, ip: IpAddr, suffixes: &[String]) -> String {
        self.key(&format!(
            "rdns:{}:{:016x}",
            crate::identity::rdns::canonical(ip),
            fnv1a(suffixes.join(",").as_bytes())
        ))
    }

    /// A DNS verdict another instance reached for `ip` and `suffixes`, with
    /// the time it has left.
    pub async fn rdns(self: &Arc<Self>, ip: IpAddr, suffixes: &[String]) -> Option<(DnsVerdict, Duration)> {
        let deadline = tokio::time::Instant::now() + self.settings.timeout;
        let mut conn = self.request_connection()?;
        let key = self.rdns_key(ip, suffixes);
        let mut pipe = redis::pipe();
        pipe.cmd("GET").arg(&key).cmd("PTTL").arg(&key);
        let (value, left): (Option<String>, i64) = self.bounded("rdns", deadline, pipe.query_async(&mut conn)).await?;
        let verdict = serde_json::from_str::<SharedVerdict>(&value?).ok()?.into_verdict();
        Some((verdict, Duration::from_millis(left.max(1) as u64)))
    }

    /// Keep a conclusive DNS verdict for the other instances, in the background.
    pub fn share_rdns(self: &Arc<Self>, ip: IpAddr, suffixes: &[String], verdict: &DnsVerdict, ttl: Duration) {
        let Some(shared) = SharedVerdict::from_verdict(verdict) else { return };
        let Some(mut conn) = self.connection() else { return };
        let (this, key) = (self.clone(), self.rdns_key(ip, suffixes));
        tokio::spawn(async move {
            let Ok(value) = serde_json::to_string(&shared) else { return };
            let ms = ttl.as_millis().max(1) as u64;
            let mut cmd = redis::cmd("SET");
            cmd.arg(&key).arg(value).arg("PX").arg(ms);
            let deadline = tokio::time::Instant::now() + this.settings.timeout * 4;
            let _: Option<()> = this.bounded("rdns", deadline, cmd.query_async(&mut conn)).await;
        });
    }

    /// Connect, subscribe, load the live keys, and mark the store up. The
    /// subscription is returned for the caller to read.
    async fn connect(&self) -> Result<redis::aio::PubSub, String> {
        let timeout = self.settings.timeout.max(Duration::from_secs(1));
        let mut conn = self
            .client
            .get_multiplexed_async_connection_with_config(&self.connection_config())
            .await
            .map_err(|e| e.to_string())?;
        let mut pubsub = tokio::time::timeout(timeout, self.client.get_async_pubsub())
            .await
            .map_err(|_| "timed out".to_owned())?
            .map_err(|e| e.to_string())?;
        pubsub.subscribe(self.channel()).await.map_err(|e| e.to_string())?;
        // Subscribed first, then loaded: nothing announced in between is missed.
        let loading = async {
            let mut loaded = 0;
            for pattern in ["ban:*", "robots:*"] {
                loaded += self.load(&mut conn, &self.key(pattern)).await?;
            }
            Ok::<usize, String>(loaded)
        };
        let loaded = tokio::time::timeout(LOAD_FOR, loading)
            .await
            .map_err(|_| format!("loading the live keys took longer than {} s", LOAD_FOR.as_secs()))??;
        self.conn.store(Some(Arc::new(conn)));
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.up.store(true, Ordering::Relaxed);
        metrics().state_up.set(1);
        tracing::info!(target: "robotgate::state", store = %self.settings.redacted_url(), loaded, "shared state store connected");
        Ok(pubsub)
    }

    /// Apply the events stored under `pattern` to the local tables (at most
    /// [`LOAD_MAX`]).
    async fn load(&self, conn: &mut MultiplexedConnection, pattern: &str) -> Result<usize, String> {
        let mut cursor = 0u64;
        let mut n = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(conn)
                .await
                .map_err(|e| e.to_string())?;
            if !keys.is_empty() {
                let values: Vec<Option<String>> =
                    redis::cmd("MGET").arg(&keys).query_async(conn).await.map_err(|e| e.to_string())?;
                let (now, now_ms) = (Instant::now(), unix_ms());
                for v in values.iter().flatten() {
                    if let Ok(event) = serde_json::from_str::<Event>(v) {
                        event.apply(&*self.local, now, now_ms);
                        n += 1;
                    }
                }
            }
            cursor = next;
            if cursor == 0 || n >= LOAD_MAX {
                return Ok(n);
            }
        }
    }

    /// Tell the store is alive; mark it down if not.
    async fn ping(&self) -> bool {
        let Some(mut conn) = self.connection() else { return false };
        let pong: Option<String> = self
            .bounded(
                "ping",
                tokio::time::Instant::now() + self.settings.timeout.max(Duration::from_millis(500)),
                redis::cmd("PING").query_async(&mut conn),
            )
            .await;
        pong.is_some()
    }

    /// `robotgate config check`: connect once and `PING`.
    ///
    /// # Errors
    /// What went wrong, with the URL (password hidden).
    pub async fn try_connection(settings: &SharedState) -> Result<(), String> {
        let url = settings.redacted_url();
        let client = redis::Client::open(settings.url.as_str()).map_err(|e| format!("{url}: {e}"))?;
        let timeout = settings.timeout.max(Duration::from_secs(2));
        let config =
            AsyncConnectionConfig::new().set_connection_timeout(Some(timeout)).set_response_timeout(Some(timeout));
        let attempt = async {
            let mut conn = client.get_multiplexed_async_connection_with_config(&config).await?;
            redis::cmd("PING").query_async::<String>(&mut conn).await
        };
        match tokio::time::timeout(timeout, attempt).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(format!("{url}: {e}")),
            Err(_) => Err(format!("{url}: no answer within {} ms", timeout.as_millis())),
        }
    }
}

/// The keeper: connects, applies announcements, checks the store every
/// second, and reconnects after an outage.
pub struct Keeper(pub Arc<SharedStore>);

#[async_trait]
impl BackgroundService for Keeper {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let store = &self.0;
        let mut said_down = false;
        loop {
            match store.connect().await {
                Ok(pubsub) => {
                    let mut messages = pubsub.into_on_message();
                    let mut tick = tokio::time::interval(KEEP_EVERY);
                    loop {
                        tokio::select! {
                            _ = shutdown.changed() => return,
                            msg = messages.next() => match msg {
                                Some(msg) => {
                                    if let Ok(event) = serde_json::from_slice::<Event>(msg.get_payload_bytes()) {
                                        event.apply(store.local(), Instant::now(), unix_ms());
                                    }
                                }
                                None => {
                                    store.failed("subscription", "the subscription connection closed");
                                    break;
                                }
                            },
                            _ = tick.tick() => if !store.ping().await { break },
                            () = store.check_now.notified() => if !store.ping().await { break },
                        }
                    }
                    // The failure that ended it was logged once already.
                    said_down = true;
                }
                Err(e) => {
                    metrics().state_errors.inc();
                    if !said_down {
                        said_down = true;
                        tracing::warn!(target: "robotgate::state", store = %store.settings.redacted_url(), error = %e,
                            "shared state store unreachable: serving from this instance's memory; retrying every second");
                    }
                }
            }
            store.up.store(false, Ordering::Relaxed);
            metrics().state_up.set(0);
            tokio::select! {
                _ = shutdown.changed() => return,
                () = tokio::time::sleep(KEEP_EVERY) => {}
            }
        }
    }
}

/// A conclusive DNS verdict as stored.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
enum SharedVerdict {
    Verified { ptr: String },
    NoPtr,
    OutsideSuffixes { ptr: String },
    ForwardMismatch { ptr: String },
}

impl SharedVerdict {
    fn from_verdict(v: &DnsVerdict) -> Option<SharedVerdict> {
        Some(match v {
            DnsVerdict::Verified { ptr } => SharedVerdict::Verified { ptr: ptr.clone() },
            DnsVerdict::Spoofed { reason: Failure::NoPtr } => SharedVerdict::NoPtr,
            DnsVerdict::Spoofed { reason: Failure::OutsideSuffixes { ptr } } => {
                SharedVerdict::OutsideSuffixes { ptr: ptr.clone() }
            }
            DnsVerdict::Spoofed { reason: Failure::ForwardMismatch { ptr } } => {
                SharedVerdict::ForwardMismatch { ptr: ptr.clone() }
            }
            DnsVerdict::Unverifiable { .. } => return None,
        })
    }

    fn into_verdict(self) -> DnsVerdict {
        match self {
            SharedVerdict::Verified { ptr } => DnsVerdict::Verified { ptr },
            SharedVerdict::NoPtr => DnsVerdict::Spoofed { reason: Failure::NoPtr },
            SharedVerdict::OutsideSuffixes { ptr } => DnsVerdict::Spoofed { reason: Failure::OutsideSuffixes { ptr } },
            SharedVerdict::ForwardMismatch { ptr } => DnsVerdict::Spoofed { reason: Failure::ForwardMismatch { ptr } },
        }
    }
}
