//! Key directories fetched and kept: what every host's fetcher shares, so
//! that the proxy (`server::verify::wba`, on Pingora) and the nginx module
//! (its helper threads) only do the I/O.
//!
//! A directory URL comes from the request being judged (`Signature-Agent`),
//! so every fetch is an outbound request an attacker chose. Following the
//! draft's SSRF advice (draft-meunier-webbotauth-httpsig-protocol §5.8, A.3):
//!
//! * https only ([`Target::check`]), no redirects followed (a 3xx is a
//!   failure: [`check_status`]);
//! * the host is resolved by the host and every address checked
//!   ([`check_addresses`]): private, loopback, link-local, CGNAT, multicast
//!   and unspecified addresses are refused; the connection goes to a checked
//!   address (no second resolution to race);
//! * the body is capped ([`FetchLimits::max_bytes`], 64 KiB: [`Body`],
//!   [`Response`]), the key count ([`super::MAX_DIRECTORY_KEYS`], 16) and
//!   the whole fetch time ([`FetchLimits::timeout`], 2 s);
//! * results are kept per agent URL ([`KeyCache`]): keys for an hour,
//!   failures for five minutes (A.5), in a table of bounded size;
//! * at most [`MAX_AGENTS`] agents' directories are fetched for one request,
//!   and [`judge`] turns what was had into the verdict.
//!
//! `verify.allow_private_directories: true` lifts the address rule and allows
//! plain http, for tests that serve a directory on loopback.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{DirectoryError, Inspection, KeySet, Reason, Verdict};

/// Most agents whose directories are fetched for one request.
pub const MAX_AGENTS: usize = 2;

/// Most addresses of a directory host that are checked (and tried).
pub const MAX_ADDRESSES: usize = 16;

/// Directory fetches a process (an nginx worker, the proxy) runs at once;
/// a signature whose directory would be one more is judged without it
/// (unverifiable), and nothing is cached for its agent.
pub const IN_FLIGHT_MAX: usize = 32;

/// Largest response head read.
const MAX_HEAD_BYTES: usize = 16 * 1024;

/// Bounds on one directory fetch and on the cache.
#[derive(Debug, Clone)]
pub struct FetchLimits {
    /// Allow http and private, loopback and link-local addresses (tests).
    pub allow_private: bool,
    /// Largest body read.
    pub max_bytes: usize,
    /// Wall-clock time for resolving, connecting, sending and reading.
    pub timeout: Duration,
    /// How long fetched keys are used.
    pub positive_ttl: Duration,
    /// How long a failed fetch is remembered.
    pub negative_ttl: Duration,
    /// Most agent URLs cached.
    pub max_entries: usize,
}

impl Default for FetchLimits {
    fn default() -> Self {
        FetchLimits {
            allow_private: false,
            max_bytes: 64 * 1024,
            timeout: Duration::from_secs(2),
            positive_ttl: Duration::from_secs(3600),
            negative_ttl: Duration::from_secs(300),
            max_entries: 1024,
        }
    }
}

impl FetchLimits {
    /// The default limits, with private and plain-http directories allowed
    /// or not (`verify.allow_private_directories`; the host reads the
    /// setting, so identity stays below config).
    pub fn allowing_private(allow_private: bool) -> Self {
        FetchLimits { allow_private, ..FetchLimits::default() }
    }
}

/// Why an agent's keys could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The agent is not an absolute http(s) URL with a host.
    #[error("not a directory URL: {0}")]
    BadUrl(String),
    /// http without `allow_private_directories`.
    #[error("directory must be https")]
    NotHttps,
    /// The host resolves to an address that is not public.
    #[error("directory host resolves to a non-public address {0}")]
    PrivateAddress(IpAddr),
    /// Name resolution failed or gave nothing.
    #[error("cannot resolve directory host: {0}")]
    Resolve(String),
    /// Connecting, sending or reading failed.
    #[error("directory fetch failed: {0}")]
    Io(String),
    /// Over [`FetchLimits::timeout`].
    #[error("directory fetch timed out")]
    Timeout,
    /// [`IN_FLIGHT_MAX`] fetches were under way (not cached: it says
    /// nothing of the agent).
    #[error("too many directory fetches under way")]
    Busy,
    /// A redirect (not followed).
    #[error("directory answered a redirect ({0}), not followed")]
    Redirect(u16),
    /// Any other non-200 status.
    #[error("directory answered status {0}")]
    Status(u16),
    /// Body over [`FetchLimits::max_bytes`].
    #[error("directory larger than {0} bytes")]
    TooLarge(usize),
    /// The body is not a usable directory.
    #[error(transparent)]
    Directory(#[from] DirectoryError),
}

