//! Identity adapters: the I/O behind the core's identity checks.
//!
//! * [`dns`]: forward-confirmed reverse DNS (a bounded, cached resolver).
//! * [`wba`]: Web Bot Auth key directories (fetch, SSRF limits, cache).
//! * [`feeds`]: refreshing the crawler IP range feeds.
//! * [`identity`]: the proxy's [`crate::identity::Identify`]: ranges, the
//!   DNS cache and a verified signature, over one snapshot.

pub mod dns;
pub mod feeds;
pub mod identity;
pub mod wba;
