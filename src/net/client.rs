//! Who the client is behind trusted proxies: the one function every entry
//! point (the proxy, replay, the auth listener) gathers the address with.
//!
//! The operator names the one header its trusted proxies write
//! ([`ClientHeader`]); no other is read. The walk reads that header's bytes
//! from the right, one entry at a time: a trusted address is a proxy of the
//! operator's, so the walk goes on to its left; the first entry that is not
//! a trusted address ends the walk. If it is an address, it is the client.
//! If it is not (`unknown`, an obfuscated name, garbage, a byte that is not
//! ASCII), the request has no known client address, and nothing to its left
//! is read: everything left of the nearest untrusted hop was written by
//! whoever the client is, and can say anything.
//!
//! This is nginx's `real_ip_header` with `real_ip_recursive on`, and Caddy's
//! `trusted_proxies` + `client_ip_headers` + `trusted_proxies_strict`, with
//! one difference: a chain made only of trusted addresses (or no header at
//! all from a trusted peer) names no client, where nginx takes the left-most
//! address. A trusted proxy's own address is never a client: it is never
//! banned, rate-limited or logged as one.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::Cidr;

/// The header the trusted proxies write the client's address in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientHeader {
    /// `X-Forwarded-For: client, proxy1, proxy2` (nginx's
    /// `proxy_add_x_forwarded_for`, HAProxy's `option forwardfor`, most
    /// cloud load balancers).
    #[default]
    XForwardedFor,
    /// `Forwarded: for=client, for=proxy1` (RFC 7239).
    Forwarded,
    /// `X-Real-IP: client`: one address, written by the proxy in front.
    XRealIp,
}

impl ClientHeader {
    /// The header's name, in lower case.
    pub fn name(self) -> &'static str {
        match self {
            ClientHeader::XForwardedFor => "x-forwarded-for",
            ClientHeader::Forwarded => "forwarded",
            ClientHeader::XRealIp => "x-real-ip",
        }
    }

    /// The header named `name` (any case), if it is one of these.
    pub fn from_name(name: &str) -> Option<ClientHeader> {
        [ClientHeader::XForwardedFor, ClientHeader::Forwarded, ClientHeader::XRealIp]
            .into_iter()
            .find(|h| h.name().eq_ignore_ascii_case(name))
    }
}

/// Why a request from a trusted proxy has no known client address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unknown {
    /// The entry the walk stopped at is not an address (`unknown`, an
    /// obfuscated identifier, garbage, non-ASCII bytes).
    NotAnAddress,
    /// Every entry was a trusted proxy, or there was none.
    OnlyProxies,
    /// `X-Real-IP` came more than once, or with more than one value.
    Ambiguous,
}

impl Unknown {
    /// A metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Unknown::NotAnAddress => "not-an-address",
            Unknown::OnlyProxies => "only-proxies",
            Unknown::Ambiguous => "ambiguous",
        }
    }
}

/// The one form of an address robotgate keys, compares and logs: an
/// IPv4-mapped IPv6 address (`::ffff:198.51.100.7`, what a dual-stack socket
/// reports for an IPv4 peer) is the IPv4 address it carries.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The default prefix an IPv6 client is keyed by for bans and rates: one
/// host or one home holds a whole /64 (RFC 4291 2.5.4 interface
/// identifiers), so a key on the /128 lets it change its last bits and go free.
pub const BAN_PREFIX_V6: u8 = 64;

/// The key a client's bans and rates are kept under: its canonical address,
/// with an IPv6 address cut to its first `v6_prefix` bits.
pub fn client_key(ip: IpAddr, v6_prefix: u8) -> IpAddr {
    match canonical(ip) {
        IpAddr::V6(v6) => {
            let bits = u32::from(v6_prefix.min(128));
            let mask = if bits == 0 { 0 } else { u128::MAX << (128 - bits) };
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
        }
        v4 => v4,
    }
}

/// The client address of a request that came from `peer`, with `values` the
/// fields of `header` in the order they came.
///
/// A peer that is not one of the `trusted` proxies is the client, and no
/// header is read. From a trusted peer, the walk described in the module
/// documentation names the client, or says why it cannot.
///
/// Cost: nothing for an untrusted peer; otherwise linear in the bytes of the
/// entries right of the stopping point, with no allocation.
pub fn client_address<'h, I>(peer: IpAddr, header: ClientHeader, values: I, trusted: &[Cidr]) -> Result<IpAddr, Unknown>
where
    I: IntoIterator<Item = &'h [u8]>,
    I::IntoIter: DoubleEndedIterator,
{
    let peer = canonical(peer);
    let is_trusted = |ip: IpAddr| trusted.iter().any(|c| c.contains(ip));
    if !is_trusted(peer) {
        return Ok(peer);
    }
    let mut fields = values.into_iter();
    if header == ClientHeader::XRealIp {
        let (Some(only), None) = (fields.next(), fields.next()) else {
            return Err(Unknown::Ambiguous);
        };
        if only.contains(&b',') {
            return Err(Unknown::Ambiguous);
        }
        return match node(trim(only)) {
            Some(ip) if !is_trusted(ip) => Ok(ip),
            Some(_) => Err(Unknown::OnlyProxies),
            None => Err(Unknown::NotAnAddress),
        };
    }
    for field in fields.rev() {
        for entry in Entries::new(field) {
            let address = match header {
                ClientHeader::Forwarded => forwarded_for(entry),
                _ => node(trim(entry)),
            };
            match address {
                Some(ip) if is_trusted(ip) => continue,
                Some(ip) => return Ok(ip),
                None => return Err(Unknown::NotAnAddress),
            }
        }
    }
    Err(Unknown::OnlyProxies)
}

