//! The client address behind trusted proxies, and the forwarding headers
//! the origin gets.

use std::net::IpAddr;

use http::{HeaderMap, HeaderValue};
use pingora::http::RequestHeader;
use pingora::proxy::Session;
use pingora::Result;

use crate::net::{Cidr, ClientHeader, Unknown};
use crate::server::telemetry::metrics;

/// The client address of a request; see [`crate::net::client_address`].
/// `Err` when it came through a trusted proxy that names no client (counted
/// in `robotgate_client_unknown_total{reason}`): such a request is verified
/// as no crawler, and keyed to no address for bans and rates.
pub fn client_ip(
    peer: Option<IpAddr>,
    headers: &HeaderMap,
    header: ClientHeader,
    trusted: &[Cidr],
) -> Result<IpAddr, Unknown> {
    let Some(peer) = peer else { return Err(Unknown::NotAnAddress) };
    // Most peers are not trusted proxies: their headers are not read, so do
    // not look them up. `get_all` cannot run backwards; the walk must.
    let fields: Vec<&[u8]> = if trusted.iter().any(|c| c.contains(peer)) {
        headers.get_all(header.name()).into_iter().map(|v| v.as_bytes()).collect()
    } else {
        Vec::new()
    };
    let walked = crate::net::client_address(peer, header, fields, trusted);
    if let Err(why) = walked {
        metrics().client_unknown.with_label_values(&[why.as_str()]).inc();
    }
    walked
}

/// Sets the forwarding headers of the request to the origin, so that the
/// origin's own real-IP module reaches the client robotgate judged:
///
/// * `X-Forwarded-For`: the chain exactly as it came (every field, bytes
///   included, joined by `, `) with the socket peer appended, when the peer
///   is one of the `trusted` proxies; otherwise the peer alone (a client's
///   own header is replaced).
/// * With `header: Forwarded`, the same for `Forwarded`, with `for=` the peer.
/// * With `header: X-Real-IP`, the peer replaces a client's own value; a
///   trusted proxy's value goes on as it came.
/// * `X-Forwarded-Proto`.
///
/// Runs for every proxied request, so it builds the values without the
/// formatter: the address is written into a stack buffer and copied once into
/// the header value, and the protocol is a static value.
pub fn add_forwarded_headers(
    session: &Session,
    upstream_request: &mut RequestHeader,
    header: ClientHeader,
    trusted: &[Cidr],
) -> Result<()> {
    let peer = session.client_addr().and_then(|a| a.as_inet()).map(|a| crate::net::canonical(a.ip()));
    if let Some(peer) = peer {
        let mut text = [0u8; MAX_IP_TEXT];
        let ip = ip_text(peer, &mut text);
        let from_trusted = trusted.iter().any(|c| c.contains(peer));
        let v6 = peer.is_ipv6();
        append(upstream_request, "x-forwarded-for", from_trusted, &[ip])?;
        match header {
            ClientHeader::Forwarded => {
                let node: &[&[u8]] = if v6 { &[b"for=\"[", ip, b"]\""] } else { &[b"for=", ip] };
                append(upstream_request, "forwarded", from_trusted, node)?;
            }
            ClientHeader::XRealIp if !from_trusted => {
                upstream_request.insert_header("x-real-ip", value(&[ip]))?;
            }
            _ => {}
        }
    }
    let tls = session.digest().is_some_and(|d| d.ssl_digest.is_some());
    let proto = HeaderValue::from_static(if tls { "https" } else { "http" });
    upstream_request.insert_header("x-forwarded-proto", proto)?;
    Ok(())
}

/// Set `name` to its fields as they came joined by `, `, then `node`, when
/// `keep`; else to `node` alone.
fn append(req: &mut RequestHeader, name: &'static str, keep: bool, node: &[&[u8]]) -> Result<()> {
    let mut chain: Vec<u8> = Vec::new();
    if keep {
        for field in req.headers.get_all(name) {
            let field = field.as_bytes();
            if field.iter().all(|b| matches!(b, b' ' | b'\t')) {
                continue;
            }
            if !chain.is_empty() {
                chain.extend_from_slice(b", ");
            }
            chain.extend_from_slice(field);
        }
    }
    if !chain.is_empty() {
        chain.extend_from_slice(b", ");
    }
    for part in node {
        chain.extend_from_slice(part);
    }
    req.insert_header(name, value(&[&chain]))
}

/// A header value of `parts`: fields that were valid values, `, ` and an
/// address are a valid value.
fn value(parts: &[&[u8]]) -> HeaderValue {
    let bytes: Vec<u8> = parts.concat();
    HeaderValue::from_bytes(&bytes).expect("header bytes that were valid, `, `, `for=` and an address")
}

/// The longest text form of an address: IPv6 with an embedded IPv4
/// (`ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255`).
const MAX_IP_TEXT: usize = 45;

/// `ip` in its usual text form (as `Display` writes it), in `buf`. IPv4, the
/// common case, is written digit by digit; IPv6 goes through `Display`.
fn ip_text(ip: IpAddr, buf: &mut [u8; MAX_IP_TEXT]) -> &[u8] {
    match ip {
        IpAddr::V4(v4) => {
            let mut n = 0;
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    buf[n] = b'.';
                    n += 1;
                }
                if octet >= 100 {
                    buf[n] = b'0' + octet / 100;
                    n += 1;
                }
                if octet >= 10 {
                    buf[n] = b'0' + octet / 10 % 10;
                    n += 1;
                }
                buf[n] = b'0' + octet % 10;
                n += 1;
            }
            &buf[..n]
        }
        IpAddr::V6(v6) => {
            use std::io::Write;
            let mut rest = &mut buf[..];
            write!(rest, "{v6}").expect("an IPv6 address fits in 45 bytes");
            let n = MAX_IP_TEXT - rest.len();
            &buf[..n]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_text_is_display() {
        let ips = [
            "0.0.0.0",
            "9.10.99.100",
            "127.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "2001:db8::8a2e:370:7334",
            "::ffff:192.0.2.128",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "1:2:3:4:5:6:7:8",
        ];
        for ip in ips {
            let ip: IpAddr = ip.parse().expect("test address");
            let mut buf = [0u8; MAX_IP_TEXT];
            assert_eq!(ip_text(ip, &mut buf), ip.to_string().as_bytes(), "{ip}");
        }
        let ipv4_in_v6 = IpAddr::V6("::1.2.3.4".parse().expect("test address"));
        let mut buf = [0u8; MAX_IP_TEXT];
        assert_eq!(ip_text(ipv4_in_v6, &mut buf), ipv4_in_v6.to_string().as_bytes());
    }
}
