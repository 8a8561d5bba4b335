//! Real headless Chromium (Debian's `chromium` package), driven over the
//! Chrome DevTools Protocol on a loopback WebSocket: load a page, read what
//! it logged, evaluate expressions in it, take a screenshot.
//!
//! Written here on `tungstenite` rather than taken from a browser-driving
//! crate (issue #26). Both were tried against Debian's chromium 156 in a
//! scratch project (debug build on 2 shared cores): both launch it, load a
//! page, evaluate, report errors and take a full-page screenshot, and
//! neither downloads a browser with default features. But:
//! - `chromiumoxide` 0.9.1: 23 crates new to this tree (a reqwest/hyper/
//!   tower stack and a second tungstenite); `chromiumoxide_cdp`, the whole
//!   protocol generated, takes 89 s to compile and `chromiumoxide` 19 s
//!   more; it is async, so these synchronous tests would carry a tokio
//!   runtime and a handler task besides.
//! - `headless_chrome` 1.0.22: 17 crates new (ureq 3 beside our ureq 2,
//!   derive_builder, auto_generate_cdp, which generates the protocol in
//!   its build script: 86 s for the crate; without its default `offline`
//!   feature that script fetches the protocol from GitHub); `evaluate` does
//!   not return objects by value, so `eval` would build a raw
//!   `Runtime.evaluate` anyway.
//!
//! The page tests would not get shorter (they already call only
//! `navigate`, `eval`, `errors` and `screenshot`); this file would lose
//! some fifty lines of launching and message plumbing. `tungstenite` adds
//! one crate (sha1) to the tree.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// Where Debian installs it.
pub const CHROMIUM: &str = "/usr/bin/chromium";

pub struct Browser {
    child: Child,
    port: u16,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Start Chromium headless with an empty profile and a debugging port
    /// on loopback. Panics with a clear message when it is not installed.
    pub fn start() -> Browser {
        assert!(
            std::path::Path::new(CHROMIUM).exists(),
            "{CHROMIUM} is needed (Debian package chromium; .ci/run installs it)"
        );
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new(CHROMIUM)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "--window-size=1280,900",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chromium");
        // "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/…"
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut line = String::new();
        let port = loop {
            line.clear();
            assert!(Instant::now() < deadline, "chromium did not open its debugging port");
            if stderr.read_line(&mut line).unwrap_or(0) == 0 {
                panic!("chromium exited before opening its debugging port");
            }
            if let Some(rest) = line.trim().strip_prefix("DevTools listening on ws://127.0.0.1:") {
                break rest.split('/').next().unwrap().parse::<u16>().unwrap();
            }
        };
        // Keep draining its stderr so it never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while stderr.read_line(&mut sink).unwrap_or(0) > 0 {
                sink.clear();
            }
        });
        Browser { child, port, _profile: profile }
    }

    /// A new tab.
    pub fn page(&self) -> Page {
        let version: Value =
            serde_json::from_str(&super::get(&format!("http://127.0.0.1:{}/json/version", self.port), &[]).body)
                .unwrap();
        let browser_ws = version["webSocketDebuggerUrl"].as_str().unwrap().to_owned();
        let mut browser = Page::connect(&browser_ws);
        let target = browser.call("Target.createTarget", json!({ "url": "about:blank" }));
        let id = target["targetId"].as_str().unwrap();
        let mut page = Page::connect(&format!("ws://127.0.0.1:{}/devtools/page/{id}", self.port));
        for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
            page.call(domain, json!({}));
        }
        page
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct Page {
    ws: WebSocket<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    /// Every event received so far.
    pub events: Vec<Value>,
}

impl Page {
    fn connect(url: &str) -> Page {
        let (ws, _) = tungstenite::connect(url).expect("connect to chromium's debugging port");
        if let MaybeTlsStream::Plain(s) = ws.get_ref() {
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        }
        Page { ws, next_id: 1, events: Vec::new() }
    }

    fn receive(&mut self) -> Value {
        loop {
            match self.ws.read().expect("a message from chromium within 30 s") {
                Message::Text(t) => return serde_json::from_str(t.as_str()).unwrap(),
                Message::Close(_) => panic!("chromium closed the connection"),
                _ => {}
            }
        }
    }

    /// Call a method and return its result; events that arrive meanwhile are kept.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({ "id": id, "method": method, "params": params }).to_string();
        self.ws.send(Message::text(msg)).unwrap();
        loop {
            let v = self.receive();
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
            self.events.push(v);
        }
    }

    /// Load `url` and wait for its load event.
    pub fn navigate(&mut self, url: &str) {
        let before = self.events.len();
        let r = self.call("Page.navigate", json!({ "url": url }));
        assert!(r.get("errorText").is_none(), "navigate {url}: {r}");
        if self.events[before..].iter().any(|e| e["method"] == "Page.loadEventFired") {
            return;
        }
        loop {
            let v = self.receive();
            let loaded = v["method"] == "Page.loadEventFired";
            self.events.push(v);
            if loaded {
                return;
            }
        }
    }

    /// Evaluate a JavaScript expression in the page; its value.
    pub fn eval(&mut self, expression: &str) -> Value {
        let r = self.call("Runtime.evaluate", json!({ "expression": expression, "returnByValue": true }));
        assert!(r.get("exceptionDetails").is_none(), "{expression}: {r}");
        r["result"]["value"].clone()
    }

    /// Errors the page reported: uncaught exceptions, `console.error`, and
    /// the browser's own error log entries (a blocked resource, a CSP violation).
    pub fn errors(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| {
                e["method"] == "Runtime.exceptionThrown"
                    || (e["method"] == "Runtime.consoleAPICalled" && e["params"]["type"] == "error")
                    || (e["method"] == "Log.entryAdded" && e["params"]["entry"]["level"] == "error")
            })
            .map(ToString::to_string)
            .collect()
    }

    /// A PNG of the whole page.
    pub fn screenshot(&mut self) -> Vec<u8> {
        use base64::Engine as _;
        let r = self.call("Page.captureScreenshot", json!({ "format": "png", "captureBeyondViewport": true }));
        base64::engine::general_purpose::STANDARD.decode(r["data"].as_str().unwrap()).unwrap()
    }
}
