//! One request read from Envoy's header map and stream attributes into the
//! facts the shared decision takes ([`robotgate_embed::decide`]).

use std::net::IpAddr;

pub use robotgate_embed::decide::{families, Answer, Count, Fields, Line};

/// The request line of Envoy's map: its pseudo-headers, as Envoy's codec
/// read them (HTTP/1 and HTTP/2 alike; HTTP/1's `Host` is `:authority`).
/// The scheme as Envoy read it: at the edge (`use_remote_address: true`)
/// its connection manager writes `X-Forwarded-Proto` from the downstream
/// connection over whatever the client sent (behind trusted hops, what it
/// keeps of theirs), before any filter runs.
pub fn line<'r>(fields: &Fields<'r>) -> Line<'r> {
    let scheme = fields.first(b"x-forwarded-proto").or_else(|| fields.first(b":scheme"));
    Line {
        method: fields.first(b":method").unwrap_or(b""),
        target: fields.first(b":path").unwrap_or(b""),
        host: fields.first(b":authority").or_else(|| fields.first(b"host")).unwrap_or(b""),
        https: scheme.is_some_and(|s| s.eq_ignore_ascii_case(b"https")),
    }
}

/// `X-Forwarded-For` entries Envoy's connection manager appends before the
/// filter runs (`use_remote_address: true`): the peer's.
pub const OWN_ENTRIES: usize = 1;

/// The address of Envoy's `source.address` (`ip:port`, `[ip6]:port`, or
/// an address alone); `None` for anything else (a pipe).
pub fn address_of(text: &[u8]) -> Option<IpAddr> {
    let text = std::str::from_utf8(text).ok()?;
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(ip);
    }
    text.parse::<std::net::SocketAddr>().ok().map(|s| s.ip())
}

#[cfg(test)]
mod tests {
    use super::{address_of, line, Fields};

    #[test]
    fn the_line_is_read_from_the_pseudo_headers() {
        let all: &[(&[u8], &[u8])] =
            &[(b":method", b"GET"), (b":path", b"/a?b"), (b":authority", b"example.com:8080"), (b":scheme", b"http")];
        let l = line(&Fields { all });
        assert_eq!((l.method, l.target, l.host, l.https), (&b"GET"[..], &b"/a?b"[..], &b"example.com:8080"[..], false));
        let all: &[(&[u8], &[u8])] = &[(b":scheme", b"http"), (b"x-forwarded-proto", b"HTTPS"), (b"host", b"h")];
        let l = line(&Fields { all });
        assert!(l.https, "Envoy's X-Forwarded-Proto over the scheme");
        assert_eq!((l.method, l.target, l.host), (&b""[..], &b""[..], &b"h"[..]), "none: refused by the decision");
    }

    #[test]
    fn source_address_reads_with_and_without_port() {
        assert_eq!(address_of(b"127.0.0.2:4711"), Some("127.0.0.2".parse().unwrap()));
        assert_eq!(address_of(b"[::1]:80"), Some("::1".parse().unwrap()));
        assert_eq!(address_of(b"10.0.0.1"), Some("10.0.0.1".parse().unwrap()));
        assert_eq!(address_of(b"/run/envoy.sock"), None);
        assert_eq!(address_of(b"\xff"), None);
    }
}
