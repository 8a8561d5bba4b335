//! A robot in a browser's clothes (issue #67): real browsers, started here,
//! are people on every page, disallowed ones included; the HTTP libraries
//! robots are written with, sending a current browser's User-Agent, are
//! refused a disallowed page and recorded as `disguised`, over https and
//! over plain http, through `robotgate serve`.
//!
//! Needs Debian's chromium, firefox-esr, xvfb (xvfb-run), libnss3-tools
//! (certutil), curl, wget, openssl, node, and the tests' venv with requests,
//! httpx, aiohttp and Scrapy (tests/parsers/requirements.txt); `.ci/run`
//! installs them all.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::certs::Certs;
use common::*;
use serde_json::Value;

const ROBOTS: &[u8] = b"User-agent: *\nDisallow: /private/\n";
/// The site's name: a public one, so that plain http is not a secure
/// context (as `127.0.0.1` and `localhost` are, W3C Secure Contexts §3.1).
const HOST: &str = "shop.example";

const CHROME_UA: &str =
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36";
const FIREFOX_UA: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:145.0) Gecko/20100101 Firefox/145.0";
const SAFARI_UA: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/26.1 Safari/605.1.15";

/// robotgate with a plain and a TLS listener in front of an origin, the
/// site's policy given `policy` (YAML lines under `policy:`).
struct Site {
    gate: Gate,
    origin: Origin,
    tls_port: u16,
    certs: Certs,
}

impl Site {
    fn start(policy: &str) -> Site {
        Site::start_with(policy, "")
    }

    /// With `top` (YAML lines) at the top of the configuration.
    fn start_with(policy: &str, top: &str) -> Site {
        let origin = Origin::start();
        let certs = Certs::make();
        let tls_port = free_port();
        let config = format!(
            r#"
listen:
  - "127.0.0.1:{{port}}"
  - address: "127.0.0.1:{tls_port}"
    tls: {{ cert: {cert}, key: {key} }}
grace_period: 1
{top}
sites:
  - hosts: ["{HOST}"]
    default: true
    upstream: "{origin}"
    robots: {{dir}}/robots.txt
    policy:
      action: block
{policy}
log: {{ violations: {{dir}}/violations.jsonl, level: warn, aggregate_window: 0 }}
"#,
            cert = certs.path("cert.pem").display(),
            key = certs.path("key.pem").display(),
            origin = origin.addr
        );
        let gate = Gate::start(&config, &[("robots.txt", ROBOTS)]);
        Site { gate, origin, tls_port, certs }
    }

    /// Where it listens.
    fn ports(&self) -> Ports {
        Ports { http: self.gate.port, https: self.tls_port }
    }

    /// The site's URL for `path` by name, over `scheme`.
    fn url(&self, scheme: &str, path: &str) -> String {
        self.ports().url(scheme, path)
    }

    /// The violation log's records now (after a moment for the writer).
    fn records(&self) -> Vec<Value> {
        std::thread::sleep(Duration::from_millis(300));
        self.gate.records(0)
    }
}

fn venv_python() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parsers/.venv/bin/python");
    assert!(p.exists(), "{} is needed (.ci/run makes the venv)", p.display());
    p
}

/// The first version number in `chromium --version` ("Chromium 156.0.…").
fn chromium_major() -> u32 {
    let out = Command::new("chromium").arg("--version").output().expect("chromium runs (.ci/run installs it)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split_whitespace().find_map(|w| w.split('.').next()?.parse().ok()).expect("a version")
}

/// Chromium's flags for a run here: no network of its own, an empty
/// profile, `shop.example` on loopback, the test's certificate accepted.
fn chromium_args(profile: &Path, ua: &str) -> Vec<String> {
    [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--ignore-certificate-errors",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        format!("--host-resolver-rules=MAP {HOST} 127.0.0.1"),
        format!("--user-data-dir={}", profile.display()),
        format!("--user-agent={ua}"),
    ])
    .collect()
}

