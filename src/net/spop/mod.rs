//! SPOP, the Stream Processing Offload Protocol HAProxy speaks to an SPOE
//! agent (HAProxy 2.6, `doc/SPOE.txt` section 3): frames read from bytes and
//! written to bytes, and the one message robotgate's agent answers
//! (`robotgate-check`) read into the request's facts. No I/O: the listener
//! (`server::http::spoe`) reads and writes the socket.
//!
//! Every frame comes from a peer: a length is checked before it is used, a
//! frame is never longer than the size both sides agreed on (and never
//! longer than what robotgate offers, [`MAX_FRAME_SIZE`]), and no bytes make
//! a reader panic (`fuzz/fuzz_targets/spop_frame.rs`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

mod check;

pub use check::{hdrs_bin, read_check, Check, CheckError, HeaderList, CHECK_MESSAGE, MAX_HEADERS};

/// The largest frame robotgate reads or writes: HAProxy's own default
/// (`tune.bufsize` 16384 less the 4 bytes of the length).
pub const MAX_FRAME_SIZE: u32 = 16_380;

/// The smallest frame size a peer may offer (SPOE.txt 3.2).
pub const MIN_FRAME_SIZE: u32 = 256;

/// The SPOP version robotgate speaks.
pub const VERSION: &str = "2.0";

/// Frame types (SPOE.txt 3.2.2).
pub mod kind {
    /// A fragment after the first (never accepted: robotgate does not offer fragmentation).
    pub const UNSET: u8 = 0;
    /// HAProxy opens a connection.
    pub const HAPROXY_HELLO: u8 = 1;
    /// HAProxy closes one, or answers an agent's disconnect.
    pub const HAPROXY_DISCONNECT: u8 = 2;
    /// HAProxy passes a stream's messages.
    pub const NOTIFY: u8 = 3;
    /// The answer to HAPROXY-HELLO.
    pub const AGENT_HELLO: u8 = 101;
    /// The agent closes the connection.
    pub const AGENT_DISCONNECT: u8 = 102;
    /// The answer to a NOTIFY.
    pub const ACK: u8 = 103;
}

/// `FIN`: the frame's payload is whole (the last fragment).
pub const FLAG_FIN: u32 = 1;
/// `ABORT`: the fragmented payload is abandoned.
pub const FLAG_ABORT: u32 = 2;

/// SPOP status codes (SPOE.txt 3.5), sent in AGENT-DISCONNECT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// No error.
    Normal = 0,
    /// An I/O error.
    Io = 1,
    /// A timeout.
    Timeout = 2,
    /// The frame is larger than the agreed size.
    TooBig = 3,
    /// A frame that cannot be read.
    Invalid = 4,
    /// HELLO names no version.
    NoVersion = 5,
    /// HELLO names no max-frame-size.
    NoFrameSize = 6,
    /// HELLO names no capabilities.
    NoCapabilities = 7,
    /// No version both speak.
    BadVersion = 8,
    /// max-frame-size below the protocol's minimum.
    BadFrameSize = 9,
    /// A fragmented payload (robotgate does not offer fragmentation).
    Fragmented = 10,
    /// A frame out of order (a NOTIFY before HELLO, a second HELLO).
    Interlaced = 11,
    /// Out of resources (too many NOTIFY frames waiting).
    Resources = 13,
    /// Anything else.
    Unknown = 99,
}

impl Status {
    /// The reason, for the DISCONNECT's message.
    pub fn message(self) -> &'static str {
        match self {
            Status::Normal => "normal",
            Status::Io => "I/O error",
            Status::Timeout => "a timeout occurred",
            Status::TooBig => "frame is too big",
            Status::Invalid => "invalid frame received",
            Status::NoVersion => "version value not found",
            Status::NoFrameSize => "max-frame-size value not found",
            Status::NoCapabilities => "capabilities value not found",
            Status::BadVersion => "unsupported version",
            Status::BadFrameSize => "max-frame-size too big or too small",
            Status::Fragmented => "payload fragmentation is not supported",
            Status::Interlaced => "invalid interlaced frames",
            Status::Resources => "resource allocation error",
            Status::Unknown => "an unknown error occurred",
        }
    }

    /// A short name, for the failures' metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Normal => "normal",
            Status::Io => "io",
            Status::Timeout => "timeout",
            Status::TooBig => "too-big",
            Status::Invalid => "invalid",
            Status::NoVersion | Status::NoFrameSize | Status::NoCapabilities => "hello-incomplete",
            Status::BadVersion => "bad-version",
            Status::BadFrameSize => "bad-frame-size",
            Status::Fragmented => "fragmented",
            Status::Interlaced => "interlaced",
            Status::Resources => "resources",
            Status::Unknown => "unknown",
        }
    }
}