/// The parts of a directory URL a fetch needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// https.
    pub tls: bool,
    /// The host, without brackets for an IPv6 literal.
    pub host: String,
    /// The port (443 or 80 when none is named).
    pub port: u16,
    /// Host and port as written, for the `Host` field.
    pub authority: String,
    /// Path and query, starting with `/`.
    pub path: String,
}

impl Target {
    /// Split `url` (`http(s)://host[:port][/path][?query]`, no user info).
    /// Every byte must be visible ASCII: the parts go into a request head.
    ///
    /// # Errors
    /// [`FetchError::BadUrl`].
    pub fn parse(url: &str) -> Result<Target, FetchError> {
        let bad = || FetchError::BadUrl(url.to_owned());
        if !url.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(bad());
        }
        let (scheme, rest) = url.split_once("://").ok_or_else(bad)?;
        let tls = if scheme.eq_ignore_ascii_case("https") {
            true
        } else if scheme.eq_ignore_ascii_case("http") {
            false
        } else {
            return Err(bad());
        };
        let rest = rest.split('#').next().unwrap_or_default();
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        if authority.contains('@') {
            return Err(bad());
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6.split_once(']').ok_or_else(bad)?;
            host.parse::<Ipv6Addr>().map_err(|_| bad())?;
            match after {
                "" => (host, None),
                p => (host, Some(p.strip_prefix(':').ok_or_else(bad)?)),
            }
        } else {
            let (host, port) = match authority.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            };
            if host.contains(['[', ']', ':']) {
                return Err(bad());
            }
            (host, port)
        };
        if host.is_empty() {
            return Err(bad());
        }
        let port = match port {
            None => {
                if tls {
                    443
                } else {
                    80
                }
            }
            Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(bad)?,
        };
        let path = match path {
            "" => "/".to_owned(),
            p if p.starts_with('?') => format!("/{p}"),
            p => p.to_owned(),
        };
        Ok(Target { tls, host: host.to_owned(), port, authority: authority.to_owned(), path })
    }

    /// [`Target::parse`], and plain http refused unless `limits.allow_private`.
    ///
    /// # Errors
    /// [`FetchError::BadUrl`], [`FetchError::NotHttps`].
    pub fn check(url: &str, limits: &FetchLimits) -> Result<Target, FetchError> {
        let target = Target::parse(url)?;
        if !target.tls && !limits.allow_private {
            return Err(FetchError::NotHttps);
        }
        Ok(target)
    }

    /// The HTTP/1.1 request head for the directory (`GET`, `Host`,
    /// `Accept`, `User-Agent`, `Connection: close`).
    pub fn request_head(&self) -> String {
        format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nAccept: {}\r\nUser-Agent: {}\r\nConnection: close\r\n\r\n",
            self.path,
            self.authority,
            accept(),
            user_agent()
        )
    }
}

/// The `Accept` value of a directory request.
pub fn accept() -> String {
    format!("{}, application/json", super::DIRECTORY_MEDIA_TYPE)
}

/// The `User-Agent` of robotgate's outbound requests.
pub fn user_agent() -> &'static str {
    concat!("robotgate/", env!("CARGO_PKG_VERSION"))
}

