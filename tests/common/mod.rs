//! Shared harness for tests that run the real binary: a real HTTP origin on
//! loopback, a robotgate process in front of it, and a real HTTP client.
#![allow(dead_code)]

pub mod browser;
pub mod certs;
pub mod dns_server;
pub mod edge;
pub mod modules;
pub mod nginx_module;
pub mod redis_server;
pub mod signer;

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A free loopback port (bound, then released) for a server a test starts.
///
/// Taken below Linux's ephemeral range (32768-60999 by default): a port the
/// kernel hands out for `bind(0)` is also what it hands out as the source
/// port of the tests' own outgoing connections, and one of those could take
/// it between this check and the server's bind ("Address already in use").
/// Each call of a test process tries the next port of its own sequence.
pub fn free_port() -> u16 {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    // Spread test processes apart by pid; threads of one process by the counter.
    let base = (std::process::id() as usize % 97) * 100;
    for _ in 0..10_000 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = 20_000 + ((base + n) % 12_000) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// An HTTP/1.1 origin on loopback, one thread per connection, keep-alive:
/// answers `origin <path>` with 200, echoes the `X-Forwarded-For` and
/// `X-Forwarded-Proto` it received as `x-seen-xff` / `x-seen-proto`, sleeps
/// on `/slow`, and counts requests. (Written here rather than taken from a
/// crate: an origin that ever stalls under load would make the proxy's
/// tests flaky.)
pub struct Origin {
    pub addr: SocketAddr,
    pub hits: Arc<AtomicUsize>,
    /// Every request-target it answered, in order.
    pub paths: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Origin {
    pub fn start() -> Origin {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(AtomicUsize::new(0));
        let paths = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (counter, seen) = (hits.clone(), paths.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let (hits, seen) = (counter.clone(), seen.clone());
                std::thread::spawn(move || serve_connection(conn, &hits, &seen));
            }
        });
        Origin { addr, hits, paths }
    }

    /// Whether it answered `path`.
    pub fn saw(&self, path: &str) -> bool {
        self.paths.lock().unwrap().iter().any(|p| p == path)
    }

    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

fn serve_connection(conn: TcpStream, hits: &AtomicUsize, seen: &std::sync::Mutex<Vec<String>>) {
    use std::io::{BufRead, BufReader, Write};
    let _ = conn.set_read_timeout(Some(Duration::from_secs(120)));
    let mut writer = match conn.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    let mut reader = BufReader::new(conn);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line.split_whitespace().nth(1).unwrap_or("/").to_owned();
        let (mut length, mut xff, mut proto, mut close) = (0usize, String::new(), String::new(), false);
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                let v = v.trim();
                match k.trim().to_ascii_lowercase().as_str() {
                    "content-length" => length = v.parse().unwrap_or(0),
                    "x-forwarded-for" => xff = v.to_owned(),
                    "x-forwarded-proto" => proto = v.to_owned(),
                    "connection" => close = v.eq_ignore_ascii_case("close"),
                    _ => {}
                }
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        hits.fetch_add(1, Ordering::SeqCst);
        seen.lock().unwrap().push(path.clone());
        if path.starts_with("/slow") {
            std::thread::sleep(Duration::from_secs(3));
        }
        let text = format!("origin {path}");
        let resp = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nx-seen-xff: {xff}\r\nx-seen-proto: {proto}\r\n\r\n{text}",
            text.len()
        );
        if writer.write_all(resp.as_bytes()).is_err() || close {
            return;
        }
    }
}

/// A running `robotgate serve`.
pub struct Gate {
    pub child: Child,
    pub port: u16,
    pub metrics_port: u16,
    pub dir: tempfile::TempDir,
    pub stderr_path: PathBuf,
    /// A command robotgate runs under (e.g. `setpriv ...`), empty for none.
    wrap: Vec<String>,
}

impl Gate {
    /// Start robotgate with `config` (a YAML template in which `{port}`,
    /// `{metrics}` and `{dir}` are replaced), after writing `files` into the
    /// temp dir. Waits until the proxy port (and the metrics port, if any) accept connections.
    pub fn start(config: &str, files: &[(&str, &[u8])]) -> Gate {
        Gate::start_under(&[], config, files)
    }

