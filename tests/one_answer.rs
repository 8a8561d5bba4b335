//! Issue #54: one answer from every host. The same scripted requests go
//! through `robotgate serve` (the proxy), through the real nginx with
//! `auth_request` and the shipped snippet (examples/edge/nginx.conf) asking
//! a second `robotgate serve` on its auth listener, and through the real
//! nginx with the module (built by `bash nginx/build.sh`) reading a
//! robotgate.yaml with no `listen` and no `upstream`. All three sit in
//! front of the same origin; each host has its own state, so each sees the
//! script from a clean start.
//!
//! Per request: the proxy and the module answer with the same status, the
//! same robotgate headers (names and values) and, where robotgate answers
//! itself, the same body. Through `auth_request`, the same status and the
//! headers the snippet carries over (`X-Robots-Tag`, `Retry-After`,
//! `RateLimit-Policy`, `RateLimit`, `Location`); its refusals' bodies are nginx's own pages (auth_request
//! passes on a status, not a body) — a limit of the snippet, not of the
//! answer plan. Afterwards: the same violation records in all three (the
//! auth listener's record keeps the status it told the edge, 403 for an
//! `alternate` page), and the same counters in the proxy and the module.
//!
//! The Envoy and HAProxy modules (issue #69), when they can be built here,
//! are asked the same script beside them (each with its own copy of the
//! module's robotgate.yaml and files, the client named by the forwarding
//! header of 127.0.0.1 as the proxy trusts it: Envoy's
//! `xff_num_trusted_hops: 1`, HAProxy's shipped `set-src` line), and answer
//! as the proxy does, with the same records and counters.
//!
//! A signed agent (Web Bot Auth) is reached too: a robot of the test's own
//! (`bots:` extends the database) signs as the loopback agent whose key
//! directory the test serves, `verify.allow_private_directories` on; each
//! host fetches the directory itself.
//!
//! A request refused before judging (two User-Agents, written by hand) is
//! answered alike too. stale-robots is reached after the script and its
//! counters: each host is given a new robots.txt and waited for.

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::modules;
use common::nginx_module::{module, nginx};
use common::signer::{new_key, sign, Directory};
use common::{free_port, get, wait_lines, within, Gate, Origin, AHREFS, FIREFOX, GOOGLEBOT, GPTBOT};

const CLAUDEBOT: &str =
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)";
const META: &str = "meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)";
const FACEBOOKBOT: &str =
    "Mozilla/5.0 (compatible; FacebookBot/1.0; +https://developers.facebook.com/docs/sharing/webmasters/facebookbot/)";
const AMAZONBOT: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot) Chrome/119.0.6045.214 Safari/537.36";
const MJ12: &str = "Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)";

/// A robot that publishes ranges (Google's, none on loopback) and signs as
/// the loopback agent; its robots.txt group is Googlebot's.
const SIGNEDBOT: &str = "SignedBot/1.0";
const BOTS: &str = "version: 1\nbots:\n  - name: SignedBot\n    operator: Test\n    category: search\n    robots_tokens: [Googlebot]\n    ua: [SignedBot]\n    ip_ranges: [google-common-crawlers]\n    signature_agents: [\"127.0.0.1\"]\n    obeys_robots: true\n    samples: [\"SignedBot/1.0\"]\n";

const ROBOTS: &str = "\
User-agent: *
Content-Usage: train-ai=y
Disallow: /private/

User-agent: Googlebot
Disallow: /nogoogle/

User-agent: AhrefsBot
Crawl-delay: 30
Disallow: /private/

User-agent: MJ12bot
Request-rate: 1/30s

User-agent: ClaudeBot
Content-Usage: train-ai=n
";

