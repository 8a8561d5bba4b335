//! What each fuzz target checks, shared by the targets (`fuzz_targets/*.rs`)
//! and by `tests/fuzz_regressions.rs`, which replays every input kept under
//! `fuzz/regressions/<target>/` in `cargo test`.
//!
//! Each function takes arbitrary bytes and panics only on a broken invariant.

// Each includer uses only some of them.
#![allow(dead_code)]

use std::sync::OnceLock;

use robotgate::agent::{to_json_line, Classifier};
use robotgate::load::{check_robots_body, Reason};
use robotgate::robots::usage::{parse_rule, parse_usage, UsageError, MAX_VALUE};
use robotgate::robots::{lint, parse::escape_pattern, RobotsTxt};
use robotgate::target::{normalise, normalise_pattern, EncodedSlash, Target, TargetOptions};

/// Parse, compile, query and lint arbitrary bytes as robots.txt. The input is
/// split at its first NUL: robots.txt, then the path to query.
pub fn parse_robots(data: &[u8]) {
    let (robots, path) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b"/"[..]),
    };
    let compiled = RobotsTxt::compile(robots);
    let _ = compiled.allows("FooBot", &String::from_utf8_lossy(path));
    let _ = lint::lint(robots);
}

/// The loader's content check of robots.txt (`load::check_robots_body`),
/// then what follows it: a body it passes is compiled, queried and linted.
/// A refusal is always `not-robots-txt` and says why; a passed body has no
/// NUL and no UTF-16 or UTF-32 byte-order mark, and more lines after it
/// never make it refused (the check looks only at the start and for NULs).
pub fn robots_body(data: &[u8]) {
    match check_robots_body(data) {
        Err(refusal) => {
            assert_eq!(refusal.reason(), Reason::NotRobotsTxt);
            assert!(!refusal.to_string().is_empty());
        }
        Ok(()) => {
            assert!(!data.contains(&0));
            assert!(!data.starts_with(b"\xFF\xFE") && !data.starts_with(b"\xFE\xFF"));
            let mut longer = data.to_vec();
            longer.extend_from_slice(b"\nUser-agent: *\nDisallow: /x\n");
            assert!(check_robots_body(&longer).is_ok());
            let compiled = RobotsTxt::compile(data);
            let _ = compiled.allows("FooBot", "/a/b");
            let _ = lint::lint(data);
        }
    }
}

/// Compile a robots.txt and query it with an arbitrary agent and path; the
/// input is split at its first two NULs: robots.txt, agent, path.
pub fn match_path(data: &[u8]) {
    let mut parts = data.splitn(3, |&b| b == 0);
    let robots = parts.next().unwrap_or_default();
    let agent = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let path = parts.next().unwrap_or_default();
    let compiled = RobotsTxt::compile(robots);
    let google = compiled.allows(&agent, &String::from_utf8_lossy(path));
    let selection = compiled.select(&[agent.as_str(), "Googlebot"]);
    let proxy = compiled.check(&selection, path);
    // A verdict that names a rule must name one of the file's rules.
    for verdict in [google, proxy] {
        if let Some(rule) = verdict.rule {
            assert!(compiled.rules().iter().any(|r| std::ptr::eq(r, rule)));
        }
    }
}

fn classify_setup() -> &'static (Classifier, RobotsTxt) {
    static ONCE: OnceLock<(Classifier, RobotsTxt)> = OnceLock::new();
    ONCE.get_or_init(|| {
        let robots =
            "User-agent: MJ12bot\nDisallow: /a\n\nUser-agent: Googlebot\nDisallow: /b\n\nUser-agent: *\nDisallow: /c\n";
        (Classifier::builtin(), RobotsTxt::compile(robots.as_bytes()))
    })
}

/// Builds the classifier once, before the first input (building it is slow
/// under coverage instrumentation and must not be timed as an input).
pub fn classify_init() {
    classify_setup();
}