/// The comma-separated entries of one field, right to left. Commas inside a
/// quoted string (RFC 7239 allows quoted parameter values) do not separate.
/// Empty entries (`a,,b`, RFC 9110 5.6.1 allows them) are skipped.
struct Entries<'h> {
    rest: &'h [u8],
}

impl<'h> Entries<'h> {
    fn new(field: &'h [u8]) -> Entries<'h> {
        Entries { rest: field }
    }
}

impl<'h> Iterator for Entries<'h> {
    type Item = &'h [u8];

    fn next(&mut self) -> Option<&'h [u8]> {
        loop {
            if self.rest.is_empty() {
                return None;
            }
            // Scan from the right for a comma outside quotes. Quotes are
            // counted from the right too: a quote closes what the next one opens.
            let mut quoted = false;
            let mut cut = None;
            for (i, &b) in self.rest.iter().enumerate().rev() {
                match b {
                    b'"' => quoted = !quoted,
                    b',' if !quoted => {
                        cut = Some(i);
                        break;
                    }
                    _ => {}
                }
            }
            let (entry, rest) = match cut {
                Some(i) => (&self.rest[i + 1..], &self.rest[..i]),
                None => (self.rest, &self.rest[..0]),
            };
            self.rest = rest;
            if !trim(entry).is_empty() {
                return Some(entry);
            }
        }
    }
}

/// `bytes` without optional white space (space, tab) at either end.
fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !matches!(b, b' ' | b'\t')).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|b| !matches!(b, b' ' | b'\t')).map_or(start, |e| e + 1);
    &bytes[start..end]
}

/// The `for=` address of one `Forwarded` element (RFC 7239 4); `None` if it
/// has none, or one that is not an address.
fn forwarded_for(element: &[u8]) -> Option<IpAddr> {
    let mut found = None;
    for pair in element.split(|&b| b == b';') {
        let pair = trim(pair);
        let eq = pair.iter().position(|&b| b == b'=')?;
        if pair[..eq].eq_ignore_ascii_case(b"for") {
            if found.is_some() {
                return None; // Two `for=` in one element: no single reading.
            }
            let value = &pair[eq + 1..];
            let value = match value {
                [b'"', inner @ .., b'"'] => inner,
                v => v,
            };
            found = Some(node(value)?);
        }
    }
    found
}

/// A node: an IPv4 address, an IPv6 address, `[IPv6]`, or either with a
/// `:port`; any other bytes (`unknown`, `_hidden`, a name, non-ASCII) are not
/// an address. The result is canonical.
fn node(bytes: &[u8]) -> Option<IpAddr> {
    let text = std::str::from_utf8(bytes).ok()?;
    if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(is_port)) {
            return None;
        }
        return inside.parse::<Ipv6Addr>().ok().map(|v6| canonical(IpAddr::V6(v6)));
    }
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(canonical(ip));
    }
    let (host, port) = text.rsplit_once(':')?;
    (is_port(port)).then(|| host.parse::<Ipv4Addr>().ok().map(IpAddr::V4)).flatten()
}

