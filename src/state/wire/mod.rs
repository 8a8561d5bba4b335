//! The shared store's conversation, written once: the Redis commands a
//! store client sends and what it makes of their replies, for the proxy's
//! async client (`server::store::redis`) and the nginx module's blocking one
//! (`nginx/src/store.rs`). No I/O here: a client writes [`Command::encode`]
//! and hands each reply to [`parse`], under its own deadline per command.
//!
//! The protocol is RESP2, which every Redis 6+ and Valkey speaks without a
//! `HELLO`. Replies come from a server the operator runs, but a store on
//! the network can be anything, so [`parse`] bounds what a reply may make
//! it hold ([`MAX_BULK`], [`MAX_REPLY`], [`MAX_DEPTH`]).

use std::net::IpAddr;
use std::time::Duration;

use super::shared::{Event, Question};

mod loading;

pub use loading::Loading;

/// The longest loading the live keys may take (SCAN and MGET together,
/// every pattern): a store whose SCAN never ends, or that answers at a
/// trickle, is unreachable, not a keeper stuck for ever (issue #52).
pub const LOAD_FOR: Duration = Duration::from_secs(10);

/// The most events of each pattern applied when connecting; the rest arrive
/// as they are announced or not at all (as if evicted from local tables).
pub const LOAD_MAX: usize = 100_000;

/// How long connecting may take, given `state.timeout_ms`: that, but at
/// least a second (a TLS handshake, a server just restarted).
pub fn connect_within(timeout: Duration) -> Duration {
    timeout.max(Duration::from_secs(1))
}

/// How long a command that no request waits for (an announcement, a
/// verdict kept for the others, a `PING`) may take: four times
/// `state.timeout_ms`, and at least half a second (a store that is merely
/// busy is not called down). A command a request waits for has
/// `state.timeout_ms`.
pub fn background_within(timeout: Duration) -> Duration {
    timeout.saturating_mul(4).max(Duration::from_millis(500))
}

/// Keys asked for per SCAN step (a hint to the server).
const SCAN_COUNT: usize = 1000;

/// The longest bulk string a reply may hold (an event is a few hundred bytes).
pub const MAX_BULK: usize = 1 << 20;

/// The most bytes one reply may take, in all.
pub const MAX_REPLY: usize = 16 << 20;

/// The most nested arrays.
pub const MAX_DEPTH: usize = 4;

/// One command: its arguments, the name first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    args: Vec<Vec<u8>>,
}

impl Command {
    fn new(name: &str) -> Command {
        Command { args: vec![name.as_bytes().to_vec()] }
    }

    fn arg(mut self, a: impl AsRef<[u8]>) -> Command {
        self.args.push(a.as_ref().to_vec());
        self
    }

    /// The arguments, the command's name first.
    pub fn args(&self) -> &[Vec<u8>] {
        &self.args
    }

    /// Append the command as the server reads it (an array of bulk strings).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(format!("*{}\r\n", self.args.len()).as_bytes());
        for a in &self.args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// A reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A null bulk string or array (`$-1`, `*-1`).
    Nil,
    /// An integer.
    Int(i64),
    /// A simple or bulk string.
    Text(Vec<u8>),
    /// An array.
    Array(Vec<Reply>),
    /// An error reply (`-ERR ...`).
    Error(String),
}