/// The site every host decides for: what `{head}` adds is the host's own
/// (`listen`, `upstream`, `auth`); the module's file has neither.
fn config(dir: &Path, head: &str, upstream: &str) -> String {
    let d = dir.display();
    format!(
        "{head}trusted_proxies: [\"127.0.0.1/32\"]\nclient_header: X-Forwarded-For\ngrace_period: 1\nsites:\n  - name: shop\n    hosts: [\"127.0.0.1\", \"localhost\", \"example.com\"]\n    default: true\n{upstream}    robots: {d}/robots.txt\n    traps: {{ paths: [\"/trap/\"], ban: 60, arm_after: 0 }}\n    policy:\n      enforce_ai_user: true\n      bots:\n        meta-externalagent: {{ action: alternate, file: {d}/alt.html, content_type: \"text/html\" }}\n        FacebookBot: {{ action: alternate, redirect: \"https://example.com/why\" }}\n        Amazonbot: {{ action: noindex }}\n    indexing:\n      rules:\n        - {{ path: \"/docs/\", set: \"noarchive\" }}\nbots: {d}/bots.yaml\nverify: {{ refresh: \"off\", allow_private_directories: true, dns: {{ nameservers: [\"127.0.0.1:9\"], timeout_ms: 300 }} }}\nlog:\n  violations: {d}/violations.jsonl\n  aggregate_window: 0\n  level: warn\n"
    )
}

fn files(dir: &Path) {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.join("robots.txt"), ROBOTS).unwrap();
    std::fs::write(dir.join("alt.html"), "<p>another page</p>\n").unwrap();
    std::fs::write(dir.join("bots.yaml"), BOTS).unwrap();
}

/// A running nginx, stopped (gracefully) when dropped.
struct Nginx {
    child: Child,
    port: u16,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-QUIT").arg(self.child.id().to_string()).status();
        if within(Duration::from_secs(10), || self.child.try_wait().ok().flatten().is_some()).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// nginx with `http` (the inside of its `http` block) and `main` lines.
fn start_nginx(dir: &Path, main: &str, http: &str, port: u16) -> Nginx {
    let d = dir.display();
    let conf = format!(
        "{main}daemon off;\nworker_processes 2;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n\
         events {{ worker_connections 256; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  \
         fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n{http}}}\n"
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let child = Command::new(nginx())
        .args(["-p", &d.to_string(), "-e", &format!("{d}/error.log"), "-c"])
        .arg(dir.join("nginx.conf"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("nginx-stderr.log")).unwrap())
        .spawn()
        .expect("nginx starts");
    let n = Nginx { child, port };
    let up = within(Duration::from_secs(10), || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    let log = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    assert!(up.is_some(), "nginx did not start:\n{}\n{}", log("nginx-stderr.log"), log("error.log"));
    n
}

/// One scripted request: from `ip` as `ua`, for `path`.
struct Ask {
    ip: &'static str,
    ua: &'static str,
    path: &'static str,
}

/// What a host answered, as compared: status, robotgate's headers, and the
/// body when robotgate wrote it.
#[derive(Debug, PartialEq)]
struct Seen {
    status: u16,
    headers: BTreeMap<String, Vec<String>>,
    body: Option<String>,
}

/// The headers robotgate writes or adds.
const OURS: &[&str] = &[
    "retry-after",
    "ratelimit-policy",
    "ratelimit",
    "cache-control",
    "location",
    "x-robots-tag",
    "accept-signature",
    "content-usage",
    "content-type",
    "etag",
    "last-modified",
];

/// Ask `a` of the host on `port`, with `extra` header fields.
fn ask(port: u16, a: &Ask, extra: &[(String, String)]) -> Seen {
    let mut headers = vec![("X-Forwarded-For", a.ip), ("User-Agent", a.ua)];
    headers.extend(extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    seen(get(&format!("http://127.0.0.1:{port}{}", a.path), &headers))
}

/// What is compared of an answer.
fn seen(r: common::Resp) -> Seen {
    let mut headers = BTreeMap::new();
    for (name, value) in &r.headers {
        let name = name.to_ascii_lowercase();
        if OURS.contains(&name.as_str()) {
            headers.entry(name).or_insert_with(Vec::new).push(value.clone());
        }
    }
    headers.values_mut().for_each(|v| v.sort());
    // The file's time, which differs between the hosts' copies: only its presence.
    if let Some(v) = headers.get_mut("last-modified") {
        *v = vec!["(a date)".into()];
    }
    // The origin's answers say `origin <path>`; every other body is robotgate's.
    let body = (!r.body.starts_with("origin ")).then_some(r.body);
    Seen { status: r.status, headers, body }
}

/// The records of a violation log, as compared (the fields every host
/// writes alike), sorted.
fn records(path: &Path, n: usize) -> Vec<String> {
    let mut out: Vec<String> = wait_lines(path, n)
        .iter()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            format!(
                "{} {} {} {} {} {} {}",
                r["client"], r["bot"], r["directive"], r["action"], r["identity"], r["line"], r["path"]
            )
        })
        .collect();
    out.sort();
    out
}

/// The sum of each counter family's samples for site `shop`, from
/// Prometheus text.
fn counters(text: &str) -> BTreeMap<String, u64> {
    const FAMILIES: &[&str] = &[
        "robotgate_requests_total",
        "robotgate_violations_total",
        "robotgate_rate_limited_total",
        "robotgate_preferences_total",
        "robotgate_files_served_total",
    ];
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && l.contains("site=\"shop\"")) {
        let Some(family) = FAMILIES.iter().find(|f| line.starts_with(&format!("{f}{{"))) else { continue };
        let value = line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) as u64;
        *out.entry((*family).to_owned()).or_insert(0) += value;
    }
    out
}

