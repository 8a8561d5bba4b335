//! Issue #30: robotgate as the decision service of the edge an operator
//! keeps. The real nginx (`auth_request`) and the real Caddy (forward auth)
//! run the snippets shipped in `examples/edge/`, with only their addresses
//! and ports changed, in front of an origin the test starts; robotgate
//! answers their subrequests on its auth listener and serves robots.txt on
//! its proxy listener. A real client (curl) talks to the edge from several
//! loopback addresses (127.0.0.2 and up), which the edge names to robotgate
//! in `X-Forwarded-For`; the edge itself (127.0.0.1) is a trusted proxy.
//!
//! One address, 127.0.0.6, plays a load balancer in front of the edge: it
//! names a public client (203.0.113.9) in its own `X-Forwarded-For`, which
//! the edge keeps and appends to, and robotgate trusts it as a second hop.
//! That client claims to be Googlebot; a real DNS server on loopback answers
//! its reverse lookup with a host outside Google's domains, so the claim is
//! spoofed, and refused, through each edge.
//!
//! Traefik is not packaged for Debian and is not on crates.io, PyPI or npm:
//! its snippet is checked for shape only.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::dns_server::{self, Answer};
use common::edge::{get_from, shipped, wait_port, EdgeGate, Running};
use common::*;

const ROBOTS: &str = "User-agent: *\nDisallow: /private/\n\nUser-agent: GPTBot\nCrawl-delay: 30\nDisallow: /private/\n";

/// The snippet's addresses replaced by the test's: robotgate's auth and
/// proxy listeners, the origin. Panics if the snippet no longer names them
/// (the test would otherwise run something other than what ships).
fn retarget(text: &str, gate: &Gate, auth: u16, origin: &Origin) -> String {
    for default in ["127.0.0.1:9090", "127.0.0.1:8080", "127.0.0.1:8000"] {
        assert!(text.contains(default), "the snippet no longer names {default}");
    }
    text.replace("127.0.0.1:9090", &format!("127.0.0.1:{auth}"))
        .replace("127.0.0.1:8080", &format!("127.0.0.1:{}", gate.port))
        .replace("127.0.0.1:8000", &origin.addr.to_string())
}

/// The load balancer in front of the edge: a trusted hop that names the
/// client in `X-Forwarded-For` before the edge appends its own entry.
const BALANCER: &str = "127.0.0.6";

/// The public client the load balancer names: TEST-NET-3 (RFC 5737), in no
/// crawler's published ranges and not a local address, so a robot's claim
/// from it goes to reverse DNS.
const PUBLIC_CLIENT: &str = "203.0.113.9";

/// A loopback DNS server answering the reverse lookup of [`PUBLIC_CLIENT`]
/// with a host outside Google's domains: whoever claims Googlebot from there
/// is lying.
fn start_dns() -> dns_server::Server {
    dns_server::Server::answering(&[("9.113.0.203.in-addr.arpa", Answer::Ptr(vec!["host", "example", "net"]))])
}

/// robotgate in auth mode: the proxy listener (robots.txt), the auth
/// listener on `auth`, the edge on 127.0.0.1 and the load balancer before it
/// trusted to name the client. GPTBot's feed puts it on 127.0.0.0/30 only;
/// reverse DNS goes to `dns`, which only a claim from a public address asks.
fn start_gate(origin: &Origin, auth: u16, dns: &dns_server::Server) -> Gate {
    let head = format!(
        "auth: {{ listen: [\"127.0.0.1:{auth}\"] }}\ntrusted_proxies: [\"127.0.0.1/32\", \"{BALANCER}/32\"]\n\
         client_header: X-Forwarded-For"
    );
    let rules = "        - { path: \"/docs/\", bots: [Googlebot], set: \"nosnippet\" }\n        \
                 - { path: \"/docs/\", bots: [Bingbot], set: \"max-snippet:20\" }";
    let verify = format!("  dns: {{ nameservers: [\"{}\"], timeout_ms: 2000 }}", dns.addr);
    let edge = EdgeGate { head: &head, traps: "", rules, verify: &verify };
    let gptbot = br#"{"creationTime": "2026-11-25T00:00:00", "prefixes": [{"ipv4Prefix": "127.0.0.0/30"}]}"#;
    let files = [("robots.txt", ROBOTS.as_bytes()), ("feeds/openai-gptbot.json", &gptbot[..])];
    edge.start(origin, &files, auth, "robotgate's auth listener")
}