/// Classify arbitrary bytes as a User-Agent, choose its robots.txt group and
/// render the `classify` JSON line.
pub fn classify(data: &[u8]) {
    let (classifier, robots) = classify_setup();
    let agent = classifier.classify(data);
    // Browsers carry no tokens.
    assert!(agent.is_bot() || agent.tokens.is_empty());
    let selection = robots.select(&agent.tokens);
    let _ = robots.check(&selection, b"/a/b");
    // Whatever the bytes, the JSON is exactly one parseable line.
    let line = to_json_line(data, &agent, None);
    assert!(!line.contains('\n'));
    assert!(serde_json::from_str::<serde_json::Value>(&line).is_ok());
}

/// Read arbitrary bytes with the User-Agent grammar reader (issue #53):
/// its slots are non-empty, in order, apart, at most six, inside the
/// string and inside a comment, trimmed of spaces, on character boundaries
/// of a UTF-8 string, and the same on a second reading; each reads as in a
/// slot. Its other answers take spans of words of the input (the first
/// eight) without panicking, and a span they put in a slot lies inside one
/// of them.
pub fn ua_grammar(data: &[u8]) {
    use robotgate::agent::{grammar_probe, grammar_slots};
    let slots = grammar_slots(data);
    assert_eq!(slots, grammar_slots(data), "one reading");
    assert!(slots.len() <= 6);
    let text = std::str::from_utf8(data).ok();
    let mut after = 0;
    for s in &slots {
        assert!(after <= s.start && s.start < s.end && s.end <= data.len(), "{slots:?} of {}", data.len());
        after = s.end;
        let depth = data[..s.start].iter().fold(0u32, |d, &b| match b {
            b'(' => d + 1,
            b')' => d.saturating_sub(1),
            _ => d,
        });
        assert!(depth > 0, "a slot inside a comment: {s:?}");
        assert!(data[s.start] != b' ' && data[s.end - 1] != b' ', "trimmed: {s:?}");
        if let Some(t) = text {
            assert!(t.is_char_boundary(s.start) && t.is_char_boundary(s.end), "{s:?}");
        }
        assert!(grammar_probe(data, s.start, s.end).0, "{s:?} reads as a slot");
    }
    // The spans the classifier asks about: words (the first 8; each probe
    // reads the whole input again, and the fuzzer's speed is what finds bugs).
    let mut start = None;
    let mut asked = 0;
    for (i, &b) in data.iter().chain(std::iter::once(&b' ')).enumerate() {
        let word = b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
        match (word, start) {
            (true, None) => start = Some(i),
            (false, Some(st)) => {
                start = None;
                let (in_slot, _, _) = grammar_probe(data, st, i);
                assert_eq!(in_slot, slots.iter().any(|s| s.start <= st && i <= s.end), "{st}..{i}");
                asked += 1;
                if asked == 8 {
                    break;
                }
            }
            _ => {}
        }
    }
    let _ = grammar_probe(data, data.len(), data.len());
}

/// Load arbitrary text as a robotgate configuration (YAML, then validation).
pub fn load_config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Err(problems) = robotgate::config::parse(&text) {
        // Every failure explains itself.
        assert!(!problems.is_empty());
        assert!(problems.iter().all(|p| !p.to_string().is_empty()));
    }
}

/// Read arbitrary text as a file of `sites_dir` (issue 66), with the
/// settings of a hosting config. Invariants: it returns, each failure
/// explains itself, and what it accepts is bounded and canonical: at most
/// `MAX_SITES_PER_FILE` sites of at most `MAX_HOSTS_PER_SITE` hosts, each
/// host its own canonical form (`net::canonical_host` is idempotent) and
/// none twice in the file.
pub fn site_file(data: &[u8]) {
    use robotgate::config::{Host, Settings, MAX_HOSTS_PER_SITE, MAX_SITES_PER_FILE};
    static SETTINGS: OnceLock<Settings> = OnceLock::new();
    let settings = SETTINGS.get_or_init(|| {
        let config = "sites_dir: /etc/robotgate/sites.d
site_template:
  robots: /srv/www/{host}/robots.txt
";
        robotgate::config::parse(config).expect("the hosting config parses").settings
    });
    let text = String::from_utf8_lossy(data);
    match robotgate::config::parse_site_file(&text, settings, "fuzz", Host::Nginx) {
        Err(problems) => {
            assert!(!problems.is_empty());
            assert!(problems.iter().all(|p| !p.to_string().is_empty()));
        }
        Ok(sites) => {
            assert!(sites.len() <= MAX_SITES_PER_FILE);
            let mut seen = std::collections::HashSet::new();
            for site in &sites {
                assert!(site.hosts.len() <= MAX_HOSTS_PER_SITE);
                for h in &site.hosts {
                    assert_eq!(robotgate::net::canonical_host(h).as_deref(), Ok(h.as_str()), "not canonical");
                    assert!(seen.insert(h.clone()), "`{h}` twice in one file");
                }
            }
        }
    }
}

