//! Forward-confirmed reverse DNS (FCrDNS), judged over answers already
//! fetched: the resolver lives in `server::dns`, the verdict here.
//!
//! The check crawler operators document (Google's "Verifying Googlebot",
//! Bing's "Verify Bingbot"): look up the PTR names of the client address;
//! keep a name that ends in one of the bot's `rdns` suffixes; look that name
//! up forward (A/AAAA); the client is the bot when the forward answers contain
//! its address. The reverse zone belongs to whoever holds the address, so a PTR
//! name alone proves nothing: anyone may point their own address at
//! `crawl-1.googlebot.com`. Only the forward zone of `googlebot.com` is
//! Google's.
//!
//! Every input here comes from DNS answers an attacker may shape (their own
//! reverse zone), so names are held to host-name syntax before a suffix is
//! compared, and the work is bounded: at most [`MAX_FORWARD`] names are
//! looked up forward, and a name longer than 253 octets is refused before it
//! is scanned.

use std::net::IpAddr;
use std::time::Duration;

/// The most PTR names of one address that are looked up forward. A reverse
/// zone may return any number of names; real crawlers return one.
pub const MAX_FORWARD: usize = 4;

/// How long a failed check (no PTR, a name outside the suffixes, a forward
/// mismatch) is kept: a fixed negative TTL, so a mended PTR is seen soon.
pub const NEGATIVE_TTL: Duration = Duration::from_secs(5 * 60);
/// How long a check that ran out of time or met a resolver error is kept:
/// a dead resolver is not asked again for every request, and a real crawler
/// is verified soon after it recovers.
pub const TROUBLE_TTL: Duration = Duration::from_secs(30);
/// The shortest time a verification is kept, whatever the records' TTL.
pub const MIN_POSITIVE_TTL: Duration = Duration::from_secs(60);
/// The longest time a verification is kept, whatever the records' TTL.
pub const MAX_POSITIVE_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// How long a verification is kept, from the smallest TTL of the records
/// that proved it.
pub fn positive_ttl(record_ttl: Duration) -> Duration {
    record_ttl.clamp(MIN_POSITIVE_TTL, MAX_POSITIVE_TTL)
}

/// The longest host name (RFC 1035 2.3.4: 255 octets on the wire, 253 as
/// text without the trailing dot).
pub const MAX_NAME: usize = 253;

/// What the answers say about a client claiming to be a bot with `rdns`
/// suffixes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A PTR name inside the suffixes resolves forward to the client address.
    Verified {
        /// That name, lower case, without the trailing dot.
        ptr: String,
    },
    /// The answers do not confirm the claim.
    Failed {
        /// Why.
        reason: Failure,
    },
}

/// Why forward-confirmed reverse DNS failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// The address has no PTR name.
    #[error("no PTR record")]
    NoPtr,
    /// No PTR name ends in the bot's suffixes (the first name is kept, for the log).
    #[error("PTR `{ptr}` is outside the bot's domains")]
    OutsideSuffixes {
        /// The first PTR name, as returned (cut to [`MAX_NAME`] bytes).
        ptr: String,
    },
    /// A PTR name is inside the suffixes but its forward answers do not
    /// contain the address: someone else's reverse zone names the bot's domain.
    #[error("PTR `{ptr}` does not resolve back to the address")]
    ForwardMismatch {
        /// The first such name.
        ptr: String,
    },
}

/// One PTR name and what its forward lookup returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ptr {
    /// The PTR name, as the resolver gave it (a trailing dot is fine).
    pub name: String,
    /// Its A and AAAA answers (empty: not looked up, or no address).
    pub forward: Vec<IpAddr>,
}

