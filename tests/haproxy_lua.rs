//! Issue #69: robotgate inside HAProxy, as a native Lua module. The real
//! HAProxy (Debian's 2.6, Lua 5.3) loads the module `bash haproxy/build.sh`
//! builds through the shipped `examples/edge/robotgate.lua`, and runs the
//! shipped `examples/edge/haproxy-lua.cfg` with only its addresses and paths
//! changed, in front of an origin the test starts. No robotgate process
//! runs: HAProxy decides in its own threads, and the module writes the
//! violation log. A real client (curl) talks to HAProxy from loopback
//! addresses of the test's choice, which HAProxy names as the client (`src`).
//!
//! A module that cannot be built here, or an HAProxy that is not installed,
//! skips the tests, loudly; under `CI` it fails them.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::dns_server::{Answer as DnsAnswer, Server as DnsServer};
use common::edge::{get_from, wait_port, Answered, Running};
use common::modules::{
    a_shared_store_is_shared, haproxy as module, haproxy_config as retarget, have_haproxy, metrics_port, sample,
    shared_state, signed_site, site, spawn_haproxy, start_haproxy as start,
};
use common::redis_server::RedisServer;
use common::*;

const YANDEX: &str = "Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)";

/// What a browser sends, through HAProxy from `from`.
fn as_a_browser(port: u16, from: &str, path: &str) -> Answered {
    let ua = [("User-Agent", FIREFOX)];
    let mut headers = ua.to_vec();
    headers.extend(as_browser("http://127.0.0.1/", &ua));
    get_from(port, from, path, &headers)
}