/// What a store said that a client cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Bytes that are not RESP2.
    #[error("not a Redis reply: {0}")]
    Malformed(&'static str),
    /// A reply past [`MAX_BULK`], [`MAX_REPLY`] or [`MAX_DEPTH`].
    #[error("a reply too large: {0}")]
    TooLarge(&'static str),
    /// The server's own error.
    #[error("{0}")]
    Server(String),
    /// A reply of another shape than the command's.
    #[error("unexpected reply to {0}")]
    Unexpected(&'static str),
}

/// What [`parse`] found at the start of a buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A whole reply, and the bytes it took.
    Reply(Reply, usize),
    /// Not all there yet: parse again once the buffer holds at least this
    /// many bytes (so a trickle is not parsed again byte by byte).
    Needs(usize),
}

/// Read one reply from the start of `buf`.
///
/// # Errors
/// The bytes are not RESP2, or a reply goes past the bounds above.
pub fn parse(buf: &[u8]) -> Result<Parsed, WireError> {
    let mut at = 0;
    match reply(buf, &mut at, 0)? {
        Some(r) => Ok(Parsed::Reply(r, at)),
        None => Ok(Parsed::Needs(at.max(buf.len() + 1))),
    }
}

/// The line at `*at` without its CRLF, moving past it; `None` when the
/// buffer ends first (`*at` then says how far is known to be needed).
fn line<'b>(buf: &'b [u8], at: &mut usize) -> Result<Option<&'b [u8]>, WireError> {
    let rest = &buf[*at..];
    match memchr::memchr(b'\n', rest) {
        Some(i) if i > 0 && rest[i - 1] == b'\r' => {
            *at += i + 1;
            Ok(Some(&rest[..i - 1]))
        }
        Some(_) => Err(WireError::Malformed("a line not ended by CRLF")),
        None if rest.len() > 64 * 1024 => Err(WireError::TooLarge("a line")),
        None => {
            *at = buf.len() + 1;
            Ok(None)
        }
    }
}

fn number(s: &[u8]) -> Result<i64, WireError> {
    std::str::from_utf8(s).ok().and_then(|s| s.parse().ok()).ok_or(WireError::Malformed("a number"))
}

fn reply(buf: &[u8], at: &mut usize, depth: usize) -> Result<Option<Reply>, WireError> {
    if *at >= buf.len() {
        *at = buf.len() + 1;
        return Ok(None);
    }
    if *at > MAX_REPLY {
        return Err(WireError::TooLarge("the reply"));
    }
    let kind = buf[*at];
    let start = *at;
    *at += 1;
    let Some(head) = line(buf, at)? else { return Ok(None) };
    Ok(Some(match kind {
        b'+' => Reply::Text(head.to_vec()),
        b'-' => Reply::Error(String::from_utf8_lossy(head).into_owned()),
        b':' => Reply::Int(number(head)?),
        b'$' => {
            let n = number(head)?;
            if n < 0 {
                return Ok(Some(Reply::Nil));
            }
            let n = usize::try_from(n).map_err(|_| WireError::Malformed("a length"))?;
            if n > MAX_BULK {
                return Err(WireError::TooLarge("a bulk string"));
            }
            let end = *at + n;
            if buf.len() < end + 2 {
                *at = end + 2;
                return Ok(None);
            }
            if &buf[end..end + 2] != b"\r\n" {
                return Err(WireError::Malformed("a bulk string not ended by CRLF"));
            }
            let text = buf[*at..end].to_vec();
            *at = end + 2;
            Reply::Text(text)
        }
        b'*' => {
            let n = number(head)?;
            if n < 0 {
                return Ok(Some(Reply::Nil));
            }
            if depth >= MAX_DEPTH {
                return Err(WireError::TooLarge("nesting"));
            }
            // Each element takes at least 3 bytes: a count past what the
            // reply may hold is refused before anything is kept.
            let n = usize::try_from(n).map_err(|_| WireError::Malformed("a length"))?;
            if n > MAX_REPLY / 3 {
                return Err(WireError::TooLarge("an array"));
            }
            let mut items = Vec::with_capacity(n.min(1024));
            for _ in 0..n {
                match reply(buf, at, depth + 1)? {
                    Some(r) => items.push(r),
                    None => return Ok(None),
                }
            }
            Reply::Array(items)
        }
        _ => {
            *at = start;
            return Err(WireError::Malformed("an unknown reply type"));
        }
    }))
}

impl Reply {
    /// The reply, or the server's error as an error.
    ///
    /// # Errors
    /// The reply is the server's error.
    pub fn ok(self) -> Result<Reply, WireError> {
        match self {
            Reply::Error(e) => Err(WireError::Server(e)),
            r => Ok(r),
        }
    }