/// Load `url` in headless Chromium (its User-Agent without "Headless", as
/// a person's Chromium sends it) and return the page's text.
fn headless_chromium(url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let ua = format!(
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{}.0.0.0 Safari/537.36",
        chromium_major()
    );
    let out = Command::new("timeout")
        .arg("60")
        .arg("chromium")
        .arg("--headless")
        .args(chromium_args(profile.path(), &ua))
        .args(["--dump-dom", url])
        .stderr(Stdio::null())
        .output()
        .expect("chromium runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Load `url` in Chromium with a window, under Xvfb, until the origin has
/// answered `path` (bounded).
fn headful_chromium(site: &Site, url: &str, path: &str) -> bool {
    let profile = tempfile::tempdir().unwrap();
    let ua = format!(
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{}.0.0.0 Safari/537.36",
        chromium_major()
    );
    let mut child = Command::new("xvfb-run")
        .args(["-a", "chromium"])
        .args(chromium_args(profile.path(), &ua))
        .arg(url)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("xvfb-run runs (.ci/run installs xvfb)");
    let seen = within(Duration::from_secs(60), || site.origin.saw(path)).is_some();
    kill_group(&mut child);
    seen
}

use std::os::unix::process::CommandExt;

fn kill_group(child: &mut std::process::Child) {
    let _ = Command::new("kill").args(["-s", "TERM", "--", &format!("-{}", child.id())]).status();
    if within(Duration::from_secs(5), || child.try_wait().ok().flatten().is_some()).is_none() {
        let _ = Command::new("kill").args(["-s", "KILL", "--", &format!("-{}", child.id())]).status();
        let _ = child.wait();
    }
}

/// A Firefox profile that trusts the test's authority and finds
/// `shop.example` on loopback; `resist` turns on resistFingerprinting.
fn firefox_profile(certs: &Certs, resist: bool) -> tempfile::TempDir {
    let profile = tempfile::tempdir().unwrap();
    let db = format!("sql:{}", profile.path().display());
    let ok = Command::new("certutil").args(["-N", "-d", &db, "--empty-password"]).status().expect("certutil runs");
    assert!(ok.success());
    let ok = Command::new("certutil")
        .args(["-A", "-d", &db, "-n", "robotgate-test-ca", "-t", "C,,", "-i"])
        .arg(certs.path("ca.pem"))
        .status()
        .unwrap();
    assert!(ok.success());
    let mut prefs = format!(
        "user_pref(\"network.dns.localDomains\", \"{HOST}\");\n\
         user_pref(\"network.proxy.type\", 0);\n\
         user_pref(\"app.update.enabled\", false);\n\
         user_pref(\"browser.shell.checkDefaultBrowser\", false);\n\
         user_pref(\"datareporting.policy.dataSubmissionEnabled\", false);\n\
         user_pref(\"toolkit.telemetry.reportingpolicy.firstRun\", false);\n\
         user_pref(\"browser.safebrowsing.malware.enabled\", false);\n\
         user_pref(\"browser.safebrowsing.phishing.enabled\", false);\n\
         user_pref(\"network.captive-portal-service.enabled\", false);\n\
         user_pref(\"network.connectivity-service.enabled\", false);\n\
         user_pref(\"dom.security.https_only_mode\", false);\n"
    );
    if resist {
        prefs.push_str("user_pref(\"privacy.resistFingerprinting\", true);\n");
    }
    std::fs::write(profile.path().join("user.js"), prefs).unwrap();
    profile
}

/// Load `url` in headless Firefox ESR until the origin answered `path`.
fn firefox(site: &Site, url: &str, path: &str, resist: bool) -> bool {
    let profile = firefox_profile(&site.certs, resist);
    let shot = profile.path().join("shot.png");
    let mut child = Command::new("firefox-esr")
        .args(["--headless", "--no-remote", "--profile"])
        .arg(profile.path())
        .arg("--screenshot")
        .arg(&shot)
        .arg(url)
        .env("HOME", profile.path())
        .env("MOZ_HEADLESS", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("firefox-esr runs (.ci/run installs it)");
    let seen = within(Duration::from_secs(90), || site.origin.saw(path)).is_some();
    let _ = within(Duration::from_secs(30), || child.try_wait().ok().flatten().is_some());
    kill_group(&mut child);
    seen
}

#[test]
fn real_browsers_are_people_on_every_page_over_https_and_http() {
    let site = Site::start("");
    // Headless Chromium: the page, the disallowed page, over both schemes.
    for (scheme, path) in
        [("https", "/chromium/page"), ("https", "/private/chromium"), ("http", "/private/chromium-http")]
    {
        let dom = headless_chromium(&site.url(scheme, path));
        assert!(dom.contains(&format!("origin {path}")), "headless Chromium on {scheme} {path}: {dom}");
    }
    // Chromium with a window, under Xvfb.
    for (scheme, path) in [("https", "/private/headful"), ("http", "/private/headful-http")] {
        assert!(headful_chromium(&site, &site.url(scheme, path), path), "headful Chromium on {scheme} {path}");
    }
    // Firefox ESR, and with resistFingerprinting.
    for (scheme, path, resist) in [
        ("https", "/private/firefox", false),
        ("http", "/private/firefox-http", false),
        ("https", "/private/firefox-rfp", true),
    ] {
        assert!(firefox(&site, &site.url(scheme, path), path, resist), "Firefox on {scheme} {path} (rfp {resist})");
    }
    let records = site.records();
    assert!(records.is_empty(), "no browser is recorded as a robot: {records:#?}");
}

/// One scripted fetch: a client, the User-Agent it sends, the scheme.
struct Fetch {
    client: &'static str,
    ua: &'static str,
    scheme: &'static str,
    path: String,
    /// Sent besides the User-Agent (and Host).
    headers: &'static [(&'static str, &'static str)],
}

/// What Chromium sends on a navigation over https besides its User-Agent
/// (Debian's chromium 156 on this machine; the brand version is the
/// User-Agent's, `CHROME_UA`).
const CHROMIUM_HEADERS: &[(&str, &str)] = &[
    ("sec-ch-ua", "\"Chromium\";v=\"142\", \"Google Chrome\";v=\"142\", \"Not_A Brand\";v=\"99\""),
    ("sec-ch-ua-mobile", "?0"),
    ("sec-ch-ua-platform", "\"Windows\""),
    ("upgrade-insecure-requests", "1"),
    ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"),
    ("sec-fetch-site", "none"),
    ("sec-fetch-mode", "navigate"),
    ("sec-fetch-user", "?1"),
    ("sec-fetch-dest", "document"),
    ("accept-encoding", "gzip, deflate, br, zstd"),
    ("accept-language", "en-US,en;q=0.9"),
];

/// Run `fetches` (their paths under `/private/` or not), each with its own
/// client, and return each status.
/// The ports a front (robotgate, or nginx with the module) listens on for
/// [`HOST`] on loopback.
#[derive(Clone, Copy)]
struct Ports {
    http: u16,
    https: u16,
}

impl Ports {
    fn port(self, scheme: &str) -> u16 {
        if scheme == "https" {
            self.https
        } else {
            self.http
        }
    }

    /// The site's URL for `path` by name, over `scheme`.
    fn url(self, scheme: &str, path: &str) -> String {
        format!("{scheme}://{HOST}:{}{path}", self.port(scheme))
    }

    /// The same by address, for clients that cannot be told where a name
    /// is: `(url, host header)`.
    fn by_address(self, scheme: &str, path: &str) -> (String, String) {
        let port = self.port(scheme);
        (format!("{scheme}://127.0.0.1:{port}{path}"), format!("{HOST}:{port}"))
    }
}

fn run_clients(site: Ports, fetches: &[Fetch]) -> Vec<u16> {
    let mut out = vec![0; fetches.len()];
    let mut python = Vec::new();
    for (i, f) in fetches.iter().enumerate() {
        match f.client {
            "curl" => {
                let port = site.port(f.scheme);
                let o = Command::new("curl")
                    .args(["-sk", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}", "-A", f.ua])
                    .args(f.headers.iter().flat_map(|(k, v)| ["-H".to_owned(), format!("{k}: {v}")]))
                    .arg("--resolve")
                    .arg(format!("{HOST}:{port}:127.0.0.1"))
                    .arg(site.url(f.scheme, &f.path))
                    .output()
                    .expect("curl runs");
                out[i] = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap_or(0);
            }
            "wget" => {
                let (url, host) = site.by_address(f.scheme, &f.path);
                let o = Command::new("wget")
                    .args(["-q", "-S", "-O", "/dev/null", "--tries=1", "--timeout=10", "--no-check-certificate"])
                    .arg(format!("--user-agent={}", f.ua))
                    .arg(format!("--header=Host: {host}"))
                    .args(f.headers.iter().map(|(k, v)| format!("--header={k}: {v}")))
                    .arg(url)
                    .output()
                    .expect("wget runs");
                let text = String::from_utf8_lossy(&o.stderr);
                out[i] = text
                    .lines()
                    .filter_map(|l| l.trim().strip_prefix("HTTP/1.1 ").and_then(|r| r.split(' ').next()?.parse().ok()))
                    .next_back()
                    .unwrap_or(0);
            }
            "node" => {
                let (url, _) = site.by_address(f.scheme, &f.path);
                let mut headers = serde_json::Map::new();
                headers.insert("user-agent".into(), f.ua.into());
                for (k, v) in f.headers {
                    headers.insert((*k).into(), (*v).into());
                }
                let script = format!(
                    "fetch({url:?}, {{headers: {headers}, redirect: 'manual'}})\
                     .then(r => console.log(r.status)).catch(e => {{ console.log(0); console.error(e); }})",
                    headers = Value::Object(headers)
                );
                let o = Command::new("node")
                    .args(["-e", &script])
                    .env("NODE_TLS_REJECT_UNAUTHORIZED", "0")
                    .env("NODE_NO_WARNINGS", "1")
                    .output()
                    .expect("node runs");
                out[i] = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap_or(0);
            }
            _ => python.push(i),
        }
    }
    if !python.is_empty() {
        let jobs: Vec<Value> = python
            .iter()
            .map(|&i| {
                let f = &fetches[i];
                let (url, host) = site.by_address(f.scheme, &f.path);
                let headers: serde_json::Map<String, Value> =
                    f.headers.iter().map(|(k, v)| ((*k).to_owned(), Value::from(*v))).collect();
                serde_json::json!({"client": f.client, "url": url, "host": host, "ua": f.ua, "headers": headers})
            })
            .collect();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parsers/clients.py");
        let o = Command::new(venv_python())
            .arg(script)
            .arg(serde_json::to_string(&jobs).unwrap())
            .output()
            .expect("the venv's python runs");
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), python.len(), "one line per job: {text}\n{}", String::from_utf8_lossy(&o.stderr));
        for (&i, line) in python.iter().zip(lines) {
            out[i] = line.split(' ').next().and_then(|s| s.parse().ok()).unwrap_or(0);
            assert!(out[i] != 0, "{line}");
        }
    }
    out
}

/// The record of `path` among `records`, asserted to be a disguised
/// robot's with its signs.
fn disguised_record<'a>(records: &'a [Value], path: &str) -> &'a Value {
    let r = records.iter().find(|r| r["path"] == path).unwrap_or_else(|| panic!("no record of {path}: {records:#?}"));
    assert_eq!(r["category"], "disguised", "{r}");
    assert!(r["signs"].as_array().is_some_and(|s| !s.is_empty()), "{r}");
    r
}