#[test]
fn proxy_auth_request_and_module_answer_alike() {
    let Some(module) = module() else { return };
    let origin = Origin::start();

    // The proxy.
    let upstream = format!("    upstream: \"{}\"\n", origin.addr);
    let proxy_conf = config(
        Path::new("{dir}"),
        "listen: [\"127.0.0.1:{port}\"]\nmetrics: { listen: \"127.0.0.1:{metrics}\" }\n",
        &upstream,
    );
    let hosts_files: &[(&str, &[u8])] =
        &[("robots.txt", ROBOTS.as_bytes()), ("alt.html", b"<p>another page</p>\n"), ("bots.yaml", BOTS.as_bytes())];
    let proxy = Gate::start(&proxy_conf, hosts_files);
    let proxy_log = proxy.path("violations.jsonl");

    // robotgate behind nginx's auth_request, with the shipped snippet.
    let auth_port = free_port();
    let auth_conf = config(
        Path::new("{dir}"),
        &format!("listen: [\"127.0.0.1:{{port}}\"]\nauth: {{ listen: [\"127.0.0.1:{auth_port}\"] }}\n"),
        &upstream,
    );
    let auth_gate = Gate::start(&auth_conf, hosts_files);
    let edge_dir = tempfile::tempdir().unwrap();
    let snippet = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/edge/nginx.conf")).unwrap();
    for default in ["127.0.0.1:9090", "127.0.0.1:8080", "127.0.0.1:8000", "listen 80;"] {
        assert!(snippet.contains(default), "the snippet no longer names {default}");
    }
    let edge_port = free_port();
    let site = snippet
        .replace("127.0.0.1:9090", &format!("127.0.0.1:{auth_port}"))
        .replace("127.0.0.1:8080", &format!("127.0.0.1:{}", auth_gate.port))
        .replace("127.0.0.1:8000", &origin.addr.to_string())
        .replace("listen 80;", &format!("listen 127.0.0.1:{edge_port};"));
    let edge = start_nginx(edge_dir.path(), "", &site, edge_port);

    // nginx with the module: no `listen`, no `upstream` in its file.
    let module_dir = tempfile::tempdir().unwrap();
    files(module_dir.path());
    std::fs::write(module_dir.path().join("robotgate.yaml"), config(module_dir.path(), "", "")).unwrap();
    let module_port = free_port();
    let d = module_dir.path().display();
    let http = format!(
        "  set_real_ip_from 127.0.0.1;\n  real_ip_header X-Forwarded-For;\n  robotgate_config {d}/robotgate.yaml;\n  \
         server {{\n    listen 127.0.0.1:{module_port} reuseport;\n    robotgate on;\n    \
         location / {{ proxy_pass http://{origin}; }}\n    \
         location = /metrics {{ robotgate off; robotgate_metrics; }}\n  }}\n",
        origin = origin.addr
    );
    let main = format!("load_module {};\n", module.display());
    let inside = start_nginx(module_dir.path(), &main, &http, module_port);
    let edges = Edges::start(&origin);

    let script = [
        // A browser: passed, with the `*` group's Content-Usage.
        Ask { ip: "192.0.2.1", ua: FIREFOX, path: "/index.html" },
        // The site's indexing rule, on a browser's pass.
        Ask { ip: "192.0.2.1", ua: FIREFOX, path: "/docs/a.html" },
        // robots.txt, from the site's file with the trap line.
        Ask { ip: "192.0.2.1", ua: FIREFOX, path: "/robots.txt" },
        // GPTBot from OpenAI's ranges: verified, refused where disallowed.
        Ask { ip: "132.196.86.5", ua: GPTBOT, path: "/private/a.html" },
        Ask { ip: "132.196.86.5", ua: GPTBOT, path: "/index.html" },
        // Googlebot outside Google's ranges: spoofed, refused anywhere.
        Ask { ip: "203.0.113.66", ua: GOOGLEBOT, path: "/index.html" },
        // Googlebot from Google: its own group.
        Ask { ip: "66.249.66.1", ua: GOOGLEBOT, path: "/private/a.html" },
        Ask { ip: "66.249.66.1", ua: GOOGLEBOT, path: "/nogoogle/a.html" },
        // Content-Usage: ClaudeBot's group says train-ai=n: refused on preference.
        Ask { ip: "198.51.100.3", ua: CLAUDEBOT, path: "/index.html" },
        // Crawl-delay: the first request, then 429.
        Ask { ip: "198.51.100.7", ua: AHREFS, path: "/index.html" },
        Ask { ip: "198.51.100.7", ua: AHREFS, path: "/index.html" },
        // Request-rate: the first request, then 429.
        Ask { ip: "198.51.100.8", ua: MJ12, path: "/index.html" },
        Ask { ip: "198.51.100.8", ua: MJ12, path: "/index.html" },
        // alternate: another page (403 to an edge).
        Ask { ip: "198.51.100.9", ua: META, path: "/private/a.html" },
        // alternate with a redirect.
        Ask { ip: "198.51.100.10", ua: FACEBOOKBOT, path: "/private/a.html" },
        // noindex: passed, with X-Robots-Tag.
        Ask { ip: "198.51.100.11", ua: AMAZONBOT, path: "/private/a.html" },
        // A trap: refused, then banned everywhere.
        Ask { ip: "198.51.100.20", ua: FIREFOX, path: "/trap/x" },
        Ask { ip: "198.51.100.20", ua: FIREFOX, path: "/index.html" },
        Ask { ip: "198.51.100.21", ua: FIREFOX, path: "/index.html" },
    ];
    // Web Bot Auth: SignedBot signs for `example.com:8443` (one of the
    // site's hosts with a port, named in `Host` to every host alike; the
    // snippet hands the auth listener the `Host` as sent, port and all, which
    // the signature covers as `@authority`). Verified, it is held to its own
    // group; signed by a key its directory does not list, it is a spoofed claim.
    let key = new_key("one-answer");
    let directory = Directory::serving(&key);
    let authority = "example.com:8443";
    let host = [("Host".to_owned(), authority.to_owned())];
    let signed: Vec<(String, String)> = host.iter().cloned().chain(sign(&key, &directory.url, authority)).collect();
    let stranger: Vec<(String, String)> =
        host.iter().cloned().chain(sign(&new_key("stranger"), &directory.url, authority)).collect();
    let signed_script = [
        (Ask { ip: "198.51.100.30", ua: SIGNEDBOT, path: "/private/a.html" }, &signed),
        (Ask { ip: "198.51.100.30", ua: SIGNEDBOT, path: "/nogoogle/a.html" }, &signed),
        (Ask { ip: "198.51.100.31", ua: SIGNEDBOT, path: "/index.html" }, &stranger),
    ];
    let unsigned: Vec<(String, String)> = Vec::new();
    let script = script.into_iter().map(|a| (a, &unsigned)).chain(signed_script);
    let mut edge_differs = Vec::new();
    for (a, extra) in script {
        let a = &a;
        let by_proxy = ask(proxy.port, a, extra);
        let by_module = ask(inside.port, a, extra);
        let by_edge = ask(edge.port, a, extra);
        assert_eq!(by_module, by_proxy, "module and proxy differ on {} {} {}", a.ip, a.ua, a.path);
        for (name, port) in edges.ports() {
            assert_eq!(ask(port, a, extra), by_proxy, "{name} and proxy differ on {} {} {}", a.ip, a.ua, a.path);
        }
        // A 2xx refusal (the alternate page) is 403 to every edge (docs/edge.md).
        let want = if a.ua == META { 403 } else { by_proxy.status };
        assert_eq!(by_edge.status, want, "edge and proxy differ on {} {} {}", a.ip, a.ua, a.path);
        // What the snippet carries over from robotgate's answer.
        for name in ["x-robots-tag", "retry-after", "ratelimit-policy", "ratelimit", "location"] {
            if by_edge.headers.get(name) != by_proxy.headers.get(name) {
                edge_differs.push(format!(
                    "{} {}: {name} {:?} / {:?}",
                    a.ua,
                    a.path,
                    by_edge.headers.get(name),
                    by_proxy.headers.get(name)
                ));
            }
        }
    }
    assert!(edge_differs.is_empty(), "through auth_request: {edge_differs:#?}");

    assert!(directory.hits() >= 2, "the key directory was fetched {} times", directory.hits());

    // Refused before judging: two User-Agents, a browser's first (a client
    // library sends one, so the request is written by hand).
    let two = format!(
        "GET /private/a.html HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: 198.51.100.40\r\nUser-Agent: {FIREFOX}\r\nUser-Agent: {GPTBOT}\r\nConnection: close\r\n\r\n"
    );
    let by_proxy = seen(common::raw(proxy.port, two.as_bytes()));
    assert_eq!(by_proxy.status, 400, "{by_proxy:?}");
    assert_eq!(seen(common::raw(inside.port, two.as_bytes())), by_proxy, "module and proxy differ on two User-Agents");
    for (name, port) in edges.ports() {
        let by_edge = seen(common::raw(port, two.as_bytes()));
        if name == "envoy" {
            // Envoy's header map joins a repeated User-Agent into one value
            // ("A, B") before any filter sees it: the module judges that
            // one string (here a GPTBot claim from outside its ranges):
            // refused too, as a claim (docs/edge.md).
            assert_eq!(by_edge.status, 403, "{by_edge:?}");
            continue;
        }
        assert_eq!(by_edge, by_proxy, "{name} and proxy differ on two User-Agents");
    }
    let by_edge = seen(common::raw(edge.port, two.as_bytes()));
    assert_eq!(by_edge.status, 400, "{by_edge:?}");

    // An absolute request line names the authority, port and all (RFC 9112
    // 3.2.2: it wins over `Host`): a signature over `@authority` with a port
    // is verified through the proxy and the module alike.
    let mut head = format!(
        "GET http://{authority}/private/a.html HTTP/1.1\r\nHost: {authority}\r\nX-Forwarded-For: 198.51.100.32\r\nUser-Agent: {SIGNEDBOT}\r\n"
    );
    for (k, v) in sign(&key, &directory.url, authority) {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    let by_proxy = seen(common::raw(proxy.port, head.as_bytes()));
    assert_eq!((by_proxy.status, &by_proxy.body), (200, &None), "the proxy: {by_proxy:?}");
    assert_eq!(
        seen(common::raw(inside.port, head.as_bytes())),
        by_proxy,
        "module and proxy differ on an absolute line"
    );
    for (name, port) in edges.ports() {
        assert_eq!(seen(common::raw(port, head.as_bytes())), by_proxy, "{name} and proxy differ on an absolute line");
    }

    // The records: the same in all three.
    let n = 13;
    let from_proxy = records(&proxy_log, n);
    assert_eq!(from_proxy.len(), n, "{from_proxy:#?}");
    assert_eq!(records(&module_dir.path().join("violations.jsonl"), n), from_proxy);
    assert_eq!(records(&auth_gate.path("violations.jsonl"), n), from_proxy);
    for (name, dir) in edges.dirs() {
        assert_eq!(edge_records(name, dir, n), from_proxy, "{name}'s records");
    }

    // The counters: the same in the proxy and the module.
    let proxy_text = get(&format!("http://127.0.0.1:{}/metrics", proxy.metrics_port), &[]).body;
    let module_text = get(&format!("http://127.0.0.1:{module_port}/metrics"), &[]).body;
    let (proxy_counts, module_counts) = (counters(&proxy_text), counters(&module_text));
    assert_eq!(module_counts, proxy_counts);
    // The decisions timed: as many, in the same buckets' bounds, with the
    // same help and type.
    let timed = |text: &str| -> Vec<String> {
        let series = text.lines().filter(|l| l.contains("robotgate_decision_seconds") && !l.contains("_sum"));
        // A bucket's name and bound, without its count; the count whole.
        series.map(|l| if l.contains("_bucket") { l.rsplit_once(' ').unwrap().0 } else { l }.to_owned()).collect()
    };
    assert_eq!(timed(&module_text), timed(&proxy_text));
    let count = module_text.lines().find_map(|l| l.strip_prefix("robotgate_decision_seconds_count "));
    assert!(count.and_then(|c| c.parse::<u64>().ok()).is_some_and(|c| c >= 13), "{module_text}");
    assert_eq!(proxy_counts.get("robotgate_files_served_total"), Some(&1), "{proxy_counts:?}");
    for (name, text) in edges.scrapes() {
        let mut want = proxy_counts.clone();
        if name == "envoy" {
            // The joined User-Agents' claim: one more request, one more violation.
            for family in ["robotgate_requests_total", "robotgate_violations_total"] {
                *want.entry(family.to_owned()).or_insert(0) += 1;
            }
        }
        assert_eq!(counters(&text), want, "{name}'s counters");
        // Envoy's stats have no histogram of the module's (docs/edge.md).
        if name == "haproxy" {
            assert_eq!(timed(&text), timed(&proxy_text), "{name}'s decision histogram");
        }
    }

    // stale-robots: GPTBot reads robots.txt, the site then disallows
    // /later/, and GPTBot, within its copy's grace, asks for /later/: a pass
    // recorded as `stale-robots`, in every host alike.
    let mut files = vec![proxy.path("robots.txt"), module_dir.path().join("robots.txt"), auth_gate.path("robots.txt")];
    files.extend(edges.dirs().map(|(_, dir)| dir.join("robots.txt")));
    let ports: Vec<u16> =
        [proxy.port, inside.port, edge.port].into_iter().chain(edges.ports().map(|(_, p)| p)).collect();
    let read = Ask { ip: "132.196.86.5", ua: GPTBOT, path: "/robots.txt" };
    for &port in &ports {
        assert_eq!(ask(port, &read, &[]).status, 200);
    }
    let later = ROBOTS.replacen("Disallow: /private/\n", "Disallow: /private/\nDisallow: /later/\n", 1);
    for path in &files {
        let tmp = path.with_extension("new");
        std::fs::write(&tmp, &later).unwrap();
        std::fs::rename(&tmp, path).unwrap();
    }
    // In force: each host serves the new file (a browser's reads, after
    // the counters were compared).
    for &port in &ports {
        let serves = || ask(port, &Ask { ip: "192.0.2.1", ua: FIREFOX, path: "/robots.txt" }, &[]).body;
        let ok = within(Duration::from_secs(10), || serves().is_some_and(|b| b.contains("/later/")));
        assert!(ok.is_some(), "port {port} still serves the old robots.txt: {:?}", serves());
    }
    let stale = Ask { ip: "132.196.86.5", ua: GPTBOT, path: "/later/a.html" };
    let by_proxy = ask(proxy.port, &stale, &[]);
    assert_eq!((by_proxy.status, &by_proxy.body), (200, &None), "{by_proxy:?}");
    assert_eq!(ask(inside.port, &stale, &[]), by_proxy, "module and proxy differ on a stale-robots pass");
    for (name, port) in edges.ports() {
        assert_eq!(ask(port, &stale, &[]), by_proxy, "{name} and proxy differ on a stale-robots pass");
    }
    assert_eq!(ask(edge.port, &stale, &[]).status, 200, "the edge refused a stale-robots pass");
    // ... and a robot that never read robots.txt is refused there (not
    // another GPTBot address: a verified robot's read counts for all of it).
    let unread =
        Ask { ip: "198.51.100.30", ua: "FooCrawler/1.0 (+https://crawler.example/bot)", path: "/later/a.html" };
    let by_proxy = ask(proxy.port, &unread, &[]);
    assert_eq!(by_proxy.status, 403, "{by_proxy:?}");
    assert_eq!(ask(inside.port, &unread, &[]), by_proxy);
    for (name, port) in edges.ports() {
        assert_eq!(ask(port, &unread, &[]), by_proxy, "{name} and proxy differ on a robot that never read robots.txt");
    }
    assert_eq!(ask(edge.port, &unread, &[]).status, 403);
    let n = n + 2;
    let from_proxy = records(&proxy_log, n);
    let stale_line = from_proxy.iter().filter(|r| r.contains("stale-robots") && r.contains("/later/")).count();
    assert_eq!(stale_line, 1, "{from_proxy:#?}");
    assert_eq!(records(&module_dir.path().join("violations.jsonl"), n), from_proxy);
    assert_eq!(records(&auth_gate.path("violations.jsonl"), n), from_proxy);
    for (name, dir) in edges.dirs() {
        assert_eq!(edge_records(name, dir, n), from_proxy, "{name}'s records");
    }
    drop((edge, inside, edges));
}

/// An edge's records, as [`records`]: Envoy's has one more, the two
/// User-Agents it joined into one claim (refused as one; the proxy refuses
/// the request before judging, without a record), left out here.
fn edge_records(name: &str, dir: &Path, n: usize) -> Vec<String> {
    let joined = "\"198.51.100.40\"";
    let n = if name == "envoy" { n + 1 } else { n };
    let all = records(&dir.join("violations.jsonl"), n);
    all.into_iter().filter(|r| name != "envoy" || !r.starts_with(joined)).collect()
}

/// One edge with its module: its name, port, directory (files and log),
/// where its counters are scraped, and the running edge.
struct Inside {
    name: &'static str,
    port: u16,
    dir: tempfile::TempDir,
    scrape: String,
    _running: common::edge::Running,
}

/// The Envoy and HAProxy modules that could be built here, each running
/// the shipped file in front of the origin.
struct Edges(Vec<Inside>);

impl Edges {
    fn start(origin: &Origin) -> Edges {
        let mut edges = Vec::new();
        if let (Some(bin), Some(module)) = (common::edge::envoy(), modules::envoy()) {
            let dir = tempfile::tempdir().unwrap();
            files(dir.path());
            let yaml = dir.path().join("robotgate.yaml");
            std::fs::write(&yaml, config(dir.path(), "", "")).unwrap();
            let (port, admin) = (free_port(), free_port());
            let shipped = common::edge::shipped("envoy-module.yaml");
            let hops = "xff_num_trusted_hops: 0";
            assert_eq!(shipped.matches(hops).count(), 1, "envoy-module.yaml no longer says {hops}");
            let text =
                modules::envoy_config(&shipped, (port, admin), origin, &yaml).replace(hops, "xff_num_trusted_hops: 1");
            let running = modules::spawn_envoy(&bin, &module, dir.path(), port, &text);
            common::edge::wait_port(port, "envoy", &dir.path().join("envoy.log"));
            let scrape = format!("http://127.0.0.1:{admin}/stats/prometheus");
            edges.push(Inside { name: "envoy", port, dir, scrape, _running: running });
        }
        if let Some(module) = modules::haproxy().filter(|_| modules::have_haproxy()) {
            let dir = tempfile::tempdir().unwrap();
            files(dir.path());
            let yaml = dir.path().join("robotgate.yaml");
            std::fs::write(&yaml, config(dir.path(), "", "")).unwrap();
            let port = free_port();
            let set_src = "    http-request set-src hdr_ip(X-Forwarded-For,-1) if { src 127.0.0.1 }\n";
            let cfg = modules::haproxy_config(port, origin, (&module, &yaml), 1, set_src);
            let scrape = format!("http://127.0.0.1:{}/metrics", modules::metrics_port(&cfg));
            let running = modules::start_haproxy(dir.path(), port, &cfg);
            edges.push(Inside { name: "haproxy", port, dir, scrape, _running: running });
        }
        Edges(edges)
    }

    fn ports(&self) -> impl Iterator<Item = (&'static str, u16)> + '_ {
        self.0.iter().map(|e| (e.name, e.port))
    }

    fn dirs(&self) -> impl Iterator<Item = (&'static str, &Path)> + '_ {
        self.0.iter().map(|e| (e.name, e.dir.path()))
    }

    fn scrapes(&self) -> impl Iterator<Item = (&'static str, String)> + '_ {
        self.0.iter().map(|e| (e.name, get(&e.scrape, &[]).body))
    }
}

/// The module's file (no `listen`, no `upstream`) is checked as each host
/// reads it: `robotgate serve` needs both, the module neither, and the
/// check lists the keys the module ignores.
#[test]
fn config_check_says_what_each_host_needs_and_ignores() {
    let dir = tempfile::tempdir().unwrap();
    files(dir.path());
    let path = dir.path().join("robotgate.yaml");
    let check = |text: &str, host: &[&str]| {
        std::fs::write(&path, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_robotgate"))
            .args(["config", "check", "--config"])
            .arg(&path)
            .args(host)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let module_file = config(dir.path(), "", "");
    let (code, out) = check(&module_file, &["--host", "nginx"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("ok") && !out.contains("ignored inside nginx: listen"), "{out}");
    let (code, out) = check(&module_file, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("listen: needs at least one address") && out.contains("sites[0].upstream"), "{out}");
    let serve_file = config(dir.path(), "listen: [\"127.0.0.1:8080\"]\n", "    upstream: \"127.0.0.1:8000\"\n");
    let (code, out) = check(&serve_file, &["--host", "nginx"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("ignored inside nginx: listen: nginx's `listen` (note)"), "{out}");
    assert!(out.contains("ignored inside nginx: sites[].upstream"), "{out}");
    assert_eq!(check(&serve_file, &[]).0, Some(0));
}