/// Whether `program` runs here; if not, the test says so loudly and skips
/// (`.ci/run` installs it, so CI never skips).
fn have(program: &str) -> bool {
    let ok = Command::new(program).arg("-v").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
        || Command::new(program).arg("version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    if !ok {
        eprintln!(
            "\n*** SKIPPED: `{program}` is not installed (apt-get install -y {program}); .ci/run installs it ***\n"
        );
    }
    ok
}

/// The real nginx on `port`, running the shipped snippet, everything it
/// writes in `dir`.
fn start_nginx(dir: &Path, port: u16, site: &str) -> Running {
    let site = site.replace("listen 80;", &format!("listen 127.0.0.1:{port};"));
    std::fs::write(dir.join("site.conf"), site).unwrap();
    let d = dir.display();
    let main = format!(
        "daemon off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/nginx-error.log warn;\n\
         events {{ worker_connections 256; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  \
         fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n  \
         include {d}/site.conf;\n}}\n"
    );
    std::fs::write(dir.join("nginx.conf"), main).unwrap();
    let log = dir.join("nginx-error.log");
    let child = Command::new(nginx())
        .args(["-p", &d.to_string(), "-e", &log.display().to_string(), "-c"])
        .arg(dir.join("nginx.conf"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("nginx-stderr.log")).unwrap())
        .spawn()
        .expect("nginx starts");
    let running = Running(child);
    wait_port(port, "nginx", &dir.join("nginx-stderr.log"));
    running
}

fn nginx() -> PathBuf {
    ["/usr/sbin/nginx", "/usr/bin/nginx"].iter().map(PathBuf::from).find(|p| p.exists()).unwrap_or("nginx".into())
}

/// The real Caddy on `port`, running the shipped snippet, its state in `dir`.
fn start_caddy(dir: &Path, port: u16, site: &str) -> Running {
    assert!(site.contains("example.com {"), "the Caddy snippet's site address changed");
    let site = site.replace("example.com {", &format!("http://127.0.0.1:{port} {{"));
    let file = format!("{{\n\tadmin off\n\tdefault_bind 127.0.0.1\n}}\n\n{site}");
    std::fs::write(dir.join("Caddyfile"), file).unwrap();
    let child = Command::new("caddy")
        .args(["run", "--adapter", "caddyfile", "--config"])
        .arg(dir.join("Caddyfile"))
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("caddy.log")).unwrap())
        .spawn()
        .expect("caddy starts");
    let running = Running(child);
    wait_port(port, "caddy", &dir.join("caddy.log"));
    running
}

/// The Caddy site with the load balancer trusted on the request to
/// robotgate. Caddy's `reverse_proxy` drops an incoming `X-Forwarded-For`
/// unless the peer is a trusted proxy (it would otherwise pass on whatever a
/// client wrote), and sends only the peer's address; nginx's
/// `$proxy_add_x_forwarded_for` appends to any. A deployment with a balancer
/// in front of Caddy says so with `trusted_proxies`: as a `reverse_proxy`
/// subdirective since Caddy 2.5 (its reverse_proxy documentation still lists
/// it), or in the global `servers` option since 2.6.3. Debian's Caddy
/// (2.6.2) rejects the global option, so the subdirective is used here. The
/// shipped snippet has no balancer in front, so it stays without.
fn trust_balancer(site: &str, auth: u16) -> String {
    let ask = format!("reverse_proxy 127.0.0.1:{auth} {{");
    assert_eq!(site.matches(&ask).count(), 1, "the Caddy snippet no longer asks robotgate in one block");
    site.replace(&ask, &format!("{ask}\n\t\t\ttrusted_proxies {BALANCER}/32"))
}