/// Refuse the resolved `addrs` of a directory host when any is not public
/// (unless `limits.allow_private`), or when there is none.
///
/// # Errors
/// [`FetchError::PrivateAddress`], [`FetchError::Resolve`] (no address).
pub fn check_addresses(addrs: &[IpAddr], limits: &FetchLimits) -> Result<(), FetchError> {
    if addrs.is_empty() {
        return Err(FetchError::Resolve("no address".into()));
    }
    if !limits.allow_private {
        if let Some(bad) = addrs.iter().find(|ip| !is_public(**ip)) {
            return Err(FetchError::PrivateAddress(*bad));
        }
    }
    Ok(())
}

/// A directory answer's status: 200 only; a redirect is not followed.
///
/// # Errors
/// [`FetchError::Redirect`], [`FetchError::Status`].
pub fn check_status(status: u16) -> Result<(), FetchError> {
    match status {
        200 => Ok(()),
        300..=399 => Err(FetchError::Redirect(status)),
        _ => Err(FetchError::Status(status)),
    }
}

/// A declared `Content-Length` over `max` is refused before any body is read.
///
/// # Errors
/// [`FetchError::TooLarge`].
pub fn check_declared(length: Option<u64>, max: usize) -> Result<(), FetchError> {
    match length {
        Some(n) if n > max as u64 => Err(FetchError::TooLarge(max)),
        _ => Ok(()),
    }
}

/// A body read in pieces, at most `max` bytes.
#[derive(Debug)]
pub struct Body {
    max: usize,
    bytes: Vec<u8>,
}

impl Body {
    /// An empty body of at most `max` bytes.
    pub fn new(max: usize) -> Body {
        Body { max, bytes: Vec::new() }
    }

    /// Add `chunk`.
    ///
    /// # Errors
    /// [`FetchError::TooLarge`] past the cap.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), FetchError> {
        if self.bytes.len() + chunk.len() > self.max {
            return Err(FetchError::TooLarge(self.max));
        }
        self.bytes.extend_from_slice(chunk);
        Ok(())
    }

    /// The bytes read.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// How a response's body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(usize),
    Chunked,
    Close,
}

/// An HTTP/1.x response to a directory request read from raw bytes, for a
/// host that reads the socket itself: the head is checked ([`check_status`],
/// [`check_declared`]) and the body (by `Content-Length`, chunked, or up to
/// the close) kept within the cap.
#[derive(Debug)]
pub struct Response {
    /// Bytes not yet taken: the head, then the chunked framing.
    buf: Vec<u8>,
    framing: Option<Framing>,
    body: Body,
    /// Chunked: the bytes left of the chunk being read, then its CRLF.
    chunk_left: usize,
    done: bool,
}

impl Response {
    /// A response whose body may be at most `max` bytes.
    pub fn new(max: usize) -> Response {
        Response { buf: Vec::new(), framing: None, body: Body::new(max), chunk_left: 0, done: false }
    }

