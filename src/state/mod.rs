//! State that outlives one request: what the policy needs to remember about
//! past requests.
//!
//! * rate clocks: when each bot last fetched from each site (Crawl-delay,
//!   Request-rate);
//! * bans: clients that fell into a trap, until when;
//! * robots.txt reads: which bots fetched a site's robots.txt lately, so a
//!   violation can say whether the bot had read the rule it broke.
//!
//! The policy asks through the [`State`] trait, so where the memory lives is
//! the deployment's choice: [`memory::MemoryState`] keeps it in process, in a
//! fixed amount of memory. The trait is synchronous and answers at once; a
//! store shared between instances is reached through [`shared::Asking`]: bans
//! and reads are answered from a local view the other instances keep in
//! step, and a rate question is put to the store between two decisions.

pub mod crowd;
pub mod histogram;
pub mod memory;
pub mod series;
pub mod shared;
pub mod wire;

use std::net::IpAddr;
use std::time::{Duration, Instant};

pub use self::memory::{MemoryState, RateTable, TimeTable};

/// How long a robots.txt read counts: RFC 9309 2.4 lets crawlers cache the
/// file for up to 24 hours.
pub const ROBOTS_READ_WINDOW: Duration = Duration::from_secs(86_400);

/// Whose pace a rate limit measures: one bot, from one address, on one site.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RateKey<'a> {
    /// The client address (after trusted proxies).
    pub client: IpAddr,
    /// The site's name.
    pub site: &'a str,
    /// The bot's name, or the first robots.txt token it announces.
    pub bot: &'a str,
}

/// Who a ban holds: one client address on one site, whatever it claims to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BanKey<'a> {
    /// The client address (after trusted proxies).
    pub client: IpAddr,
    /// The site's name.
    pub site: &'a str,
}

/// Who read a site's robots.txt (issue #39: a read counts for a robot only
/// when it is that robot).
///
/// * [`SeenKey::Bot`]: a database robot, by name, for a read **verified** to
///   come from it (its ranges, reverse DNS or signature), since large
///   crawlers fetch robots.txt from other addresses than they crawl from.
///   No one else can write it: a stranger's read under a robot's name never
///   moves that robot's version.
/// * [`SeenKey::Client`]: every read, by the client's ban key (its address;
///   an IPv6 /64) and the database robot it names, or none. What an
///   unverified request of that client is judged by. Bounded per address by
///   the database's size: a client cannot mint keys by varying its User-Agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SeenKey<'a> {
    /// A verified read of a database robot, by name, on a site.
    Bot {
        /// The site's name.
        site: &'a str,
        /// The database name.
        name: &'a str,
    },
    /// A read by one client, on a site.
    Client {
        /// The site's name.
        site: &'a str,
        /// The client's ban key ([`crate::net::client_key`]).
        client: IpAddr,
        /// The database robot it named; empty for a robot the database does not know.
        robot: &'a str,
    },
}

/// Memory of past requests. Every method answers at once from memory.
pub trait State: Send + Sync {
    /// Admit a request at `now` if at least `interval` has passed since the
    /// key's last admitted request; otherwise return how long to wait.
    /// Refused requests do not move the clock.
    fn admit(&self, key: &RateKey<'_>, interval: Duration, now: Instant) -> Result<(), Duration>;

    /// Ban the key until `until` (a later ban extends, an earlier one does not shorten).
    fn ban(&self, key: &BanKey<'_>, until: Instant);

    /// How long the key's ban still runs, if it is banned at `now`.
    fn banned(&self, key: &BanKey<'_>, now: Instant) -> Option<Duration>;

    /// Remember that the key fetched robots.txt at `now`, and which version
    /// (its [`crate::robots::RobotsTxt::hash`]; 0: unknown).
    fn saw_robots(&self, key: &SeenKey<'_>, version: u64, now: Instant);

    /// The key's last fetch of robots.txt: when, and which version.
    fn robots_read(&self, key: &SeenKey<'_>) -> Option<(Instant, u64)>;

    /// Whether the key fetched robots.txt at most `within` before `now`.
    fn read_robots_within(&self, key: &SeenKey<'_>, within: Duration, now: Instant) -> bool {
        self.robots_read(key).is_some_and(|(t, _)| now.saturating_duration_since(t) <= within)
    }
}