/// Whether `name` is `suffix` or ends in `.suffix`: a match at a label
/// boundary, ASCII case-insensitive, one trailing dot on either side ignored.
///
/// `name` must be a host name: labels of 1 to 63 letters, digits, `-` or `_`,
/// at most [`MAX_NAME`] octets. Anything else (empty labels, non-ASCII,
/// escapes such as `\.` a resolver writes for a dot inside a label) never
/// matches, so a hostile reverse zone cannot smuggle a boundary in.
///
/// Cost: one pass over `name`, which is refused above [`MAX_NAME`] octets.
///
/// # Example
/// ```
/// use robotgate::identity::rdns::suffix_matches;
/// assert!(suffix_matches("crawl-66-249-66-1.googlebot.com.", "googlebot.com"));
/// assert!(suffix_matches("GoogleBot.COM", "googlebot.com"));
/// assert!(!suffix_matches("evilgooglebot.com", "googlebot.com"));
/// assert!(!suffix_matches("googlebot.com.evil.net", "googlebot.com"));
/// ```
pub fn suffix_matches(name: &str, suffix: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    let suffix = suffix.strip_suffix('.').unwrap_or(suffix);
    if suffix.is_empty() || !is_host_name(name) || !is_host_name(suffix) || suffix.len() > name.len() {
        return false;
    }
    let (head, tail) = name.split_at(name.len() - suffix.len());
    tail.eq_ignore_ascii_case(suffix) && (head.is_empty() || head.ends_with('.'))
}

/// Host-name syntax (RFC 1123 2.1, plus `_`), without a trailing dot.
fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// `name` lower case, without its trailing dot.
fn normalize(name: &str) -> String {
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

/// The name servers of a resolv.conf's text (`nameserver` lines), on port
/// 53: what a resolver without its own list asks. Scoped IPv6 addresses
/// (`fe80::1%eth0`) are left out.
///
/// # Example
/// ```
/// use robotgate::identity::rdns::resolv_conf_nameservers;
/// let conf = "# local\nnameserver 127.0.0.53\nsearch example\nnameserver ::1\nnameserver fe80::1%eth0\n";
/// let servers: Vec<String> = resolv_conf_nameservers(conf).iter().map(|s| s.to_string()).collect();
/// assert_eq!(servers, ["127.0.0.53:53", "[::1]:53"]);
/// ```
pub fn resolv_conf_nameservers(conf: &str) -> Vec<std::net::SocketAddr> {
    conf.lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some("nameserver")).then_some(())?;
            words.next()?.parse::<IpAddr>().ok()
        })
        .map(|ip| std::net::SocketAddr::new(ip, 53))
        .collect()
}

/// IPv4-mapped IPv6 (`::ffff:a.b.c.d`) as IPv4; anything else unchanged.
pub use crate::net::canonical;

/// The PTR names worth a forward lookup: those inside `suffixes`, normalized
/// (lower case, no trailing dot), without duplicates, at most [`MAX_FORWARD`],
/// in answer order.
///
/// # Example
/// ```
/// use robotgate::identity::rdns::forward_candidates;
/// let ptrs = ["crawl.evil.example.", "Crawl-1.GoogleBot.com."];
/// assert_eq!(forward_candidates(&ptrs, &["googlebot.com"]), ["crawl-1.googlebot.com"]);
/// ```
pub fn forward_candidates<P: AsRef<str>, S: AsRef<str>>(ptrs: &[P], suffixes: &[S]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in ptrs {
        let p = p.as_ref();
        if suffixes.iter().any(|s| suffix_matches(p, s.as_ref())) {
            let n = normalize(p);
            if !out.contains(&n) {
                out.push(n);
                if out.len() == MAX_FORWARD {
                    break;
                }
            }
        }
    }
    out
}

