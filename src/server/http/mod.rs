//! The HTTP path: the application and its per-request state ([`gate`]),
//! deciding a request by driving the core's pipeline ([`decide`]), the
//! proxy ([`proxy`]: carry the outcome out), the same steps for an edge proxy's
//! authorisation subrequests ([`auth`]), HAProxy's SPOE messages ([`spoe`]), Envoy's ext_authz checks ([`ext_authz`]), the responses robotgate writes
//! itself ([`respond`]), the client address behind trusted proxies
//! ([`forwarded`]), certificates per handshake ([`tls`]), and each
//! connection beneath HTTP: the PROXY protocol and the request-head
//! deadline ([`conn`]); robotgate's own listeners' accepting and deadlines ([`listen`]); a
//! listener's places for connections ([`room`]).

pub mod auth;
pub mod conn;
pub mod decide;
pub mod ext_authz;
pub mod forwarded;
pub mod gate;
pub mod hello;
pub mod listen;
pub mod proxy;
pub mod proxy_header;
pub mod respond;
pub mod room;
pub mod spoe;
pub mod tls;
