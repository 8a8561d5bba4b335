//! The pipeline driven as the proxy drives it (client behind a trusted
//! proxy, rates on a shared store, reverse DNS answered by a resolver) and
//! as replay drives it (the logged client, local rates, its own memo), with
//! the I/O answered by fakes: the same requests get the same decisions.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::*;
use crate::agent::Category;
use crate::state::MemoryState;

const ROBOTS: &str = "\
User-agent: *
Disallow: /private/
Content-Usage: /novels/ train-ai=n

User-agent: AhrefsBot
Crawl-delay: 20
Disallow: /secret/

User-agent: SemrushBot
Request-rate: 1/15s
Visit-time: 0100-0500

User-agent: ChatGPT-User
Disallow: /members/
";

const UAS: &[&str] = &[
    "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
    "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)",
    "Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)",
    "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/) SemrushBot/7~bl",
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot",
    "Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)",
    "curl/8.5.0",
    "",
];

const CLIENTS: &[&str] = &["66.249.66.1", "203.0.113.66", "132.196.86.5", "198.51.100.7", "192.0.2.1", "2001:db8::1"];

const PATHS: &[&str] = &[
    "/",
    "/private/a",
    "/robots.txt",
    "/trap/x",
    "/novels/a",
    "/secret/b",
    "/members/c",
    "/humans.txt",
    "/%70rivate/b",
    "/a/../private/c",
];

/// A shared store's rate clock, as Redis keeps it: last admission per key, in ms.
#[derive(Default)]
struct Store(HashMap<String, u64>);

impl Store {
    fn admit(&mut self, q: &Question, now_ms: u64) -> Result<(), Duration> {
        let interval = q.interval.as_millis() as u64;
        match self.0.get(&q.key) {
            Some(&last) if now_ms - last < interval => Err(Duration::from_millis(interval - (now_ms - last))),
            _ => {
                self.0.insert(q.key.clone(), now_ms);
                Ok(())
            }
        }
    }
}

/// The resolver: a robot at an address ending in `.7` is who it says.
fn resolve(_bot: usize, ip: IpAddr) -> Identity {
    if ip.to_string().ends_with(".7") {
        Identity::Verified
    } else {
        Identity::Spoofed
    }
}

/// The request's headers: a name and a value each.
struct List<'r>(Vec<(&'r str, &'r str)>);

/// A log line's few headers, as replay holds them: not the request's whole set.
struct Few<'r>(List<'r>);

impl<'r> Headers<'r> for Few<'r> {
    fn each(&self, header: Header, each: &mut dyn FnMut(&'r [u8])) {
        self.0.each(header, each)
    }

    fn text(&self, each: &mut dyn FnMut(&'r str, &'r str)) {
        self.0.text(each)
    }

    fn presented(&self) -> Option<Presented<'r>> {
        None
    }
}

impl<'r> Headers<'r> for List<'r> {
    fn each(&self, header: Header, each: &mut dyn FnMut(&'r [u8])) {
        self.0.iter().filter(|(k, _)| *k == header.name()).for_each(|(_, v)| each(v.as_bytes()));
    }

    fn text(&self, each: &mut dyn FnMut(&'r str, &'r str)) {
        self.0.iter().for_each(|(k, v)| each(k, v));
    }
}

/// What a decision comes to, comparably.
fn summary(v: &Verdict<'_, '_>) -> String {
    match v {
        Verdict::Refuse(status, why) => format!("refuse {status} {why}"),
        Verdict::Decided(d) => {
            let e = d.outcome.enforcement();
            let limited = match d.outcome {
                Outcome::Limited(l) => format!("{} {} {:?}", l.directive, l.line, l.wait),
                _ => String::new(),
            };
            let name = d.agent.as_ref().and_then(|a| a.name);
            let outcome = d.outcome.name();
            format!(
                "{outcome} {name:?} {:?} {:?} {limited} seen={:?} {}",
                d.identity,
                e.status(),
                d.robots_seen,
                d.preference_unknown
            )
        }
    }
}

struct Driver {
    state: MemoryState,
    store: Option<Store>,
    memo: Option<Memo>,
}

fn setup() -> (tempfile::TempDir, crate::load::Snapshot) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("robots.txt"), ROBOTS).unwrap();
    std::fs::write(dir.path().join("humans.txt"), "people\n").unwrap();
    let d = dir.path().display();
    let config = format!(
        "listen: [\"127.0.0.1:8080\"]\ntrusted_proxies: [\"127.0.0.1/32\"]\nsites:\n  - hosts: [\"localhost\"]\n    upstream: \"127.0.0.1:8000\"\n    robots: {d}/robots.txt\n    humans: {d}/humans.txt\n    traps: {{ paths: [\"/trap/\"], ban: 30, arm_after: 0 }}\nlog:\n  violations: {d}/violations.jsonl\n"
    );
    std::fs::write(dir.path().join("robotgate.yaml"), config).unwrap();
    let snap = crate::load::load(&dir.path().join("robotgate.yaml")).unwrap();
    (dir, snap)
}