/// Judges the answers for `ip`: `ptrs` are the address's PTR names with
/// their forward answers (those [`forward_candidates`] did not pick may have
/// empty `forward`; they are not consulted).
///
/// Verified by the first name, in answer order among the first
/// [`MAX_FORWARD`] candidates, that is inside `suffixes` and whose forward
/// answers contain `ip` (IPv4-mapped IPv6 and IPv4 compare equal). Otherwise
/// failed: [`Failure::NoPtr`] with no names, [`Failure::ForwardMismatch`] when
/// some name is inside the suffixes, else [`Failure::OutsideSuffixes`].
///
/// # Example
/// ```
/// use robotgate::identity::rdns::{judge, Ptr, Verdict};
/// let ip = "66.249.66.1".parse().unwrap();
/// let ptrs = [Ptr { name: "crawl-66-249-66-1.googlebot.com.".into(), forward: vec![ip] }];
/// assert_eq!(
///     judge(ip, &["googlebot.com", "google.com"], &ptrs),
///     Verdict::Verified { ptr: "crawl-66-249-66-1.googlebot.com".into() }
/// );
/// ```
pub fn judge<S: AsRef<str>>(ip: IpAddr, suffixes: &[S], ptrs: &[Ptr]) -> Verdict {
    let Some(first) = ptrs.first() else {
        return Verdict::Failed { reason: Failure::NoPtr };
    };
    let ip = canonical(ip);
    // The same names, in the same order, as `forward_candidates` picks.
    let mut seen: Vec<String> = Vec::new();
    for p in ptrs {
        if !suffixes.iter().any(|s| suffix_matches(&p.name, s.as_ref())) {
            continue;
        }
        let name = normalize(&p.name);
        if p.forward.iter().any(|&f| canonical(f) == ip) {
            return Verdict::Verified { ptr: name };
        }
        if !seen.contains(&name) {
            seen.push(name);
            if seen.len() == MAX_FORWARD {
                break;
            }
        }
    }
    let reason = match seen.into_iter().next() {
        Some(ptr) => Failure::ForwardMismatch { ptr },
        None => Failure::OutsideSuffixes { ptr: cut(&first.name) },
    };
    Verdict::Failed { reason }
}

/// A verdict's key, alike in every host and instance: the address (an
/// IPv4-mapped one as IPv4) and a hash of the robot's suffix list.
pub fn verdict_key<S: AsRef<str>>(ip: IpAddr, suffixes: &[S]) -> (IpAddr, u64) {
    let mut joined = Vec::new();
    for (i, s) in suffixes.iter().enumerate() {
        if i > 0 {
            joined.push(b',');
        }
        joined.extend_from_slice(s.as_ref().as_bytes());
    }
    (canonical(ip), crate::hash::fnv1a(&joined))
}

/// The outcome of a whole check, as every host keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DnsVerdict {
    /// A PTR name inside the bot's domains resolves back to the address.
    Verified {
        /// That name (lower case, no trailing dot).
        ptr: String,
    },
    /// DNS answered, and the answers refute the claim.
    Spoofed {
        /// Why.
        reason: Failure,
    },
    /// DNS gave no usable answer: neither verified nor refuted.
    Unverifiable {
        /// Why.
        reason: Trouble,
    },
}

/// Why a check could not conclude.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Trouble {
    /// The check did not finish within the timeout.
    #[error("DNS timed out")]
    Timeout,
    /// Every check slot was busy; nothing was asked.
    #[error("too many DNS checks in flight")]
    Busy,
    /// The resolver failed (SERVFAIL, REFUSED, network error).
    #[error("DNS failed: {0}")]
    Resolver(String),
    /// The deadline of the edge that asked came first (docs/edge.md, "Deadlines").
    #[error("the edge's deadline came before DNS answered")]
    Deadline,
}

impl Trouble {
    /// Its `reason` label in `robotgate_identity_unchecked_total`.
    pub fn label(&self) -> &'static str {
        match self {
            Trouble::Timeout => "timeout",
            Trouble::Busy => "busy",
            Trouble::Resolver(_) => "resolver",
            Trouble::Deadline => "deadline",
        }
    }
}

/// What one lookup of a check gave, as the host's resolver reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup<T> {
    /// Records, and the smallest TTL among them.
    Found {
        /// The PTR names, or the addresses.
        records: Vec<T>,
        /// The smallest TTL of the records.
        ttl: Duration,
    },
    /// No such name, or no records of the type.
    Nothing,
    /// No usable answer.
    Trouble(Trouble),
}