    /// [`Gate::start`], robotgate run by the command `wrap` (its arguments
    /// followed by robotgate's command line).
    pub fn start_under(wrap: &[&str], config: &str, files: &[(&str, &[u8])]) -> Gate {
        let wrap: Vec<String> = wrap.iter().map(|s| s.to_string()).collect();
        let dir = tempfile::tempdir().unwrap();
        for (name, body) in LOOPBACK_FEEDS.iter().chain(files) {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, body).unwrap();
        }
        let port = free_port();
        let metrics_port = free_port();
        let text = no_feed_refresh(config)
            .replace("{port}", &port.to_string())
            .replace("{metrics}", &metrics_port.to_string())
            .replace("{dir}", dir.path().to_str().unwrap());
        let config_path = dir.path().join("robotgate.yaml");
        std::fs::write(&config_path, text).unwrap();
        let stderr_path = dir.path().join("stderr.log");
        let child = Gate::spawn(&wrap, dir.path(), &stderr_path);
        let gate = Gate { child, port, metrics_port, dir, stderr_path, wrap };
        gate.wait_listening(port);
        // The metrics listener is a service of its own and may come up a
        // moment after the proxy.
        if config.contains("{metrics}") {
            gate.wait_listening(metrics_port);
        }
        gate
    }

    fn spawn(wrap: &[String], dir: &Path, stderr_path: &Path) -> Child {
        let bin = env!("CARGO_BIN_EXE_robotgate");
        let mut command = match wrap.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        command
            .args(["serve", "--config", dir.join("robotgate.yaml").to_str().unwrap()])
            .arg("--pid-file")
            .arg(dir.join("robotgate.pid"))
            .arg("--upgrade-sock")
            .arg(dir.join("upgrade.sock"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(stderr_path).unwrap())
            .spawn()
            .unwrap()
    }

    /// Stop (SIGTERM) and start again on the same ports and files.
    pub fn restart(&mut self) {
        if self.child.try_wait().unwrap().is_none() {
            self.stop();
        }
        self.child = Gate::spawn(&self.wrap, self.dir.path(), &self.stderr_path);
        self.wait_listening(self.port);
        // As in `start`: the metrics listener may come up a moment later.
        let config = std::fs::read_to_string(self.path("robotgate.yaml")).unwrap_or_default();
        if config.contains(&format!(":{}", self.metrics_port)) {
            self.wait_listening(self.metrics_port);
        }
    }

    fn wait_listening(&self, port: u16) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("robotgate did not start: {}", std::fs::read_to_string(&self.stderr_path).unwrap_or_default());
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The violation log's records once it holds at least `n` (bounded wait).
    pub fn records(&self, n: usize) -> Vec<serde_json::Value> {
        wait_lines(&self.path("violations.jsonl"), n).iter().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    /// The first violation record for which `pred` holds, waiting for it
    /// (bounded): the log is written after the answer, so a count of lines
    /// alone can be reached by other records first.
    pub fn record(&self, what: &str, pred: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        let mut last = Vec::new();
        let found = within(Duration::from_secs(10), || {
            last = self.records(0);
            last.iter().any(&pred)
        });
        match found {
            Some(_) => last.into_iter().find(|r| pred(r)).unwrap(),
            None => panic!("no record of {what}: {last:#?}"),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// Send a signal by name (`TERM`, `HUP`, ...).
    pub fn signal(&self, sig: &str) {
        let ok =
            Command::new("kill").arg(format!("-{sig}")).arg(self.child.id().to_string()).status().unwrap().success();
        assert!(ok, "kill -{sig}");
    }

    /// SIGTERM, then wait (bounded) for the process to exit.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        self.signal("TERM");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "robotgate did not stop after SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Send `bytes` as they are on a fresh connection to `port` on loopback
/// (for what a client library will not write: a field twice, a control
/// byte) and read the answer until the peer closes it or 10 s pass; the
/// request should ask for `Connection: close`. A chunked body is decoded;
/// anything unreadable is a status of 0.
pub fn raw(port: u16, bytes: &[u8]) -> Resp {
    use std::io::Write;
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.write_all(bytes);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let split = out.windows(4).position(|w| w == b"\r\n\r\n").map_or(out.len(), |at| at + 4);
    let (head, body) = out.split_at(split);
    let head = String::from_utf8_lossy(head);
    let mut lines = head.split("\r\n");
    let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|c| c.parse().ok()).unwrap_or(0);
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned())).collect();
    let chunked = headers.iter().any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked { dechunk(body) } else { body.to_vec() };
    Resp { status, headers, body: String::from_utf8_lossy(&body).into_owned() }
}

/// A chunked body's data (sizes and extensions dropped; stops at the last
/// chunk or at the first size it cannot read).
fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let line = String::from_utf8_lossy(&rest[..eol]);
        let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16).unwrap_or(0);
        let data = &rest[eol + 2..];
        if size == 0 || data.len() < size {
            break;
        }
        out.extend_from_slice(&data[..size]);
        rest = data[size..].strip_prefix(b"\r\n").unwrap_or(&data[size..]);
    }
    out
}