/// Normalise arbitrary bytes as a request-target. The first byte chooses the
/// method and options; the rest is the target. A normal form starts with `/`,
/// is its own normal form (borrowed, under any `max_len`), and is left alone by
/// the matcher's own escaping; normalising a pattern is idempotent too.
pub fn normalise_target(data: &[u8]) {
    let Some((&knobs, target)) = data.split_first() else { return };
    let method = [&b"GET"[..], b"OPTIONS", b"CONNECT", b"HEAD"][usize::from(knobs & 3)];
    let opts = TargetOptions {
        merge_slashes: knobs & 4 == 0,
        encoded_slash: if knobs & 8 == 0 { EncodedSlash::Decode } else { EncodedSlash::Reject },
        max_len: if knobs & 16 == 0 { 8192 } else { 64 },
    };
    let unlimited = TargetOptions { max_len: usize::MAX, ..opts };
    if let Ok(Target::Path(p)) = normalise(method, target, &opts) {
        assert_eq!(p.first(), Some(&b'/'));
        match normalise(b"GET", &p, &unlimited) {
            Ok(Target::Path(std::borrow::Cow::Borrowed(again))) => assert_eq!(again, &*p),
            other => panic!("not idempotent: {:?} -> {:?}", String::from_utf8_lossy(&p), other),
        }
        assert_eq!(&*escape_pattern(&p), &*p);
    }
    let pattern = normalise_pattern(target, &opts);
    assert_eq!(normalise_pattern(&pattern, &opts), pattern);
}

/// Walk arbitrary header bytes as each kind of client-address header. The
/// first byte picks the header and how many fields the rest is cut into (at
/// NULs); the peer is a trusted proxy. Invariants: the walk never names a
/// trusted address, names only an address that occurs in the input's text,
/// and a chain made of the same entries with a trusted hop appended names
/// the same client.
pub fn client_address(data: &[u8]) {
    use robotgate::net::{client_address, Cidr, ClientHeader};
    use std::net::IpAddr;
    let Some((&knobs, rest)) = data.split_first() else { return };
    let header = [ClientHeader::XForwardedFor, ClientHeader::Forwarded, ClientHeader::XRealIp][usize::from(knobs % 3)];
    let trusted = [Cidr::parse("10.0.0.0/8").expect("a CIDR"), Cidr::parse("::1").expect("a CIDR")];
    let peer: IpAddr = "10.0.0.2".parse().expect("an address");
    let fields: Vec<&[u8]> = rest.split(|&b| b == 0).collect();
    let walked = client_address(peer, header, fields.iter().copied(), &trusted);
    if let Ok(ip) = walked {
        assert!(!trusted.iter().any(|c| c.contains(ip)), "a trusted proxy named as the client: {ip}");
        let text = String::from_utf8_lossy(rest).to_ascii_lowercase();
        let v4 = match ip {
            IpAddr::V4(v4) => Some(v4.to_string()),
            IpAddr::V6(_) => None,
        };
        let seen = v4.is_some_and(|t| text.contains(&t)) || text.contains(':');
        assert!(seen, "{ip} is not in the input");
    }
    // A trusted hop appended on the right changes nothing.
    if header != ClientHeader::XRealIp && fields.len() < 64 {
        let hop: &[u8] = if header == ClientHeader::Forwarded { b"for=10.9.9.9" } else { b"10.9.9.9" };
        let mut more = fields.clone();
        more.push(hop);
        assert_eq!(client_address(peer, header, more, &trusted), walked);
    }
    // An untrusted peer is its own client, whatever the headers say.
    let outsider: IpAddr = "203.0.113.9".parse().expect("an address");
    assert_eq!(client_address(outsider, header, fields.iter().copied(), &trusted), Ok(outsider));
}