const CLIENTS: [&str; 9] = ["curl", "wget", "requests", "httpx", "httpx-h2", "aiohttp", "urllib", "node", "scrapy"];

#[test]
fn libraries_with_a_browsers_user_agent_are_refused_disallowed_pages_and_recorded() {
    let site = Site::start("");
    let mut fetches = Vec::new();
    for client in CLIENTS {
        for (ua_name, ua) in [("chrome", CHROME_UA), ("firefox", FIREFOX_UA), ("safari", SAFARI_UA)] {
            for scheme in ["https", "http"] {
                fetches.push(Fetch {
                    client,
                    ua,
                    scheme,
                    path: format!("/private/{client}-{ua_name}-{scheme}"),
                    headers: &[],
                });
                fetches.push(Fetch {
                    client,
                    ua,
                    scheme,
                    path: format!("/open/{client}-{ua_name}-{scheme}"),
                    headers: &[],
                });
            }
        }
    }
    let statuses = run_clients(site.ports(), &fetches);
    let mut missed_https = Vec::new();
    let mut missed_http = Vec::new();
    for (f, status) in fetches.iter().zip(&statuses) {
        if f.path.starts_with("/open/") {
            assert_eq!(*status, 200, "{} {} {}: an allowed page", f.client, f.ua, f.path);
        } else if *status != 403 {
            if f.scheme == "https" { &mut missed_https } else { &mut missed_http }.push(format!("{} {status}", f.path));
        }
    }
    // Over https every one is caught; over http all but what the scheme
    // hides (none of these today).
    assert!(missed_https.is_empty(), "not refused over https: {missed_https:?}");
    let http_total = fetches.iter().filter(|f| f.scheme == "http" && f.path.starts_with("/private/")).count();
    assert!(missed_http.len() * 20 <= http_total, "over http, at least 95% refused: missed {missed_http:?}");
    // Each refusal recorded as a disguised robot, with its signs.
    let records = site.records();
    for f in fetches.iter().filter(|f| f.path.starts_with("/private/") && f.scheme == "https") {
        let r = disguised_record(&records, &f.path);
        assert!(r.get("evidence").is_none(), "strong evidence: {r}");
    }
    assert!(!site.origin.saw("/private/curl-chrome-https"));
}