fn is_port(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_digit()) && text.parse::<u16>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn walk(header: ClientHeader, peer: &str, values: &[&[u8]]) -> Result<IpAddr, Unknown> {
        let trusted = [Cidr::parse("10.0.0.0/8").unwrap(), Cidr::parse("127.0.0.1").unwrap()];
        client_address(ip(peer), header, values.iter().copied(), &trusted)
    }

    const XFF: ClientHeader = ClientHeader::XForwardedFor;
    const FWD: ClientHeader = ClientHeader::Forwarded;

    #[test]
    fn an_untrusted_peer_is_the_client_and_its_headers_are_not_read() {
        assert_eq!(walk(XFF, "203.0.113.9", &[b"66.249.66.1"]), Ok(ip("203.0.113.9")));
        assert_eq!(walk(XFF, "::ffff:203.0.113.9", &[]), Ok(ip("203.0.113.9")), "canonical");
    }

    #[test]
    fn the_walk_stops_at_the_first_untrusted_entry_from_the_right() {
        assert_eq!(walk(XFF, "10.0.0.2", &[b"66.249.66.1, 198.51.100.7, 10.0.0.3"]), Ok(ip("198.51.100.7")));
        assert_eq!(walk(XFF, "10.0.0.2", &[b"66.249.66.1", b"198.51.100.7,10.0.0.3"]), Ok(ip("198.51.100.7")));
        assert_eq!(walk(XFF, "10.0.0.2", &[b"1.1.1.1,,  198.51.100.7 ,"]), Ok(ip("198.51.100.7")), "empty entries");
        assert_eq!(walk(XFF, "10.0.0.2", &[b"::ffff:198.51.100.7"]), Ok(ip("198.51.100.7")), "canonical");
        assert_eq!(walk(XFF, "10.0.0.2", &[b"198.51.100.7:4711"]), Ok(ip("198.51.100.7")), "with a port");
        assert_eq!(walk(XFF, "10.0.0.2", &[b"[2001:db8::1]:4711"]), Ok(ip("2001:db8::1")));
    }

    #[test]
    fn an_entry_that_is_no_address_ends_the_walk_without_a_client() {
        // The client wrote `66.249.66.1`, then something that is not an
        // address; what lies left of it is never read.
        for bad in [&b"unknown"[..], b"_hidden", b"1.2.3.4\xff", b"\xff", b"garbage", b"1.2.3.4:99999", b"[::1"] {
            let mut chain = b"66.249.66.1, ".to_vec();
            chain.extend_from_slice(bad);
            chain.extend_from_slice(b", 10.0.0.3");
            assert_eq!(
                walk(XFF, "10.0.0.2", &[&chain]),
                Err(Unknown::NotAnAddress),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn only_proxies_name_no_client() {
        assert_eq!(walk(XFF, "10.0.0.2", &[]), Err(Unknown::OnlyProxies), "no header: not the proxy itself");
        assert_eq!(walk(XFF, "10.0.0.2", &[b"10.1.1.1, 127.0.0.1"]), Err(Unknown::OnlyProxies));
    }

    #[test]
    fn only_the_named_header_is_read() {
        // A client's own `Forwarded` cannot win when the proxies write X-Forwarded-For:
        // the caller passes only the named header's fields.
        assert_eq!(walk(XFF, "10.0.0.2", &[b"203.0.113.9"]), Ok(ip("203.0.113.9")));
        assert_eq!(ClientHeader::from_name("X-Real-IP"), Some(ClientHeader::XRealIp));
        assert_eq!(ClientHeader::from_name("x-client-ip"), None);
    }

    #[test]
    fn forwarded_elements() {
        assert_eq!(walk(FWD, "10.0.0.2", &[b"for=\"[2001:db8::1]:4711\";proto=https"]), Ok(ip("2001:db8::1")));
        assert_eq!(walk(FWD, "10.0.0.2", &[b"for=192.0.2.60;proto=http, for=10.0.0.9"]), Ok(ip("192.0.2.60")));
        assert_eq!(walk(FWD, "10.0.0.2", &[b"For=\"192.0.2.60:80\""]), Ok(ip("192.0.2.60")));
        assert_eq!(walk(FWD, "10.0.0.2", &[b"for=66.249.66.1, for=unknown"]), Err(Unknown::NotAnAddress));
        assert_eq!(walk(FWD, "10.0.0.2", &[b"for=66.249.66.1, for=_hidden"]), Err(Unknown::NotAnAddress));
        assert_eq!(walk(FWD, "10.0.0.2", &[b"for=66.249.66.1, proto=https"]), Err(Unknown::NotAnAddress), "no for=");
        assert_eq!(walk(FWD, "10.0.0.2", &[b"for=66.249.66.1, for=1.2.3.4;for=5.6.7.8"]), Err(Unknown::NotAnAddress));
        assert_eq!(
            walk(FWD, "10.0.0.2", &[b"for=66.249.66.1, for=\"a,b\";by=x, for=198.51.100.7"]),
            Ok(ip("198.51.100.7")),
            "a comma inside quotes does not split"
        );
    }

    #[test]
    fn x_real_ip_is_one_address() {
        let real = ClientHeader::XRealIp;
        assert_eq!(walk(real, "10.0.0.2", &[b" 198.51.100.7 "]), Ok(ip("198.51.100.7")));
        assert_eq!(walk(real, "10.0.0.2", &[b"198.51.100.7", b"66.249.66.1"]), Err(Unknown::Ambiguous));
        assert_eq!(walk(real, "10.0.0.2", &[b"66.249.66.1, 198.51.100.7"]), Err(Unknown::Ambiguous));
        assert_eq!(walk(real, "10.0.0.2", &[b"unknown"]), Err(Unknown::NotAnAddress));
        assert_eq!(walk(real, "10.0.0.2", &[]), Err(Unknown::Ambiguous));
    }

    #[test]
    fn keys_cover_an_ipv6_prefix_and_the_mapped_form() {
        assert_eq!(client_key(ip("::ffff:198.51.100.7"), 64), ip("198.51.100.7"));
        assert_eq!(client_key(ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), 64), ip("2001:db8:1:2::"));
        assert_eq!(client_key(ip("2001:db8:1:2:aaaa::1"), 128), ip("2001:db8:1:2:aaaa::1"));
        assert_eq!(client_key(ip("2001:db8::1"), 0), ip("::"));
        assert_eq!(client_key(ip("2001:db8::1"), 200), ip("2001:db8::1"), "clamped to 128");
    }
}
