//! The PROXY protocol, versions 1 (text) and 2 (binary): the header a load
//! balancer writes at the very start of a TCP connection to say whose
//! connection it passes on. HAProxy sends it with `send-proxy` /
//! `send-proxy-v2`, AWS's Network Load Balancer with "proxy protocol v2"
//! on its target group. The specification is HAProxy's
//! `doc/proxy-protocol.txt`; section numbers below are its.
//!
//! A pure parser over bytes. Reading them off a socket, within a size and
//! time bound, and deciding whether the peer may send a header at all is
//! the server's job (`server::http::conn`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The twelve bytes a version 2 header starts with (2.2).
pub const V2_SIGNATURE: [u8; 12] = *b"\r\n\r\n\0\r\nQUIT\n";

/// The longest version 1 header, CRLF included (2.1: 107 bytes).
pub const V1_MAX: usize = 107;

/// The longest version 2 header accepted: its 16 fixed bytes, the
/// addresses and the TLVs. The format allows 65,551 bytes; what load
/// balancers send (addresses, an AWS VPC endpoint ID, TLS details) stays
/// far below this.
pub const V2_MAX: usize = 4096;

/// The shortest header of either version (`PROXY UNKNOWN\r\n`, 15 bytes; a
/// version 2 header has at least 16). Reading this many bytes first never
/// reads past a header into the stream it precedes.
pub const MIN_LEN: usize = 15;

/// A header, read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    /// 1 or 2.
    pub version: u8,
    /// The client's address and port as the load balancer saw them. `None`
    /// when the header gives none this connection can use: a version 2
    /// `LOCAL` command (a load balancer's own health check), version 1
    /// `UNKNOWN`, or a version 2 family other than TCP over IPv4 or IPv6.
    /// The connection's own peer then stands, as the specification says
    /// (2.1, 2.2).
    pub source: Option<SocketAddr>,
    /// The address the client connected to (the load balancer's), when
    /// `source` is given.
    pub destination: Option<SocketAddr>,
    /// The length of the header: the proxied stream starts after it.
    pub consumed: usize,
}

/// Why bytes are not (yet) a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The bytes so far are the start of a header: `needed` bytes in all
    /// are the least that can say more. Always more than were given, and at
    /// most [`V2_MAX`]; reading up to it never reads past the header.
    #[error("incomplete PROXY protocol header: {needed} bytes needed")]
    Incomplete {
        /// The total length to read before parsing again.
        needed: usize,
    },
    /// The bytes start with neither version's signature.
    #[error("no PROXY protocol header")]
    Missing,
    /// Longer than the limit ([`V1_MAX`] or [`V2_MAX`]).
    #[error("PROXY protocol header longer than {0} bytes")]
    TooLong(usize),
    /// A header that breaks the specification.
    #[error("invalid PROXY protocol v{version} header: {reason}")]
    Invalid {
        /// 1 or 2.
        version: u8,
        /// What is wrong.
        reason: &'static str,
    },
}

/// Read a PROXY protocol header, version 1 or 2, from the start of `input`.
/// `input` may hold less than a header ([`Error::Incomplete`] says how much
/// to read before trying again) or more (what follows the header is not
/// looked at).
///
/// Cost: linear in at most [`V2_MAX`] bytes; allocates nothing.
///
/// # Errors
/// [`Error`]: too few bytes so far, no header, one too long, or one that
/// breaks the specification.
///
/// # Example
/// ```
/// use robotgate::proxy_protocol::parse;
/// let p = parse(b"PROXY TCP4 66.249.66.1 10.0.0.2 51234 80\r\nGET / HTTP/1.1\r\n").unwrap();
/// assert_eq!(p.source, Some("66.249.66.1:51234".parse().unwrap()));
/// assert_eq!(p.consumed, 42);
/// ```
pub fn parse(input: &[u8]) -> Result<Parsed, Error> {
    match input.first() {
        None => Err(Error::Incomplete { needed: MIN_LEN }),
        Some(b'P') => v1(input),
        Some(b'\r') => v2(input),
        Some(_) => Err(Error::Missing),
    }
}