    fn int(&self, to: &'static str) -> Result<i64, WireError> {
        match self {
            Reply::Int(n) => Ok(*n),
            Reply::Text(t) => number(t).map_err(|_| WireError::Unexpected(to)),
            Reply::Error(e) => Err(WireError::Server(e.clone())),
            _ => Err(WireError::Unexpected(to)),
        }
    }
}

/// A server's address and login, from a `redis://` or `rediss://` URL
/// (`redis://[user[:password]@]host[:port][/db]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `rediss://`: TLS.
    pub tls: bool,
    /// The host name or address (an IPv6 address without brackets).
    pub host: String,
    /// The port (6379 unless said).
    pub port: u16,
    /// The user to `AUTH` as, if any.
    pub user: Option<String>,
    /// The password to `AUTH` with, if any.
    pub password: Option<String>,
    /// The database to `SELECT`.
    pub db: u32,
}

impl Endpoint {
    /// Read a store's URL.
    ///
    /// # Errors
    /// What is wrong with it.
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let (tls, rest) = if let Some(r) = url.strip_prefix("redis://") {
            (false, r)
        } else if let Some(r) = url.strip_prefix("rediss://") {
            (true, r)
        } else {
            return Err("a store's URL starts with redis:// or rediss://".into());
        };
        let rest = rest.split(['?', '#']).next().unwrap_or(rest);
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(u) => {
                let (user, pass) = u.split_once(':').map_or((u, None), |(a, b)| (a, Some(b)));
                let user = Some(percent_decoded(user)?).filter(|u| !u.is_empty());
                (user, pass.map(percent_decoded).transpose()?.filter(|p| !p.is_empty()))
            }
        };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or("an IPv6 address without its ]")?;
            (h, after.strip_prefix(':'))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        if host.is_empty() {
            return Err("no host in the store's URL".into());
        }
        let port = match port {
            None | Some("") => 6379,
            Some(p) => p.parse().map_err(|_| format!("the port {p:?} is not a number"))?,
        };
        let db = match path.trim_matches('/') {
            "" => 0,
            d => d.parse().map_err(|_| format!("the database {d:?} is not a number"))?,
        };
        Ok(Endpoint { tls, host: host.to_owned(), port, user, password, db })
    }

    /// What to say right after connecting: `AUTH` and `SELECT`, as needed.
    pub fn hello(&self) -> Vec<Command> {
        let mut out = Vec::new();
        match (&self.user, &self.password) {
            (Some(u), Some(p)) => out.push(Command::new("AUTH").arg(u).arg(p)),
            (None, Some(p)) => out.push(Command::new("AUTH").arg(p)),
            _ => {}
        }
        if self.db != 0 {
            out.push(Command::new("SELECT").arg(self.db.to_string()));
        }
        out
    }
}

fn percent_decoded(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            let v = hex.and_then(|h| u8::from_str_radix(h, 16).ok()).ok_or("a bad %-escape in the store's URL")?;
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "the store's URL login is not UTF-8".into())
}

/// The store's names under one prefix (`state.prefix`), and the commands
/// robotgate sends.
#[derive(Debug, Clone)]
pub struct Store {
    prefix: String,
}

impl Store {
    /// The names under `prefix`.
    pub fn new(prefix: &str) -> Store {
        Store { prefix: prefix.to_owned() }
    }

    /// `name` under the prefix.
    pub fn key(&self, name: &str) -> String {
        let mut k = String::with_capacity(self.prefix.len() + name.len());
        k.push_str(&self.prefix);
        k.push_str(name);
        k
    }

    /// The channel bans and reads are announced on.
    pub fn channel(&self) -> String {
        self.key("events")
    }

    /// `PING`.
    pub fn ping() -> Command {
        Command::new("PING")
    }

