//! One CIDR prefix of a feed, and addresses as integers of their family.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// One CIDR prefix: a network address (host bits zero) and a length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Prefix {
    pub(super) addr: IpAddr,
    pub(super) len: u8,
}

impl Prefix {
    /// A prefix from its parts.
    ///
    /// # Errors
    /// A reason when `len` is too long for the family or `addr` has host bits
    /// set.
    pub fn new(addr: IpAddr, len: u8) -> Result<Prefix, String> {
        let max = match addr {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        };
        if len > max {
            return Err(format!("prefix length /{len} is longer than {max}"));
        }
        let p = Prefix { addr, len };
        if p.first() != key(addr) {
            return Err(format!("host bits are set (the network is {})", Prefix { addr: p.network_addr(), len }));
        }
        Ok(p)
    }

    /// The network address.
    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    /// The prefix length in bits.
    pub fn length(&self) -> u8 {
        self.len
    }

    /// Whether `ip` is inside. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`)
    /// counts as the IPv4 address it carries.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match (self.addr, ip) {
            (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_)) => {
                (self.first()..=self.last()).contains(&key(ip))
            }
            _ => false,
        }
    }

    /// Bits of the family (32 or 128).
    fn bits(&self) -> u32 {
        match self.addr {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        }
    }

    /// Host mask within the family's width, as u128.
    fn host_mask(&self) -> u128 {
        let host = self.bits() - u32::from(self.len);
        if host == 0 {
            0
        } else {
            u128::MAX >> (128 - host)
        }
    }

    /// First address, as the family's integer widened to u128.
    pub(super) fn first(&self) -> u128 {
        key(self.addr) & !self.host_mask()
    }

    /// Last address, likewise.
    pub(super) fn last(&self) -> u128 {
        self.first() | self.host_mask()
    }

    fn network_addr(&self) -> IpAddr {
        match self.addr {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(self.first() as u32)),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(self.first())),
        }
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

impl FromStr for Prefix {
    type Err = String;

    /// Parses `addr/len`; host bits must be zero (see [`Feed::parse`](super::Feed::parse)).
    fn from_str(s: &str) -> Result<Prefix, String> {
        let (addr, len) = s.split_once('/').ok_or_else(|| "not `address/length`".to_owned())?;
        let addr: IpAddr = addr.parse().map_err(|_| format!("`{addr}` is not an IP address"))?;
        // Digits only: u8::from_str would accept `+24`.
        if len.is_empty() || len.len() > 3 || !len.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("`{len}` is not a prefix length"));
        }
        let len: u8 = len.parse().map_err(|_| format!("`{len}` is not a prefix length"))?;
        Prefix::new(addr, len)
    }
}

/// The address as an integer of its family, widened to u128.
fn key(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

/// IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`, what a dual-stack socket
/// reports for an IPv4 peer) become the IPv4 address they carry.
pub(super) use crate::net::canonical;