/// A varint as SPOP writes it ("Peers encoding", SPOE.txt 3.1): below 240
/// one byte; else the first byte carries 4 bits (with its top four set),
/// and each next byte 7, the last one with its top bit clear.
///
/// Returns the value and the bytes read; `None` when `buf` ends first or
/// the value does not fit 64 bits (at most 10 bytes are read).
pub fn read_varint(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    let mut value = u64::from(first);
    if value < 240 {
        return Some((value, 1));
    }
    let mut shift = 4u32;
    for (i, &b) in buf.iter().enumerate().skip(1).take(9) {
        let add = u64::from(b).checked_shl(shift).filter(|a| a >> shift == u64::from(b))?;
        value = value.checked_add(add)?;
        if b < 128 {
            return Some((value, i + 1));
        }
        shift += 7;
    }
    None
}

/// Append `value` as a varint ([`read_varint`]'s inverse).
pub fn write_varint(out: &mut Vec<u8>, value: u64) {
    if value < 240 {
        out.push(value as u8);
        return;
    }
    // The low byte with the top four bits set; what is left continues.
    out.push((value as u8) | 240);
    let mut rest = (value - 240) >> 4;
    while rest >= 128 {
        out.push((rest as u8) | 128);
        rest = (rest - 128) >> 7;
    }
    out.push(rest as u8);
}

/// A typed value (SPOE.txt 3.1). Strings are bytes, as HAProxy sends them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// NULL: a sample HAProxy could not fetch.
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed 32-bit integer.
    Int32(i32),
    /// An unsigned 32-bit integer.
    Uint32(u32),
    /// A signed 64-bit integer.
    Int64(i64),
    /// An unsigned 64-bit integer.
    Uint64(u64),
    /// An IPv4 address.
    Ipv4(Ipv4Addr),
    /// An IPv6 address.
    Ipv6(Ipv6Addr),
    /// A string.
    Str(&'a [u8]),
    /// Binary data.
    Bin(&'a [u8]),
}

impl Value<'_> {
    /// The value as text bytes: a string's or binary's bytes.
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Str(b) | Value::Bin(b) => Some(b),
            _ => None,
        }
    }

    /// The value as an integer, of any of the four integer types.
    pub fn int(&self) -> Option<i128> {
        match *self {
            Value::Int32(v) => Some(v.into()),
            Value::Uint32(v) => Some(v.into()),
            Value::Int64(v) => Some(v.into()),
            Value::Uint64(v) => Some(v.into()),
            _ => None,
        }
    }
}

/// Why bytes are not a frame (or a part of one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The bytes end inside an item.
    #[error("the frame ends inside an item")]
    Truncated,
    /// A type that does not exist.
    #[error("unknown data type {0}")]
    BadType(u8),
    /// A length past what is left, or a number too large.
    #[error("a length or number out of range")]
    OutOfRange,
}

impl From<FrameError> for Status {
    fn from(_: FrameError) -> Status {
        Status::Invalid
    }
}

/// A reader over a frame's bytes: every read checks what is left.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    buf: &'a [u8],
}