    /// Take `bytes` read from the connection; `Ok(true)` once the body is whole.
    ///
    /// # Errors
    /// A bad head or framing ([`FetchError::Io`]), a status other than 200,
    /// a body over the cap.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<bool, FetchError> {
        if self.done {
            return Ok(true);
        }
        match self.framing {
            None => {
                self.buf.extend_from_slice(bytes);
                let Some(framing) = self.head()? else {
                    if self.buf.len() > MAX_HEAD_BYTES {
                        return Err(FetchError::Io("response head too large".into()));
                    }
                    return Ok(false);
                };
                self.framing = Some(framing);
                let rest = std::mem::take(&mut self.buf);
                self.body_bytes(&rest)
            }
            Some(_) => self.body_bytes(bytes),
        }
    }

    /// The body, once whole ([`Response::feed`] said so) or when the
    /// connection closed and the body runs to the close.
    ///
    /// # Errors
    /// The response ended early ([`FetchError::Io`]).
    pub fn finish(mut self) -> Result<Vec<u8>, FetchError> {
        if self.framing == Some(Framing::Close) {
            self.done = true;
        }
        if !self.done {
            return Err(FetchError::Io("the directory closed the connection early".into()));
        }
        Ok(self.body.into_bytes())
    }

    fn head(&mut self) -> Result<Option<Framing>, FetchError> {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut head = httparse::Response::new(&mut headers);
        let used = match head.parse(&self.buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(FetchError::Io(format!("bad response head: {e}"))),
        };
        check_status(head.code.unwrap_or(0))?;
        let mut framing = Framing::Close;
        for h in head.headers.iter() {
            let value = std::str::from_utf8(h.value).unwrap_or_default().trim();
            if h.name.eq_ignore_ascii_case("transfer-encoding") {
                if value.eq_ignore_ascii_case("chunked") {
                    framing = Framing::Chunked;
                } else {
                    return Err(FetchError::Io(format!("transfer-encoding {value}")));
                }
            } else if h.name.eq_ignore_ascii_case("content-length") && framing != Framing::Chunked {
                let n = value.parse::<u64>().map_err(|_| FetchError::Io("bad content-length".into()))?;
                check_declared(Some(n), self.body.max)?;
                framing = Framing::Length(n as usize);
            }
        }
        self.buf.drain(..used);
        Ok(Some(framing))
    }

    fn body_bytes(&mut self, bytes: &[u8]) -> Result<bool, FetchError> {
        match self.framing {
            Some(Framing::Length(n)) => {
                let take = bytes.len().min(n - self.body.bytes.len());
                self.body.push(&bytes[..take])?;
                self.done = self.body.bytes.len() == n;
            }
            Some(Framing::Close) => self.body.push(bytes)?,
            Some(Framing::Chunked) => {
                self.buf.extend_from_slice(bytes);
                self.chunks()?;
            }
            None => {}
        }
        Ok(self.done)
    }

    /// Take whole chunks out of `buf` (RFC 9112 §7.1; extensions and
    /// trailers ignored).
    fn chunks(&mut self) -> Result<(), FetchError> {
        let bad = || FetchError::Io("bad chunked body".into());
        let mut at = 0;
        loop {
            if self.chunk_left > 0 {
                // The chunk's data, then its CRLF (counted in `chunk_left`).
                let data_left = self.chunk_left.saturating_sub(2);
                let take = (self.buf.len() - at).min(self.chunk_left);
                let data = take.min(data_left);
                self.body.push(&self.buf[at..at + data])?;
                at += take;
                self.chunk_left -= take;
                if self.chunk_left > 0 {
                    break;
                }
                continue;
            }
            let Some(eol) = self.buf[at..].windows(2).position(|w| w == b"\r\n") else {
                if self.buf.len() - at > 1024 {
                    return Err(bad());
                }
                break;
            };
            let line = std::str::from_utf8(&self.buf[at..at + eol]).map_err(|_| bad())?;
            let size = line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size, 16).map_err(|_| bad())?;
            at += eol + 2;
            if size == 0 {
                self.done = true;
                break;
            }
            if size > self.body.max {
                return Err(FetchError::TooLarge(self.body.max));
            }
            self.chunk_left = size + 2;
        }
        self.buf.drain(..at);
        Ok(())
    }
}

/// Cached keys, or a remembered failure, of one agent URL.
#[derive(Debug, Clone)]
enum Entry {
    Keys(Arc<KeySet>, Instant),
    Failed(FetchError, Instant),
}

impl Entry {
    fn expires(&self) -> Instant {
        match self {
            Entry::Keys(_, t) | Entry::Failed(_, t) => *t,
        }
    }
}

/// Agent URL -> its directory's keys or the failure to get them, each kept
/// for its TTL ([`FetchLimits::positive_ttl`], [`FetchLimits::negative_ttl`])
/// in at most [`FetchLimits::max_entries`] entries. The host locks it.
#[derive(Debug)]
pub struct KeyCache {
    limits: FetchLimits,
    entries: HashMap<String, Entry>,
}

impl KeyCache {
    /// An empty cache.
    pub fn new(limits: FetchLimits) -> KeyCache {
        KeyCache { limits, entries: HashMap::new() }
    }

