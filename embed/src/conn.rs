//! One blocking connection to the shared store, for a module's helper
//! threads ([`crate::store`]): the core's commands and replies
//! ([`robotgate::state::wire`]) over TCP, or TLS for `rediss://`, with a
//! deadline per command, not per read: a store that answers a byte at a
//! time cannot hold a command past its deadline (issue #52).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use robotgate::state::wire::{self, Command, Endpoint, Parsed, Reply};

/// Bytes read at once.
const READ_CHUNK: usize = 16 * 1024;

enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Stream {
    fn socket(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => &s.sock,
        }
    }
}

/// A connection, with the bytes read past the last whole reply.
pub struct Conn {
    stream: Stream,
    buf: Vec<u8>,
    /// Parse again only once the buffer holds this much.
    need: usize,
}

/// Trust for `rediss://`: the system's roots (and `SSL_CERT_FILE`, which
/// nginx passes its workers with `env SSL_CERT_FILE;`), as for key directories.
pub use crate::keys::tls_config;

/// Time left until `deadline`, or an error when none is.
fn left(deadline: Instant, what: &str) -> Result<Duration, String> {
    let now = Instant::now();
    if now >= deadline {
        return Err(format!("{what}: timed out"));
    }
    Ok(deadline - now)
}

impl Conn {
    /// Connect to `endpoint` (and log in, and select its database) by `deadline`.
    ///
    /// # Errors
    /// What failed, in words.
    pub fn open(endpoint: &Endpoint, tls: &Arc<rustls::ClientConfig>, deadline: Instant) -> Result<Conn, String> {
        let addrs: Vec<_> = (endpoint.host.as_str(), endpoint.port)
            .to_socket_addrs()
            .map_err(|e| format!("{}: {e}", endpoint.host))?
            .collect();
        let mut last = format!("{}: no address", endpoint.host);
        let mut socket = None;
        for a in addrs {
            match TcpStream::connect_timeout(&a, left(deadline, "connect")?) {
                Ok(s) => {
                    socket = Some(s);
                    break;
                }
                Err(e) => last = format!("{a}: {e}"),
            }
        }
        let socket = socket.ok_or(last)?;
        let _ = socket.set_nodelay(true);
        let stream = if endpoint.tls {
            let name = rustls::pki_types::ServerName::try_from(endpoint.host.clone())
                .map_err(|e| format!("{}: {e}", endpoint.host))?;
            let tls = rustls::ClientConnection::new(tls.clone(), name).map_err(|e| e.to_string())?;
            Stream::Tls(Box::new(rustls::StreamOwned::new(tls, socket)))
        } else {
            Stream::Plain(socket)
        };
        let mut conn = Conn { stream, buf: Vec::new(), need: 0 };
        let hello = endpoint.hello();
        if !hello.is_empty() {
            for r in conn.call(&hello, deadline)? {
                r.ok().map_err(|e| format!("login: {e}"))?;
            }
        }
        Ok(conn)
    }

    /// Send `commands` together and read their replies, all by `deadline`.
    /// The server's error replies are returned as replies.
    ///
    /// # Errors
    /// The connection failed or the deadline passed; the connection is not
    /// to be used again.
    pub fn call(&mut self, commands: &[Command], deadline: Instant) -> Result<Vec<Reply>, String> {
        let mut out = Vec::new();
        for c in commands {
            c.encode(&mut out);
        }
        self.send(&out, deadline)?;
        let mut replies = Vec::with_capacity(commands.len());
        while replies.len() < commands.len() {
            replies.push(self.reply(Some(deadline))?.ok_or("timed out")?);
        }
        Ok(replies)
    }

    /// Send one command and read its reply by `deadline`; the server's error
    /// as an error.
    ///
    /// # Errors
    /// As [`Conn::call`], and the server's error.
    pub fn one(&mut self, command: &Command, deadline: Instant) -> Result<Reply, String> {
        let mut replies = self.call(std::slice::from_ref(command), deadline)?;
        replies.pop().ok_or_else(|| "no reply".to_owned())?.ok().map_err(|e| e.to_string())
    }

    /// Send without reading (a subscription's command).
    ///
    /// # Errors
    /// The connection failed or the deadline passed.
    pub fn send_only(&mut self, command: &Command, deadline: Instant) -> Result<(), String> {
        let mut out = Vec::new();
        command.encode(&mut out);
        self.send(&out, deadline)
    }

    fn send(&mut self, bytes: &[u8], deadline: Instant) -> Result<(), String> {
        // Both ways: a TLS handshake reads inside the first write.
        let wait = left(deadline, "write")?;
        self.stream.socket().set_write_timeout(Some(wait)).map_err(|e| e.to_string())?;
        self.stream.socket().set_read_timeout(Some(wait)).map_err(|e| e.to_string())?;
        let written = match &mut self.stream {
            Stream::Plain(s) => s.write_all(bytes).and_then(|()| s.flush()),
            Stream::Tls(s) => s.write_all(bytes).and_then(|()| s.flush()),
        };
        written.map_err(|e| format!("write: {e}"))
    }

    /// The next reply. With a deadline: by then, or an error. Without
    /// (`None`): whatever is there within a quarter of a second, `Ok(None)`
    /// if no whole reply is (a subscriber's wait; a partial reply is kept).
    ///
    /// # Errors
    /// The connection failed, the bytes are not a reply, or the deadline passed.
    pub fn reply(&mut self, deadline: Option<Instant>) -> Result<Option<Reply>, String> {
        let wait_until = deadline.unwrap_or_else(|| Instant::now() + Duration::from_millis(250));
        loop {
            if self.buf.len() >= self.need {
                match wire::parse(&self.buf).map_err(|e| e.to_string())? {
                    Parsed::Reply(r, used) => {
                        self.buf.drain(..used);
                        self.need = 0;
                        return Ok(Some(r));
                    }
                    Parsed::Needs(n) => self.need = n,
                }
            }
            let wait = match left(wait_until, "read") {
                Ok(w) => w,
                Err(e) if deadline.is_some() => return Err(e),
                Err(_) => return Ok(None),
            };
            self.stream.socket().set_read_timeout(Some(wait)).map_err(|e| e.to_string())?;
            let mut chunk = [0u8; READ_CHUNK];
            let read = match &mut self.stream {
                Stream::Plain(s) => s.read(&mut chunk),
                Stream::Tls(s) => s.read(&mut chunk),
            };
            match read {
                Ok(0) => return Err("the store closed the connection".into()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("read: {e}")),
            }
        }
    }
}
