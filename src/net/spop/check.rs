//! The one message robotgate's agent answers, `robotgate-check`
//! (`examples/edge/spoe-robotgate.conf`): its arguments read into the
//! request's facts, and HAProxy's `req.hdrs_bin` block into its headers.

use super::*;

/// The facts of one request, as the `robotgate-check` message names them
/// (`examples/edge/spoe-robotgate.conf`), borrowed from the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check<'a> {
    /// The client address: HAProxy's `src`.
    pub client: IpAddr,
    /// The method.
    pub method: &'a str,
    /// The request target, path and query (`pathq`).
    pub target: &'a [u8],
    /// The host (`req.hdr(host)`).
    pub host: &'a str,
    /// The client reached the site over TLS (`ssl_fc`).
    pub https: bool,
    /// The request's headers (`req.hdrs_bin`), name and value, in order.
    pub headers: HeaderList<'a>,
}

/// A request's headers, name and value, in order, borrowed from a frame.
pub type HeaderList<'a> = Vec<(&'a [u8], &'a [u8])>;

/// The name of the message robotgate answers.
pub const CHECK_MESSAGE: &[u8] = b"robotgate-check";

/// Headers past this many are not read: HAProxy's own limit on a request's
/// (`tune.http.maxhdr`, 101).
pub const MAX_HEADERS: usize = 101;

/// Why a `robotgate-check` message is refused (`400`, as a subrequest that
/// lacks a fact is on the auth listener).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// An argument is missing, or not of its type.
    #[error("the robotgate-check message has no {0} argument of its type: the SPOE file must send it")]
    Missing(&'static str),
    /// An argument came twice.
    #[error("the robotgate-check message names {0} twice")]
    Twice(&'static str),
    /// A value that is not what the fact must be.
    #[error("the robotgate-check message's {0} is not valid")]
    Invalid(&'static str),
}

/// Read [`hdrs_bin`]: `req.hdrs_bin`'s pairs of varint-prefixed strings,
/// ended by two empty ones (HAProxy's configuration manual, `req.hdrs_bin`).
///
/// # Errors
/// The block is cut, or holds more than [`MAX_HEADERS`].
pub fn hdrs_bin(block: &[u8]) -> Result<HeaderList<'_>, CheckError> {
    let mut c = Cursor::new(block);
    let mut out = Vec::new();
    loop {
        let bad = |_| CheckError::Invalid("headers");
        let name = c.string().map_err(bad)?;
        let value = c.string().map_err(bad)?;
        if name.is_empty() && value.is_empty() {
            return Ok(out);
        }
        if out.len() == MAX_HEADERS {
            return Err(CheckError::Invalid("headers"));
        }
        out.push((name, value));
    }
}

/// Read a `robotgate-check` message's arguments: `src` (an address),
/// `method`, `path` (path and query), `host` (may be empty: then the
/// site is the default one), `ssl` (a boolean), `headers` (`req.hdrs_bin`).
/// Unknown arguments are ignored; a known one twice is refused.
///
/// # Errors
/// What is missing or wrong, for a refusal.
pub fn read_check<'a>(args: &[(&'a [u8], Value<'a>)]) -> Result<Check<'a>, CheckError> {
    let mut seen = [None; 6];
    const NAMES: [&str; 6] = ["src", "method", "path", "host", "ssl", "headers"];
    for (name, value) in args {
        if let Some(i) = NAMES.iter().position(|n| n.as_bytes() == *name) {
            if seen[i].is_some() {
                return Err(CheckError::Twice(NAMES[i]));
            }
            seen[i] = Some(*value);
        }
    }
    let [src, method, path, host, ssl, headers] = seen;
    let client = match src {
        Some(Value::Ipv4(a)) => IpAddr::V4(a),
        Some(Value::Ipv6(a)) => IpAddr::V6(a),
        _ => return Err(CheckError::Missing("src")),
    };
    let text = |v: Option<Value<'a>>, what| match v {
        Some(Value::Str(b)) => std::str::from_utf8(b).map_err(|_| CheckError::Invalid(what)),
        _ => Err(CheckError::Missing(what)),
    };
    let method = text(method, "method")?;
    if !crate::net::edge::is_method(method) {
        return Err(CheckError::Invalid("method"));
    }
    let target = match path {
        Some(Value::Str(b)) if !b.is_empty() => b,
        Some(Value::Str(_)) => return Err(CheckError::Invalid("path")),
        _ => return Err(CheckError::Missing("path")),
    };
    // No Host header is a NULL sample: the default site's.
    let host = match host {
        Some(Value::Null) => "",
        h => text(h, "host")?,
    };
    let https = match ssl {
        Some(Value::Bool(b)) => b,
        _ => return Err(CheckError::Missing("ssl")),
    };
    let headers = match headers {
        Some(Value::Bin(b)) => hdrs_bin(b)?,
        _ => return Err(CheckError::Missing("headers")),
    };
    Ok(Check { client, method, target, host, https, headers })
}