/// What a [`Check`] needs next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The PTR names of the address.
    Ptr,
    /// The addresses (A for an IPv4 client, AAAA for IPv6, or both) of this
    /// name, fully qualified without the trailing dot.
    Forward(String),
    /// Nothing more: [`Check::finish`].
    Done,
}

/// One forward-confirmed reverse DNS check, step by step, for a host to
/// drive with its own resolver (the proxy's hickory on tokio, nginx's own
/// resolver on its event loop): ask what [`Check::step`] says, hand the
/// answer back, until [`Step::Done`]; then [`Check::finish`] gives the
/// verdict and how long to keep it. Every PTR name the resolver returns is
/// read; at most [`MAX_FORWARD`] are looked up forward.
#[derive(Debug, Clone)]
pub struct Check {
    ip: IpAddr,
    suffixes: Vec<String>,
    /// The PTR names, once looked up.
    names: Option<Vec<String>>,
    candidates: Vec<String>,
    ptrs: Vec<Ptr>,
    /// The smallest TTL of every record that answered.
    ttl: Duration,
    /// The PTR lookup failed: the check says nothing.
    trouble: Option<Trouble>,
    /// A forward lookup failed: had it answered, it might have confirmed.
    forward_trouble: Option<Trouble>,
}

impl Check {
    /// A check that `ip` is a robot whose names end in one of `suffixes`.
    pub fn new(ip: IpAddr, suffixes: &[String]) -> Check {
        Check {
            ip: canonical(ip),
            suffixes: suffixes.to_vec(),
            names: None,
            candidates: Vec::new(),
            ptrs: Vec::new(),
            ttl: MAX_POSITIVE_TTL,
            trouble: None,
            forward_trouble: None,
        }
    }

    /// The address checked (an IPv4-mapped IPv6 address as IPv4).
    pub fn ip(&self) -> IpAddr {
        self.ip
    }

    /// What to ask next.
    pub fn step(&self) -> Step {
        if self.trouble.is_some() {
            return Step::Done;
        }
        if self.names.is_none() {
            return Step::Ptr;
        }
        match self.candidates.get(self.ptrs.len()) {
            Some(name) => Step::Forward(name.clone()),
            None => Step::Done,
        }
    }

    /// The resolver cannot go on (it could not start a lookup): the check
    /// ends unverifiable.
    pub fn abandon(&mut self, why: Trouble) {
        self.trouble.get_or_insert(why);
    }

    /// The answer to [`Step::Ptr`].
    pub fn ptr(&mut self, answer: Lookup<String>) {
        let names = self.records(answer).unwrap_or_else(|t| {
            self.trouble = Some(t);
            Vec::new()
        });
        self.candidates = forward_candidates(&names, &self.suffixes);
        self.names = Some(names);
    }

    /// The answer to [`Step::Forward`].
    pub fn forward(&mut self, answer: Lookup<IpAddr>) {
        let Some(name) = self.candidates.get(self.ptrs.len()) else { return };
        let name = name.clone();
        let forward = self.records(answer).unwrap_or_else(|t| {
            self.forward_trouble.get_or_insert(t);
            Vec::new()
        });
        self.ptrs.push(Ptr { name, forward });
    }

    /// An answer's records (none for "nothing"), their TTL kept.
    fn records<T>(&mut self, answer: Lookup<T>) -> Result<Vec<T>, Trouble> {
        match answer {
            Lookup::Found { records, ttl } => {
                self.ttl = self.ttl.min(ttl);
                Ok(records)
            }
            Lookup::Nothing => Ok(Vec::new()),
            Lookup::Trouble(t) => Err(t),
        }
    }