    /// Subscribe to the announcements.
    pub fn subscribe(&self) -> Command {
        Command::new("SUBSCRIBE").arg(self.channel())
    }

    /// The rate question's first step: `SET key now NX PX interval` admits
    /// atomically (only one instance can make the key), so an admitted
    /// request costs one round trip. A refused one asks [`Store::wait`]
    /// next. (A Lua script would do both in one step, at about twice
    /// Redis's CPU per question.)
    pub fn admit(&self, q: &Question, now_ms: u64) -> Command {
        Command::new("SET")
            .arg(self.key(&q.key))
            .arg(now_ms.to_string())
            .arg("NX")
            .arg("PX")
            .arg(interval_ms(q).to_string())
    }

    /// The rate question's second step: how long the key lives yet.
    pub fn wait(&self, q: &Question) -> Command {
        Command::new("PTTL").arg(self.key(&q.key))
    }

    /// Write an event under its key, for its time, and announce it: two
    /// commands, sent together.
    pub fn announce(&self, event: &Event, now_ms: u64) -> Option<[Command; 2]> {
        let value = serde_json::to_string(event).ok()?;
        let ttl = event.ttl(now_ms).as_millis().max(1).to_string();
        Some([
            Command::new("SET").arg(self.key(&event.key())).arg(&value).arg("PX").arg(ttl),
            Command::new("PUBLISH").arg(self.channel()).arg(value),
        ])
    }

    /// The key of a reverse-DNS verdict for `ip` against `suffixes`.
    pub fn rdns_key(&self, ip: IpAddr, suffixes: &[String]) -> String {
        let (ip, suffixes) = crate::identity::rdns::verdict_key(ip, suffixes);
        self.key(&format!("rdns:{ip}:{suffixes:016x}"))
    }

    /// Ask for a stored verdict and the time it has left: two commands.
    pub fn rdns_ask(&self, ip: IpAddr, suffixes: &[String]) -> [Command; 2] {
        let key = self.rdns_key(ip, suffixes);
        [Command::new("GET").arg(&key), Command::new("PTTL").arg(key)]
    }

    /// Keep a verdict (its JSON) for `ttl`.
    pub fn rdns_keep(&self, ip: IpAddr, suffixes: &[String], verdict_json: &str, ttl: Duration) -> Command {
        Command::new("SET")
            .arg(self.rdns_key(ip, suffixes))
            .arg(verdict_json)
            .arg("PX")
            .arg(ttl.as_millis().max(1).to_string())
    }

    /// Load the live bans and reads, as [`Loading`] steps through them.
    pub fn loading(&self) -> Loading {
        Loading::new([self.key("ban:*"), self.key("robots:*")])
    }
}

fn interval_ms(q: &Question) -> u64 {
    q.interval.as_millis().clamp(1, u128::from(u64::MAX)) as u64
}

/// Whether the rate question's [`Store::admit`] admitted the request.
///
/// # Errors
/// The server's error, or a reply of another shape.
pub fn admitted(reply: &Reply) -> Result<bool, WireError> {
    match reply {
        Reply::Text(_) => Ok(true),
        Reply::Nil => Ok(false),
        Reply::Error(e) => Err(WireError::Server(e.clone())),
        _ => Err(WireError::Unexpected("SET NX")),
    }
}

/// The wait a refused rate question is told, from [`Store::wait`]'s reply.
///
/// # Errors
/// The server's error, or a reply of another shape.
pub fn wait(q: &Question, reply: &Reply) -> Result<Duration, WireError> {
    let ms = interval_ms(q);
    let left = reply.int("PTTL")?;
    // -2: the key expired in between, so the wait is over; wait a moment anyway.
    Ok(Duration::from_millis(left.clamp(1, ms.min(i64::MAX as u64) as i64) as u64))
}