#[test]
fn log_records_without_refusing_and_off_judges_nothing() {
    for (mode, status, recorded) in [("log", 200, true), ("off", 200, false)] {
        let site = Site::start(&format!("      disguised: {mode}"));
        let fetches =
            [Fetch { client: "curl", ua: CHROME_UA, scheme: "https", path: "/private/x".into(), headers: &[] }];
        assert_eq!(run_clients(site.ports(), &fetches), vec![status], "{mode}");
        let records = site.records();
        assert_eq!(records.iter().any(|r| r["path"] == "/private/x"), recorded, "{mode}: {records:#?}");
    }
}

/// Every scripted client that can be told which headers to send, each with
/// Chromium's whole navigation header set over https: the headers show no
/// sign, the ClientHello does (no GREASE; most offer `http/1.1` first).
#[test]
fn libraries_sending_chromiums_whole_header_set_are_refused_by_their_client_hello() {
    let site = Site::start("");
    let clients = ["curl", "wget", "requests", "httpx", "httpx-h2", "aiohttp", "urllib", "node"];
    let mut fetches = Vec::new();
    for client in clients {
        for dir in ["private", "open"] {
            let path = format!("/{dir}/copy-{client}");
            fetches.push(Fetch { client, ua: CHROME_UA, scheme: "https", path, headers: CHROMIUM_HEADERS });
        }
    }
    let statuses = run_clients(site.ports(), &fetches);
    let records = site.records();
    for (f, status) in fetches.iter().zip(&statuses) {
        if f.path.starts_with("/open/") {
            assert_eq!(*status, 200, "{}: an allowed page", f.path);
            continue;
        }
        assert_eq!(*status, 403, "{}: a disallowed page", f.path);
        let r = records
            .iter()
            .find(|r| r["path"] == f.path.as_str())
            .unwrap_or_else(|| panic!("no record of {}: {records:#?}", f.path));
        assert_eq!(r["category"], "disguised", "{r}");
        let signs: Vec<&str> = r["signs"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        // The header set itself is Chromium's: only the TLS stack tells.
        assert!(signs.iter().all(|s| s.starts_with("tls-")), "{}: {signs:?}", f.path);
        assert!(signs.contains(&"tls-no-grease"), "{}: {signs:?}", f.path);
        assert!(r["ja4"].as_str().is_some_and(|j| j.len() == 36 && j.starts_with("t13")), "{r}");
    }
    // `tls_evidence: weak` (a site behind a TLS-inspecting middlebox):
    // recorded, not refused.
    let site = Site::start("      tls_evidence: weak");
    let fetches = [Fetch {
        client: "curl",
        ua: CHROME_UA,
        scheme: "https",
        path: "/private/weak".into(),
        headers: CHROMIUM_HEADERS,
    }];
    assert_eq!(run_clients(site.ports(), &fetches), vec![200]);
    let records = site.records();
    let r = records.iter().find(|r| r["path"] == "/private/weak").expect("recorded");
    assert_eq!((r["category"].as_str(), r["action"].as_str()), (Some("disguised"), Some("log")), "{r}");
}

/// A JA4 is believed only from `trusted_proxies`, in the header named; the
/// status page counts disguised robots per fingerprint.
#[test]
fn an_edges_fingerprint_counts_only_from_a_trusted_proxy() {
    // requests' own fingerprint (tests/data/tls/requests.hello): http/1.1 first.
    const REQUESTS_JA4: &str = "t13d1812h1_85036bcba153_b26ce05bbdd6";
    for (trusted, status) in [("127.0.0.0/8", 403), ("10.0.0.0/8", 200)] {
        let top = format!(
            "trusted_proxies: [\"{trusted}\"]\nja4_header: X-Client-JA4\n\
             metrics: {{ listen: \"127.0.0.1:{{metrics}}\", status_page: true }}\n"
        );
        let site = Site::start_with("", &top);
        let port = site.gate.port;
        // What a browser sends over plain http, so that no header sign fires.
        let fetch = |path: &str| {
            let o = Command::new("curl")
                .args(["-s", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}", "-A", CHROME_UA])
                .args([
                    "-H",
                    "Accept-Language: en-US,en;q=0.9",
                    "-H",
                    "Accept: text/html",
                    "-H",
                    "X-Forwarded-For: 198.51.100.7",
                ])
                .args(["-H", &format!("X-Client-JA4: {REQUESTS_JA4}")])
                .args(["--resolve", &format!("{HOST}:{port}:127.0.0.1")])
                .arg(format!("http://{HOST}:{port}{path}"))
                .output()
                .expect("curl runs");
            String::from_utf8_lossy(&o.stdout).trim().parse::<u16>().unwrap_or(0)
        };
        assert_eq!(fetch("/private/edge"), status, "trusted {trusted}");
        assert_eq!(fetch("/private/edge-again"), status, "trusted {trusted}");
        let page = common::get(&format!("http://127.0.0.1:{}/status.json", site.gate.metrics_port), &[]);
        let view: Value = serde_json::from_str(&page.body).expect("status.json is JSON");
        let counted = &view["sites"][0]["disguised_fingerprints"];
        if status == 403 {
            let records = site.records();
            let r = records.iter().find(|r| r["path"] == "/private/edge").expect("a record");
            assert_eq!(r["signs"], serde_json::json!(["tls-no-h2"]), "{r}");
            assert_eq!(r["ja4"], REQUESTS_JA4, "{r}");
            assert_eq!(*counted, serde_json::json!([{"ja4": REQUESTS_JA4, "violations": 2, "error": 0}]), "{view}");
            let html = common::get(&format!("http://127.0.0.1:{}/status", site.gate.metrics_port), &[]).body;
            assert!(html.contains("TLS fingerprints (JA4) of disguised robots") && html.contains(REQUESTS_JA4));
        } else {
            assert_eq!(*counted, serde_json::json!([]), "{view}");
        }
    }
}

/// nginx with the module in front of its own files, plain and TLS (the
/// certificate of [`Certs`]), the same site and policy as [`Site`]; the
/// violation log in its directory.
struct NginxSite {
    child: std::process::Child,
    dir: tempfile::TempDir,
    ports: Ports,
    _certs: Certs,
}

impl NginxSite {
    fn start(module: &Path) -> NginxSite {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir(dir.path().join("www")).unwrap();
        std::fs::write(dir.path().join("www/index.html"), "a page\n").unwrap();
        std::fs::write(dir.path().join("robots.txt"), ROBOTS).unwrap();
        std::fs::write(
            dir.path().join("robotgate.yaml"),
            format!(
                "sites:\n  - hosts: [\"{HOST}\"]\n    default: true\n    robots: {d}/robots.txt\n    policy:\n      action: block\n\
                 verify: {{ dns: {{ nameservers: [\"127.0.0.1:9\"] }} }}\n\
                 log: {{ violations: {d}/violations.jsonl, aggregate_window: 0 }}\n"
            ),
        )
        .unwrap();
        let certs = Certs::make();
        let ports = Ports { http: free_port(), https: free_port() };
        let conf = format!(
            "load_module {module};\ndaemon off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log info;\n\
             events {{ worker_connections 256; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  \
             fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n  \
             robotgate_config {d}/robotgate.yaml;\n  \
             server {{\n    listen 127.0.0.1:{http};\n    listen 127.0.0.1:{https} ssl http2;\n    \
             ssl_certificate {cert};\n    ssl_certificate_key {key};\n    root {d}/www;\n    robotgate on;\n    \
             location / {{ try_files $uri /index.html; }}\n  }}\n}}\n",
            module = module.display(),
            http = ports.http,
            https = ports.https,
            cert = certs.path("cert.pem").display(),
            key = certs.path("key.pem").display(),
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let child = Command::new(common::nginx_module::nginx())
            .args(["-p", &d.to_string(), "-c"])
            .arg(dir.path().join("nginx.conf"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("nginx-stderr.log")).unwrap())
            .spawn()
            .expect("nginx starts");
        let site = NginxSite { child, dir, ports, _certs: certs };
        let up = within(Duration::from_secs(10), || {
            [ports.http, ports.https].iter().all(|p| std::net::TcpStream::connect(("127.0.0.1", *p)).is_ok())
        });
        assert!(up.is_some(), "nginx did not start: {}", site.log("nginx-stderr.log") + &site.log("error.log"));
        site
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }

    fn records(&self) -> Vec<Value> {
        std::thread::sleep(Duration::from_millis(300));
        self.log("violations.jsonl").lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }
}

impl Drop for NginxSite {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-QUIT").arg(self.child.id().to_string()).status();
        if within(Duration::from_secs(10), || self.child.try_wait().ok().flatten().is_some()).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Each of [`CLIENTS`] with Chrome's and with Firefox's User-Agent, over
/// https and http, for a page under `/private/` and one under `/open/`.
fn each_client_chrome_and_firefox() -> Vec<Fetch> {
    let mut fetches = Vec::new();
    for client in CLIENTS {
        for (ua_name, ua) in [("chrome", CHROME_UA), ("firefox", FIREFOX_UA)] {
            for scheme in ["https", "http"] {
                for dir in ["private", "open"] {
                    let path = format!("/{dir}/{client}-{ua_name}-{scheme}");
                    fetches.push(Fetch { client, ua, scheme, path, headers: &[] });
                }
            }
        }
    }
    fetches
}

/// The same scripted clients through the nginx module: nginx holds every
/// header and knows its scheme, so the headers decide as in the proxy:
/// each library with a browser's User-Agent is refused the disallowed page
/// over https and over http, gets the allowed one, and is recorded as a
/// disguised robot with its signs. What nginx does not give the module is
/// the ClientHello (it makes the handshake itself): the libraries sending
/// Chromium's whole header set, which only their ClientHello gives away in
/// the proxy, are people here (docs/edge.md says so).
#[test]
fn libraries_with_a_browsers_user_agent_are_refused_inside_nginx_as_in_the_proxy() {
    let Some(module) = common::nginx_module::module() else { return };
    let site = NginxSite::start(&module);
    let fetches = each_client_chrome_and_firefox();
    let statuses = run_clients(site.ports, &fetches);
    let mut missed = Vec::new();
    for (f, status) in fetches.iter().zip(&statuses) {
        if f.path.starts_with("/open/") {
            assert_eq!(*status, 200, "{} {} {}: an allowed page\n{}", f.client, f.ua, f.path, site.log("error.log"));
        } else if *status != 403 {
            missed.push(format!("{} {status}", f.path));
        }
    }
    assert!(missed.is_empty(), "not refused inside nginx: {missed:?}");
    let records = site.records();
    for f in fetches.iter().filter(|f| f.path.starts_with("/private/")) {
        disguised_record(&records, &f.path);
    }
    // Chromium's whole header set from curl, over https: no ClientHello
    // here, so nothing the headers say is against it.
    let whole = [Fetch {
        client: "curl",
        ua: CHROME_UA,
        scheme: "https",
        path: "/private/whole".into(),
        headers: CHROMIUM_HEADERS,
    }];
    assert_eq!(run_clients(site.ports, &whole), vec![200]);
}

/// The same scripted clients through the stock nginx running the shipped
/// `auth_request` snippet (examples/edge/nginx.conf), in front of
/// robotgate's auth listener, over https and http. The auth listener has
/// the headers and not the client's own scheme (docs/edge.md): the signs
/// that need it are not judged, so a library is refused where its headers
/// alone give it away (no `Accept-Language`, or `*`), and recorded as
/// disguised; Scrapy, which sends `Accept-Language: en` and is caught in
/// the proxy by what the scheme says, passes here. Allowed pages are 200.
#[test]
fn libraries_with_a_browsers_user_agent_are_judged_by_their_headers_behind_the_auth_listener() {
    use common::edge::{shipped, wait_port, Running};
    let origin = Origin::start();
    let auth = free_port();
    let gate = Gate::start(
        &format!(
            "listen: [\"127.0.0.1:{{port}}\"]\nauth: {{ listen: [\"127.0.0.1:{auth}\"] }}\n\
             trusted_proxies: [\"127.0.0.1/32\"]\nclient_header: X-Forwarded-For\ngrace_period: 1\n\
             sites:\n  - hosts: [\"{HOST}\"]\n    default: true\n    upstream: \"{}\"\n    \
             robots: {{dir}}/robots.txt\n    policy:\n      action: block\n\
             log: {{ violations: {{dir}}/violations.jsonl, level: warn, aggregate_window: 0 }}\n",
            origin.addr
        ),
        &[("robots.txt", ROBOTS)],
    );
    wait_port(auth, "robotgate's auth listener", &gate.stderr_path);
    let certs = Certs::make();
    let ports = Ports { http: free_port(), https: free_port() };
    let snippet = shipped("nginx.conf");
    assert!(snippet.contains("listen 80;") && snippet.contains("server_name example.com;"));
    let site = snippet
        .replace(
            "listen 80;",
            &format!(
                "listen 127.0.0.1:{};\n    listen 127.0.0.1:{} ssl http2;\n    ssl_certificate {};\n    \
                 ssl_certificate_key {};",
                ports.http,
                ports.https,
                certs.path("cert.pem").display(),
                certs.path("key.pem").display()
            ),
        )
        .replace("server_name example.com;", &format!("server_name {HOST};"))
        .replace("127.0.0.1:9090", &format!("127.0.0.1:{auth}"))
        .replace("127.0.0.1:8080", &format!("127.0.0.1:{}", gate.port))
        .replace("127.0.0.1:8000", &origin.addr.to_string());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    std::fs::write(dir.path().join("site.conf"), site).unwrap();
    std::fs::write(
        dir.path().join("nginx.conf"),
        format!(
            "daemon off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n\
             events {{ worker_connections 256; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  \
             fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n  \
             include {d}/site.conf;\n}}\n"
        ),
    )
    .unwrap();
    let stderr = dir.path().join("stderr.log");
    let _nginx = Running(
        Command::new(common::nginx_module::nginx())
            .args(["-p", &d.to_string(), "-e", &format!("{d}/error.log"), "-c"])
            .arg(dir.path().join("nginx.conf"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("nginx starts"),
    );
    wait_port(ports.http, "nginx", &stderr);
    wait_port(ports.https, "nginx", &stderr);
    let fetches = each_client_chrome_and_firefox();
    let statuses = run_clients(ports, &fetches);
    let log = || std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default();
    let mut wrong = Vec::new();
    for (f, status) in fetches.iter().zip(&statuses) {
        let want = if f.path.starts_with("/open/") || f.client == "scrapy" { 200 } else { 403 };
        if *status != want {
            wrong.push(format!("{} {status} (wanted {want})", f.path));
        }
    }
    assert!(wrong.is_empty(), "behind the auth listener: {wrong:?}\n{}", log());
    std::thread::sleep(Duration::from_millis(300));
    let records = gate.records(0);
    for f in fetches.iter().filter(|f| f.path.starts_with("/private/") && f.client != "scrapy") {
        disguised_record(&records, &f.path);
    }
    assert!(!origin.saw("/private/curl-chrome-https") && origin.saw("/private/scrapy-chrome-https"));
}