/// A response, whatever its status.
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Every value of a header that may repeat, in order.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).collect()
    }
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new().redirects(0).timeout(Duration::from_secs(10)).build()
}

/// GET `url` with these headers, as a real client.
pub fn get(url: &str, headers: &[(&str, &str)]) -> Resp {
    request("GET", url, headers)
}

pub fn request(method: &str, url: &str, headers: &[(&str, &str)]) -> Resp {
    let mut req = agent().request(method, url);
    for (k, v) in headers {
        req = req.set(k, v);
    }
    for (k, v) in as_browser(url, headers) {
        req = req.set(k, v);
    }
    let resp = match req.call() {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {url}: {e}"),
    };
    let status = resp.status();
    // Each field line on its own (a name may repeat: X-Robots-Tag).
    let mut names = resp.headers_names();
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.to_ascii_lowercase()));
    let headers = names
        .into_iter()
        .flat_map(|n| resp.all(&n).into_iter().map(|v| (n.clone(), v.to_owned())).collect::<Vec<_>>())
        .collect();
    let body = resp.into_string().unwrap_or_default();
    Resp { status, headers, body }
}

/// What the browser a test's browser User-Agent ([`FIREFOX`], [`CHROME`],
/// a person's phone…) names sends besides (issue #67), unless the test sets `Accept-Language` itself:
/// tests that send a browser's User-Agent stand for a browser, and a
/// browser's request is more than its User-Agent. On a potentially
/// trustworthy origin (`127.0.0.1`, the tests' URLs) the secure-context set;
/// to a public name over plain http (a test's own `Host`), the plain one.
pub fn as_browser(url: &str, headers: &[(&str, &str)]) -> Vec<(&'static str, &'static str)> {
    let find = |name: &str| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| *v);
    let Some(ua) = find("user-agent") else { return Vec::new() };
    let browser = ua.starts_with("Mozilla/5.0 (") && ["Chrome/", "Firefox/", "Safari/"].iter().any(|t| ua.contains(t));
    // A test that sets `Accept` or `Accept-Language` itself sends what it means to.
    if !browser || find("accept-language").is_some() || find("accept").is_some() {
        return Vec::new();
    }
    let chrome = ua.contains("Chrome/") && !ua.contains("iPhone") && !ua.contains("iPad");
    let host = find("host").unwrap_or_else(|| url.split("://").nth(1).unwrap_or("").split('/').next().unwrap_or(""));
    let name = host.rsplit_once(':').map_or(host, |(h, _)| h).trim_matches(['[', ']']);
    let secure = url.starts_with("https:")
        || name == "localhost"
        || name.ends_with(".localhost")
        || name.starts_with("127.")
        || name == "::1";
    let mut out = vec![
        ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
        ("Accept-Language", "en-US,en;q=0.5"),
    ];
    if !secure {
        out.push(("Accept-Encoding", "gzip, deflate"));
        return out;
    }
    out.extend([("Sec-Fetch-Site", "none"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "document")]);
    if chrome {
        // Its brands carry its own major version, as Chromium's do.
        let major = ua.split("Chrome/").nth(1).and_then(|v| v.split('.').next()).unwrap_or("0");
        let brands: &'static str = Box::leak(
            format!("\"Chromium\";v=\"{major}\", \"Google Chrome\";v=\"{major}\", \"Not-A.Brand\";v=\"99\"")
                .into_boxed_str(),
        );
        out.extend([
            ("Sec-CH-UA", brands),
            ("Sec-CH-UA-Mobile", if ua.contains("Mobile") { "?1" } else { "?0" }),
            ("Sec-CH-UA-Platform", "\"Windows\""),
        ]);
    }
    out
}