/// A stored verdict's JSON and the time it has left, from
/// [`Store::rdns_ask`]'s replies; `None` when there is none.
///
/// # Errors
/// The server's error, or a reply of another shape.
pub fn rdns_found(value: &Reply, left: &Reply) -> Result<Option<(String, Duration)>, WireError> {
    match value {
        Reply::Nil => Ok(None),
        Reply::Text(t) => {
            let left = left.int("PTTL")?;
            Ok(String::from_utf8(t.clone()).ok().map(|v| (v, Duration::from_millis(left.max(1) as u64))))
        }
        Reply::Error(e) => Err(WireError::Server(e.clone())),
        _ => Err(WireError::Unexpected("GET")),
    }
}

/// An announcement's payload, if `reply` is one (a subscriber's
/// `message` push); `None` for the subscription's confirmation and the like.
pub fn message(reply: &Reply) -> Option<&[u8]> {
    match reply {
        Reply::Array(items) => match items.as_slice() {
            [Reply::Text(kind), _, Reply::Text(payload)] if kind == b"message" => Some(payload),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(c: &Command) -> String {
        let mut out = Vec::new();
        c.encode(&mut out);
        String::from_utf8(out).unwrap()
    }

    fn whole(bytes: &[u8]) -> Reply {
        match parse(bytes).unwrap() {
            Parsed::Reply(r, n) => {
                assert_eq!(n, bytes.len());
                r
            }
            Parsed::Needs(n) => panic!("needs {n}"),
        }
    }

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        let s = Store::new("rg:");
        let q = Question { key: "rate:shop:bot:192.0.2.1".into(), interval: Duration::from_secs(5) };
        assert_eq!(
            encoded(&s.admit(&q, 42)),
            "*6\r\n$3\r\nSET\r\n$26\r\nrg:rate:shop:bot:192.0.2.1\r\n$2\r\n42\r\n$2\r\nNX\r\n$2\r\nPX\r\n$4\r\n5000\r\n"
        );
        assert_eq!(encoded(&s.wait(&q)), "*2\r\n$4\r\nPTTL\r\n$26\r\nrg:rate:shop:bot:192.0.2.1\r\n");
    }

    #[test]
    fn replies_of_every_kind() {
        assert_eq!(whole(b"+OK\r\n"), Reply::Text(b"OK".to_vec()));
        assert_eq!(whole(b"$-1\r\n"), Reply::Nil);
        assert_eq!(whole(b":-2\r\n"), Reply::Int(-2));
        assert_eq!(whole(b"-ERR no\r\n"), Reply::Error("ERR no".into()));
        assert_eq!(
            whole(b"*2\r\n$1\r\n0\r\n*1\r\n$4\r\na\r\nb\r\n"),
            Reply::Array(vec![Reply::Text(b"0".to_vec()), Reply::Array(vec![Reply::Text(b"a\r\nb".to_vec())])])
        );
    }

    #[test]
    fn a_reply_in_pieces_is_read_once_whole() {
        let bytes = b"*3\r\n$7\r\nmessage\r\n$9\r\nrg:events\r\n$5\r\nhello\r\n";
        let mut last_need = 0;
        for end in 0..bytes.len() {
            match parse(&bytes[..end]).unwrap() {
                Parsed::Needs(n) => {
                    assert!(n > end && n <= bytes.len(), "{end}: needs {n}");
                    assert!(n >= last_need);
                    last_need = n;
                }
                Parsed::Reply(..) => panic!("whole at {end}"),
            }
        }
        assert_eq!(message(&whole(bytes)), Some(&b"hello"[..]));
    }

    #[test]
    fn hostile_replies_are_refused_before_they_are_held() {
        assert!(matches!(parse(b"$99999999999\r\n"), Err(WireError::TooLarge(_))));
        assert!(matches!(parse(b"*99999999999\r\n"), Err(WireError::TooLarge(_))));
        assert!(matches!(parse(b"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n"), Err(WireError::TooLarge(_))));
        assert!(matches!(parse(b"?x\r\n"), Err(WireError::Malformed(_))));
        assert!(matches!(parse(b"$3\r\nabcd\r\n"), Err(WireError::Malformed(_))));
        assert!(matches!(parse(b":12\n"), Err(WireError::Malformed(_))));
        assert!(matches!(parse(&[b'+'; 70_000]), Err(WireError::TooLarge(_))));
    }

    #[test]
    fn rate_answers() {
        let q = Question { key: "k".into(), interval: Duration::from_millis(5000) };
        assert!(admitted(&Reply::Text(b"OK".to_vec())).unwrap());
        assert!(!admitted(&Reply::Nil).unwrap());
        assert!(admitted(&Reply::Error("LOADING".into())).is_err());
        assert_eq!(wait(&q, &Reply::Int(1234)).unwrap(), Duration::from_millis(1234));
        assert_eq!(wait(&q, &Reply::Int(-2)).unwrap(), Duration::from_millis(1));
        assert_eq!(wait(&q, &Reply::Int(99_999)).unwrap(), Duration::from_millis(5000));
    }

    #[test]
    fn urls() {
        let e = Endpoint::parse("rediss://us%40r:p%3Ass@[::1]:6380/3").unwrap();
        assert_eq!((e.tls, e.host.as_str(), e.port, e.db), (true, "::1", 6380, 3));
        assert_eq!((e.user.as_deref(), e.password.as_deref()), (Some("us@r"), Some("p:ss")));
        assert_eq!(e.hello().len(), 2);
        let e = Endpoint::parse("redis://:pw@127.0.0.1").unwrap();
        assert_eq!((e.port, e.db, e.user.as_deref(), e.password.as_deref()), (6379, 0, None, Some("pw")));
        assert_eq!(e.hello(), vec![Command::new("AUTH").arg("pw")]);
        assert!(Endpoint::parse("redis://127.0.0.1/").unwrap().hello().is_empty());
        for bad in ["http://x", "redis://", "redis://h:port", "redis://h/db", "redis://%zz@h"] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn loading_walks_both_patterns_and_applies_events() {
        let s = Store::new("rg:");
        let mut l = s.loading();
        let first = l.first().unwrap();
        assert_eq!(first.args()[3], b"rg:ban:*");
        let ban = Event::Ban { site: "shop".into(), client: "192.0.2.9".parse().unwrap(), until_ms: u64::MAX };
        let json = serde_json::to_vec(&ban).unwrap();
        let scan = |cursor: &str, keys: &[&str]| {
            Reply::Array(vec![
                Reply::Text(cursor.as_bytes().to_vec()),
                Reply::Array(keys.iter().map(|k| Reply::Text(k.as_bytes().to_vec())).collect()),
            ])
        };
        let mut got = Vec::new();
        // Page 1 of bans: one key, more to come.
        let mget = l.feed(scan("7", &["rg:ban:shop:192.0.2.9"]), |e| got.push(e)).unwrap().unwrap();
        assert_eq!(mget.args(), &[b"MGET".to_vec(), b"rg:ban:shop:192.0.2.9".to_vec()]);
        let again = l.feed(Reply::Array(vec![Reply::Text(json), Reply::Nil]), |e| got.push(e)).unwrap().unwrap();
        assert_eq!(again.args()[1], b"7");
        // The bans end; the reads have none.
        let reads = l.feed(scan("0", &[]), |e| got.push(e)).unwrap().unwrap();
        assert_eq!(reads.args()[3], b"rg:robots:*");
        assert!(l.feed(scan("0", &[]), |e| got.push(e)).unwrap().is_none());
        assert_eq!((got, l.loaded()), (vec![ban], 1));
        assert!(l.first().is_none());
    }

    #[test]
    fn loading_refuses_what_is_not_a_scan() {
        let mut l = Store::new("rg:").loading();
        assert!(l.feed(Reply::Int(3), |_| {}).is_err());
        let mut l = Store::new("rg:").loading();
        assert!(matches!(l.feed(Reply::Error("NOPERM".into()), |_| {}), Err(WireError::Server(_))));
    }
}
