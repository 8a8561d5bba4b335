//! Shared harness for tests that run the real binary: a real HTTP origin on
//! loopback, a robotgate process in front of it, and a real HTTP client.
#![allow(dead_code)]

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A free loopback port (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// An HTTP origin on loopback: answers `origin <path>` with 200, echoes the
/// `X-Forwarded-For` and `X-Forwarded-Proto` it received as `x-seen-xff` /
/// `x-seen-proto`, sleeps on `/slow`, and counts requests.
pub struct Origin {
    pub addr: SocketAddr,
    pub hits: Arc<AtomicUsize>,
    server: Arc<tiny_http::Server>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Origin {
    pub fn start() -> Origin {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let addr = server.server_addr().to_ip().unwrap();
        let hits = Arc::new(AtomicUsize::new(0));
        let mut threads = Vec::new();
        for _ in 0..4 {
            let server = server.clone();
            let hits = hits.clone();
            threads.push(std::thread::spawn(move || {
                for mut req in server.incoming_requests() {
                    hits.fetch_add(1, Ordering::SeqCst);
                    let url = req.url().to_owned();
                    if url.starts_with("/slow") {
                        std::thread::sleep(Duration::from_secs(3));
                    }
                    let mut body = String::new();
                    let _ = req.as_reader().read_to_string(&mut body);
                    let header = |name: &'static str| {
                        req.headers()
                            .iter()
                            .find(|h| h.field.equiv(name))
                            .map(|h| h.value.as_str().to_owned())
                            .unwrap_or_default()
                    };
                    let xff = header("X-Forwarded-For");
                    let proto = header("X-Forwarded-Proto");
                    let resp = tiny_http::Response::from_string(format!("origin {url}"))
                        .with_header(tiny_http::Header::from_bytes("x-seen-xff", xff).unwrap())
                        .with_header(tiny_http::Header::from_bytes("x-seen-proto", proto).unwrap())
                        .with_header(tiny_http::Header::from_bytes("content-type", "text/plain").unwrap());
                    let _ = req.respond(resp);
                }
            }));
        }
        Origin { addr, hits, server, threads }
    }

    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        self.server.unblock();
        for _ in 0..self.threads.len() {
            self.server.unblock();
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
}

impl Gate {
    /// Start robotgate with `config` (a YAML template in which `{port}`,
    /// `{metrics}` and `{dir}` are replaced), after writing `files` into the
    /// temp dir. Waits until the proxy port accepts connections.
    pub fn start(config: &str, files: &[(&str, &[u8])]) -> Gate {
        let dir = tempfile::tempdir().unwrap();
        for (name, body) in files {
            std::fs::write(dir.path().join(name), body).unwrap();
        }
        let port = free_port();
        let metrics_port = free_port();
        let text = config
            .replace("{port}", &port.to_string())
            .replace("{metrics}", &metrics_port.to_string())
            .replace("{dir}", dir.path().to_str().unwrap());
        let config_path = dir.path().join("robotgate.yaml");
        std::fs::write(&config_path, text).unwrap();
        let stderr_path = dir.path().join("stderr.log");
        let child = Command::new(env!("CARGO_BIN_EXE_robotgate"))
            .args(["serve", "--config", config_path.to_str().unwrap()])
            .arg("--pid-file")
            .arg(dir.path().join("robotgate.pid"))
            .arg("--upgrade-sock")
            .arg(dir.path().join("upgrade.sock"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr_path).unwrap())
            .spawn()
            .unwrap();
        let gate = Gate { child, port, metrics_port, dir, stderr_path };
        gate.wait_ready();
        gate
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("robotgate did not start: {}", std::fs::read_to_string(&self.stderr_path).unwrap_or_default());
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
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
    let resp = match req.call() {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {url}: {e}"),
    };
    let status = resp.status();
    let headers = resp
        .headers_names()
        .into_iter()
        .map(|n| {
            let v = resp.header(&n).unwrap_or("").to_owned();
            (n, v)
        })
        .collect();
    let body = resp.into_string().unwrap_or_default();
    Resp { status, headers, body }
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