/// Everything the issue asks of an edge, through the edge on `port`.
fn exercise(edge: &str, port: u16, gate: &Gate, origin: &Origin, dns: &dns_server::Server) {
    // A browser gets the page, from the origin.
    let r = get_from(port, "127.0.0.2", "/page", &[("User-Agent", FIREFOX)]);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /page"), "{edge}: {}", r.head);
    assert_eq!(r.header("x-robots-tag"), None, "{edge}");
    let served = origin.hits();

    // A disallowed robot (GPTBot, believed from loopback by the test feeds): 403.
    let r = get_from(port, "127.0.0.2", "/private/x", &[("User-Agent", GPTBOT)]);
    assert_eq!(r.status, 403, "{edge}: {}\n{}", r.head, r.body);

    // Over its Crawl-delay: 429 with Retry-After (from another address: a
    // rate is kept per client).
    let r = get_from(port, "127.0.0.3", "/a", &[("User-Agent", GPTBOT)]);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /a"), "{edge}: {}", r.head);
    let r = get_from(port, "127.0.0.3", "/b", &[("User-Agent", GPTBOT)]);
    assert_eq!(r.status, 429, "{edge}: {}\n{}", r.head, r.body);
    let retry: u64 =
        r.header("retry-after").unwrap_or_else(|| panic!("{edge}: no Retry-After: {}", r.head)).parse().unwrap();
    assert!((1..=30).contains(&retry), "{edge}: Retry-After {retry}");

    // A noindex pass: the origin's page, with robotgate's X-Robots-Tag.
    let r = get_from(port, "127.0.0.4", "/private/n", &[("User-Agent", CHATGPT_USER)]);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /private/n"), "{edge}: {}", r.head);
    assert_eq!(r.header("x-robots-tag"), Some("noindex, nofollow"), "{edge}: {}", r.head);

    // Indexing rules: each value its own X-Robots-Tag on the origin's page,
    // beside nothing else (one header per value: a robot's name would
    // otherwise swallow the values after it).
    let r = get_from(port, "127.0.0.2", "/docs/a", &[("User-Agent", FIREFOX)]);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /docs/a"), "{edge}: {}", r.head);
    let mut tags = r.all("x-robots-tag");
    tags.sort_unstable();
    assert_eq!(tags, ["bingbot: max-snippet:20", "googlebot: nosnippet", "noarchive"], "{edge}: {}", r.head);
    assert!(r.header("x-robotgate-robots-tag-1").is_none(), "{edge}: the slots stay between edge and robotgate");
    // A page no rule covers gets none.
    let r = get_from(port, "127.0.0.2", "/other", &[("User-Agent", FIREFOX)]);
    assert!(r.all("x-robots-tag").is_empty(), "{edge}: {}", r.head);

    // robots.txt is robotgate's: the trap is in it, and the origin is not asked.
    let r = get_from(port, "127.0.0.2", "/robots.txt", &[("User-Agent", GPTBOT)]);
    assert_eq!(r.status, 200, "{edge}");
    assert!(r.body.contains("Disallow: /trap/"), "{edge}: not robotgate's robots.txt:\n{}", r.body);

    // A spoofed GPTBot: from 127.0.0.5, outside its operator's ranges (the
    // test feed gives it 127.0.0.0/30), it is refused; the address it writes
    // in its own X-Forwarded-For (inside them) is not believed, since the
    // edge appends the one it saw and 127.0.0.5 is no trusted hop. (A claim
    // that only reverse DNS can settle, such as Googlebot's outside Google's
    // ranges, is not asked from a loopback address at all: it is
    // unverifiable there, not spoofed. The next one comes from a public address.)
    let claims = [("User-Agent", GPTBOT), ("X-Forwarded-For", "127.0.0.2")];
    let r = get_from(port, "127.0.0.5", "/page", &claims);
    assert_eq!(r.status, 403, "{edge}: {}\n{}", r.head, r.body);

    // A spoofed Googlebot behind a load balancer: the balancer (trusted)
    // names 203.0.113.9, the edge appends the balancer's address, and
    // robotgate walks the chain from the right past both trusted hops to the
    // client. 203.0.113.9 is in none of Google's ranges, which Google says
    // are complete (issue #39): spoofed, without DNS (the tests' gates do not
    // refresh the lists: tests/common::no_feed_refresh).
    assert_eq!(dns.count_type(dns_server::PTR), 0, "{edge}: a lookup before any public claim");
    let claims = [("User-Agent", GOOGLEBOT), ("X-Forwarded-For", PUBLIC_CLIENT)];
    let r = get_from(port, BALANCER, "/page", &claims);
    assert_eq!(r.status, 403, "{edge}: {}\n{}", r.head, r.body);
    assert_eq!(dns.count_type(dns_server::PTR), 0, "{edge}: complete ranges decide without DNS");

    // The origin saw the browser's pages, GPTBot's /a, ChatGPT-User's page: no refusal, no robots.txt.
    assert_eq!(origin.hits(), served + 4, "{edge}: the origin saw a refused request");

    // The violation log has each refusal, with the client the edge named.
    let find = |what: &str, f: &dyn Fn(&serde_json::Value) -> bool| gate.record(&format!("{edge}: {what}"), f);
    let blocked = find("the disallowed robot", &|r| r["path"] == "/private/x");
    assert_eq!((blocked["bot"].as_str(), blocked["client"].as_str()), (Some("GPTBot"), Some("127.0.0.2")), "{edge}");
    assert_eq!((blocked["status"].as_u64(), blocked["action"].as_str()), (Some(403), Some("block")), "{edge}");
    let limited = find("the rate limit", &|r| r["path"] == "/b");
    assert_eq!((limited["client"].as_str(), limited["status"].as_u64()), (Some("127.0.0.3"), Some(429)), "{edge}");
    let noindex = find("the noindex pass", &|r| r["path"] == "/private/n");
    assert_eq!(noindex["action"].as_str(), Some("noindex"), "{edge}");
    let spoofed = find("the spoofed GPTBot", &|r| r["directive"] == "spoofed-identity" && r["bot"] == "GPTBot");
    assert_eq!((spoofed["client"].as_str(), spoofed["bot"].as_str()), (Some("127.0.0.5"), Some("GPTBot")), "{edge}");
    assert_eq!(spoofed["status"].as_u64(), Some(403), "{edge}");
    let spoofed = find("the spoofed Googlebot", &|r| r["directive"] == "spoofed-identity" && r["bot"] == "Googlebot");
    assert_eq!(spoofed["client"].as_str(), Some(PUBLIC_CLIENT), "{edge}: the walk stopped at the wrong hop");
    assert_eq!((spoofed["identity"].as_str(), spoofed["status"].as_u64()), (Some("spoofed"), Some(403)), "{edge}");

    not_fooled_by_the_clients_own_headers(edge, port, gate, origin);
}

