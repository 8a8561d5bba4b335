//! robotgate inside Envoy (issue #69): a dynamic module, `librobotgate_envoy.so`,
//! an HTTP filter that drives robotgate's core pipeline
//! ([`robotgate::pipeline`]) from the request's headers, in Envoy's own
//! worker threads: no exchange with another process.
//!
//! ```yaml
//! http_filters:
//!   - name: robotgate
//!     typed_config:
//!       "@type": type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter
//!       dynamic_module_config: { name: robotgate_envoy, do_not_close: true }
//!       filter_name: robotgate
//!       filter_config:
//!         "@type": type.googleapis.com/google.protobuf.StringValue
//!         value: /etc/robotgate/robotgate.yaml
//! ```
//!
//! Envoy finds `librobotgate_envoy.so` in `ENVOY_DYNAMIC_MODULES_SEARCH_PATH`
//! (examples/edge/envoy-module.yaml). The filter's `filter_config` is the
//! path of robotgate.yaml (or JSON naming it: [`config`]), the same file as
//! `robotgate serve`'s, loaded when
//! Envoy loads the filter's configuration; one that does not load refuses
//! Envoy's configuration, with each problem in Envoy's log.
//!
//! A preview (docs/edge.md, "In-process module (preview)", says what it
//! does not do yet): each request is decided on its request headers;
//! robots.txt and humans.txt are answered by the module; a refusal, a 429
//! and every answer robotgate writes itself are Envoy local replies with the
//! plan's status, headers and body; a pass gets the site's `X-Robots-Tag`
//! and `Content-Usage` on the origin's answer. The client is Envoy's
//! `source.address` (its downstream peer after `xff_num_trusted_hops`);
//! rates, bans and robots.txt reads are in one table for all of Envoy's
//! threads and every filter configuration naming the same robotgate.yaml.
//! An edit of robotgate.yaml or of a file it names is in force some 50 ms
//! after it is saved, noticed by inotify and loaded by a thread of the
//! module's, never by Envoy's ([`robotgate_embed::reloads`]).
//!
//! Envoy's ABI is declared by hand in [`abi`]; the hooks Envoy calls are in
//! [`hooks`]. What the module shares with the HAProxy module (robotgate.yaml
//! loaded and kept current, the decision, the violation log, reverse DNS)
//! is robotgate-embed's; this crate only translates Envoy's API.

pub mod abi;
pub mod config;
pub mod decide;
#[cfg(not(test))]
mod hooks;
pub mod park;

pub use robotgate_embed::{Level, Module};

/// The ABI version the module was written against: the
/// `ENVOY_DYNAMIC_MODULES_ABI_VERSION` of Envoy 1.40's abi.h. Envoy loads a
/// module of another version with a warning; of its own, with an
/// `info` line "Dynamic module ABI version … matched".
pub const ABI_VERSION: &[u8] = b"v0.2.0\0";

/// What the crowd check says, at most hourly ([`robotgate::state::crowd::Crowd::tick`]).
pub const CROWD_WARNING: &str = "over 90% of the last minute's requests came from loopback or private addresses with a forwarding header of their own: every client looks like the proxy in front of Envoy. Trust that proxy in Envoy's xff_num_trusted_hops; until then robots cannot be verified, and trap hits from its address ban no one";
