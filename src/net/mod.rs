//! Network names and numbers, as plain data: networks (CIDRs), `host:port`
//! syntax, `Host` header ports, and the client address behind trusted
//! proxies ([`client_address`]). No resolution happens here: the core
//! never does I/O, so names are resolved by the loader (`server::snapshot`).

mod client;

use std::net::IpAddr;

use ipnet::IpNet;

pub use self::client::{canonical, client_address, client_key, ClientHeader, Unknown, BAN_PREFIX_V6};

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

/// `example.com:8080` -> `example.com`; `[::1]:80` -> `::1`.
pub fn strip_port(host: &str) -> &str {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') && p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn host_ports_are_stripped() {
        assert_eq!(strip_port("example.com:8080"), "example.com");
        assert_eq!(strip_port("[::1]:80"), "::1");
        assert_eq!(strip_port("::1"), "::1");
        assert_eq!(strip_port("example.com"), "example.com");
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