impl<'a> Cursor<'a> {
    /// Read `buf` from its start.
    pub fn new(buf: &'a [u8]) -> Cursor<'a> {
        Cursor { buf }
    }

    /// Whether everything was read.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], FrameError> {
        if n > self.buf.len() {
            return Err(FrameError::Truncated);
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn byte(&mut self) -> Result<u8, FrameError> {
        Ok(self.take(1)?[0])
    }

    /// A varint.
    pub fn varint(&mut self) -> Result<u64, FrameError> {
        let (v, n) = read_varint(self.buf).ok_or(if self.buf.len() < 10 {
            FrameError::Truncated
        } else {
            FrameError::OutOfRange
        })?;
        self.buf = &self.buf[n..];
        Ok(v)
    }

    /// A length-prefixed string: the length checked against what is left
    /// before anything is taken.
    pub fn string(&mut self) -> Result<&'a [u8], FrameError> {
        let len = usize::try_from(self.varint()?).map_err(|_| FrameError::OutOfRange)?;
        if len > self.buf.len() {
            return Err(FrameError::OutOfRange);
        }
        self.take(len)
    }

    /// A typed value.
    pub fn value(&mut self) -> Result<Value<'a>, FrameError> {
        let head = self.byte()?;
        let (ty, flags) = (head & 0x0f, head >> 4);
        Ok(match ty {
            0 => Value::Null,
            1 => Value::Bool(flags & 1 == 1),
            // Integers travel as varints of their two's-complement bits.
            2 => Value::Int32(u32::try_from(self.varint()?).map_err(|_| FrameError::OutOfRange)? as i32),
            3 => Value::Uint32(u32::try_from(self.varint()?).map_err(|_| FrameError::OutOfRange)?),
            4 => Value::Int64(self.varint()? as i64),
            5 => Value::Uint64(self.varint()?),
            6 => {
                let b: [u8; 4] = self.take(4)?.try_into().map_err(|_| FrameError::Truncated)?;
                Value::Ipv4(Ipv4Addr::from(b))
            }
            7 => {
                let b: [u8; 16] = self.take(16)?.try_into().map_err(|_| FrameError::Truncated)?;
                Value::Ipv6(Ipv6Addr::from(b))
            }
            8 => Value::Str(self.string()?),
            9 => Value::Bin(self.string()?),
            other => return Err(FrameError::BadType(other)),
        })
    }
}

/// Append a typed value.
pub fn write_value(out: &mut Vec<u8>, value: &Value<'_>) {
    match *value {
        Value::Null => out.push(0),
        Value::Bool(b) => out.push(1 | (u8::from(b) << 4)),
        Value::Int32(v) => {
            out.push(2);
            write_varint(out, u64::from(v as u32));
        }
        Value::Uint32(v) => {
            out.push(3);
            write_varint(out, v.into());
        }
        Value::Int64(v) => {
            out.push(4);
            write_varint(out, v as u64);
        }
        Value::Uint64(v) => {
            out.push(5);
            write_varint(out, v);
        }
        Value::Ipv4(a) => {
            out.push(6);
            out.extend_from_slice(&a.octets());
        }
        Value::Ipv6(a) => {
            out.push(7);
            out.extend_from_slice(&a.octets());
        }
        Value::Str(s) => {
            out.push(8);
            write_string(out, s);
        }
        Value::Bin(s) => {
            out.push(9);
            write_string(out, s);
        }
    }
}

