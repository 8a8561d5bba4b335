//! `robotgate health`: exit 0 if robotgate answers on ADDR.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

/// GET /robots.txt over plain TCP; any HTTP answer means the proxy is up.
pub fn run(addr: &str) -> anyhow::Result<ExitCode> {
    use std::io::Read;
    use std::net::ToSocketAddrs;
    use std::time::Duration;
    let sock = addr.to_socket_addrs()?.next().with_context(|| format!("cannot resolve {addr}"))?;
    let mut stream = std::net::TcpStream::connect_timeout(&sock, Duration::from_secs(3))?;
    stream.set_read_timeout(Some(Duration::from_secs(3)))?;
    stream.write_all(
        b"GET /robots.txt HTTP/1.1\r\nHost: localhost\r\nUser-Agent: robotgate-health\r\nConnection: close\r\n\r\n",
    )?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head)?;
    if head.starts_with(b"HTTP/1.") {
        Ok(ExitCode::SUCCESS)
    } else {
        anyhow::bail!("{addr} did not answer HTTP")
    }
}