/// Decide one request as a driver does; the summary and how many times it classified.
fn drive(
    snap: &crate::load::Snapshot,
    d: &mut Driver,
    client: &str,
    ua: &str,
    path: &str,
    clock: Clock,
) -> (String, u32) {
    let ip: IpAddr = client.parse().unwrap();
    let site = &snap.sites[0];
    let view = SiteView { rules: site.rules(), target: &site.conf.target };
    let (peer, headers) = match d.store {
        // The proxy: behind a trusted proxy that names the client.
        // The browser sends what a browser sends (issue #67), which replay
        // does not see.
        Some(_) => {
            let mut h = vec![("user-agent", ua), ("x-forwarded-for", client)];
            if ua.contains("Firefox/") {
                h.extend([("accept-language", "en-US,en;q=0.5"), ("sec-fetch-site", "none")]);
                h.extend([("sec-fetch-mode", "navigate"), ("sec-fetch-dest", "document")]);
            }
            (Peer::Socket(Some("127.0.0.1".parse().unwrap())), h)
        }
        // Replay: the logged client.
        None => (Peer::Logged(Some(ip)), vec![("user-agent", ua)]),
    };
    let headers = List(headers.into_iter().filter(|(_, v)| !v.is_empty()).collect());
    let rates = if d.store.is_some() { Rates::Shared } else { Rates::Local };
    let (proxy, replay);
    let mut p = if d.store.is_some() {
        proxy = Request {
            method: "GET",
            target: path.as_bytes(),
            host: "localhost",
            https: false,
            peer,
            headers,
            hello: None,
        };
        Pipeline::new(Env::of(snap), view, &proxy, None, rates, clock)
    } else {
        let headers = Few(headers);
        replay = Request {
            method: "GET",
            target: path.as_bytes(),
            host: "localhost",
            https: false,
            peer,
            headers,
            hello: None,
        };
        Pipeline::new(Env::of(snap), view, &replay, None, rates, clock)
    };
    let mut lookups = 0;
    let verdict = loop {
        match p.run(d.memo.as_mut(), &d.state, clock) {
            Next::Done(v) => break v,
            Next::Need(Need::Dns { bot, client }) => {
                lookups += 1;
                p.answer_dns(bot, resolve(bot, client));
            }
            Next::Need(Need::Store(q)) => {
                let answer = d.store.as_mut().map(|s| s.admit(&q, clock.unix_ms()));
                p.answer_store(answer);
            }
            Next::Need(Need::KeyDirectory(_)) => p.answer_signature(None),
        }
    };
    assert!(lookups <= 1, "one lookup per request");
    (summary(&verdict), p.classifications())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_proxys_driving_and_replays_give_one_decision(
        steps in proptest::collection::vec((0..CLIENTS.len(), 0..UAS.len(), 0..PATHS.len(), 0u64..25), 1..60),
        start_hour in 0u64..24,
    ) {
        let (_dir, snap) = setup();
        let mut proxy = Driver { state: MemoryState::new(1024), store: Some(Store::default()), memo: None };
        let mut replay = Driver { state: MemoryState::new(1024), store: None, memo: Some(Memo::new(64)) };
        let base = Instant::now();
        // Armed from the snapshot's first serving of the trap (arm_after: 0).
        let mut t = snap.sites[0].armed_at.first().copied().unwrap_or(0).max(1_800_000_000) + start_hour * 3600;
        let t0 = t;
        for (c, u, p, dt) in steps {
            t += dt;
            let clock = Clock::Fixed { instant: base + Duration::from_secs(t - t0), unix_secs: t };
            let (a, na) = drive(&snap, &mut proxy, CLIENTS[c], UAS[u], PATHS[p], clock);
            let (b, nb) = drive(&snap, &mut replay, CLIENTS[c], UAS[u], PATHS[p], clock);
            prop_assert_eq!(&a, &b, "{} {} {}", CLIENTS[c], UAS[u], PATHS[p]);
            // Each fact once: whatever the request needed, one classification at most.
            prop_assert!(na <= 1 && nb <= 1, "classified {} and {} times", na, nb);
        }
    }
}

#[test]
fn a_resumed_decision_classifies_once_and_gathers_nothing_again() {
    let (_dir, snap) = setup();
    let mut proxy = Driver { state: MemoryState::new(64), store: Some(Store::default()), memo: None };
    let t = 1_800_000_000 + 2 * 3600; // 02:00 UTC, inside SemrushBot's hours
    let clock = Clock::Fixed { instant: Instant::now(), unix_secs: t };
    // AhrefsBot's Crawl-delay: a question to the store, then a decision.
    let (first, n) = drive(&snap, &mut proxy, "198.51.100.7", UAS[3], "/a", clock);
    assert_eq!(n, 1);
    assert!(first.starts_with("pass "), "a pass the store admitted: {first}");
    let (second, n) = drive(&snap, &mut proxy, "198.51.100.7", UAS[3], "/b", clock);
    assert_eq!(n, 1, "resumed after the store's answer without classifying again");
    assert!(second.starts_with("limited ") && second.contains("Some(429) crawl-delay"), "{second}");
}

