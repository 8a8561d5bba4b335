//! State shared between instances in Redis or Valkey (`state.redis`), over
//! the Redis protocol with the `redis` crate's multiplexed tokio connection:
//! one connection carries every request's commands, pipelined. The commands
//! and the reading of their replies are the core's ([`crate::state::wire`],
//! shared with the nginx module); this file runs them under deadlines.
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
//! answers, loads its keys again (within [`wire::LOAD_FOR`]: a store whose SCAN
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
use crate::state::shared::{Event, Question};
use crate::state::wire::{self, Reply};
use crate::state::MemoryState;

/// How often the keeper checks a store that is up, and retries one that is down.
const KEEP_EVERY: Duration = Duration::from_secs(1);

/// The shared store of one process.
pub struct SharedStore {
    settings: SharedState,
    /// The store's names and commands.
    wire: wire::Store,
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
            wire: wire::Store::new(&settings.prefix),
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

    /// The keeper's connection, while the store is up.
    fn connection(&self) -> Option<MultiplexedConnection> {
        if !self.is_up() {
            return None;
        }
        self.conn.load().as_deref().cloned()
    }

    fn connection_config(&self) -> AsyncConnectionConfig {
        let timeout = wire::connect_within(self.settings.timeout);
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
                let timeout = wire::connect_within(this.settings.timeout);
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

    /// Put a rate question to the store ([`wire::Store::admit`], then
    /// [`wire::Store::wait`] when refused): `Some(Ok)` admitted, `Some(Err)`
    /// wait that long, `None` the store cannot answer now (ask the local
    /// tables). Waits at most `state.timeout_ms`.
    pub async fn admit(self: &Arc<Self>, q: &Question) -> Option<Result<(), Duration>> {
        let deadline = tokio::time::Instant::now() + self.settings.timeout;
        let mut conn = self.request_connection()?;
        let set = command(&self.wire.admit(q, unix_ms()));
        let admitted = self.bounded("rate", deadline, set.query_async(&mut conn)).await?;
        if self.read("rate", wire::admitted(&reply(admitted)))? {
            return Some(Ok(()));
        }
        let left = self.bounded("rate", deadline, command(&self.wire.wait(q)).query_async(&mut conn)).await?;
        self.read("rate", wire::wait(q, &reply(left))).map(Err)
    }

    /// What a reply said, or `None` (counted, store marked down) when it
    /// was the server's error or not the command's.
    fn read<T>(&self, what: &str, said: Result<T, wire::WireError>) -> Option<T> {
        said.map_err(|e| self.failed(what, &e.to_string())).ok()
    }

    /// Write an event and announce it, in the background: the request that
    /// made it does not wait.
    pub fn announce(self: &Arc<Self>, event: Event) {
        let Some(mut conn) = self.connection() else { return };
        let this = self.clone();
        tokio::spawn(async move {
            let Some(commands) = this.wire.announce(&event, unix_ms()) else { return };
            let pipe = pipeline(&commands);
            let deadline = tokio::time::Instant::now() + wire::background_within(this.settings.timeout);
            let _: Option<()> = this.bounded("announce", deadline, pipe.query_async(&mut conn)).await;
        });
    }

    /// A DNS verdict another instance reached for `ip` and `suffixes`, with
    /// the time it has left.
    pub async fn rdns(self: &Arc<Self>, ip: IpAddr, suffixes: &[String]) -> Option<(DnsVerdict, Duration)> {
        let deadline = tokio::time::Instant::now() + self.settings.timeout;
        let mut conn = self.request_connection()?;
        let pipe = pipeline(&self.wire.rdns_ask(ip, suffixes));
        let (value, left): (redis::Value, redis::Value) =
            self.bounded("rdns", deadline, pipe.query_async(&mut conn)).await?;
        let (value, left) = self.read("rdns", wire::rdns_found(&reply(value), &reply(left)))??;
        let verdict = serde_json::from_str::<SharedVerdict>(&value).ok()?.into_verdict();
        Some((verdict, left))
    }

    /// Keep a conclusive DNS verdict for the other instances, in the background.
    pub fn share_rdns(self: &Arc<Self>, ip: IpAddr, suffixes: &[String], verdict: &DnsVerdict, ttl: Duration) {
        let Some(shared) = SharedVerdict::from_verdict(verdict) else { return };
        let Some(mut conn) = self.connection() else { return };
        let Ok(value) = serde_json::to_string(&shared) else { return };
        let cmd = command(&self.wire.rdns_keep(ip, suffixes, &value, ttl));
        let this = self.clone();
        tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + wire::background_within(this.settings.timeout);
            let _: Option<()> = this.bounded("rdns", deadline, cmd.query_async(&mut conn)).await;
        });
    }

    /// Connect, subscribe, load the live keys, and mark the store up. The
    /// subscription is returned for the caller to read.
    async fn connect(&self) -> Result<redis::aio::PubSub, String> {
        let timeout = wire::connect_within(self.settings.timeout);
        let mut conn = self
            .client
            .get_multiplexed_async_connection_with_config(&self.connection_config())
            .await
            .map_err(|e| e.to_string())?;
        let mut pubsub = tokio::time::timeout(timeout, self.client.get_async_pubsub())
            .await
            .map_err(|_| "timed out".to_owned())?
            .map_err(|e| e.to_string())?;
        pubsub.subscribe(self.wire.channel()).await.map_err(|e| e.to_string())?;
        // Subscribed first, then loaded: nothing announced in between is missed.
        let loaded = tokio::time::timeout(wire::LOAD_FOR, self.load(&mut conn))
            .await
            .map_err(|_| format!("loading the live keys took longer than {} s", wire::LOAD_FOR.as_secs()))??;
        self.conn.store(Some(Arc::new(conn)));
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.up.store(true, Ordering::Relaxed);
        metrics().state_up.set(1);
        tracing::info!(target: "robotgate::state", store = %self.settings.redacted_url(), loaded, "shared state store connected");
        Ok(pubsub)
    }

    /// Apply the live bans and reads to the local tables ([`wire::Loading`]).
    async fn load(&self, conn: &mut MultiplexedConnection) -> Result<usize, String> {
        let mut loading = self.wire.loading();
        let mut next = loading.first();
        while let Some(c) = next {
            let v: redis::Value = command(&c).query_async(conn).await.map_err(|e| e.to_string())?;
            let (now, now_ms) = (Instant::now(), unix_ms());
            next = loading.feed(reply(v), |e| e.apply(&*self.local, now, now_ms)).map_err(|e| e.to_string())?;
        }
        Ok(loading.loaded())
    }

    /// Tell the store is alive; mark it down if not.
    async fn ping(&self) -> bool {
        let Some(mut conn) = self.connection() else { return false };
        let pong: Option<String> = self
            .bounded(
                "ping",
                tokio::time::Instant::now() + wire::background_within(self.settings.timeout),
                command(&wire::Store::ping()).query_async(&mut conn),
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
            command(&wire::Store::ping()).query_async::<String>(&mut conn).await
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

/// The `redis` crate's form of a core command.
fn command(c: &wire::Command) -> redis::Cmd {
    let mut cmd = redis::Cmd::new();
    for a in c.args() {
        cmd.arg(a.as_slice());
    }
    cmd
}

/// Commands sent together, their replies in order.
fn pipeline(commands: &[wire::Command]) -> redis::Pipeline {
    let mut pipe = redis::pipe();
    for c in commands {
        pipe.add_command(command(c));
    }
    pipe
}

/// The core's form of a reply (RESP3's kinds, which robotgate does not ask
/// for, read as the nearest RESP2 one).
fn reply(v: redis::Value) -> Reply {
    use redis::Value as V;
    match v {
        V::Nil => Reply::Nil,
        V::Int(n) => Reply::Int(n),
        V::BulkString(b) => Reply::Text(b),
        V::SimpleString(s) => Reply::Text(s.into_bytes()),
        V::Okay => Reply::Text(b"OK".to_vec()),
        V::Array(items) | V::Set(items) => Reply::Array(items.into_iter().map(reply).collect()),
        V::ServerError(e) => Reply::Error(format!("{e:?}")),
        other => Reply::Error(format!("an unexpected reply: {other:?}")),
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
