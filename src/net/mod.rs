//! Network names and numbers, as plain data: networks (CIDRs), `host:port`
//! syntax, the one reading of a request's host ([`site_host`]), and the client address behind trusted
//! proxies ([`client_address`]). No resolution happens here: the core
//! never does I/O, so names are resolved by the loader (`server::snapshot`).

mod client;
pub mod edge;
mod host_name;
pub mod spop;

use std::net::IpAddr;

use ipnet::IpNet;

pub use self::client::{canonical, client_address, client_key, ClientHeader, Unknown, BAN_PREFIX_V6};
pub use self::host_name::canonical_host;

/// An IPv4 or IPv6 network: an [`IpNet`] read the way a configuration
/// writes it, and matched the way a dual-stack socket reports addresses.
///
/// What [`IpNet`] does here: holding the network and deciding containment
/// (`IpNet::contains`). What stays ours, and why:
///
/// * Reading the text. `IpNet`'s parser accepts IPv4 octets with leading
///   zeros (`010.0.0.0/8`), which some tools read as octal: the address
///   part is read with `std`'s `IpAddr` parser instead, which refuses them,
///   as the rest of robotgate does. `IpNet` also takes neither a bare
///   address (a /32 or /128 here) nor spaces around the parts.
/// * IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`, what a dual-stack
///   socket reports for an IPv4 peer): `IpNet::contains` keeps the families
///   apart, so such an address is turned into the IPv4 address it carries
///   before the lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr(IpNet);

impl Cidr {
    /// Parse `10.0.0.0/8`, `::1/128` or a bare address (a /32 or /128).
    /// Host bits may be set (`10.1.2.3/8` is `10.0.0.0/8`).
    pub fn parse(s: &str) -> Option<Cidr> {
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a.trim().parse().ok()?;
        let net = match p {
            // `IpNet::new` refuses a length past the family's width.
            Some(p) => IpNet::new(addr, p.trim().parse::<u8>().ok()?).ok()?,
            None => IpNet::from(addr),
        };
        Some(Cidr(net))
    }

    /// Whether `ip` lies in the network (IPv4-mapped IPv6 addresses count as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.0.contains(&canonical(ip))
    }
}

/// The bytes a host name may hold (RFC 3986 3.2.2 reg-name: unreserved,
/// pct-encoded, sub-delims), one lookup a byte.
const HOST_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u8).is_ascii_alphanumeric();
        i += 1;
    }
    let extra = b"-._~%!$&'()*+,;=";
    let mut i = 0;
    while i < extra.len() {
        t[extra[i] as usize] = true;
        i += 1;
    }
    t
};

/// The one reading of a request's host (issue #39): what robotgate matches
/// against `sites[].hosts`, whether the name came in `Host`, in an
/// absolute-form target's authority or in an edge's `X-Forwarded-Host`.
///
/// Surrounding blanks and the port go (`[::1]:80` is `::1`), then one
/// trailing dot (`strict.test.` is the fully qualified `strict.test`, and
/// every origin serves it as such). Case is kept: sites are matched without
/// regard to it ([`crate::config::Settings::site_for_host`]). Empty stays
/// empty (HTTP/1.0 without `Host`: the default site).
///
/// `None` for what no origin reads as one host name: bytes outside a host
/// name's and an IP literal's (RFC 3986 3.2.2: letters, digits, `-._~`,
/// percent-escapes, `!$&'()*+,;=`, and `:` only inside brackets), a second
/// dot at the end, a port that is not digits. Allocates nothing.
///
/// ```
/// use robotgate::net::site_host;
/// assert_eq!(site_host(b"Strict.Test.:80"), Some("Strict.Test"));
/// assert_eq!(site_host(b"[::1]:8080"), Some("::1"));
/// assert_eq!(site_host(b"a..") , None);
/// assert_eq!(site_host(b"a b"), None);
/// ```
pub fn site_host(raw: &[u8]) -> Option<&str> {
    site_host_str(std::str::from_utf8(raw).ok()?)
}