/// An unknown robot, held to the `*` group.
const CRAWLER: &str = "FooCrawler/1.0 (+https://crawler.example/bot)";

/// Issue #39: the auth listener reads each fact from the one header the edge
/// writes. A client that sends its own version of any header that could
/// name the target, method, host or scheme changes no verdict through the
/// shipped snippet: a disallowed path stays refused, with a record naming
/// the path it asked for, and a browser still gets its page (the snippet
/// clears the competitors, so the auth listener never sees them).
fn not_fooled_by_the_clients_own_headers(edge: &str, port: u16, gate: &Gate, origin: &Origin) {
    let forged: [(&str, &str); 15] = [
        ("X-Forwarded-Uri", "/index.html"),
        ("X-Original-URI", "/index.html"),
        ("X-Original-URL", "/index.html"),
        ("X-Rewrite-URL", "/robots.txt"),
        ("X-Forwarded-Method", "OPTIONS"),
        ("X-Original-Method", "OPTIONS"),
        ("X-HTTP-Method-Override", "OPTIONS"),
        ("X-HTTP-Method", "OPTIONS"),
        ("X-Method-Override", "OPTIONS"),
        ("X-Forwarded-Host", "other.example"),
        ("X-Original-Host", "other.example"),
        ("X-Host", "other.example"),
        ("X-Forwarded-Proto", "https"),
        ("X-Forwarded-Scheme", "https"),
        ("X-Scheme", "https"),
    ];
    let before = std::fs::read_to_string(gate.path("violations.jsonl")).unwrap_or_default().lines().count();
    for (name, value) in forged {
        let r = get_from(port, "127.0.0.8", "/private/forged", &[("User-Agent", CRAWLER), (name, value)]);
        assert_eq!(r.status, 403, "{edge}: {name}: {value} let a robot through:\n{}\n{}", r.head, r.body);
        let served = origin.hits();
        let r = get_from(port, "127.0.0.8", "/page", &[("User-Agent", FIREFOX), (name, value)]);
        assert_eq!((r.status, r.body.as_str()), (200, "origin /page"), "{edge}: {name} changed a browser's verdict");
        assert_eq!(origin.hits(), served + 1, "{edge}");
    }
    // A spoofed GPTBot (its test range is 127.0.0.0/30) that names robots.txt as its target.
    let r = get_from(port, "127.0.0.8", "/private/gpt", &[("User-Agent", GPTBOT), ("X-Forwarded-Uri", "/robots.txt")]);
    assert_eq!(r.status, 403, "{edge}: {}", r.head);
    let recs = gate.records(before + forged.len() + 1);
    let mine: Vec<_> = recs[before..].iter().filter(|r| r["client"] == "127.0.0.8").collect();
    assert_eq!(mine.len(), forged.len() + 1, "{edge}: one record per refusal: {mine:#?}");
    for r in &mine[..forged.len()] {
        assert_eq!((r["path"].as_str(), r["status"].as_u64()), (Some("/private/forged"), Some(403)), "{edge}: {r}");
        assert_eq!(r["method"].as_str(), Some("GET"), "{edge}: {r}");
    }
    assert_eq!(mine[forged.len()]["path"].as_str(), Some("/private/gpt"), "{edge}");
}