    /// The limits it keeps (and a fetch is held to).
    pub fn limits(&self) -> &FetchLimits {
        &self.limits
    }

    /// What is known of `agent` at `now`, if it has not expired.
    pub fn get(&self, agent: &str, now: Instant) -> Option<Result<Arc<KeySet>, FetchError>> {
        let e = self.entries.get(agent).filter(|e| e.expires() > now)?;
        Some(match e {
            Entry::Keys(k, _) => Ok(k.clone()),
            Entry::Failed(err, _) => Err(err.clone()),
        })
    }

    /// Keep what a fetch of `agent` gave at `now`. A full table first drops
    /// what has expired, then the entry closest to expiry (O(n) on a full
    /// table only).
    pub fn put(&mut self, agent: &str, result: &Result<Arc<KeySet>, FetchError>, now: Instant) {
        let entry = match result {
            Ok(k) => Entry::Keys(k.clone(), now + self.limits.positive_ttl),
            Err(e) => Entry::Failed(e.clone(), now + self.limits.negative_ttl),
        };
        let map = &mut self.entries;
        if map.len() >= self.limits.max_entries && !map.contains_key(agent) {
            map.retain(|_, e| e.expires() > now);
            if map.len() >= self.limits.max_entries {
                if let Some(k) = map.iter().min_by_key(|(_, e)| e.expires()).map(|(k, _)| k.clone()) {
                    map.remove(&k);
                }
            }
        }
        map.insert(agent.to_owned(), entry);
    }