/// [`site_host`] of a value already known to be text.
pub fn site_host_str(text: &str) -> Option<&str> {
    let text = text.trim_matches([' ', '\t']);
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (literal, after) = rest.split_once(']')?;
        // Only an IPv6 address goes in brackets (RFC 3986 3.2.2).
        literal.parse::<std::net::Ipv6Addr>().ok()?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (literal, port)
    } else {
        match text.bytes().rposition(|b| b == b':') {
            // `:` is ASCII: both sides are text.
            Some(i) => (&text[..i], Some(&text[i + 1..])),
            None => (text, None),
        }
    };
    if port.is_some_and(|p| !p.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    if text.starts_with('[') {
        return Some(host);
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    if name.ends_with('.') || !name.bytes().all(|b| HOST_BYTE[usize::from(b)]) {
        return None;
    }
    Some(name)
}

/// Whether `s` has the syntax of `host:port`: a host name or address (IPv6 in
/// brackets) and a port from 1 to 65535. Says nothing about whether the name
/// resolves.
pub fn is_host_port(s: &str) -> bool {
    if s.parse::<std::net::SocketAddr>().is_ok() {
        return true;
    }
    let Some((host, port)) = s.rsplit_once(':') else { return false };
    let port_ok = port.parse::<u16>().is_ok_and(|p| p > 0);
    let host_ok = !host.is_empty()
        && host.len() <= 253
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
    port_ok && host_ok
}

/// A token character (RFC 9110 5.6.2): what header names, methods and
/// the tokens of structured headers are made of.
pub fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The text of an address, as `Display` writes it: IPv4 written by hand
/// (a record per refusal writes one, and `fmt`'s machinery costs more than
/// the rest of the record's copies), IPv6 by `Display`.
pub fn ip_text(ip: IpAddr) -> String {
    let mut s = String::with_capacity(15);
    write_ip_text(&mut s, ip);
    s
}

/// [`ip_text`] written over `out` (cleared first), in its buffer.
pub fn write_ip_text(out: &mut String, ip: IpAddr) {
    out.clear();
    match ip {
        IpAddr::V4(v4) => {
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    out.push('.');
                }
                if octet >= 100 {
                    out.push(char::from(b'0' + octet / 100));
                }
                if octet >= 10 {
                    out.push(char::from(b'0' + octet / 10 % 10));
                }
                out.push(char::from(b'0' + octet % 10));
            }
        }
        IpAddr::V6(_) => {
            use std::fmt::Write as _;
            let _ = write!(out, "{ip}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_text_is_display() {
        for ip in ["0.0.0.0", "9.10.99.100", "255.255.255.255", "192.0.2.7", "::1", "2001:db8::1", "::ffff:1.2.3.4"] {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(ip_text(ip), ip.to_string());
        }
        for n in [0u32, 1, 0x0a00_0001, 0xffff_ffff, 0x6442_0a63, 123_456_789] {
            let ip = IpAddr::from(std::net::Ipv4Addr::from(n));
            assert_eq!(ip_text(ip), ip.to_string());
        }
    }

    #[test]
    fn cidrs() {
        let c = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(c.contains("10.1.2.3".parse().unwrap()));
        assert!(!c.contains("11.0.0.1".parse().unwrap()));
        assert!(c.contains("::ffff:10.0.0.1".parse().unwrap()));
        assert!(Cidr::parse("::1").unwrap().contains("::1".parse().unwrap()));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains("8.8.8.8".parse().unwrap()));
        assert!(Cidr::parse("10.0.0.0/33").is_none());
        assert!(Cidr::parse("banana").is_none());
    }

    #[test]
    fn cidr_text_is_read_by_std_and_matched_by_ipnet() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        // Octal-looking octets are refused, as `std` refuses them.
        assert!(Cidr::parse("010.0.0.0/8").is_none());
        // Spaces around the parts, host bits, and a bare address.
        let c = Cidr::parse(" 10.1.2.3 / 8 ").unwrap();
        assert!(c.contains(ip("10.200.0.1")) && !c.contains(ip("11.0.0.0")));
        assert!(Cidr::parse("192.0.2.7").unwrap().contains(ip("::ffff:192.0.2.7")));
        assert!(!Cidr::parse("192.0.2.7").unwrap().contains(ip("192.0.2.8")));
        // IPv6, and the families kept apart.
        let v6 = Cidr::parse("2001:db8::/32").unwrap();
        assert!(v6.contains(ip("2001:db8:ffff::1")) && !v6.contains(ip("2001:db9::1")));
        assert!(Cidr::parse("::/0").unwrap().contains(ip("2001:db8::1")));
        assert!(!Cidr::parse("::/0").unwrap().contains(ip("10.0.0.1")));
        assert!(!Cidr::parse("0.0.0.0/0").unwrap().contains(ip("2001:db8::1")));
        assert!(Cidr::parse("::1/129").is_none() && Cidr::parse("10.0.0.0/").is_none());
    }

    #[test]
    fn one_reading_of_host() {
        for (raw, want) in [
            (&b"strict.test"[..], Some("strict.test")),
            (b"strict.test.", Some("strict.test")),
            (b"STRICT.TEST.", Some("STRICT.TEST")),
            (b"strict.test.:80", Some("strict.test")),
            (b" strict.test:8080 ", Some("strict.test")),
            (b"[::1]:80", Some("::1")),
            (b"[::1]", Some("::1")),
            (b"127.0.0.1:8080", Some("127.0.0.1")),
            (b"", Some("")),
            (b"strict.test..", None),
            (b"strict.test:8o", None),
            (b"strict test", None),
            (b"strict.test/x", None),
            (b"::1", None),
            (b"[::1", None),
            (b"[::1]x", None),
            (b"[zz::1]", None),
            (b"[.]", None),
            (b"[1.2.3.4]", None),
            (b"\xff.test", None),
        ] {
            assert_eq!(site_host(raw), want, "{:?}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn host_port_syntax() {
        for ok in ["127.0.0.1:8080", "[::1]:80", "localhost:9102", "origin.internal:443"] {
            assert!(is_host_port(ok), "{ok}");
        }
        for bad in ["nowhere", "host:0", "host:65536", ":80", "a b:80", "http://x:80"] {
            assert!(!is_host_port(bad), "{bad}");
        }
    }
}