/// [`as_browser`]'s headers for `ua` on loopback, as raw header lines each
/// starting with `\r\n` (for requests written by hand); empty for a
/// User-Agent that is not a browser's.
pub fn browser_lines(ua: &str) -> String {
    as_browser("http://127.0.0.1/", &[("User-Agent", ua)]).iter().map(|(k, v)| format!("\r\n{k}: {v}")).collect()
}

/// The sum of the samples of metric `name` (a prefix: `name{label="x"` picks
/// series) on the gate's metrics listener.
pub fn metric(gate: &Gate, name: &str) -> f64 {
    let text = get(&format!("http://127.0.0.1:{}/metrics", gate.metrics_port), &[]).body;
    text.lines()
        .filter(|l| l.starts_with(name) && !l.starts_with('#'))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Poll until `cond` holds; the elapsed time, or None after `limit`.
pub fn within(limit: Duration, mut cond: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

/// Wait (bounded) until `path` holds at least `n` lines, then return them.
pub fn wait_lines(path: &Path, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        if lines.len() >= n || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
pub const GOOGLEBOT_IMAGE: &str = "Googlebot-Image/1.0";
pub const GPTBOT: &str =
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";
pub const BINGBOT: &str = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)";
pub const AHREFS: &str = "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)";
pub const CLAUDEBOT: &str =
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)";
pub const CHATGPT_USER: &str =
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot";
pub const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0";
pub const CHROME: &str =
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";

/// IP range feeds, in the published format, that place OpenAI's GPTBot and
/// ChatGPT-User on loopback. Every [`Gate`] gets them in `{dir}/feeds`; a
/// config with [`VERIFY_LOOPBACK`] uses them (as an operator would a feed of
/// its own), so the tests can play those robots from 127.0.0.1 and be
/// believed. Without it, GPTBot from 127.0.0.1 is a spoofed identity.
pub const LOOPBACK_FEEDS: &[(&str, &[u8])] = &[
    (
        "feeds/openai-gptbot.json",
        br#"{"creationTime": "2026-11-23T00:00:00", "prefixes": [{"ipv4Prefix": "127.0.0.0/8"}]}"#,
    ),
    (
        "feeds/openai-chatgpt-user.json",
        br#"{"creationTime": "2026-11-23T00:00:00", "prefixes": [{"ipv4Prefix": "127.0.0.0/8"}]}"#,
    ),
];

/// The config lines that put [`LOOPBACK_FEEDS`] in force.
/// Reverse DNS goes to a closed loopback port (answered at once with an
/// ICMP refusal): no test's robotgate asks the system's resolver.
/// `config` with `verify.refresh: off`, unless it says how to refresh
/// (`refresh:` or `feed_urls:`): the refresh is on by default and would
/// fetch the operators' feeds, looking their hosts up through the machine's
/// resolver; tests talk to loopback only.
pub fn no_feed_refresh(config: &str) -> String {
    if config.contains("refresh:") || config.contains("feed_urls:") {
        return config.to_owned();
    }
    if config.starts_with("verify:\n") || config.contains("\nverify:\n") {
        return config.replacen("verify:\n", "verify:\n  refresh: \"off\"\n", 1);
    }
    if config.contains("verify: {") {
        return config.replacen("verify: {", "verify: { refresh: \"off\",", 1);
    }
    let sep = if config.ends_with('\n') || config.is_empty() { "" } else { "\n" };
    format!("{config}{sep}verify:\n  refresh: \"off\"\n")
}

/// Lines of a `verify:` block: the default refresh (24 h), every embedded
/// feed's URL a closed loopback port, so a test of the refresh and of what
/// stale lists let through fails its fetches on loopback, never reaching
/// out (conf/feeds/ holds the names).
pub const REFRESH_TO_NOWHERE: &str = "  refresh: 24h\n  feed_urls:\n    apple-applebot: \"http://127.0.0.1:9/none\"\n    bing-bingbot: \"http://127.0.0.1:9/none\"\n    commoncrawl-ccbot: \"http://127.0.0.1:9/none\"\n    duckduckgo-duckduckbot: \"http://127.0.0.1:9/none\"\n    google-common-crawlers: \"http://127.0.0.1:9/none\"\n    google-special-crawlers: \"http://127.0.0.1:9/none\"\n    google-user-triggered-agents: \"http://127.0.0.1:9/none\"\n    google-user-triggered-fetchers: \"http://127.0.0.1:9/none\"\n    google-user-triggered-fetchers-google: \"http://127.0.0.1:9/none\"\n    openai-chatgpt-user: \"http://127.0.0.1:9/none\"\n    openai-gptbot: \"http://127.0.0.1:9/none\"\n    openai-searchbot: \"http://127.0.0.1:9/none\"\n    perplexity-perplexitybot: \"http://127.0.0.1:9/none\"\n    perplexity-user: \"http://127.0.0.1:9/none\"\n";

/// [`REFRESH_TO_NOWHERE`] but for the feeds named in `keep` (served by the test).
pub fn refresh_to_nowhere_but(keep: &[&str]) -> String {
    REFRESH_TO_NOWHERE
        .lines()
        .filter(|l| !keep.iter().any(|k| l.trim_start().starts_with(&format!("{k}:"))))
        .map(|l| format!("{l}\n"))
        .collect()
}

pub const VERIFY_LOOPBACK: &str =
    "verify:\n  feeds: {dir}/feeds\n  dns: { nameservers: [\"127.0.0.1:9\"], timeout_ms: 300 }\n";

/// The configuration most tests share, as a [`Gate::start`] template: one
/// site `s` (the default, unless `default` is false) on `127.0.0.1` and
/// `localhost` in front of `upstream`,
/// robots.txt from the temp dir, violations to `{dir}/violations.jsonl`,
/// a one-second grace period.
pub struct TestConfig<'a> {
    /// The site's `upstream:` value, as YAML (`"127.0.0.1:8000"` or `{ address: …, read_timeout: 1 }`).
    pub upstream: &'a str,
    /// Worker threads.
    pub threads: usize,
    /// More keys of the site, one per line, without indentation.
    pub site: &'a str,
    /// More entries of `sites:`, as YAML indented by two spaces.
    pub more_sites: &'a str,
    /// `log.level`.
    pub level: &'a str,
    /// Serve metrics on `{metrics}`.
    pub metrics: bool,
    /// The site answers unknown hosts.
    pub default: bool,
}

impl Default for TestConfig<'_> {
    fn default() -> Self {
        TestConfig {
            upstream: "\"127.0.0.1:1\"",
            threads: 2,
            site: "",
            more_sites: "",
            level: "warn",
            metrics: false,
            default: true,
        }
    }
}

impl TestConfig<'_> {
    /// The YAML template.
    pub fn render(&self) -> String {
        let site: String = self.site.lines().map(|l| format!("    {l}\n")).collect();
        let metrics = if self.metrics { "metrics:\n  listen: \"127.0.0.1:{metrics}\"\n" } else { "" };
        let metrics = format!("{metrics}{VERIFY_LOOPBACK}");
        format!(
            "listen: [\"127.0.0.1:{{port}}\"]\nthreads: {}\ngrace_period: 1\nsites:\n  - name: s\n    hosts: [\"127.0.0.1\", \"localhost\"]\n    default: {}\n    upstream: {}\n    robots: {{dir}}/robots.txt\n{site}{}log:\n  violations: {{dir}}/violations.jsonl\n  level: {}\n{metrics}",
            self.threads, self.default, self.upstream, self.more_sites, self.level
        )
    }
}