/// Parse arbitrary bytes as a PROXY protocol header (v1 or v2). A header
/// parses the same alone and with bytes after it; each of its prefixes asks
/// for more, never past the header; what any input asks for is bounded; and
/// what was read, written back in the same version, reads the same.
pub fn proxy_protocol(data: &[u8]) {
    use robotgate::proxy_protocol::{parse, Error, MIN_LEN, V2_MAX};
    let parsed = match parse(data) {
        Ok(p) => p,
        Err(Error::Incomplete { needed }) => {
            assert!(needed > data.len() && needed <= V2_MAX, "{needed} for {} bytes", data.len());
            return;
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    let header = &data[..parsed.consumed];
    assert!(parsed.consumed >= MIN_LEN && parsed.consumed <= V2_MAX);
    assert_eq!(parse(header), Ok(parsed));
    let mut longer = header.to_vec();
    longer.extend_from_slice(b"\x16\x03\x01GET / HTTP/1.1\r\n");
    assert_eq!(parse(&longer), Ok(parsed));
    // Every prefix (a sample of them for long headers) is incomplete.
    let step = (header.len() / 256).max(1);
    for n in (0..header.len()).step_by(step).chain([header.len() - 1]) {
        match parse(&header[..n]) {
            Err(Error::Incomplete { needed }) => assert!(needed > n && needed <= header.len(), "{n}: {needed}"),
            other => panic!("a {n}-byte prefix of a header: {other:?}"),
        }
    }
    // Written back, read again.
    let (Some(source), Some(destination)) = (parsed.source, parsed.destination) else { return };
    let again = if parsed.version == 1 {
        let family = if source.is_ipv4() { "TCP4" } else { "TCP6" };
        format!("PROXY {family} {} {} {} {}\r\n", source.ip(), destination.ip(), source.port(), destination.port())
            .into_bytes()
    } else {
        let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
        let mut block = Vec::new();
        let family = match (source.ip(), destination.ip()) {
            (std::net::IpAddr::V4(s), std::net::IpAddr::V4(d)) => {
                block.extend_from_slice(&s.octets());
                block.extend_from_slice(&d.octets());
                0x11
            }
            (std::net::IpAddr::V6(s), std::net::IpAddr::V6(d)) => {
                block.extend_from_slice(&s.octets());
                block.extend_from_slice(&d.octets());
                0x21
            }
            other => panic!("mixed families: {other:?}"),
        };
        block.extend_from_slice(&source.port().to_be_bytes());
        block.extend_from_slice(&destination.port().to_be_bytes());
        h.extend_from_slice(&[0x21, family]);
        h.extend_from_slice(&u16::try_from(block.len()).expect("small").to_be_bytes());
        h.extend_from_slice(&block);
        h
    };
    let reread = parse(&again).expect("a header written from what was read");
    assert_eq!((reread.source, reread.destination), (parsed.source, parsed.destination));
}

/// Read arbitrary text as a `Content-Usage` value (the HTTP header, and a
/// robots.txt rule with its optional path), then as a rule inside a
/// robots.txt group that is compiled, queried and linted. A value longer
/// than `MAX_VALUE` is refused; a syntax error points inside the value (or
/// at the limit); only a rule can lack a preference; the same text reads
/// the same twice.
pub fn content_usage(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match parse_usage(&text) {
        Ok(parsed) => {
            assert!(text.len() <= MAX_VALUE);
            assert_eq!(parse_usage(&text).map(|p| p.pref).ok(), Some(parsed.pref));
        }
        Err(UsageError::Syntax(at)) => assert!(at <= text.len().max(MAX_VALUE)),
        Err(UsageError::NoPreference) => panic!("a header value has no path to lack a preference after"),
    }
    if let Ok((Some(path), _)) = parse_rule(&text) {
        assert!(path.starts_with('/') || path.starts_with('*'));
    }
    let line = text.lines().next().unwrap_or_default();
    let robots =
        format!("User-agent: *\nContent-Usage: {line}\nDisallow: /x\n\nUser-agent: FooBot\nContent-Usage: {line}\n");
    let compiled = RobotsTxt::compile(robots.as_bytes());
    let _ = compiled.allows("FooBot", "/a/b");
    let selection = compiled.select(&["FooBot"]);
    let _ = compiled.check(&selection, b"/a/b");
    let _ = compiled.usage(&selection, b"/a/b");
    let _ = compiled.usage(&compiled.select(&["OtherBot"]), b"/x");
    let _ = lint::lint(robots.as_bytes());
}

/// Read arbitrary bytes as an edge's subrequest headers (`net::edge`): the
/// input is lines `name: value` (split at `\n` and the first `:`); the first
/// line, if it starts with `!`, names the target header instead of the
/// default. Whatever comes back is consistent: a read request's target is
/// the chosen header's one value, non-empty; its method is a token; a
/// refusal names a header; and the host reading (`net::site_host`) of the
/// host never panics and never keeps a port or a second trailing dot.
pub fn edge_headers(data: &[u8]) {
    use robotgate::net::edge::{read_original, EdgeHeaders, Fact};
    let mut names = EdgeHeaders::default();
    let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    if let Some(first) = lines.first().and_then(|l| l.strip_prefix(b"!")) {
        let _ = names.set(Fact::Target, &String::from_utf8_lossy(first));
        lines.remove(0);
    }
    let headers: Vec<(String, &[u8])> = lines
        .iter()
        .filter_map(|l| {
            let i = l.iter().position(|&b| b == b':')?;
            Some((String::from_utf8_lossy(&l[..i]).into_owned(), &l[i + 1..]))
        })
        .collect();
    match read_original(&names, || headers.iter().map(|(k, v)| (k.as_str(), *v))) {
        Ok(o) => {
            assert!(!o.target.is_empty());
            let chosen: Vec<&[u8]> =
                headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(&names.target)).map(|(_, v)| *v).collect();
            assert_eq!(chosen, [o.target], "the target is the chosen header's one value");
            assert!(robotgate::net::edge::is_method(o.method));
            site_host(o.host.as_bytes());
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

/// The one reading of a request's host (`net::site_host`) over arbitrary
/// bytes: never a panic; what it returns is inside the input, has no port,
/// no trailing dot, and reads the same again.
pub fn site_host(data: &[u8]) {
    let Some(host) = robotgate::net::site_host(data) else { return };
    assert!(host.len() <= data.len());
    if !host.contains(':') {
        assert!(!host.ends_with('.'), "{host:?}");
        assert_eq!(robotgate::net::site_host(host.as_bytes()), Some(host), "reads the same again");
    }
}

/// The robots META reading (issue #42): any bytes, cut anywhere, read the
/// same; bounded by MAX_HEAD; the lenient readers never panic.
pub fn meta_head(data: &[u8]) {
    use robotgate::indexing::meta::{header_value, terms, HeadScanner, MAX_HEAD, MAX_OTHER_TERMS, MAX_TAGS};
    let mut whole = HeadScanner::new();
    whole.feed(data);
    // Three pieces, cut where the first two bytes say.
    let at = |i: usize| data.get(i).map_or(0, |b| usize::from(*b) * 7) % (data.len() + 1);
    let (a, b) = (at(0).min(at(1)), at(0).max(at(1)));
    let mut parts = HeadScanner::new();
    parts.feed(&data[..a]);
    parts.feed(&data[a..b]);
    parts.feed(&data[b..]);
    if data.len() < MAX_HEAD {
        assert_eq!(whole.found(), parts.found(), "the reading depends on where the document was cut at {a}, {b}");
        assert_eq!(whole.done(), parts.done());
    }
    assert!(whole.found().len() <= MAX_TAGS);
    let bounded = |t: &[robotgate::indexing::Term]| t.len() <= 6 + MAX_OTHER_TERMS;
    assert!(whole.found().iter().all(|(name, t)| name.len() <= 64 && bounded(t)));
    let text = String::from_utf8_lossy(data);
    assert!(bounded(&terms(&text)));
    assert!(bounded(&header_value(&text).1));
}

/// The strict `set` parser: what it accepts prints as text it accepts again,
/// meaning the same.
pub fn directives(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(d) = robotgate::indexing::Directives::parse(text) {
        let again = robotgate::indexing::Directives::parse(&d.to_string()).expect("its own text parses");
        assert_eq!(again, d);
    }
}

/// Reverse DNS answers (`identity::rdns`), which whoever runs a reverse zone
/// writes (and, inside nginx, its resolver hands over as text): the input
/// is the client address's last byte, then names separated by NUL, a name
/// followed by `=` being its own forward answer. Never a panic; at most
/// MAX_FORWARD candidates, each inside a suffix; a verification names a
/// candidate whose answer is the client.
pub fn rdns_names(data: &[u8]) {
    use robotgate::identity::rdns::{forward_candidates, judge, suffix_matches, Ptr, Verdict, MAX_FORWARD};
    let Some((&last, rest)) = data.split_first() else { return };
    let ip = std::net::IpAddr::from([192, 0, 2, last]);
    let suffixes = ["googlebot.com", "google.com", "yandex.ru"];
    let ptrs: Vec<Ptr> = rest
        .split(|&b| b == 0)
        .take(16)
        .map(|n| {
            let text = String::from_utf8_lossy(n);
            match text.strip_suffix('=') {
                Some(name) => Ptr { name: name.to_owned(), forward: vec![ip] },
                None => Ptr { name: text.into_owned(), forward: Vec::new() },
            }
        })
        .collect();
    let names: Vec<&str> = ptrs.iter().map(|p| p.name.as_str()).collect();
    let candidates = forward_candidates(&names, &suffixes);
    assert!(candidates.len() <= MAX_FORWARD);
    for c in &candidates {
        assert!(suffixes.iter().any(|s| suffix_matches(c, s)), "{c:?}");
    }
    if let Verdict::Verified { ptr } = judge(ip, &suffixes, &ptrs) {
        assert!(suffixes.iter().any(|s| suffix_matches(&ptr, s)), "{ptr:?}");
        assert!(ptrs.iter().any(|p| p.name.trim_end_matches('.').eq_ignore_ascii_case(&ptr) && !p.forward.is_empty()));
    }
    let _ = robotgate::identity::rdns::resolv_conf_nameservers(&String::from_utf8_lossy(data));
}

/// The request-head scrub (`head`, issue 52) over any bytes fed in any
/// pieces: never a panic, the length kept, at most `HOLD_MAX` bytes held,
/// the same bytes and verdict however the head is cut, and nothing changed
/// in a head it does not mark.
pub fn head_scrub(data: &[u8]) {
    use robotgate::head::{HeadScrub, HOLD_MAX};
    let run = |step: usize| {
        let mut s = HeadScrub::new();
        let (mut out, mut held) = (Vec::new(), Vec::new());
        for piece in data.chunks(step) {
            let mut chunk = std::mem::take(&mut held);
            chunk.extend_from_slice(piece);
            let hold = s.feed(&mut chunk);
            assert!(hold <= HOLD_MAX && hold <= chunk.len());
            held = chunk.split_off(chunk.len() - hold);
            out.extend_from_slice(&chunk);
        }
        out.extend_from_slice(&held);
        (out, s.unreadable(), s.is_done())
    };
    let whole = run(data.len().max(1));
    let step = data.first().map_or(1, |b| usize::from(b % 17) + 1);
    assert_eq!(whole, run(step), "cut every {step} bytes");
    assert_eq!(whole.0.len(), data.len());
    if whole.1.is_none() {
        assert_eq!(whole.0, data);
    }
}

/// The site of a `Host` (issue 52): whatever bytes nginx accepts as a host
/// (any but NUL, CR, LF, as UTF-8 or not), a config with a default site
/// finds a site, never none; without one, only a named host does.
pub fn site_for_host(data: &[u8]) {
    use std::sync::OnceLock;
    static CONFIGS: OnceLock<(robotgate::config::Config, robotgate::config::Config)> = OnceLock::new();
    let (with, without) = CONFIGS.get_or_init(|| {
        let yaml = |default: bool| {
            format!("listen: [\"127.0.0.1:8080\"]\nsites:\n  - name: a\n    hosts: [\"shop.example\"]\n    default: {default}\n    upstream: \"127.0.0.1:1\"\n  - name: b\n    hosts: [\"blog.example\"]\n    upstream: \"127.0.0.1:2\"\n")
        };
        (robotgate::config::parse(&yaml(true)).unwrap(), robotgate::config::parse(&yaml(false)).unwrap())
    });
    if data.iter().any(|b| matches!(b, 0 | b'\r' | b'\n')) {
        return;
    }
    let host = String::from_utf8_lossy(data);
    assert!(with.site_for_host(&host).is_some(), "{host:?}: no site, with a default");
    if let Some(i) = without.site_for_host(&host) {
        let name = robotgate::net::site_host_str(&host).expect("a named host reads as one");
        assert!(name.eq_ignore_ascii_case(["shop.example", "blog.example"][i]), "{host:?} -> {i}");
    }
}

/// A shared store's replies (issue 52): whatever bytes a store sends, the
/// reader never panics, says "needs more" only past what it has, takes
/// no more than it has, reads a reply split anywhere exactly as whole, and
/// loading takes any reply without panicking.
pub fn store_reply(data: &[u8]) {
    use robotgate::state::wire::{parse, Parsed, Store};
    let whole = parse(data);
    match &whole {
        Ok(Parsed::Reply(_, used)) => assert!(*used <= data.len()),
        Ok(Parsed::Needs(n)) => assert!(*n > data.len(), "needs {n} of {}", data.len()),
        Err(_) => {}
    }
    // A prefix is never a different whole reply than the full bytes' one.
    if let Ok(Parsed::Reply(r, used)) = &whole {
        for cut in [*used / 2, used.saturating_sub(1)] {
            if let Ok(Parsed::Reply(early, n)) = parse(&data[..cut]) {
                panic!("a prefix of {cut} read as {early:?} ({n}), the whole as {r:?}");
            }
        }
        let mut loading = Store::new("rg:").loading();
        for _ in 0..3 {
            if loading.feed(r.clone(), |_| {}).is_err() {
                break;
            }
        }
    }
}

/// SPOP frames from arbitrary bytes (`net::spop`): the input is a stream of
/// length-prefixed frames as HAProxy would send them. No read panics; a
/// frame past the size is refused before it is read; every HELLO agreed on
/// keeps the size within robotgate's own; every message that reads into a
/// check's facts keeps its target non-empty and its method a token; and an
/// ACK written from what was read is never past the agreed size.
pub fn spop_frame(data: &[u8]) {
    use robotgate::net::spop::{self, Frame, Hello, Scope, Value};
    let mut rest = data;
    let mut max = spop::MAX_FRAME_SIZE;
    while rest.len() >= 4 {
        let head: [u8; 4] = rest[..4].try_into().unwrap();
        let Ok(len) = spop::frame_len(head, max) else { return };
        assert!(len as u64 <= u64::from(max));
        let Some(frame) = rest.get(4..4 + len) else { return };
        rest = &rest[4 + len..];
        let Ok(f) = Frame::parse(frame) else { continue };
        for item in spop::kv_list(f.payload) {
            if item.is_err() {
                break;
            }
        }
        if let Ok(hello) = Hello::read(f.payload) {
            assert!(hello.max_frame_size <= spop::MAX_FRAME_SIZE && hello.max_frame_size >= spop::MIN_FRAME_SIZE);
            let mut out = Vec::new();
            spop::write_agent_hello(&mut out, &hello);
            max = hello.max_frame_size;
        }
        let Ok(messages) = spop::messages(f.payload) else { continue };
        for m in &messages {
            if let Ok(check) = spop::read_check(&m.args) {
                assert!(!check.target.is_empty());
                assert!(robotgate::net::edge::is_method(check.method));
                assert!(check.headers.len() <= spop::MAX_HEADERS);
                let mut out = Vec::new();
                let vars = [("path", Value::Str(check.target)), ("host", Value::Str(check.host.as_bytes()))];
                if spop::write_ack(&mut out, f.stream_id, f.frame_id, Scope::Transaction, &vars, max).is_ok() {
                    assert!(out.len() - 4 <= max as usize);
                    let back = Frame::parse(&out[4..]).expect("an ACK robotgate wrote reads back");
                    assert_eq!((back.stream_id, back.frame_id), (f.stream_id, f.frame_id));
                } else {
                    assert!(out.is_empty());
                }
            }
        }
    }
}

/// The header-evidence reader (issue #67): the first line is a User-Agent,
/// the rest `name: value` lines. Every scheme and host is judged; a request
/// with no sign is never strong, a strong sign is one of the findings, and
/// `Sec-CH-UA`'s reader accepts only what it can read back.
pub fn disguise_headers(data: &[u8]) {
    use robotgate::agent::disguise::{self, brands, Claim, Presented, Scheme};
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let ua = lines.next().unwrap_or("");
    let mut presented = Presented::default();
    let mut values = Vec::new();
    for line in lines {
        if let Some((k, v)) = line.split_once(':') {
            presented.note_any_case(k.trim().as_bytes(), v.trim());
            values.push(v.trim());
        }
    }
    let claim = Claim::of(ua.as_bytes());
    // A JA4 an edge could send: any value that reads as one.
    let edge = values.iter().find_map(|v| disguise::hello::from_edge(v));
    for scheme in [Scheme::Https, Scheme::Http, Scheme::Unknown] {
        for host in ["shop.example", "127.0.0.1:8080", ua] {
            let f = disguise::judge(&claim, &presented, scheme, host, None);
            assert!(!f.strong() || f.any());
            assert_eq!(f.names().len(), f.signs().count());
            if claim.family == disguise::Family::Other {
                assert!(!f.any(), "only a claimed browser is judged");
            }
            if let Some(h) = &edge {
                let g = disguise::judge(&claim, &presented, scheme, host, Some(h));
                // The hello only adds signs.
                assert!(f.signs().all(|(s, _)| g.has(s).is_some()));
                assert!(g.has(disguise::Sign::TlsNoGrease).is_none(), "an edge's JA4 shows no GREASE");
            }
        }
    }
    for v in values {
        if let Some(b) = brands(v.as_bytes()) {
            assert!(b.matches(0));
        }
    }
}

/// The ClientHello reader (issue #67): any bytes. It asks only for more
/// than it has; what it reads is read the same with more bytes after it
/// (it never takes a byte past the hello); a fingerprint is 36 ASCII bytes
/// of JA4's shape, which the edge reader takes back (`h2` first as `h2`).
pub fn client_hello(data: &[u8]) {
    use robotgate::agent::disguise::hello::{from_edge, read, Read};
    match read(data) {
        Read::Need(n) => assert!(n > data.len(), "asked for {n} with {} there", data.len()),
        Read::NotHello => {}
        Read::Hello(h) => {
            let text = h.ja4.as_str();
            assert_eq!(text.len(), 36);
            let back = from_edge(text).expect("its own JA4 reads back");
            // The JA4 shows the highest version offered (`00` when that one is
            // unknown; the legacy field when no `supported_versions`), so
            // whether TLS 1.3 was offered need not read back; nor a first
            // ALPN value that only starts with `h` and ends with `2`.
            assert_eq!(back.ja4, h.ja4);
            assert!(h.alpn != robotgate::agent::disguise::Alpn::H2 || back.alpn == h.alpn);
            let mut longer = data.to_vec();
            longer.extend_from_slice(b"\x17\x03\x03 trailing bytes");
            assert_eq!(read(&longer), Read::Hello(h));
        }
    }
}
