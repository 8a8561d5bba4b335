//! The client address behind trusted proxies, and the forwarding headers
//! the origin gets.

use std::net::IpAddr;

use http::HeaderValue;
use pingora::http::RequestHeader;
use pingora::proxy::Session;
use pingora::Result;

use crate::net::Cidr;

/// The client address of a request; see [`crate::net::client_address`].
pub fn client_ip(peer: Option<IpAddr>, req: &RequestHeader, trusted: &[Cidr]) -> Option<IpAddr> {
    let peer = peer?;
    // Most peers are not trusted proxies: their headers are not read, so do
    // not look them up.
    if !trusted.iter().any(|c| c.contains(peer)) {
        return Some(peer);
    }
    let values = |name: &'static str| req.headers.get_all(name).into_iter().map(|v| v.as_bytes());
    Some(crate::net::client_address(peer, values("forwarded"), values("x-forwarded-for"), trusted))
}

/// Sets `X-Forwarded-For` (the socket peer, appended to the chain only when
/// the peer is one of `trusted` proxies; otherwise the client's own header is
/// replaced) and `X-Forwarded-Proto` on the request to the origin.
///
/// Runs for every proxied request, so it builds the values without the
/// formatter: the address is written into a stack buffer and copied once into
/// the header value, and the protocol is a static value.
pub fn add_forwarded_headers(session: &Session, upstream_request: &mut RequestHeader, trusted: &[Cidr]) -> Result<()> {
    let peer = session.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip());
    if let Some(peer) = peer {
        let mut text = [0u8; MAX_IP_TEXT];
        let ip = ip_text(peer, &mut text);
        // Keep the chain only when it came from a trusted proxy.
        let prior = if trusted.iter().any(|c| c.contains(peer)) {
            upstream_request.headers.get("x-forwarded-for").and_then(|v| v.to_str().ok())
        } else {
            None
        };
        let value = match prior {
            Some(p) if !p.trim().is_empty() => {
                let mut chain = Vec::with_capacity(p.len() + 2 + ip.len());
                chain.extend_from_slice(p.as_bytes());
                chain.extend_from_slice(b", ");
                chain.extend_from_slice(ip);
                HeaderValue::from_bytes(&chain)
            }
            _ => HeaderValue::from_bytes(ip),
        };
        let value = value.expect("visible ASCII: a header value that was valid, `, ` and an address");
        upstream_request.insert_header("x-forwarded-for", value)?;
    }
    let tls = session.digest().is_some_and(|d| d.ssl_digest.is_some());
    let proto = HeaderValue::from_static(if tls { "https" } else { "http" });
    upstream_request.insert_header("x-forwarded-proto", proto)?;
    Ok(())
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