    /// How many agents are kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The agents of `inspection` whose directories are fetched (at most [`MAX_AGENTS`]).
pub fn agents(inspection: &Inspection) -> Vec<&str> {
    let mut agents = inspection.agents();
    agents.truncate(MAX_AGENTS);
    agents
}

/// The verdict on `inspection` from the keys had (`keys`); `failed`: some
/// agent's directory could not be had. When none could and no key was
/// found, the verdict is `Invalid` with [`Reason::DirectoryUnavailable`]
/// (the draft's "unverified": A.1, 5.11).
pub fn judge(inspection: &Inspection, keys: &[(String, Arc<KeySet>)], failed: bool) -> Verdict {
    match inspection.verify(keys) {
        Verdict::Invalid { reason: Reason::UnknownKey } if failed && keys.is_empty() => {
            Verdict::Invalid { reason: Reason::DirectoryUnavailable }
        }
        v => v,
    }
}

/// Whether `ip` is a public unicast address (draft §5.8: no private, loopback
/// or link-local targets; also CGNAT, multicast, unspecified, documentation
/// and IPv4-mapped forms of those).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || (s[0] == 0x0064 && s[1] == 0xff9b) // NAT64 (may reach IPv4 private space)
                || v6 == Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 1))
        }
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    !(ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || o[0] == 0 // "this network"
        || (o[0] == 100 && (o[1] & 0xc0) == 64) // CGNAT 100.64/10
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // IETF protocol assignments
        || o[0] >= 240) // reserved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_addresses() {
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700::1111"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "224.0.0.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        let strict = FetchLimits::default();
        assert_eq!(check_addresses(&[], &strict), Err(FetchError::Resolve("no address".into())));
        let mixed = ["8.8.8.8".parse().unwrap(), "10.0.0.1".parse().unwrap()];
        assert_eq!(check_addresses(&mixed, &strict), Err(FetchError::PrivateAddress(mixed[1])));
        assert_eq!(check_addresses(&mixed, &FetchLimits { allow_private: true, ..strict }), Ok(()));
    }

    #[test]
    fn targets() {
        let t = Target::parse("https://Crawler.example/.well-known/http-message-signatures-directory").unwrap();
        assert!(t.tls);
        assert_eq!((t.host.as_str(), t.port), ("Crawler.example", 443));
        assert_eq!(t.path, "/.well-known/http-message-signatures-directory");
        let t = Target::parse("http://[::1]:8080/x?y#z").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str(), t.authority.as_str()),
            ("::1", 8080, "/x?y", "[::1]:8080")
        );
        assert_eq!(Target::parse("http://a.example?q").unwrap().path, "/?q");
        for bad in [
            "ftp://x/",
            "https://user@x/",
            "https:///x",
            "https://x:0/",
            "https://x:99999/",
            "https://x:/",
            "https://[::1/",
            "https://x y/",
            "https://x/\r\nX: y",
            "https://é.example/",
            "x",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
        let strict = FetchLimits::default();
        assert_eq!(Target::check("http://a.example/", &strict), Err(FetchError::NotHttps));
        let head = Target::parse("https://a.example:8443/k").unwrap().request_head();
        assert!(head.starts_with("GET /k HTTP/1.1\r\nHost: a.example:8443\r\n"), "{head}");
    }

    fn read(pieces: &[&[u8]], max: usize) -> Result<Vec<u8>, FetchError> {
        let mut r = Response::new(max);
        for p in pieces {
            // One byte at a time as well as whole: the framing survives any split.
            for b in p.chunks(1) {
                if r.feed(b)? {
                    return r.finish();
                }
            }
        }
        r.finish()
    }

    #[test]
    fn responses() {
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloEXTRA";
        assert_eq!(read(&[ok], 100).unwrap(), b"hello");
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n";
        assert_eq!(read(&[chunked], 100).unwrap(), b"hello");
        assert_eq!(read(&[b"HTTP/1.0 200 OK\r\n\r\nto the end"], 100).unwrap(), b"to the end");
        assert_eq!(read(&[b"HTTP/1.1 302 Found\r\nLocation: /x\r\n\r\n"], 100), Err(FetchError::Redirect(302)));
        assert_eq!(read(&[b"HTTP/1.1 500 No\r\n\r\n"], 100), Err(FetchError::Status(500)));
        assert_eq!(read(&[b"HTTP/1.1 200 OK\r\nContent-Length: 101\r\n\r\n"], 100), Err(FetchError::TooLarge(100)));
        assert_eq!(read(&[b"HTTP/1.1 200 OK\r\n\r\n", &[b'x'; 101]], 100), Err(FetchError::TooLarge(100)));
        let big_chunks = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n";
        assert_eq!(read(&[big_chunks, &[b'x'; 64], b"\r\n40\r\n", &[b'x'; 64]], 100), Err(FetchError::TooLarge(100)));
        assert!(matches!(read(&[b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel"], 100), Err(FetchError::Io(_))));
        assert!(matches!(read(&[b"garbage\r\n\r\n"], 100), Err(FetchError::Io(_))));
        assert!(matches!(read(&[&[b'x'; MAX_HEAD_BYTES + 10]], 100), Err(FetchError::Io(_))));
        let bad_chunk = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        assert!(matches!(read(&[bad_chunk], 100), Err(FetchError::Io(_))));
    }

    #[test]
    fn cache_keeps_for_the_ttl_and_stays_bounded() {
        let limits = FetchLimits { max_entries: 2, ..FetchLimits::default() };
        let mut cache = KeyCache::new(limits.clone());
        let t0 = Instant::now();
        let keys = Ok(Arc::new(KeySet::default()));
        cache.put("https://a.example", &keys, t0);
        cache.put("https://b.example", &Err(FetchError::Timeout), t0);
        assert!(cache.get("https://a.example", t0 + Duration::from_secs(60)).unwrap().is_ok());
        assert_eq!(cache.get("https://b.example", t0).unwrap(), Err(FetchError::Timeout));
        assert!(cache.get("https://b.example", t0 + limits.negative_ttl).is_none(), "failures kept 5 minutes");
        assert!(cache.get("https://a.example", t0 + limits.positive_ttl).is_none(), "keys kept an hour");
        // Full: the entry closest to expiry (the failure) goes.
        cache.put("https://c.example", &keys, t0);
        assert_eq!(cache.len(), 2);
        assert!(cache.get("https://b.example", t0).is_none());
        assert!(cache.get("https://a.example", t0).is_some() && cache.get("https://c.example", t0).is_some());
    }
}