    /// The verdict on what was answered, and how long to keep it. A check
    /// cut short (its deadline passed) before [`Step::Done`] is unverifiable.
    pub fn finish(self) -> (DnsVerdict, Duration) {
        let unsettled = |reason| (DnsVerdict::Unverifiable { reason }, TROUBLE_TTL);
        if let Some(t) = self.trouble {
            return unsettled(t);
        }
        if self.step() != Step::Done {
            return unsettled(Trouble::Timeout);
        }
        let names = self.names.unwrap_or_default();
        // Nothing inside the suffixes: judge the names as returned.
        let ptrs = if self.ptrs.is_empty() {
            names.into_iter().map(|name| Ptr { name, forward: Vec::new() }).collect()
        } else {
            self.ptrs
        };
        match judge(self.ip, &self.suffixes, &ptrs) {
            Verdict::Verified { ptr } => (DnsVerdict::Verified { ptr }, positive_ttl(self.ttl)),
            Verdict::Failed { .. } if self.forward_trouble.is_some() => {
                unsettled(self.forward_trouble.expect("checked above"))
            }
            Verdict::Failed { reason } => (DnsVerdict::Spoofed { reason }, NEGATIVE_TTL),
        }
    }
}

/// At most [`MAX_NAME`] bytes of `s`, on a character boundary.
fn cut(s: &str) -> String {
    let mut end = s.len().min(MAX_NAME);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOGLE: &[&str] = &["googlebot.com", "google.com"];

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn ptr(name: &str, forward: &[&str]) -> Ptr {
        Ptr { name: name.into(), forward: forward.iter().map(|f| ip(f)).collect() }
    }

    fn found<T>(records: Vec<T>, secs: u64) -> Lookup<T> {
        Lookup::Found { records, ttl: Duration::from_secs(secs) }
    }

    #[test]
    fn a_check_reads_every_ptr_name_and_confirms_the_one_inside() {
        let suffixes = vec!["googlebot.com".to_owned()];
        let mut c = Check::new(ip("::ffff:66.249.66.1"), &suffixes);
        assert_eq!(c.step(), Step::Ptr);
        // The first name is outside the robot's domains; the second is inside.
        c.ptr(found(vec!["host.example.net.".into(), "crawl-1.googlebot.com.".into()], 600));
        assert_eq!(c.step(), Step::Forward("crawl-1.googlebot.com".into()));
        c.forward(found(vec![ip("66.249.66.1")], 120));
        assert_eq!(c.step(), Step::Done);
        assert_eq!(
            c.finish(),
            (DnsVerdict::Verified { ptr: "crawl-1.googlebot.com".into() }, Duration::from_secs(120))
        );
    }

    #[test]
    fn a_check_refutes_or_gives_up_as_the_answers_say() {
        let suffixes = vec!["googlebot.com".to_owned()];
        let run = |ptr: Lookup<String>, forward: Vec<Lookup<IpAddr>>| {
            let mut c = Check::new(ip("66.249.66.1"), &suffixes);
            c.ptr(ptr);
            let mut forward = forward.into_iter();
            while let Step::Forward(_) = c.step() {
                c.forward(forward.next().expect("a forward answer"));
            }
            c.finish()
        };
        let spoofed = |reason| (DnsVerdict::Spoofed { reason }, NEGATIVE_TTL);
        assert_eq!(run(Lookup::Nothing, vec![]), spoofed(Failure::NoPtr));
        assert_eq!(
            run(found(vec!["x.evil.example.".into()], 60), vec![]),
            spoofed(Failure::OutsideSuffixes { ptr: "x.evil.example.".into() })
        );
        assert_eq!(
            run(found(vec!["a.googlebot.com".into()], 60), vec![found(vec![ip("192.0.2.1")], 60)]),
            spoofed(Failure::ForwardMismatch { ptr: "a.googlebot.com".into() })
        );
        // Trouble on the PTR, or on a forward lookup that might have confirmed.
        let busy = (DnsVerdict::Unverifiable { reason: Trouble::Resolver("SERVFAIL".into()) }, TROUBLE_TTL);
        assert_eq!(run(Lookup::Trouble(Trouble::Resolver("SERVFAIL".into())), vec![]), busy);
        assert_eq!(
            run(found(vec!["a.googlebot.com".into()], 60), vec![Lookup::Trouble(Trouble::Resolver("SERVFAIL".into()))]),
            busy
        );
        // A forward failure does not spoil a confirmation by another name.
        let two = found(vec!["a.googlebot.com".into(), "b.googlebot.com".into()], 60);
        let answers = vec![Lookup::Trouble(Trouble::Timeout), found(vec![ip("66.249.66.1")], 3600)];
        assert_eq!(
            run(two, answers),
            (DnsVerdict::Verified { ptr: "b.googlebot.com".into() }, Duration::from_secs(60))
        );
        // Cut short: unverifiable.
        let mut c = Check::new(ip("66.249.66.1"), &suffixes);
        c.ptr(found(vec!["a.googlebot.com".into()], 60));
        assert_eq!(c.finish(), (DnsVerdict::Unverifiable { reason: Trouble::Timeout }, TROUBLE_TTL));
    }

    #[test]
    fn a_check_looks_up_at_most_max_forward_names() {
        let suffixes = vec!["googlebot.com".to_owned()];
        let names: Vec<String> = (0..50).map(|i| format!("c{i}.googlebot.com")).collect();
        let mut c = Check::new(ip("66.249.66.1"), &suffixes);
        c.ptr(found(names, 60));
        let mut asked = 0;
        while let Step::Forward(_) = c.step() {
            asked += 1;
            c.forward(Lookup::Nothing);
        }
        assert_eq!(asked, MAX_FORWARD);
    }

    #[test]
    fn suffix_matches_at_label_boundaries() {
        assert!(suffix_matches("crawl-66-249-66-1.googlebot.com", "googlebot.com"));
        assert!(suffix_matches("googlebot.com", "googlebot.com"));
        assert!(suffix_matches("a.b.c.search.msn.com", "search.msn.com"));
        assert!(!suffix_matches("evilgooglebot.com", "googlebot.com"));
        assert!(!suffix_matches("googlebot.com.evil.net", "googlebot.com"));
        assert!(!suffix_matches("googlebot.co", "googlebot.com"));
        assert!(!suffix_matches("com", "googlebot.com"));
        assert!(!suffix_matches("x.msn.com", "search.msn.com"));
    }

    #[test]
    fn suffix_matches_ignores_case_and_one_trailing_dot() {
        assert!(suffix_matches("CRAWL-1.GoogleBot.COM.", "googlebot.com"));
        assert!(suffix_matches("crawl-1.googlebot.com", "GOOGLEBOT.COM."));
        assert!(!suffix_matches("crawl-1.googlebot.com..", "googlebot.com"));
    }

    #[test]
    fn suffix_matches_refuses_what_is_not_a_host_name() {
        // Empty labels.
        assert!(!suffix_matches("crawl..googlebot.com", "googlebot.com"));
        assert!(!suffix_matches(".googlebot.com", "googlebot.com"));
        assert!(!suffix_matches("", "googlebot.com"));
        assert!(!suffix_matches(".", "googlebot.com"));
        assert!(!suffix_matches("crawl.googlebot.com", ""));
        assert!(!suffix_matches("crawl.googlebot.com", "."));
        // A dot inside a label, as a resolver escapes it: labels `x.googlebot`, `com`.
        assert!(!suffix_matches("x\\.googlebot.com", "googlebot.com"));
        assert!(!suffix_matches("evil\\046googlebot.com", "googlebot.com"));
        // Non-ASCII, including look-alikes and a multi-byte character before the boundary.
        assert!(!suffix_matches("crawl.googlebot.cοm", "googlebot.com"));
        assert!(!suffix_matches("é.googlebot.com", "googlebot.com"));
        assert!(!suffix_matches("crawl.googlebot.com", "googlebot.cοm"));
        // Spaces, NUL and other punctuation.
        assert!(!suffix_matches("crawl googlebot.com", "googlebot.com"));
        assert!(!suffix_matches("crawl\0.googlebot.com", "googlebot.com"));
        assert!(!suffix_matches("*.googlebot.com", "googlebot.com"));
        // Underscores are tolerated (seen in real PTR names).
        assert!(suffix_matches("crawl_1.googlebot.com", "googlebot.com"));
    }

    #[test]
    fn suffix_matches_bounds_hostile_lengths() {
        // A label of 64 octets.
        let long_label = format!("{}.googlebot.com", "a".repeat(64));
        assert!(!suffix_matches(&long_label, "googlebot.com"));
        let ok_label = format!("{}.googlebot.com", "a".repeat(63));
        assert!(suffix_matches(&ok_label, "googlebot.com"));
        // Many labels: within 253 octets matches, beyond does not.
        let many = format!("{}googlebot.com", "a.".repeat(120));
        assert_eq!(many.len(), 253);
        assert!(suffix_matches(&many, "googlebot.com"));
        assert!(suffix_matches(&format!("{many}."), "googlebot.com"));
        let too_many = format!("a.{many}");
        assert!(!suffix_matches(&too_many, "googlebot.com"));
        // Megabytes are refused before a scan.
        let huge = format!("{}googlebot.com", "a.".repeat(1 << 20));
        assert!(!suffix_matches(&huge, "googlebot.com"));
    }

    #[test]
    fn genuine_googlebot_is_verified() {
        let v = judge(ip("66.249.66.1"), GOOGLE, &[ptr("crawl-66-249-66-1.googlebot.com.", &["66.249.66.1"])]);
        assert_eq!(v, Verdict::Verified { ptr: "crawl-66-249-66-1.googlebot.com".into() });
        // The second suffix, upper case in the answer.
        let v = judge(ip("66.249.66.1"), GOOGLE, &[ptr("Rate-Limited-Proxy-66-249-66-1.GOOGLE.com", &["66.249.66.1"])]);
        assert_eq!(v, Verdict::Verified { ptr: "rate-limited-proxy-66-249-66-1.google.com".into() });
    }

    #[test]
    fn ipv6_and_ipv4_mapped_addresses() {
        let v6 = "2001:4860:4801:10::1";
        assert!(matches!(
            judge(ip(v6), GOOGLE, &[ptr("crawl-1.googlebot.com.", &["66.249.66.1", v6])]),
            Verdict::Verified { .. }
        ));
        // The client seen as ::ffff:a.b.c.d by a dual-stack socket, the answer as A.
        assert!(matches!(
            judge(ip("::ffff:66.249.66.1"), GOOGLE, &[ptr("crawl-1.googlebot.com.", &["66.249.66.1"])]),
            Verdict::Verified { .. }
        ));
        // And the other way round.
        assert!(matches!(
            judge(ip("66.249.66.1"), GOOGLE, &[ptr("crawl-1.googlebot.com.", &["::ffff:66.249.66.1"])]),
            Verdict::Verified { .. }
        ));
        // IPv4-compatible (deprecated) is not IPv4.
        assert!(matches!(
            judge(ip("::66.249.66.1"), GOOGLE, &[ptr("crawl-1.googlebot.com.", &["66.249.66.1"])]),
            Verdict::Failed { reason: Failure::ForwardMismatch { .. } }
        ));
    }

    #[test]
    fn no_ptr_fails() {
        assert_eq!(judge(ip("192.0.2.1"), GOOGLE, &[]), Verdict::Failed { reason: Failure::NoPtr });
    }

    #[test]
    fn ptr_outside_the_suffixes_fails() {
        let v = judge(ip("192.0.2.1"), GOOGLE, &[ptr("crawl.evil.example.", &["192.0.2.1"])]);
        assert_eq!(v, Verdict::Failed { reason: Failure::OutsideSuffixes { ptr: "crawl.evil.example.".into() } });
        let v = judge(ip("192.0.2.1"), GOOGLE, &[ptr("googlebot.com.evil.net", &["192.0.2.1"])]);
        assert!(matches!(v, Verdict::Failed { reason: Failure::OutsideSuffixes { .. } }));
        // No suffixes at all: nothing can verify.
        let none: &[&str] = &[];
        let v = judge(ip("66.249.66.1"), none, &[ptr("crawl-1.googlebot.com", &["66.249.66.1"])]);
        assert!(matches!(v, Verdict::Failed { reason: Failure::OutsideSuffixes { .. } }));
        // A hostile name is cut in the reason.
        let long = "é".repeat(500);
        match judge(ip("192.0.2.1"), GOOGLE, &[ptr(&long, &[])]) {
            Verdict::Failed { reason: Failure::OutsideSuffixes { ptr } } => assert!(ptr.len() <= MAX_NAME),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn forward_mismatch_fails() {
        // An attacker's reverse zone names Google's domain; Google's forward zone disagrees.
        let v = judge(ip("192.0.2.1"), GOOGLE, &[ptr("crawl-66-249-66-1.googlebot.com.", &["66.249.66.1"])]);
        assert_eq!(
            v,
            Verdict::Failed { reason: Failure::ForwardMismatch { ptr: "crawl-66-249-66-1.googlebot.com".into() } }
        );
        // No forward answer at all.
        let v = judge(ip("192.0.2.1"), GOOGLE, &[ptr("crawl.googlebot.com", &[])]);
        assert!(matches!(v, Verdict::Failed { reason: Failure::ForwardMismatch { .. } }));
    }

    #[test]
    fn any_confirmed_name_verifies_and_mismatch_beats_outside() {
        let ptrs = [
            ptr("crawl.evil.example", &["192.0.2.1"]),
            ptr("a.googlebot.com", &["192.0.2.9"]),
            ptr("b.googlebot.com", &["192.0.2.1"]),
        ];
        assert_eq!(judge(ip("192.0.2.1"), GOOGLE, &ptrs), Verdict::Verified { ptr: "b.googlebot.com".into() });
        assert_eq!(
            judge(ip("192.0.2.2"), GOOGLE, &ptrs),
            Verdict::Failed { reason: Failure::ForwardMismatch { ptr: "a.googlebot.com".into() } }
        );
    }

    #[test]
    fn work_is_bounded_by_max_forward() {
        // Many matching names: only the first MAX_FORWARD are candidates or consulted.
        let mut ptrs: Vec<Ptr> = (0..100).map(|i| ptr(&format!("c{i}.googlebot.com"), &["192.0.2.9"])).collect();
        ptrs.push(ptr("late.googlebot.com", &["192.0.2.1"]));
        let names: Vec<&str> = ptrs.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(forward_candidates(&names, GOOGLE).len(), MAX_FORWARD);
        assert!(matches!(
            judge(ip("192.0.2.1"), GOOGLE, &ptrs),
            Verdict::Failed { reason: Failure::ForwardMismatch { .. } }
        ));
    }

    #[test]
    fn forward_candidates_normalizes_and_dedups() {
        let ptrs = ["Crawl-1.GoogleBot.com.", "crawl-1.googlebot.com", "x.evil.example", "y.google.com"];
        assert_eq!(forward_candidates(&ptrs, GOOGLE), ["crawl-1.googlebot.com", "y.google.com"]);
        let none: [&str; 0] = [];
        assert!(forward_candidates(&none, GOOGLE).is_empty());
    }

    #[test]
    fn failures_read_well() {
        assert_eq!(Failure::NoPtr.to_string(), "no PTR record");
        assert_eq!(
            Failure::ForwardMismatch { ptr: "a.googlebot.com".into() }.to_string(),
            "PTR `a.googlebot.com` does not resolve back to the address"
        );
    }
}