/// Whether `input` starts as much of `signature` as it holds.
fn starts_as(input: &[u8], signature: &[u8]) -> bool {
    let n = input.len().min(signature.len());
    input[..n] == signature[..n]
}

/// Version 1 (2.1): `PROXY TCP4|TCP6 src dst sport dport\r\n`, or
/// `PROXY UNKNOWN ...\r\n`, in at most 107 bytes.
fn v1(input: &[u8]) -> Result<Parsed, Error> {
    const PREFIX: &[u8] = b"PROXY ";
    let invalid = |reason| Error::Invalid { version: 1, reason };
    if !starts_as(input, PREFIX) {
        return Err(Error::Missing);
    }
    // Find the CRLF, refusing at once what no header holds (so a client
    // that is not a proxy is not waited for until the size bound).
    let window = &input[..input.len().min(V1_MAX)];
    let mut end = None;
    for (i, &b) in window.iter().enumerate() {
        match b {
            b'\r' => match window.get(i + 1) {
                Some(b'\n') => {
                    end = Some(i);
                    break;
                }
                Some(_) => return Err(invalid("CR not followed by LF")),
                None => {}
            },
            b' '..=b'~' => {}
            _ => return Err(invalid("a byte other than printable ASCII before CRLF")),
        }
    }
    let Some(end) = end else {
        return Err(if input.len() >= V1_MAX {
            Error::TooLong(V1_MAX)
        } else {
            Error::Incomplete { needed: (input.len() + 1).max(MIN_LEN) }
        });
    };
    let consumed = end + 2;
    let line = &input[PREFIX.len()..end];
    let mut fields = line.split(|&b| b == b' ');
    let family = fields.next().unwrap_or_default();
    let v6 = match family {
        // 2.1: the rest of the line is ignored; the connection's own
        // addresses stand.
        b"UNKNOWN" => return Ok(Parsed { version: 1, source: None, destination: None, consumed }),
        b"TCP4" => false,
        b"TCP6" => true,
        _ => return Err(invalid("protocol is not TCP4, TCP6 or UNKNOWN")),
    };
    let mut next = || fields.next().ok_or(invalid("fewer than four fields after the protocol"));
    let (src, dst, sport, dport) = (next()?, next()?, next()?, next()?);
    if fields.next().is_some() {
        return Err(invalid("more than four fields after the protocol"));
    }
    let ip = |field: &[u8]| -> Result<IpAddr, Error> {
        let text = std::str::from_utf8(field).map_err(|_| invalid("address is not ASCII"))?;
        let ip = if v6 { text.parse::<Ipv6Addr>().map(IpAddr::V6) } else { text.parse::<Ipv4Addr>().map(IpAddr::V4) };
        ip.map_err(|_| invalid(if v6 { "not an IPv6 address" } else { "not an IPv4 address" }))
    };
    let (src, dst) = (ip(src)?, ip(dst)?);
    let (sport, dport) = (port(sport).ok_or(invalid("bad port"))?, port(dport).ok_or(invalid("bad port"))?);
    Ok(Parsed {
        version: 1,
        source: Some(SocketAddr::new(src, sport)),
        destination: Some(SocketAddr::new(dst, dport)),
        consumed,
    })
}

/// A version 1 port: 0 to 65535 in decimal, without leading zeros.
fn port(field: &[u8]) -> Option<u16> {
    let digits = !field.is_empty() && field.len() <= 5 && field.iter().all(u8::is_ascii_digit);
    if !digits || (field.len() > 1 && field[0] == b'0') {
        return None;
    }
    field.iter().try_fold(0u32, |n, &d| Some(n * 10 + u32::from(d - b'0'))).and_then(|n| u16::try_from(n).ok())
}