fn write_string(out: &mut Vec<u8>, s: &[u8]) {
    write_varint(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// One frame, borrowed from the bytes after its 4-byte length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Its type ([`kind`]).
    pub kind: u8,
    /// `FIN`, `ABORT`.
    pub flags: u32,
    /// The stream it is about (0 for HELLO and DISCONNECT).
    pub stream_id: u64,
    /// Its number within the stream.
    pub frame_id: u64,
    /// What follows the metadata.
    pub payload: &'a [u8],
}

/// The length a frame's first 4 bytes announce, checked against `max`
/// (the size agreed, or before HELLO robotgate's own [`MAX_FRAME_SIZE`]).
///
/// # Errors
/// [`Status::TooBig`] past `max`; [`Status::Invalid`] for an empty frame.
pub fn frame_len(head: [u8; 4], max: u32) -> Result<usize, Status> {
    let len = u32::from_be_bytes(head);
    if len > max {
        return Err(Status::TooBig);
    }
    if len == 0 {
        return Err(Status::Invalid);
    }
    Ok(len as usize)
}

impl<'a> Frame<'a> {
    /// Read a frame from the bytes its length announced (without the length).
    ///
    /// # Errors
    /// The frame's metadata cannot be read.
    pub fn parse(buf: &'a [u8]) -> Result<Frame<'a>, FrameError> {
        let mut c = Cursor::new(buf);
        let kind = c.byte()?;
        let flags = u32::from_be_bytes(c.take(4)?.try_into().map_err(|_| FrameError::Truncated)?);
        let stream_id = c.varint()?;
        let frame_id = c.varint()?;
        Ok(Frame { kind, flags, stream_id, frame_id, payload: c.buf })
    }
}

/// A KV-LIST's items, in order: a name, then a typed value.
pub fn kv_list(payload: &[u8]) -> impl Iterator<Item = Result<(&[u8], Value<'_>), FrameError>> {
    let mut c = Cursor::new(payload);
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed || c.is_empty() {
            return None;
        }
        let item = c.string().and_then(|name| Ok((name, c.value()?)));
        failed = item.is_err();
        Some(item)
    })
}

/// One message of a NOTIFY: its name and arguments (at most 255: the count is one byte).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message<'a> {
    /// The `spoe-message` section's name.
    pub name: &'a [u8],
    /// Its `args`, name and value, in order.
    pub args: Vec<(&'a [u8], Value<'a>)>,
}

/// A NOTIFY's messages (LIST-OF-MESSAGES, SPOE.txt 3.2).
///
/// # Errors
/// The payload is not a list of messages.
pub fn messages(payload: &[u8]) -> Result<Vec<Message<'_>>, FrameError> {
    let mut c = Cursor::new(payload);
    let mut out = Vec::new();
    while !c.is_empty() {
        let name = c.string()?;
        let n = c.byte()?;
        // Each argument takes at least two bytes: a count past what is left is a lie.
        let mut args = Vec::with_capacity(usize::from(n).min(c.buf.len() / 2));
        for _ in 0..n {
            let arg = c.string()?;
            args.push((arg, c.value()?));
        }
        out.push(Message { name, args });
    }
    Ok(out)
}

/// What HAPROXY-HELLO offers (SPOE.txt 3.2.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// The largest frame HAProxy takes.
    pub max_frame_size: u32,
    /// Both sides pipeline: ACKs may come in any order.
    pub pipelining: bool,
    /// A health check (`option spop-check`): answer and close.
    pub healthcheck: bool,
}

/// Whether `versions` (`"2.0, 1.5"`) offers SPOP 2: a major version
/// includes its lower minors, so any `2.x` does.
fn offers_v2(versions: &[u8]) -> bool {
    versions.split(|&b| b == b',').any(|v| {
        let v = v.trim_ascii();
        let major = v.split(|&b| b == b'.').next().unwrap_or_default();
        major == b"2"
    })
}

/// Whether a comma-separated capability list names `cap`.
fn names(list: &[u8], cap: &[u8]) -> bool {
    list.split(|&b| b == b',').any(|c| c.trim_ascii() == cap)
}

impl Hello {
    /// Read HAPROXY-HELLO's payload and agree: the version, a frame size no
    /// larger than either side's, and the capabilities both have.
    ///
    /// # Errors
    /// Why the connection is refused, for AGENT-DISCONNECT.
    pub fn read(payload: &[u8]) -> Result<Hello, Status> {
        let (mut versions, mut size, mut caps, mut healthcheck) = (None, None, None, false);
        for item in kv_list(payload) {
            let (name, value) = item?;
            match name {
                b"supported-versions" => versions = value.bytes().map(<[u8]>::to_vec),
                b"max-frame-size" => size = value.int(),
                b"capabilities" => caps = value.bytes().map(<[u8]>::to_vec),
                b"healthcheck" => healthcheck = value == Value::Bool(true),
                _ => {}
            }
        }
        let versions = versions.ok_or(Status::NoVersion)?;
        let size = size.ok_or(Status::NoFrameSize)?;
        let caps = caps.ok_or(Status::NoCapabilities)?;
        if !offers_v2(&versions) {
            return Err(Status::BadVersion);
        }
        if size < i128::from(MIN_FRAME_SIZE) {
            return Err(Status::BadFrameSize);
        }
        let max_frame_size = u32::try_from(size.min(i128::from(MAX_FRAME_SIZE))).unwrap_or(MAX_FRAME_SIZE);
        Ok(Hello { max_frame_size, pipelining: names(&caps, b"pipelining"), healthcheck })
    }
}