/// Issue 52: a request whose head robotgate's HTTP reader would refuse (a
/// control byte in any header value, more header fields than it reads)
/// never gets through as "robotgate is down": robotgate refuses it, 400,
/// with a record, through each edge; a browser's request with such a byte
/// is refused alike (as the proxy itself refuses it).
fn unreadable_heads_are_refused(edge: &str, port: u16, gate: &Gate, origin: &Origin) {
    let from = "127.0.0.9";
    let before = std::fs::read_to_string(gate.path("violations.jsonl")).unwrap_or_default().lines().count();
    let served = origin.hits();
    let control: [&[(&str, &str)]; 4] = [
        &[("User-Agent", "ExampleCrawler/1.0\x7f")],
        &[("User-Agent", CRAWLER), ("X-Foo", "a\x01b")],
        &[("User-Agent", CRAWLER), ("Cookie", "a=\x0bb")],
        &[("User-Agent", FIREFOX), ("X-Foo", "a\x1fb")],
    ];
    for headers in control {
        let r = get_from(port, from, "/private/unreadable", headers);
        assert_eq!(r.status, 400, "{edge}: {headers:?} got through:\n{}\n{}", r.head, r.body);
    }
    let many: Vec<(String, String)> = (0..300).map(|i| (format!("X-F{i}"), "v".to_owned())).collect();
    let mut headers: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    headers.push(("User-Agent", CRAWLER));
    let r = get_from(port, from, "/private/unreadable", &headers);
    assert_eq!(r.status, 400, "{edge}: 300 header fields got through:\n{}\n{}", r.head, r.body);
    assert_eq!(origin.hits(), served, "{edge}: the origin served an unreadable request");
    // Caddy (Go's HTTP server) refuses a control byte itself, 400, before
    // it asks robotgate: refused all the same, and robotgate sees only the
    // rest.
    let recorded = if edge == "caddy" { 1 } else { control.len() + 1 };
    let recs = gate.records(before + recorded);
    let mine: Vec<_> = recs[before..].iter().filter(|r| r["client"] == from).collect();
    assert_eq!(mine.len(), recorded, "{edge}: one record per refusal: {mine:#?}");
    for (i, r) in mine.iter().enumerate() {
        let reason = if i + 1 < recorded { "control-byte" } else { "too-many-fields" };
        assert_eq!(r["directive"], "unreadable-request", "{edge}: {r}");
        assert_eq!((r["reason"].as_str(), r["status"].as_u64()), (Some(reason), Some(400)), "{edge}: {r}");
        assert_eq!(r["path"], "/private/unreadable", "{edge}: {r}");
    }
    if edge != "caddy" {
        assert_eq!(mine[0]["user_agent"].as_str().map(str::trim), Some("ExampleCrawler/1.0"), "{edge}");
    }
    // Past the padding, the User-Agent is still read.
    assert_eq!(mine[recorded - 1]["user_agent"], CRAWLER, "{edge}");
    assert_eq!(mine[recorded - 1]["bot"], "FooCrawler", "{edge}");
    assert!(metric(gate, "robotgate_unreadable_requests_total") >= recorded as f64, "{edge}");
}

