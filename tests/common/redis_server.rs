//! A real `redis-server` on a free loopback port, without persistence,
//! started and stopped by the test (Debian's `redis-server` package).

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RedisServer {
    pub port: u16,
    child: Option<Child>,
    dir: tempfile::TempDir,
}

impl RedisServer {
    pub fn start() -> RedisServer {
        let mut server = RedisServer { port: super::free_port(), child: None, dir: tempfile::tempdir().unwrap() };
        server.restart();
        server
    }

    /// Start it (again) on the same port, empty.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--protected-mode", "no", "--dir", self.dir.path().to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is needed (Debian package redis-server; .ci/run installs it)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start on port {}", self.port);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kill it at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// A plain connection, to look at the keys.
    pub fn connection(&self) -> redis::Connection {
        redis::Client::open(self.url()).unwrap().get_connection().unwrap()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// How a [`Relay`] passes the store's replies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// As they come.
    Whole,
    /// One byte every 60 ms: a store that trickles (issue #52).
    Trickle,
    /// As they come, but a SCAN that has finished (cursor `0`) says it has
    /// not (cursor `1`), so a SCAN never ends.
    EndlessScan,
}

/// A TCP relay on loopback in front of a real `redis-server`: requests pass
/// as sent, replies as [`Pass`] says (switchable while it runs).
pub struct Relay {
    pub port: u16,
    mode: std::sync::Arc<std::sync::Mutex<Pass>>,
}

impl Relay {
    pub fn start(upstream_port: u16, mode: Pass) -> Relay {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mode = std::sync::Arc::new(std::sync::Mutex::new(mode));
        let shared = mode.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream_port)) else { continue };
                let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16 * 1024];
                    while let Ok(n @ 1..) = c_in.read(&mut buf) {
                        if s_out.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = s_out.shutdown(std::net::Shutdown::Both);
                });
                let (mut s_in, mut c_out, mode) = (server, client, shared.clone());
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16 * 1024];
                    while let Ok(n @ 1..) = s_in.read(&mut buf) {
                        let pass = *mode.lock().unwrap();
                        let ok = match pass {
                            Pass::Whole => c_out.write_all(&buf[..n]).is_ok(),
                            Pass::EndlessScan => {
                                let mut out = buf[..n].to_vec();
                                let (done, more) = (b"*2\r\n$1\r\n0\r\n", b"*2\r\n$1\r\n1\r\n");
                                if out.starts_with(done) {
                                    out[..done.len()].copy_from_slice(more);
                                }
                                c_out.write_all(&out).is_ok()
                            }
                            Pass::Trickle => buf[..n].iter().all(|b| {
                                std::thread::sleep(Duration::from_millis(60));
                                c_out.write_all(&[*b]).is_ok()
                            }),
                        };
                        if !ok {
                            break;
                        }
                    }
                    let _ = c_out.shutdown(std::net::Shutdown::Both);
                });
            }
        });
        Relay { port, mode }
    }

    pub fn set(&self, pass: Pass) {
        *self.mode.lock().unwrap() = pass;
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }
}
