//! State that outlives one request: what the policy needs to remember about
//! past requests (today, when each bot last fetched from each site).
//!
//! The policy asks through the [`RateState`] trait, so where the memory lives
//! is the deployment's choice: [`memory::RateTable`] keeps it in process, in a
//! fixed amount of memory. The trait is synchronous and answers at once; a
//! store shared between instances answers from a local view it keeps in step
//! in the background, so no request waits on the network for it.

pub mod memory;

use std::net::IpAddr;
use std::time::{Duration, Instant};

pub use self::memory::RateTable;

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

/// Memory of the last admitted request per [`RateKey`].
pub trait RateState: Send + Sync {
    /// Admit a request at `now` if at least `interval` has passed since the
    /// key's last admitted request; otherwise return how long to wait.
    /// Refused requests do not move the clock.
    fn admit(&self, key: &RateKey<'_>, interval: Duration, now: Instant) -> Result<(), Duration>;
}

impl RateState for RateTable {
    fn admit(&self, key: &RateKey<'_>, interval: Duration, now: Instant) -> Result<(), Duration> {
        RateTable::admit(self, key, interval, now)
    }
}