/// Issue #67: a browser's User-Agent on a library's request is a robot held
/// to `*`; with the browser's headers it is a person; behind a trusted
/// proxy, or with a forwarding header, the scheme is not judged; replay,
/// which holds no headers, judges none of it.
#[test]
fn a_browsers_user_agent_is_judged_by_the_rest_of_the_request() {
    let (_dir, snap) = setup();
    let site = &snap.sites[0];
    let view = SiteView { rules: site.rules(), target: &site.conf.target };
    let ff = UAS[0];
    let state = MemoryState::new(64);
    let decide = |peer: Peer, https: bool, headers: Vec<(&str, &str)>| {
        let req = Request {
            method: "GET",
            target: b"/private/a",
            host: "shop.example",
            https,
            peer,
            headers: List(headers),
            hello: None,
        };
        let mut p = Pipeline::new(Env::of(&snap), view, &req, None, Rates::Local, Clock::System);
        let scheme = p.facts().scheme;
        match p.run(None, &state, Clock::System) {
            Next::Done(Verdict::Decided(d)) => {
                (d.outcome.name(), d.agent.map(|a| (a.category, a.disguise.strong())), scheme)
            }
            other => panic!("{other:?}"),
        }
    };
    let direct = Peer::Socket(Some("203.0.113.9".parse().unwrap()));
    let browser = vec![
        ("user-agent", ff),
        ("accept-language", "en-US,en;q=0.5"),
        ("sec-fetch-site", "none"),
        ("sec-fetch-mode", "navigate"),
        ("sec-fetch-dest", "document"),
    ];
    let (outcome, agent, scheme) = decide(direct, true, browser.clone());
    assert_eq!((outcome, agent.map(|a| a.0), scheme), ("pass", Some(Category::Browser), Scheme::Https));
    let (outcome, agent, _) = decide(direct, true, vec![("user-agent", ff), ("accept", "*/*")]);
    assert_eq!((outcome, agent), ("violation", Some((Category::Disguised, true))));
    // Fetch Metadata over plain http to a public name: no browser sends it.
    let (outcome, _, scheme) = decide(direct, false, browser.clone());
    assert_eq!((outcome, scheme), ("violation", Scheme::Http));
    // Behind a balancer (a forwarding header) the scheme is the balancer's.
    let mut forwarded = browser.clone();
    forwarded.push(("x-forwarded-for", "198.51.100.1"));
    let (outcome, _, scheme) = decide(direct, false, forwarded);
    assert_eq!((outcome, scheme), ("pass", Scheme::Unknown));
    // Through a forward proxy that says so, a missing header is only weak.
    let (outcome, agent, _) = decide(direct, true, vec![("user-agent", ff), ("via", "1.1 proxy.corp.example")]);
    assert_eq!((outcome, agent), ("violation", Some((Category::Disguised, false))));
    // Replay holds no headers: a browser.
    let req = Request {
        method: "GET",
        target: b"/private/a",
        host: "shop.example",
        https: true,
        peer: Peer::Logged(Some("203.0.113.9".parse().unwrap())),
        headers: Few(List(vec![("user-agent", ff)])),
        hello: None,
    };
    let mut p = Pipeline::new(Env::of(&snap), view, &req, None, Rates::Local, Clock::System);
    assert!(p.facts().presented.is_none());
    assert!(
        matches!(p.run(None, &state, Clock::System), Next::Done(Verdict::Decided(d)) if d.outcome.name() == "pass")
    );
}

/// A host's one walk ([`Carried::note`] on each name) tells what the
/// default's lookups by name tell.
#[test]
fn carried_headers_noted_in_a_walk_are_the_ones_looked_up_by_name() {
    let names = [
        "x-forwarded-for",
        "forwarded",
        "signature-input",
        "signature",
        "x-forwarded-fo",
        "x-forwarded-host",
        "forwarded-for",
        "accept-language",
        "sec-ch-ua",
        "x-real-ip",
    ];
    // Every subset of the names, as a request's headers.
    for mask in 0u32..(1 << names.len()) {
        let headers: Vec<(&str, &str)> =
            names.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, n)| (*n, "v")).collect();
        let mut walked = Carried::default();
        headers.iter().for_each(|(n, _)| walked.note(n.as_bytes()));
        assert_eq!(walked, List(headers.clone()).carried(), "{headers:?}");
        let mut upper = Carried::default();
        headers.iter().for_each(|(n, _)| upper.note(n.to_ascii_uppercase().as_bytes()));
        assert_eq!(upper, walked, "{headers:?} in upper case");
    }
}