/// Start a frame in `out`: room for the length, then type, flags (`FIN`)
/// and ids. Returns where the frame starts, for [`finish`].
fn begin(out: &mut Vec<u8>, kind: u8, stream_id: u64, frame_id: u64) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    out.push(kind);
    out.extend_from_slice(&FLAG_FIN.to_be_bytes());
    write_varint(out, stream_id);
    write_varint(out, frame_id);
    start
}

/// Write the frame's length at `start`; `Err(TooBig)` (and `out` as it was
/// before the frame) when the frame is past `max`.
fn finish(out: &mut Vec<u8>, start: usize, max: u32) -> Result<(), Status> {
    let len = out.len() - start - 4;
    match u32::try_from(len) {
        Ok(len) if len <= max => {
            out[start..start + 4].copy_from_slice(&len.to_be_bytes());
            Ok(())
        }
        _ => {
            out.truncate(start);
            Err(Status::TooBig)
        }
    }
}

/// Append AGENT-HELLO: [`VERSION`], the agreed frame size, and
/// `pipelining` when HAProxy offered it.
pub fn write_agent_hello(out: &mut Vec<u8>, hello: &Hello) {
    let start = begin(out, kind::AGENT_HELLO, 0, 0);
    for (name, value) in [
        ("version", Value::Str(VERSION.as_bytes())),
        ("max-frame-size", Value::Uint32(hello.max_frame_size)),
        ("capabilities", Value::Str(if hello.pipelining { b"pipelining" } else { b"" })),
    ] {
        write_string(out, name.as_bytes());
        write_value(out, &value);
    }
    // A few dozen bytes, below the protocol's minimum size.
    let _ = finish(out, start, MAX_FRAME_SIZE);
}

/// Append AGENT-DISCONNECT with `status`.
pub fn write_disconnect(out: &mut Vec<u8>, status: Status) {
    let start = begin(out, kind::AGENT_DISCONNECT, 0, 0);
    write_string(out, b"status-code");
    write_value(out, &Value::Uint32(status as u32));
    write_string(out, b"message");
    write_value(out, &Value::Str(status.message().as_bytes()));
    let _ = finish(out, start, MAX_FRAME_SIZE);
}

/// A variable's scope (SPOE.txt 3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `proc`.
    Process = 0,
    /// `sess`.
    Session = 1,
    /// `txn`.
    Transaction = 2,
    /// `req`.
    Request = 3,
    /// `res`.
    Response = 4,
}