fn records(dir: &Path, n: usize) -> Vec<serde_json::Value> {
    wait_lines(&dir.join("violations.jsonl"), n).iter().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn haproxy_lua_module_in_front() {
    let Some(module) = module() else { return };
    if !have_haproxy() {
        return;
    }
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    let yaml = site(dir.path(), &origin, "");
    let port = free_port();
    let cfg = retarget(port, &origin, (&module, &yaml), 1, "");
    // `haproxy -c` loads the Lua file, so robotgate.yaml is checked with HAProxy's configuration.
    std::fs::write(dir.path().join("check.cfg"), &cfg).unwrap();
    let check = Command::new("haproxy").arg("-c").arg("-f").arg(dir.path().join("check.cfg")).output().unwrap();
    assert!(check.status.success(), "haproxy -c: {}", String::from_utf8_lossy(&check.stderr));
    let _haproxy = start(dir.path(), port, &cfg);
    let err = dir.path().join("haproxy.err");
    let read = || std::fs::read_to_string(&err).unwrap_or_default();
    assert!(read().contains("robotgate:") && read().contains("loaded"), "{}", read());

    // A browser gets the page, from the origin, with nothing added.
    let r = as_a_browser(port, "127.0.0.2", "/page");
    assert_eq!((r.status, r.body.as_str()), (200, "origin /page"), "{}", r.head);
    assert_eq!(r.header("x-robots-tag"), None, "{}", r.head);
    let served = origin.hits();

    // GPTBot, believed (from its published range): Disallow: / is 403,
    // robotgate's answer, and the origin is not asked.
    let r = get_from(port, "127.0.0.2", "/page", &[("User-Agent", GPTBOT)]);
    assert_eq!(r.status, 403, "{}\n{}", r.head, r.body);
    assert_eq!(r.header("cache-control"), Some("no-store"), "{}", r.head);
    assert_eq!(r.all("content-type"), vec!["text/plain; charset=utf-8"], "{}", r.head);
    assert!(!r.body.is_empty(), "the refusal has robotgate's body");
    assert_eq!(origin.hits(), served, "the origin was asked for a refused request");
    let record = records(dir.path(), 1).remove(0);
    assert_eq!((record["bot"].as_str(), record["status"].as_u64()), (Some("GPTBot"), Some(403)), "{record}");
    assert_eq!((record["path"].as_str(), record["client"].as_str()), (Some("/page"), Some("127.0.0.2")), "{record}");
    assert_eq!((record["site"].as_str(), record["identity"].as_str()), (Some("s"), Some("verified")), "{record}");
    assert!(record["line"].as_u64().is_some() && record["time"].as_str().is_some_and(|t| !t.is_empty()), "{record}");
    // A HEAD is refused alike, with no body.
    let head = Command::new("curl")
        .args(["-s", "-I", "--max-time", "10", "--interface", "127.0.0.2", "-A", GPTBOT])
        .arg(format!("http://127.0.0.1:{port}/page"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&head.stdout).starts_with("HTTP/1.1 403"), "{head:?}");

    // A spoofed GPTBot (outside its range): refused as one. Its own
    // X-Forwarded-For (inside the range) changes nothing: the client is
    // HAProxy's `src`, never a header.
    let r = get_from(port, "127.0.0.5", "/page", &[("User-Agent", GPTBOT), ("X-Forwarded-For", "127.0.0.2")]);
    assert_eq!(r.status, 403, "{}\n{}", r.head, r.body);
    assert!(r.body.contains("not the crawler"), "not the spoofed claim's refusal: {}", r.body);

    // A noindex pass: the origin's page, with robotgate's X-Robots-Tag.
    let r = get_from(port, "127.0.0.4", "/private/n", &[("User-Agent", CHATGPT_USER)]);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /private/n"), "{}", r.head);
    assert_eq!(r.header("x-robots-tag"), Some("noindex, nofollow"), "{}", r.head);
    // An indexing rule's value on a browser's page.
    let r = as_a_browser(port, "127.0.0.2", "/docs/a");
    assert_eq!((r.status, r.all("x-robots-tag")), (200, vec!["noarchive"]), "{}", r.head);

    // robots.txt is robotgate's, answered by the module: the origin is not asked.
    let before = origin.hits();
    let r = get_from(port, "127.0.0.2", "/robots.txt", &[("User-Agent", GPTBOT)]);
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(r.body.contains("User-agent: GPTBot") && r.body.contains("Disallow: /"), "{}", r.body);
    let etag = r.header("etag").unwrap_or_else(|| panic!("no ETag: {}", r.head)).to_owned();
    assert_eq!(origin.hits(), before, "the origin served robots.txt");
    // Asked again with its ETag: 304, no body.
    let r = get_from(port, "127.0.0.2", "/robots.txt", &[("User-Agent", GPTBOT), ("If-None-Match", &etag)]);
    assert_eq!((r.status, r.body.as_str()), (304, ""), "{}", r.head);

    // Over its Crawl-delay (the `slow` site): 429 with Retry-After and the
    // RateLimit headers.
    let slow = [("User-Agent", GPTBOT), ("Host", "slow.example")];
    let r = get_from(port, "127.0.0.3", "/a", &slow);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /a"), "{}", r.head);
    let r = get_from(port, "127.0.0.3", "/b", &slow);
    assert_eq!(r.status, 429, "{}\n{}", r.head, r.body);
    let retry: u64 = r.header("retry-after").unwrap_or_else(|| panic!("no Retry-After: {}", r.head)).parse().unwrap();
    assert!((1..=30).contains(&retry), "Retry-After {retry}");
    assert!(r.header("ratelimit").is_some() && r.header("ratelimit-policy").is_some(), "{}", r.head);

    // robots.txt edited (saved by rename, as editors do): in force within
    // 2 s, with no reload of HAProxy's.
    let edited = dir.path().join("robots.txt.new");
    std::fs::write(&edited, "User-agent: *\nDisallow: /private/\n\nUser-agent: GPTBot\nAllow: /\n").unwrap();
    std::fs::rename(&edited, dir.path().join("robots.txt")).unwrap();
    let allowed = within(Duration::from_secs(2), || {
        get_from(port, "127.0.0.2", "/page", &[("User-Agent", GPTBOT)]).status == 200
    });
    assert!(allowed.is_some(), "the edit was not in force within 2 s: {}", read());

    // A robotgate.yaml that no longer loads: the rules in force stay, and
    // HAProxy's stderr says why.
    let broken = dir.path().join("robotgate.yaml.new");
    std::fs::write(&broken, std::fs::read_to_string(&yaml).unwrap() + "no_such_key: 1\n").unwrap();
    std::fs::rename(&broken, &yaml).unwrap();
    let said = within(Duration::from_secs(5), || read().contains("reload refused, the last good snapshot stays"));
    assert!(said.is_some(), "{}", read());
    assert!(read().contains("no_such_key"), "{}", read());
    assert_eq!(get_from(port, "127.0.0.2", "/page", &[("User-Agent", GPTBOT)]).status, 200);
    let r = as_a_browser(port, "127.0.0.2", "/page");
    assert_eq!((r.status, r.body.as_str()), (200, "origin /page"), "{}", r.head);

    // The metrics frontend: the proxy's families, counted by the module.
    let scrape = get_from(metrics_port(&cfg), "127.0.0.1", "/metrics", &[]);
    assert_eq!(scrape.status, 200, "{}", scrape.head);
    assert!(
        scrape.header("content-type").is_some_and(|t| t.starts_with("text/plain; version=0.0.4")),
        "{}",
        scrape.head
    );
    let text = scrape.body;
    let at_least = |series: &str, n: f64| {
        let got = sample(&text, series);
        assert!(got.is_some_and(|v| v >= n), "{series}: {got:?} (at least {n} expected)\n{text}");
    };
    // Browsers: the page four times (with the docs page), the edit's check.
    at_least(r#"robotgate_requests_total{site="s",category="browser"}"#, 3.0);
    at_least(r#"robotgate_requests_total{site="s",category="ai-crawler"}"#, 2.0);
    at_least(r#"robotgate_files_served_total{site="s",file="robots.txt"}"#, 2.0);
    let refused = text.lines().find(|l| l.starts_with("robotgate_violations_total{") && l.contains(r#"bot="GPTBot""#));
    assert!(refused.is_some(), "no violation of GPTBot's counted:\n{text}");
    at_least(r#"robotgate_rate_limited_total{site="slow",bot="GPTBot",directive="crawl-delay"}"#, 1.0);
    at_least("robotgate_decision_seconds_count", 3.0);
    at_least("robotgate_reloads_total", 1.0);
    at_least("robotgate_reload_failures_total", 1.0);
    at_least("robotgate_one_client_warning", 0.0);
    assert!(text.contains(r#"robotgate_robots_info{site="s",hash=""#), "{text}");
    // Only /metrics is served there.
    assert_eq!(get_from(metrics_port(&cfg), "127.0.0.1", "/other", &[]).status, 403);
}

/// A robotgate.yaml that does not load: HAProxy does not start (`haproxy -c`
/// fails too), and says why, naming the file and the problem.
#[test]
fn a_config_that_does_not_load_stops_haproxy() {
    let Some(module) = module() else { return };
    if !have_haproxy() {
        return;
    }
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    let yaml = site(dir.path(), &origin, "no_such_key: 1\n");
    let port = free_port();
    let cfg = retarget(port, &origin, (&module, &yaml), 1, "");
    std::fs::write(dir.path().join("check.cfg"), &cfg).unwrap();
    let check = Command::new("haproxy").arg("-c").arg("-f").arg(dir.path().join("check.cfg")).output().unwrap();
    assert!(!check.status.success(), "haproxy -c took a robotgate.yaml that does not load");
    let mut haproxy = spawn_haproxy(dir.path(), &cfg);
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = haproxy.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "HAProxy started with a robotgate.yaml that does not load");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!status.success(), "{status}");
    let text = std::fs::read_to_string(dir.path().join("haproxy.err")).unwrap_or_default();
    assert!(text.contains("robotgate:") && text.contains("robotgate.yaml"), "{text}");
    assert!(text.contains("no_such_key"), "HAProxy does not name the problem: {text}");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err(), "HAProxy listens without the module");
}

/// A trap and its ban are shared by every thread of HAProxy's (two here,
/// each with its own Lua state: `lua-load-per-thread`; each request a new
/// connection): a client that follows the trap is banned on every path but
/// robots.txt, whichever thread decides; another client is not.
#[test]
fn a_trap_bans_on_every_thread() {
    let Some(module) = module() else { return };
    if !have_haproxy() {
        return;
    }
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    let yaml = site(dir.path(), &origin, "");
    let port = free_port();
    // Which thread answered, on every answer (HAProxy's `thread` fetch).
    let mark = "    http-after-response set-header X-Thread %[thread]\n";
    let _haproxy = start(dir.path(), port, &retarget(port, &origin, (&module, &yaml), 2, mark));

    let r = get_from(port, "127.0.0.9", "/robots.txt", &[("User-Agent", FIREFOX)]);
    assert!(r.body.contains("Disallow: /trap/"), "the trap is not in robots.txt: {}", r.body);
    let r = as_a_browser(port, "127.0.0.9", "/trap/x");
    assert_eq!(r.status, 403, "{}\n{}", r.head, r.body);
    let served = origin.hits();
    let mut threads = std::collections::BTreeSet::new();
    for _ in 0..20 {
        let r = as_a_browser(port, "127.0.0.9", "/page");
        assert_eq!(r.status, 403, "a thread did not know the ban: {}", r.head);
        threads.insert(r.header("x-thread").unwrap_or("?").to_owned());
    }
    assert_eq!(threads.len(), 2, "both threads should have decided some: {threads:?}");
    assert_eq!(get_from(port, "127.0.0.9", "/robots.txt", &[("User-Agent", FIREFOX)]).status, 200);
    let r = as_a_browser(port, "127.0.0.10", "/page");
    assert_eq!((r.status, r.body.as_str()), (200, "origin /page"), "{}", r.head);
    assert_eq!(origin.hits(), served + 1, "the banned client reached the origin");
    let trap = records(dir.path(), 1)
        .into_iter()
        .find(|r| r["directive"] == "trap")
        .unwrap_or_else(|| panic!("no record of the trap"));
    assert_eq!((trap["action"].as_str(), trap["client"].as_str()), (Some("ban"), Some("127.0.0.9")), "{trap}");
}

/// Reverse DNS inside HAProxy: a claim only reverse DNS can settle
/// (YandexBot publishes host names, no ranges) parks the Lua action, which
/// sleeps (yielding to HAProxy) while a helper thread asks a DNS server
/// (the test's, on loopback). The client is a public address that a proxy
/// HAProxy trusts named (the shipped file's `set-src` line, for
/// 127.0.0.2 only); from anyone else that header is ignored.
#[test]
fn reverse_dns_parks_the_action_and_a_trusted_proxy_names_the_client() {
    let Some(module) = module() else { return };
    if !have_haproxy() {
        return;
    }
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    let dns = DnsServer::answering(&[
        ("40.100.51.198.in-addr.arpa", DnsAnswer::Ptr(vec!["spider-40", "yandex", "com"])),
        ("spider-40.yandex.com", DnsAnswer::A("198.51.100.40".parse().unwrap())),
        ("41.100.51.198.in-addr.arpa", DnsAnswer::Ptr(vec!["spider", "evil", "example"])),
    ]);
    let yaml = site(dir.path(), &origin, "");
    let text = std::fs::read_to_string(&yaml).unwrap();
    let verify = format!("verify:\n  dns: {{ nameservers: [\"{}\"], timeout_ms: 2000 }}\n", dns.addr);
    std::fs::write(&yaml, text.replacen("verify:\n", &verify, 1)).unwrap();
    let port = free_port();
    let cfg = retarget(port, &origin, (&module, &yaml), 1, "");
    let trust = "    # http-request set-src hdr_ip(X-Forwarded-For,-1) if { src 10.0.0.0/8 }\n";
    assert_eq!(cfg.matches(trust).count(), 1, "the example's set-src line changed");
    let cfg = cfg.replace(trust, "    http-request set-src hdr_ip(X-Forwarded-For,-1) if { src 127.0.0.2 }\n");
    let _haproxy = start(dir.path(), port, &cfg);
    let from = |proxy: &str, client: &str, path: &str| {
        get_from(port, proxy, path, &[("User-Agent", YANDEX), ("X-Forwarded-For", client)])
    };

    // YandexBot confirmed: held to its group (the origin's page; 403 on /private/).
    let r = from("127.0.0.2", "198.51.100.40", "/page");
    assert_eq!((r.status, r.body.as_str()), (200, "origin /page"), "{}", r.head);
    let r = from("127.0.0.2", "198.51.100.40", "/private/x");
    assert_eq!(r.status, 403, "{}\n{}", r.head, r.body);
    // A name outside Yandex's: a spoofed claim, refused anywhere.
    let r = from("127.0.0.2", "198.51.100.41", "/page");
    assert_eq!(r.status, 403, "{}\n{}", r.head, r.body);
    assert!(r.body.contains("not the crawler"), "{}", r.body);
    // The verdict is kept: more requests, no more questions.
    let asked = dns.count();
    for _ in 0..5 {
        assert_eq!(from("127.0.0.2", "198.51.100.40", "/page").status, 200);
    }
    assert_eq!(dns.count(), asked, "a kept verdict was asked again");
    // From a client HAProxy does not trust, its X-Forwarded-For is not
    // believed: the client is 127.0.0.3, whose PTR the server does not know.
    let r = from("127.0.0.3", "198.51.100.40", "/private/y");
    assert_eq!(r.status, 403, "{}\n{}", r.head, r.body);
    let all = records(dir.path(), 3);
    let of = |client: &str| all.iter().find(|r| r["client"] == client).cloned();
    let verified = of("198.51.100.40").expect("the /private/ refusal's record");
    assert_eq!(verified["identity"], "verified", "{verified}");
    let spoofed = of("198.51.100.41").expect("the spoofed claim's record");
    assert_eq!(spoofed["identity"], "spoofed", "{spoofed}");
    let untrusted = of("127.0.0.3").unwrap_or_else(|| panic!("the untrusted client's record: {all:?}"));
    assert_ne!(untrusted["identity"], "verified", "{untrusted}");
}

/// Issue #69 (4): what HAProxy lets through in other forms is decided,
/// never passed undecided: an absolute-form target, an HTTP/2 request
/// (cleartext, prior knowledge), a `Host` robotgate's reading refuses (the
/// default site decides it), and a control byte in a header (which HAProxy
/// 2.6 hands to the action). The origin never sees GPTBot.
#[test]
fn other_forms_of_a_request_are_decided() {
    let Some(module) = module() else { return };
    if !have_haproxy() {
        return;
    }
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    let yaml = site(dir.path(), &origin, "");
    let (port, h2) = (free_port(), free_port());
    let bind = format!("    bind 127.0.0.1:{h2} proto h2\n");
    let _haproxy = start(dir.path(), port, &retarget(port, &origin, (&module, &yaml), 1, &bind));

    let absolute = format!(
        "GET http://127.0.0.1:{port}/page HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: {GPTBOT}\r\nConnection: close\r\n\r\n"
    );
    let r = raw(port, absolute.as_bytes());
    assert_eq!(r.status, 403, "absolute-form: {}", r.body);

    let curl_h2 = |ua: &str| {
        let out = Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code} %{http_version}", "--max-time", "10"])
            .args(["--http2-prior-knowledge", "-H", &format!("User-Agent: {ua}")])
            .arg(format!("http://127.0.0.1:{h2}/page"))
            .output()
            .expect("curl runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(curl_h2(GPTBOT), "403 2", "HTTP/2 with :authority 127.0.0.1:{h2}");

    let odd_host = format!("GET /page HTTP/1.1\r\nHost: x@y\r\nUser-Agent: {GPTBOT}\r\nConnection: close\r\n\r\n");
    let r = raw(port, odd_host.as_bytes());
    assert_eq!(r.status, 403, "Host x@y, decided by the default site: {}", r.body);

    let control =
        format!("GET /page HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: {GPTBOT}\x01\r\nConnection: close\r\n\r\n");
    let r = raw(port, control.as_bytes());
    // HAProxy 2.6 lets this one through to the action: the module decides it.
    assert_eq!(r.status, 403, "a control byte in the User-Agent, decided: {}", r.body);

    assert_eq!(origin.hits(), 0, "the origin saw a refused robot: {:?}", origin.paths.lock().unwrap());
    assert_eq!(curl_h2(FIREFOX), "200 2", "a browser over HTTP/2");
}

/// HAProxy's master-worker mode (`-W`, as Debian's systemd unit runs it)
/// with `lua-load` (one Lua state): the master loads the module, then forks
/// the worker, where none of the master's threads run. The module starts
/// its reload thread again there: an edit of robots.txt is in force within
/// 2 s.
#[test]
fn master_worker_mode_reloads_in_the_worker() {
    let Some(module) = module() else { return };
    if !have_haproxy() {
        return;
    }
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    let yaml = site(dir.path(), &origin, "");
    let port = free_port();
    let cfg = retarget(port, &origin, (&module, &yaml), 1, "").replace("lua-load-per-thread ", "lua-load ");
    let file = dir.path().join("haproxy.cfg");
    std::fs::write(&file, &cfg).unwrap();
    let err = dir.path().join("haproxy.err");
    let child = Command::new("haproxy")
        .args(["-W", "-db", "-f"])
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("haproxy starts");
    let _haproxy = Running(child);
    wait_port(port, "haproxy", &err);
    assert_eq!(get_from(port, "127.0.0.2", "/page", &[("User-Agent", GPTBOT)]).status, 403);
    let edited = dir.path().join("robots.txt.new");
    std::fs::write(&edited, "User-agent: GPTBot\nAllow: /\n").unwrap();
    std::fs::rename(&edited, dir.path().join("robots.txt")).unwrap();
    let allowed = within(Duration::from_secs(2), || {
        get_from(port, "127.0.0.2", "/page", &[("User-Agent", GPTBOT)]).status == 200
    });
    let read = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(allowed.is_some(), "the edit was not in force in the worker within 2 s: {read}");
    assert!(read.contains("worker") && read.contains("reloaded"), "{read}");
}

/// A site's robots.txt as a Kubernetes ConfigMap mounts it: a link through
/// `..data`, itself a link to the current version's directory, which an
/// update swaps whole (no event names robots.txt). In force within 2 s; an
/// edit of another site's file is reloaded alone, as events name it.
#[test]
fn a_configmaps_update_and_an_edit_are_reloaded() {
    let Some(module) = module() else { return };
    if !have_haproxy() {
        return;
    }
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    let yaml = site(dir.path(), &origin, "");
    let robots = dir.path().join("robots.txt");
    let v1 = dir.path().join("..2026_12_03_v1");
    std::fs::create_dir(&v1).unwrap();
    std::fs::rename(&robots, v1.join("robots.txt")).unwrap();
    std::os::unix::fs::symlink("..2026_12_03_v1", dir.path().join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/robots.txt", &robots).unwrap();
    let port = free_port();
    let cfg = retarget(port, &origin, (&module, &yaml), 1, "");
    let _haproxy = start(dir.path(), port, &cfg);
    let read = || std::fs::read_to_string(dir.path().join("haproxy.err")).unwrap_or_default();
    assert_eq!(get_from(port, "127.0.0.2", "/page", &[("User-Agent", GPTBOT)]).status, 403);

    // The kubelet's update: the new version written, `..data` swapped.
    let v2 = dir.path().join("..2026_12_03_v2");
    std::fs::create_dir(&v2).unwrap();
    std::fs::write(v2.join("robots.txt"), "User-agent: GPTBot\nAllow: /\n").unwrap();
    std::os::unix::fs::symlink("..2026_12_03_v2", dir.path().join("..data_tmp")).unwrap();
    std::fs::rename(dir.path().join("..data_tmp"), dir.path().join("..data")).unwrap();
    let allowed = within(Duration::from_secs(2), || {
        get_from(port, "127.0.0.2", "/page", &[("User-Agent", GPTBOT)]).status == 200
    });
    assert!(allowed.is_some(), "the ConfigMap's update was not in force within 2 s: {}", read());

    // Another site's robots.txt edited in place: that site alone is read
    // again (the events named its file).
    let slow = [("User-Agent", GPTBOT), ("Host", "slow.example")];
    assert_eq!(get_from(port, "127.0.0.3", "/a", &slow).status, 200);
    std::fs::write(dir.path().join("slow-robots.txt"), "User-agent: GPTBot\nDisallow: /\n").unwrap();
    let refused = within(Duration::from_secs(2), || get_from(port, "127.0.0.3", "/b", &slow).status == 403);
    assert!(refused.is_some(), "the edit was not in force within 2 s: {}", read());
    let said = within(Duration::from_secs(2), || read().contains("2 sites, 0 added, 1 rebuilt, 0 removed"));
    assert!(said.is_some(), "{}", read());
    let scrape = get_from(metrics_port(&cfg), "127.0.0.1", "/metrics", &[]);
    assert!(sample(&scrape.body, "robotgate_reloads_total").is_some_and(|n| n >= 2.0), "{}", scrape.body);

    // A setting a running module cannot change: reloaded, and said to wait
    // for HAProxy's own reload.
    let edited = dir.path().join("robotgate.yaml.new");
    std::fs::write(&edited, std::fs::read_to_string(&yaml).unwrap() + "limits:\n  max_clients: 5000\n").unwrap();
    std::fs::rename(&edited, &yaml).unwrap();
    let said = within(Duration::from_secs(2), || read().contains("not in force until the edge loads"));
    assert!(said.is_some_and(|_| read().contains("limits.max_clients")), "{}", read());
}

/// Web Bot Auth inside HAProxy: the key directory fetched by a helper
/// thread while the Lua action sleeps ([`common::modules::a_signed_agent_is_verified`]).
#[test]
fn a_signed_agent_is_verified_inside_haproxy() {
    let Some(module) = module() else { return };
    if !have_haproxy() {
        return;
    }
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    let yaml = signed_site(dir.path(), &origin);
    let port = free_port();
    let _haproxy = start(dir.path(), port, &retarget(port, &origin, (&module, &yaml), 1, ""));
    common::modules::a_signed_agent_is_verified(port, &dir.path().join("violations.jsonl"));
}

/// `state.redis` inside HAProxy: two HAProxies, each with the module, share
/// one store (a real redis-server): a robot's pace and a trap's ban hold
/// across both ([`a_shared_store_is_shared`]).
#[test]
fn two_haproxies_share_one_store() {
    let Some(module) = module() else { return };
    if !have_haproxy() {
        return;
    }
    let redis = RedisServer::start();
    let origin = Origin::start();
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let state = shared_state(&redis.url(), "rghaproxy:");
    let (a, b) = (free_port(), free_port());
    let _a = start(one.path(), a, &retarget(a, &origin, (&module, &site(one.path(), &origin, &state)), 1, ""));
    let _b = start(two.path(), b, &retarget(b, &origin, (&module, &site(two.path(), &origin, &state)), 1, ""));
    a_shared_store_is_shared(a, b, (&one.path().join("haproxy.err"), &two.path().join("haproxy.err")));
}

/// The violation log inside HAProxy: rotated by the module at
/// `log.max_size`, `log.keep` files kept, as the proxy rotates its own; and
/// opened again when another program moves it away (logrotate's `create`).
#[test]
fn the_violation_log_is_rotated_at_its_size_and_opened_again_when_moved() {
    let Some(module) = module() else { return };
    if !have_haproxy() {
        return;
    }
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    // Indented: more of site()'s `log:` block, which its extra YAML follows.
    let yaml = site(dir.path(), &origin, "  max_size: 2000\n  keep: 2\n");
    let port = free_port();
    let _haproxy = start(dir.path(), port, &retarget(port, &origin, (&module, &yaml), 1, ""));
    let log = dir.path().join("violations.jsonl");
    let rotated = |n: u32| dir.path().join(format!("violations.jsonl.{n}"));
    for i in 0..40 {
        let r = get_from(port, "127.0.0.2", &format!("/page{i}"), &[("User-Agent", GPTBOT)]);
        assert_eq!(r.status, 403, "{}", r.head);
    }
    assert!(rotated(1).exists() && rotated(2).exists(), "not rotated: {:?}", std::fs::read_dir(dir.path()).unwrap());
    assert!(!rotated(3).exists(), "more than log.keep files kept");
    for file in [log.clone(), rotated(1), rotated(2)] {
        let text = std::fs::read_to_string(&file).unwrap();
        let longest = text.lines().map(str::len).max().unwrap_or(0);
        assert!(text.len() <= 2000 + longest + 1, "{} has {} bytes", file.display(), text.len());
        for line in text.lines() {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(record["bot"], "GPTBot", "{line}");
        }
    }
    // Moved away by another program: the module opens the path again.
    let moved = dir.path().join("violations.jsonl.moved");
    std::fs::rename(&log, &moved).unwrap();
    let reopened = within(Duration::from_secs(2), || log.exists());
    assert!(reopened.is_some(), "the module did not open the path again");
    assert_eq!(get_from(port, "127.0.0.2", "/after", &[("User-Agent", GPTBOT)]).status, 403);
    let lines = wait_lines(&log, 1);
    assert!(lines[0].contains("/after"), "{lines:?}");
    assert!(!std::fs::read_to_string(&moved).unwrap().contains("/after"), "written to the moved file");
}