/// Version 2 (2.2): the signature, version and command, family and
/// protocol, a big-endian length, then that many bytes of addresses and TLVs.
fn v2(input: &[u8]) -> Result<Parsed, Error> {
    const LOCAL: u8 = 0x0;
    const PROXY: u8 = 0x1;
    let invalid = |reason| Error::Invalid { version: 2, reason };
    if !starts_as(input, &V2_SIGNATURE) {
        return Err(Error::Missing);
    }
    if input.len() < 16 {
        return Err(Error::Incomplete { needed: 16 });
    }
    if input[12] >> 4 != 2 {
        return Err(invalid("version is not 2"));
    }
    let command = input[12] & 0x0f;
    if command != LOCAL && command != PROXY {
        return Err(invalid("command is neither LOCAL nor PROXY"));
    }
    let total = 16 + usize::from(u16::from_be_bytes([input[14], input[15]]));
    if total > V2_MAX {
        return Err(Error::TooLong(V2_MAX));
    }
    // 2.2: with LOCAL the family byte is ignored; with PROXY only these
    // pairs are valid. Each needs an address block at least this long.
    let family = input[13];
    let addresses = match (command, family) {
        (LOCAL, _) | (_, 0x00) => 0,
        (_, 0x11 | 0x12) => 12,  // IPv4, TCP or UDP
        (_, 0x21 | 0x22) => 36,  // IPv6, TCP or UDP
        (_, 0x31 | 0x32) => 216, // Unix, stream or datagram
        _ => return Err(invalid("unknown address family or transport protocol")),
    };
    if total - 16 < addresses {
        return Err(invalid("the address block is shorter than its family's addresses"));
    }
    if input.len() < total {
        return Err(Error::Incomplete { needed: total });
    }
    let block = &input[16..total];
    // Only TCP over IP names a client this connection can use; the other
    // valid families fall back to the connection's own addresses (2.2,
    // "UNSPEC"), as LOCAL does. TLVs are not needed and not read.
    let (source, destination) = match (command, family) {
        (PROXY, 0x11) => {
            let ip = |at: usize| IpAddr::V4(Ipv4Addr::new(block[at], block[at + 1], block[at + 2], block[at + 3]));
            let port = |at: usize| u16::from_be_bytes([block[at], block[at + 1]]);
            (Some(SocketAddr::new(ip(0), port(8))), Some(SocketAddr::new(ip(4), port(10))))
        }
        (PROXY, 0x21) => {
            let ip = |at: usize| {
                let mut octets = [0u8; 16];
                octets.copy_from_slice(&block[at..at + 16]);
                IpAddr::V6(Ipv6Addr::from(octets))
            };
            let port = |at: usize| u16::from_be_bytes([block[at], block[at + 1]]);
            (Some(SocketAddr::new(ip(0), port(32))), Some(SocketAddr::new(ip(16), port(34))))
        }
        _ => (None, None),
    };
    Ok(Parsed { version: 2, source, destination, consumed: total })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    /// A version 2 header: command, family byte, address block, TLVs.
    fn v2_header(command: u8, family: u8, block: &[u8]) -> Vec<u8> {
        let mut h = V2_SIGNATURE.to_vec();
        h.push(0x20 | command);
        h.push(family);
        h.extend_from_slice(&u16::try_from(block.len()).unwrap().to_be_bytes());
        h.extend_from_slice(block);
        h
    }

    fn inet4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
        let mut b = src.to_vec();
        b.extend_from_slice(&dst);
        b.extend_from_slice(&sport.to_be_bytes());
        b.extend_from_slice(&dport.to_be_bytes());
        b
    }

    #[test]
    fn v1_tcp4_tcp6_and_unknown() {
        let line = b"PROXY TCP4 66.249.66.1 127.0.0.1 51234 8080\r\n";
        let mut input = line.to_vec();
        input.extend_from_slice(b"GET / HTTP/1.1\r\n\r\n");
        let p = parse(&input).unwrap();
        assert_eq!(
            p,
            Parsed {
                version: 1,
                source: Some(addr("66.249.66.1:51234")),
                destination: Some(addr("127.0.0.1:8080")),
                consumed: line.len()
            }
        );
        let p = parse(b"PROXY TCP6 2001:db8::1 ::1 0 65535\r\n").unwrap();
        assert_eq!(p.source, Some(addr("[2001:db8::1]:0")));
        assert_eq!(p.destination, Some(addr("[::1]:65535")));
        for unknown in [&b"PROXY UNKNOWN\r\n"[..], b"PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n"] {
            let p = parse(unknown).unwrap();
            assert_eq!((p.source, p.destination, p.consumed), (None, None, unknown.len()));
        }
    }

    #[test]
    fn v1_refusals() {
        let bad = [
            &b"PROXY TCP4 66.249.66.1 127.0.0.1 51234\r\n"[..],
            b"PROXY TCP4 66.249.66.1 127.0.0.1 51234 80 9\r\n",
            b"PROXY TCP4 2001:db8::1 127.0.0.1 1 2\r\n",
            b"PROXY TCP6 66.249.66.1 ::1 1 2\r\n",
            b"PROXY TCP4 066.249.66.1 127.0.0.1 1 2\r\n",
            b"PROXY TCP4 66.249.66.1 127.0.0.1 080 2\r\n",
            b"PROXY TCP4 66.249.66.1 127.0.0.1 65536 2\r\n",
            b"PROXY TCP4 66.249.66.1 127.0.0.1 -1 2\r\n",
            b"PROXY TCP4  66.249.66.1 127.0.0.1 1 2\r\n",
            b"PROXY UDP4 66.249.66.1 127.0.0.1 1 2\r\n",
            b"PROXY tcp4 66.249.66.1 127.0.0.1 1 2\r\n",
            b"PROXY \r\n",
            b"PROXY TCP4 1.2.3.4\n",
            b"PROXY TCP4 1.2.3.4\rX",
            b"PROXY TCP4 1.2.3.\xff",
        ];
        for b in bad {
            assert!(
                matches!(parse(b), Err(Error::Invalid { version: 1, .. })),
                "{:?}: {:?}",
                String::from_utf8_lossy(b),
                parse(b)
            );
        }
        for missing in [&b"GET / HTTP/1.1\r\n"[..], b"PROXZ", b"\x16\x03\x01", b"PRI * HTTP/2.0"] {
            assert_eq!(parse(missing), Err(Error::Missing), "{:?}", String::from_utf8_lossy(missing));
        }
        let long = format!("PROXY UNKNOWN {}\r\n", "x".repeat(100));
        assert_eq!(parse(long.as_bytes()), Err(Error::TooLong(V1_MAX)));
        // The longest legal line fits.
        let longest = b"PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";
        assert_eq!(longest.len(), 104);
        assert!(parse(longest).is_ok());
    }

    #[test]
    fn v2_inet_inet6_and_local() {
        let mut h = v2_header(1, 0x11, &inet4([66, 249, 66, 1], [10, 0, 0, 2], 51234, 443));
        let header_len = h.len();
        h.extend_from_slice(b"\x16\x03\x01 the TLS ClientHello");
        let p = parse(&h).unwrap();
        assert_eq!(
            p,
            Parsed {
                version: 2,
                source: Some(addr("66.249.66.1:51234")),
                destination: Some(addr("10.0.0.2:443")),
                consumed: header_len
            }
        );
        let mut block = Vec::new();
        block.extend_from_slice(&"2001:db8::7".parse::<Ipv6Addr>().unwrap().octets());
        block.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        block.extend_from_slice(&[0x1f, 0x90, 0x00, 0x50]);
        // A TLV (AWS's VPC endpoint ID, type 0xEA) after the addresses is skipped.
        block.extend_from_slice(&[0xEA, 0x00, 0x04, 0x01, b'v', b'p', b'c']);
        let p = parse(&v2_header(1, 0x21, &block)).unwrap();
        assert_eq!(p.source, Some(addr("[2001:db8::7]:8080")));
        assert_eq!(p.consumed, 16 + block.len());
        // LOCAL: a health check; the connection's own addresses stand,
        // whatever the family byte says.
        for family in [0x00, 0x11, 0xff] {
            let p = parse(&v2_header(0, family, &inet4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2))).unwrap();
            assert_eq!((p.source, p.consumed), (None, 28));
        }
        // UNSPEC, UDP and Unix fall back to the connection's addresses.
        assert_eq!(parse(&v2_header(1, 0x00, &[])).unwrap().source, None);
        assert_eq!(parse(&v2_header(1, 0x12, &inet4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2))).unwrap().source, None);
        assert_eq!(parse(&v2_header(1, 0x31, &[0; 216])).unwrap().source, None);
    }

    #[test]
    fn v2_refusals() {
        let block = inet4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2);
        let mut wrong_version = v2_header(1, 0x11, &block);
        wrong_version[12] = 0x11;
        let bad = [
            wrong_version,
            v2_header(2, 0x11, &block),
            v2_header(1, 0x13, &block),
            v2_header(1, 0x10, &block),
            v2_header(1, 0x41, &block),
            v2_header(1, 0x11, &block[..11]),
            v2_header(1, 0x21, &[0; 35]),
            v2_header(1, 0x31, &[0; 215]),
        ];
        for b in &bad {
            assert!(matches!(parse(b), Err(Error::Invalid { version: 2, .. })), "{b:?}: {:?}", parse(b));
        }
        let mut huge = V2_SIGNATURE.to_vec();
        huge.extend_from_slice(&[0x21, 0x11, 0xff, 0xff]);
        assert_eq!(parse(&huge), Err(Error::TooLong(V2_MAX)));
        assert_eq!(parse(&v2_header(1, 0x11, &vec![0; V2_MAX - 16])).map(|p| p.consumed), Ok(V2_MAX));
        assert_eq!(parse(&v2_header(1, 0x11, &vec![0; V2_MAX - 15])), Err(Error::TooLong(V2_MAX)));
        assert_eq!(parse(b"\r\n\r\n\0\r\nQUIZ\n"), Err(Error::Missing));
        assert_eq!(parse(b"\r\n\r\nGET"), Err(Error::Missing));
    }

    /// Every prefix of a header asks for more, never for more than the
    /// header, and reading exactly what it asks for reaches the header.
    #[test]
    fn partial_input_asks_for_no_more_than_the_header() {
        let headers = [
            b"PROXY TCP4 66.249.66.1 127.0.0.1 51234 8080\r\n".to_vec(),
            b"PROXY UNKNOWN\r\n".to_vec(),
            v2_header(1, 0x11, &inet4([66, 249, 66, 1], [10, 0, 0, 2], 51234, 443)),
            v2_header(0, 0x00, &[]),
        ];
        for h in &headers {
            let whole = parse(h).unwrap();
            assert_eq!(whole.consumed, h.len());
            for n in 0..h.len() {
                match parse(&h[..n]) {
                    Err(Error::Incomplete { needed }) => assert!(needed > n && needed <= h.len(), "{n}: {needed}"),
                    other => panic!("prefix of {n} bytes: {other:?}"),
                }
            }
            // The reading loop of the server: from nothing, read what is asked.
            let mut have = 0;
            let mut steps = 0;
            let found = loop {
                match parse(&h[..have]) {
                    Ok(p) => break p,
                    Err(Error::Incomplete { needed }) => have = needed,
                    Err(e) => panic!("{e}"),
                }
                steps += 1;
                assert!(steps <= V1_MAX);
            };
            assert_eq!(found, whole);
        }
    }
}