#[test]
fn nginx_auth_request_in_front() {
    if !have("curl") || !nginx().exists() {
        eprintln!("\n*** SKIPPED: nginx is not installed (apt-get install -y nginx); .ci/run installs it ***\n");
        return;
    }
    let (origin, auth, dns) = (Origin::start(), free_port(), start_dns());
    let gate = start_gate(&origin, auth, &dns);
    let dir = tempfile::tempdir().unwrap();
    // nginx's worker runs as another user when started by root: let it in.
    let _ = Command::new("chmod").arg("755").arg(dir.path()).status();
    let port = free_port();
    let _nginx = start_nginx(dir.path(), port, &retarget(&shipped("nginx.conf"), &gate, auth, &origin));
    exercise("nginx", port, &gate, &origin, &dns);
    unreadable_heads_are_refused("nginx", port, &gate, &origin);

    // A subrequest that does not say what it is about: 400, naming the header.
    let r = get(&format!("http://127.0.0.1:{auth}/"), &[("User-Agent", FIREFOX)]);
    assert_eq!(r.status, 400);
    assert!(r.body.contains("x-forwarded-uri") && r.body.contains("auth.headers.target"), "{}", r.body);
    // An edge that forgot to clear a competitor is found on its first request.
    let facts = [
        ("X-Forwarded-Uri", "/private/x"),
        ("X-Forwarded-Method", "GET"),
        ("X-Forwarded-Host", "example.com"),
        ("User-Agent", FIREFOX),
    ];
    assert_eq!(get(&format!("http://127.0.0.1:{auth}/"), &facts).status, 200);
    let r = get(&format!("http://127.0.0.1:{auth}/"), &[&facts[..], &[("X-Original-URI", "/index.html")]].concat());
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("x-original-uri") && r.body.contains("clear"), "{}", r.body);
    assert!(metric(&gate, "robotgate_auth_refused_total") >= 2.0);

    // robotgate stopped: the snippet's documented default, fail-open (the
    // one case a request goes through undecided, and no client can make it).
    let mut gate = gate;
    gate.stop();
    let served = origin.hits();
    let r = get_from(port, "127.0.0.2", "/private/down", &[("User-Agent", CRAWLER)]);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /private/down"), "robotgate down: {}", r.head);
    assert_eq!(origin.hits(), served + 1);
}

#[test]
fn caddy_forward_auth_in_front() {
    if !have("curl") || !have("caddy") {
        return;
    }
    let (origin, auth, dns) = (Origin::start(), free_port(), start_dns());
    let gate = start_gate(&origin, auth, &dns);
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let site = trust_balancer(&retarget(&shipped("Caddyfile"), &gate, auth, &origin), auth);
    let _caddy = start_caddy(dir.path(), port, &site);
    exercise("caddy", port, &gate, &origin, &dns);
    unreadable_heads_are_refused("caddy", port, &gate, &origin);
}

/// Traefik cannot be installed from the registries CI reaches: its file is
/// checked for the shape Traefik's file provider reads.
#[test]
fn the_traefik_snippet_is_a_dynamic_configuration() {
    let doc: serde_yaml::Value = serde_yaml::from_str(&shipped("traefik.yaml")).expect("valid YAML");
    let http = &doc["http"];
    let auth = &http["middlewares"]["robotgate"]["forwardAuth"];
    assert_eq!(auth["address"].as_str(), Some("http://127.0.0.1:9090/"));
    assert_eq!(auth["trustForwardHeader"].as_bool(), Some(false));
    let routers = http["routers"].as_mapping().expect("routers");
    for (name, router) in routers {
        let service = router["service"].as_str().unwrap_or_else(|| panic!("router {name:?} has no service"));
        assert!(http["services"][service]["loadBalancer"]["servers"][0]["url"].is_string(), "service {service}");
        assert!(router["rule"].as_str().is_some_and(|r| r.contains("Host(`")), "router {name:?}");
    }
    let site = &http["routers"]["site"];
    let chain: Vec<&str> =
        site["middlewares"].as_sequence().expect("middlewares").iter().filter_map(|m| m.as_str()).collect();
    assert_eq!(chain, ["robotgate-clear", "robotgate"], "the site goes through robotgate, competitors cleared first");
    // Issue #39: every header that could name a fact besides Traefik's own is cleared.
    let cleared = &http["middlewares"]["robotgate-clear"]["headers"]["customRequestHeaders"];
    for name in
        ["X-Original-URI", "X-Original-URL", "X-Rewrite-URL", "X-Original-Method", "X-HTTP-Method-Override", "X-Host"]
    {
        assert_eq!(cleared[name].as_str(), Some(""), "{name} is not cleared");
    }
    let files = &http["routers"]["robotgate-files"];
    assert!(files["rule"].as_str().is_some_and(|r| r.contains("/robots.txt") && r.contains("/humans.txt")));
    assert_eq!(files["service"].as_str(), Some("robotgate-files"));
    assert!(files["middlewares"].is_null(), "robots.txt goes to robotgate's proxy listener, not through the check");
}