/// Append an ACK for `stream_id`/`frame_id` that sets each of `vars` in
/// `scope` (HAProxy prefixes the names with the agent's `var-prefix`).
///
/// # Errors
/// [`Status::TooBig`] when it would be past `max` (then `out` is unchanged).
pub fn write_ack(
    out: &mut Vec<u8>,
    stream_id: u64,
    frame_id: u64,
    scope: Scope,
    vars: &[(&str, Value<'_>)],
    max: u32,
) -> Result<(), Status> {
    let start = begin(out, kind::ACK, stream_id, frame_id);
    for (name, value) in vars {
        out.extend_from_slice(&[1, 3, scope as u8]); // SET-VAR, 3 arguments
        write_string(out, name.as_bytes());
        write_value(out, value);
    }
    finish(out, start, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_every_width() {
        for v in [0, 1, 239, 240, 241, 2287, 2288, 264_431, 264_432, 33_818_863, 33_818_864, u32::MAX.into(), u64::MAX]
        {
            let mut out = Vec::new();
            write_varint(&mut out, v);
            assert_eq!(read_varint(&out), Some((v, out.len())), "{v}");
            assert_eq!(read_varint(&out[..out.len() - 1]), None, "{v} cut");
        }
        // SPOE.txt 3.1's widths.
        for (v, len) in [(239, 1), (240, 2), (2287, 2), (2288, 3), (264_431, 3), (264_432, 4)] {
            let mut out = Vec::new();
            write_varint(&mut out, v);
            assert_eq!(out.len(), len, "{v}");
        }
        // 2 bytes: [1111 XXXX][0XXX XXXX]: 240 + low 4 bits + (next << 4).
        assert_eq!(read_varint(&[0xf0, 0x00]), Some((240, 2)));
        assert_eq!(read_varint(&[0xf1, 0x01]), Some((240 + 1 + 16, 2)));
        // Never more than 64 bits, whatever follows.
        assert_eq!(read_varint(&[0xff; 32]), None);
    }

    /// HAPROXY-HELLO as HAProxy 2.6 sends it.
    fn hello(versions: &str, size: u32, caps: &str, healthcheck: bool) -> Vec<u8> {
        let mut p = Vec::new();
        for (name, value) in [
            ("supported-versions", Value::Str(versions.as_bytes())),
            ("max-frame-size", Value::Uint32(size)),
            ("capabilities", Value::Str(caps.as_bytes())),
            ("healthcheck", Value::Bool(healthcheck)),
            ("engine-id", Value::Str(b"0F8E2C1A")),
        ] {
            write_string(&mut p, name.as_bytes());
            write_value(&mut p, &value);
        }
        p
    }

    #[test]
    fn hello_agrees_on_the_smaller_frame_and_the_shared_capabilities() {
        let h = Hello::read(&hello("2.0", 16_380, "pipelining,async", false)).unwrap();
        assert_eq!(h, Hello { max_frame_size: 16_380, pipelining: true, healthcheck: false });
        let h = Hello::read(&hello(" 2.0 , 1.5", 1_000_000, "async", true)).unwrap();
        assert_eq!(h, Hello { max_frame_size: MAX_FRAME_SIZE, pipelining: false, healthcheck: true });
        assert_eq!(Hello::read(&hello("2.0", 300, "", false)).unwrap().max_frame_size, 300);
        assert_eq!(Hello::read(&hello("1.0", 16_380, "", false)), Err(Status::BadVersion));
        assert_eq!(Hello::read(&hello("2.0", 255, "", false)), Err(Status::BadFrameSize));
        assert_eq!(Hello::read(b""), Err(Status::NoVersion));
        assert_eq!(Hello::read(&[0xff]), Err(Status::Invalid));

        let mut out = Vec::new();
        write_agent_hello(&mut out, &h_of(300));
        let len = frame_len(out[..4].try_into().unwrap(), MAX_FRAME_SIZE).unwrap();
        assert_eq!(len, out.len() - 4);
        let f = Frame::parse(&out[4..]).unwrap();
        assert_eq!((f.kind, f.flags, f.stream_id, f.frame_id), (kind::AGENT_HELLO, FLAG_FIN, 0, 0));
        let items: Vec<_> = kv_list(f.payload).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            items,
            [
                (&b"version"[..], Value::Str(b"2.0")),
                (b"max-frame-size", Value::Uint32(300)),
                (b"capabilities", Value::Str(b"pipelining")),
            ]
        );
    }

    fn h_of(max_frame_size: u32) -> Hello {
        Hello { max_frame_size, pipelining: true, healthcheck: false }
    }

    #[test]
    fn frames_past_the_agreed_size_are_refused_before_they_are_read() {
        assert_eq!(frame_len(300u32.to_be_bytes(), 300), Ok(300));
        assert_eq!(frame_len(301u32.to_be_bytes(), 300), Err(Status::TooBig));
        assert_eq!(frame_len(u32::MAX.to_be_bytes(), MAX_FRAME_SIZE), Err(Status::TooBig));
        assert_eq!(frame_len([0; 4], 300), Err(Status::Invalid));
        assert_eq!(Frame::parse(&[3, 0, 0, 0]), Err(FrameError::Truncated));
    }

    /// A NOTIFY's payload with one `robotgate-check` message.
    fn check_message(args: &[(&str, Value<'_>)]) -> Vec<u8> {
        let mut p = Vec::new();
        write_string(&mut p, CHECK_MESSAGE);
        p.push(args.len() as u8);
        for (name, value) in args {
            write_string(&mut p, name.as_bytes());
            write_value(&mut p, value);
        }
        p
    }

    fn headers_block(headers: &[(&str, &str)]) -> Vec<u8> {
        let mut b = Vec::new();
        for (n, v) in headers {
            write_string(&mut b, n.as_bytes());
            write_string(&mut b, v.as_bytes());
        }
        b.extend_from_slice(&[0, 0]);
        b
    }

    #[test]
    fn a_check_message_reads_into_the_request_facts() {
        let block = headers_block(&[("host", "example.com"), ("user-agent", "GPTBot/1.2"), ("x-a", "1, 2")]);
        let payload = check_message(&[
            ("src", Value::Ipv6("2001:db8::7".parse().unwrap())),
            ("method", Value::Str(b"GET")),
            ("path", Value::Str(b"/a?b=c")),
            ("host", Value::Str(b"example.com")),
            ("ssl", Value::Bool(true)),
            ("headers", Value::Bin(&block)),
            ("later", Value::Int32(-5)),
        ]);
        let msgs = messages(&payload).unwrap();
        assert_eq!(msgs.len(), 1);
        assert_eq!(msgs[0].name, CHECK_MESSAGE);
        assert_eq!(msgs[0].args.last(), Some(&(&b"later"[..], Value::Int32(-5))));
        let c = read_check(&msgs[0].args).unwrap();
        assert_eq!(c.client, "2001:db8::7".parse::<IpAddr>().unwrap());
        assert_eq!((c.method, c.target, c.host, c.https), ("GET", &b"/a?b=c"[..], "example.com", true));
        assert_eq!(c.headers[1], (&b"user-agent"[..], &b"GPTBot/1.2"[..]));
        assert_eq!(c.headers.len(), 3);
    }

    #[test]
    fn a_check_message_lacking_a_fact_is_refused() {
        let block: &'static [u8] = Box::leak(headers_block(&[]).into_boxed_slice());
        let full: Vec<(&'static str, Value<'static>)> = vec![
            ("src", Value::Ipv4(Ipv4Addr::LOCALHOST)),
            ("method", Value::Str(b"GET")),
            ("path", Value::Str(b"/")),
            ("host", Value::Null),
            ("ssl", Value::Bool(false)),
            ("headers", Value::Bin(block)),
        ];
        let args = |args: &[(&'static str, Value<'static>)]| -> Vec<(&'static [u8], Value<'static>)> {
            args.iter().map(|(n, v)| (n.as_bytes(), *v)).collect()
        };
        assert_eq!(read_check(&args(&full)).unwrap().host, "");
        for i in 0..full.len() {
            let mut less = full.clone();
            let (name, _) = less.remove(i);
            if name == "host" {
                assert_eq!(read_check(&args(&less)), Err(CheckError::Missing("host")));
                continue;
            }
            assert!(read_check(&args(&less)).is_err(), "without {name}");
        }
        let mut twice = full.clone();
        twice.push(("src", Value::Ipv4(Ipv4Addr::new(10, 0, 0, 1))));
        assert_eq!(read_check(&args(&twice)), Err(CheckError::Twice("src")));
        let mut text_src = full.clone();
        text_src[0] = ("src", Value::Str(b"10.0.0.1"));
        assert_eq!(read_check(&args(&text_src)), Err(CheckError::Missing("src")));
        let mut bad_method = full.clone();
        bad_method[1] = ("method", Value::Str(b"G T"));
        assert_eq!(read_check(&args(&bad_method)), Err(CheckError::Invalid("method")));
        // A headers block cut short, or past HAProxy's own header count.
        assert!(hdrs_bin(&[3, b'a']).is_err());
        let many: Vec<(&str, &str)> = (0..=MAX_HEADERS).map(|_| ("a", "b")).collect();
        assert!(hdrs_bin(&headers_block(&many)).is_err());
    }

    #[test]
    fn an_ack_sets_transaction_variables_within_the_frame_size() {
        let mut out = Vec::new();
        let vars = [("status", Value::Int32(429)), ("retry_after", Value::Str(b"30"))];
        write_ack(&mut out, 7, 300, Scope::Transaction, &vars, 300).unwrap();
        let f = Frame::parse(&out[4..]).unwrap();
        assert_eq!((f.kind, f.flags, f.stream_id, f.frame_id), (kind::ACK, FLAG_FIN, 7, 300));
        let mut c = Cursor::new(f.payload);
        assert_eq!(c.take(3).unwrap(), [1, 3, 2]);
        assert_eq!(c.string().unwrap(), b"status");
        assert_eq!(c.value().unwrap(), Value::Int32(429));
        assert_eq!(c.take(3).unwrap(), [1, 3, 2]);
        assert_eq!(c.string().unwrap(), b"retry_after");
        assert_eq!(c.value().unwrap(), Value::Str(b"30"));
        assert!(c.is_empty());
        // Past the size: refused, and nothing written.
        let big = vec![b'x'; 400];
        let before = out.len();
        assert_eq!(
            write_ack(&mut out, 1, 1, Scope::Transaction, &[("body", Value::Str(&big))], 300),
            Err(Status::TooBig)
        );
        assert_eq!(out.len(), before);
        // Negative integers survive.
        let mut out = Vec::new();
        write_value(&mut out, &Value::Int64(-2));
        write_value(&mut out, &Value::Int32(i32::MIN));
        let mut c = Cursor::new(&out);
        assert_eq!((c.value().unwrap(), c.value().unwrap()), (Value::Int64(-2), Value::Int32(i32::MIN)));
    }

    #[test]
    fn disconnect_names_its_status() {
        let mut out = Vec::new();
        write_disconnect(&mut out, Status::TooBig);
        let f = Frame::parse(&out[4..]).unwrap();
        assert_eq!(f.kind, kind::AGENT_DISCONNECT);
        let items: Vec<_> = kv_list(f.payload).collect::<Result<_, _>>().unwrap();
        assert_eq!(items[0], (&b"status-code"[..], Value::Uint32(3)));
        assert_eq!(items[1], (&b"message"[..], Value::Str(b"frame is too big")));
    }

    #[test]
    fn lengths_past_the_frame_are_refused() {
        // A string that says it is longer than what is left.
        assert_eq!(Cursor::new(&[8, 0xf0, 0x7f, b'a']).value(), Err(FrameError::OutOfRange));
        assert_eq!(Cursor::new(&[10]).value(), Err(FrameError::BadType(10)));
        assert_eq!(Cursor::new(&[6, 1, 2]).value(), Err(FrameError::Truncated));
        // A message claiming 255 arguments in a few bytes.
        let mut p = Vec::new();
        write_string(&mut p, b"m");
        p.push(255);
        assert!(messages(&p).is_err());
        // An Int32 past 32 bits.
        let mut p = vec![2];
        write_varint(&mut p, u64::from(u32::MAX) + 1);
        assert_eq!(Cursor::new(&p).value(), Err(FrameError::OutOfRange));
    }

    proptest::proptest! {
        #[test]
        fn no_bytes_make_a_reader_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            if let Ok(f) = Frame::parse(&bytes) {
                let _ = kv_list(f.payload).count();
                let _ = Hello::read(f.payload);
                if let Ok(msgs) = messages(f.payload) {
                    for m in msgs {
                        let _ = read_check(&m.args);
                    }
                }
            }
            let _ = hdrs_bin(&bytes);
            let _ = read_varint(&bytes);
        }

        #[test]
        fn every_varint_reads_back(v in proptest::num::u64::ANY) {
            let mut out = Vec::new();
            write_varint(&mut out, v);
            proptest::prop_assert_eq!(read_varint(&out), Some((v, out.len())));
        }
    }
}
