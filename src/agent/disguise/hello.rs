//! The TLS ClientHello a client opened its connection with, read from the
//! connection's first bytes before the TLS library takes them, and its JA4
//! fingerprint (issue #67).
//!
//! A client can copy a browser's headers; copying a browser's TLS stack is
//! harder. What the hello offers says which stack sent it: Chromium's
//! BoringSSL puts GREASE values (RFC 8701) in its cipher suites, extensions,
//! groups and versions on every connection since Chrome 55; every current
//! browser offers `h2` first in ALPN (RFC 7301) and TLS 1.3 in
//! `supported_versions` (RFC 8446 §4.2.1). OpenSSL, Go, Java and Python
//! send no GREASE, and Python's `urllib3` 2 offers only `http/1.1`.
//! [`super::judge`] turns those facts into signs; this module only reads.
//!
//! Wire format: RFC 8446 §5.1 (records: type 22, a 2-byte length of at most
//! 2^14), §4 (a handshake message: type 1, a 3-byte length) and §4.1.2 (the
//! ClientHello: legacy version, random, session id, cipher suites,
//! compression methods, extensions); RFC 5246 §7.4.1.2 allows a TLS 1.2
//! hello without extensions.
//!
//! JA4 (FoxIO, "JA4+ Network Fingerprinting", JA4 technical details, the
//! BSD-licensed specification): `a_b_c` where `a` is the protocol (`t` for
//! TCP), the highest version offered (`13`, `12`…), `d` when the hello names
//! a server (SNI) and `i` when not, the number of cipher suites and of
//! extensions (two digits each, at most 99, GREASE not counted) and the
//! first and last characters of the first ALPN value (`00` if none); `b` is
//! the first 12 hex digits of the SHA-256 of the sorted cipher suites (four
//! lower-case hex digits each, comma separated); `c` the same of the sorted
//! extensions without SNI and ALPN, then `_` and the signature algorithms
//! in the order sent. No GREASE value is in either list.
//!
//! Bounded: a hello of at most [`HELLO_MAX`] bytes in at most
//! [`RECORDS_MAX`] records; anything else is not read ([`Read::NotHello`])
//! and the TLS library decides about it. No allocation but the hash input.

use sha2::{Digest, Sha256};

/// The most bytes of handshake message a hello may take to be read.
pub const HELLO_MAX: usize = 16 * 1024;
/// The most TLS records a hello may span to be read.
pub const RECORDS_MAX: usize = 4;
/// The header of a TLS record (type, version, length).
pub const RECORD_HEADER: usize = 5;

/// What the connection's first bytes are, so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// A hello, if `n` bytes were there in all (more than now).
    Need(usize),
    /// The hello, read.
    Hello(Hello),
    /// Not a hello this module reads (not TLS, too long, malformed): the
    /// TLS library gets the bytes as they are and no fact is judged.
    NotHello,
}

/// Whether the ALPN value the client put first is `h2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    /// `h2` first.
    H2,
    /// Some other protocol first (`http/1.1`), or none offered.
    NotH2,
}

/// What a ClientHello offered, as far as it is judged. `Copy`, no heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    /// A GREASE value (RFC 8701) anywhere it may be: cipher suites,
    /// extensions, supported groups, versions. `None` when not known (an
    /// edge's JA4 does not show GREASE).
    pub grease: Option<bool>,
    /// TLS 1.3 offered.
    pub tls13: bool,
    /// What ALPN offered first.
    pub alpn: Alpn,
    /// The JA4 fingerprint, ASCII.
    pub ja4: Ja4,
}

/// A JA4 fingerprint: 36 ASCII bytes, `t13d1516h2_8daaf6152771_e5627efa2ab1`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ja4(pub [u8; 36]);

impl Ja4 {
    /// As text.
    pub fn as_str(&self) -> &str {
        // Built from ASCII only (`hello`), or checked to be (`from_edge`).
        std::str::from_utf8(&self.0).unwrap_or("")
    }
}

impl std::fmt::Debug for Ja4 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for Ja4 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether `v` is a GREASE value (RFC 8701 §2: `0x?A?A`, both bytes equal).
pub const fn is_grease(v: u16) -> bool {
    v & 0x0f0f == 0x0a0a && v >> 8 == v & 0xff
}

/// Read what `buf`, the connection's first bytes, holds.
pub fn read(buf: &[u8]) -> Read {
    let mut message: [u8; HELLO_MAX] = [0; HELLO_MAX];
    let (mut have, mut at, mut records) = (0usize, 0usize, 0usize);
    loop {
        if buf.len() < at + RECORD_HEADER {
            return Read::Need(at + RECORD_HEADER);
        }
        let header = &buf[at..at + RECORD_HEADER];
        // A handshake record of TLS 1.0 to 1.3 (the record layer's version
        // is 0x0301 to 0x0303; RFC 8446 §5.1).
        if header[0] != 22 || header[1] != 3 || header[2] > 3 {
            return Read::NotHello;
        }
        let len = usize::from(u16::from_be_bytes([header[3], header[4]]));
        if len == 0 || len > 1 << 14 {
            return Read::NotHello;
        }
        if buf.len() < at + RECORD_HEADER + len {
            return Read::Need(at + RECORD_HEADER + len);
        }
        let fragment = &buf[at + RECORD_HEADER..at + RECORD_HEADER + len];
        let take = fragment.len().min(HELLO_MAX - have);
        message[have..have + take].copy_from_slice(&fragment[..take]);
        have += take;
        at += RECORD_HEADER + len;
        records += 1;
        if have >= 4 {
            if message[0] != 1 {
                return Read::NotHello;
            }
            let body = usize::from(message[1]) << 16 | usize::from(message[2]) << 8 | usize::from(message[3]);
            if 4 + body > HELLO_MAX {
                return Read::NotHello;
            }
            if have >= 4 + body {
                return parse(&message[4..4 + body]).map_or(Read::NotHello, Read::Hello);
            }
        }
        if records >= RECORDS_MAX || have >= HELLO_MAX {
            return Read::NotHello;
        }
    }
}

/// A reader of big-endian fields that fails past the end.
struct Cursor<'b> {
    b: &'b [u8],
}

impl<'b> Cursor<'b> {
    fn take(&mut self, n: usize) -> Option<&'b [u8]> {
        if self.b.len() < n {
            return None;
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }

    /// A vector with a 1- or 2-byte length.
    fn vec8(&mut self) -> Option<&'b [u8]> {
        let n = self.u8()?;
        self.take(usize::from(n))
    }

    fn vec16(&mut self) -> Option<&'b [u8]> {
        let n = self.u16()?;
        self.take(usize::from(n))
    }
}

/// The u16 values of a list of even length.
fn u16s(b: &[u8]) -> impl Iterator<Item = u16> + '_ {
    b.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]]))
}

/// The most values of one list JA4 hashes (a hello offers about 20).
const LIST_MAX: usize = 128;

/// A ClientHello's body (after the handshake header).
fn parse(body: &[u8]) -> Option<Hello> {
    let mut c = Cursor { b: body };
    let legacy = c.u16()?;
    c.take(32)?; // random
    let session = c.vec8()?;
    if session.len() > 32 {
        return None;
    }
    let suites = c.vec16()?;
    if suites.len() % 2 != 0 || suites.is_empty() {
        return None;
    }
    c.vec8()?; // compression methods
    let extensions = if c.b.is_empty() { &[][..] } else { c.vec16()? };

    let mut grease = false;
    let mut ciphers = [0u16; LIST_MAX];
    let mut n_ciphers = 0;
    for s in u16s(suites) {
        if is_grease(s) {
            grease = true;
        } else if n_ciphers < LIST_MAX {
            ciphers[n_ciphers] = s;
            n_ciphers += 1;
        }
    }
    let (mut exts, mut n_exts, mut counted) = ([0u16; LIST_MAX], 0, 0);
    let (mut sigs, mut n_sigs) = ([0u16; LIST_MAX], 0);
    let (mut sni, mut tls13, mut version) = (false, false, legacy);
    let mut alpn: Option<&[u8]> = None;
    let mut e = Cursor { b: extensions };
    while !e.b.is_empty() {
        let kind = e.u16()?;
        let data = e.vec16()?;
        if is_grease(kind) {
            grease = true;
            continue;
        }
        counted += 1;
        match kind {
            0x0000 => sni = true,
            0x0010 => {
                let mut a = Cursor { b: data };
                let list = a.vec16()?;
                let mut l = Cursor { b: list };
                alpn = Some(l.vec8()?);
            }
            0x000a => {
                let mut g = Cursor { b: data };
                grease |= u16s(g.vec16()?).any(is_grease);
            }
            0x000d => {
                let mut s = Cursor { b: data };
                for v in u16s(s.vec16()?) {
                    if n_sigs < LIST_MAX {
                        sigs[n_sigs] = v;
                        n_sigs += 1;
                    }
                }
            }
            0x002b => {
                let mut v = Cursor { b: data };
                let mut best = 0;
                for offered in u16s(v.vec8()?) {
                    if is_grease(offered) {
                        grease = true;
                    } else {
                        tls13 |= offered == 0x0304;
                        best = best.max(offered);
                    }
                }
                if best != 0 {
                    version = best;
                }
            }
            _ => {}
        }
        if kind != 0x0000 && kind != 0x0010 && n_exts < LIST_MAX {
            exts[n_exts] = kind;
            n_exts += 1;
        }
    }
    let first_alpn = alpn.unwrap_or(b"");
    let ja4 = ja4(Ja4Parts {
        version,
        sni,
        ciphers: &mut ciphers[..n_ciphers],
        extensions_counted: counted,
        alpn: first_alpn,
        extensions: &mut exts[..n_exts],
        signatures: &sigs[..n_sigs],
    });
    let alpn = if first_alpn == b"h2" { Alpn::H2 } else { Alpn::NotH2 };
    Some(Hello { grease: Some(grease), tls13, alpn, ja4 })
}

/// What JA4 is computed from (GREASE already left out).
struct Ja4Parts<'a> {
    version: u16,
    sni: bool,
    ciphers: &'a mut [u16],
    extensions_counted: usize,
    alpn: &'a [u8],
    /// Without SNI and ALPN.
    extensions: &'a mut [u16],
    signatures: &'a [u16],
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn ja4(p: Ja4Parts<'_>) -> Ja4 {
    let mut out = [0u8; 36];
    out[0] = b't';
    let v: &[u8; 2] = match p.version {
        0x0304 => b"13",
        0x0303 => b"12",
        0x0302 => b"11",
        0x0301 => b"10",
        0x0300 => b"s3",
        0x0002 => b"s2",
        _ => b"00",
    };
    out[1..3].copy_from_slice(v);
    out[3] = if p.sni { b'd' } else { b'i' };
    let two = |n: usize| {
        let n = n.min(99);
        [b'0' + (n / 10) as u8, b'0' + (n % 10) as u8]
    };
    out[4..6].copy_from_slice(&two(p.ciphers.len()));
    out[6..8].copy_from_slice(&two(p.extensions_counted));
    out[8..10].copy_from_slice(&alpn_chars(p.alpn));
    out[10] = b'_';
    p.ciphers.sort_unstable();
    out[11..23].copy_from_slice(&hash12(&[p.ciphers], false));
    out[23] = b'_';
    p.extensions.sort_unstable();
    let c = if p.extensions.is_empty() && p.signatures.is_empty() {
        [b'0'; 12]
    } else {
        hash12(&[p.extensions, p.signatures], true)
    };
    out[24..36].copy_from_slice(&c);
    Ja4(out)
}

/// JA4's two ALPN characters: the first and last of the first value when
/// both are ASCII letters or digits, else the first and last hex digits of
/// it; `00` for none.
fn alpn_chars(alpn: &[u8]) -> [u8; 2] {
    let (Some(&first), Some(&last)) = (alpn.first(), alpn.last()) else { return *b"00" };
    if first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric() {
        [first, last]
    } else {
        [HEX[usize::from(first >> 4)], HEX[usize::from(last & 0xf)]]
    }
}

/// The first 12 hex digits of the SHA-256 of `lists`, each value as four
/// hex digits, comma separated, the lists joined by `_` (an empty list
/// after the first adds nothing when `skip_empty`). An empty input: zeros.
fn hash12(lists: &[&[u16]], skip_empty: bool) -> [u8; 12] {
    if lists.iter().all(|l| l.is_empty()) {
        return [b'0'; 12];
    }
    let mut h = Sha256::new();
    for (i, list) in lists.iter().enumerate() {
        if i > 0 {
            if skip_empty && list.is_empty() {
                continue;
            }
            h.update(b"_");
        }
        for (j, v) in list.iter().enumerate() {
            if j > 0 {
                h.update(b",");
            }
            let b = v.to_be_bytes();
            h.update([
                HEX[usize::from(b[0] >> 4)],
                HEX[usize::from(b[0] & 0xf)],
                HEX[usize::from(b[1] >> 4)],
                HEX[usize::from(b[1] & 0xf)],
            ]);
        }
    }
    let digest = h.finalize();
    let mut out = [0u8; 12];
    for (i, byte) in digest.iter().take(6).enumerate() {
        out[2 * i] = HEX[usize::from(byte >> 4)];
        out[2 * i + 1] = HEX[usize::from(byte & 0xf)];
    }
    out
}

/// The facts of a JA4 an edge in `trusted_proxies` computed and sent in a
/// header (CloudFront's `CloudFront-Viewer-JA4-Fingerprint`, an Envoy or
/// nginx variable): the version and ALPN its first part shows. GREASE is
/// not in a JA4, so it stays unknown. `None` unless `value` is shaped as a
/// JA4 of a TCP connection.
pub fn from_edge(value: &str) -> Option<Hello> {
    let b = value.trim().as_bytes();
    if b.len() != 36 || b[0] != b't' || b[10] != b'_' || b[23] != b'_' {
        return None;
    }
    let known = |c: &u8| c.is_ascii_digit() || c.is_ascii_lowercase();
    let hex = |c: &u8| c.is_ascii_digit() || (b'a'..=b'f').contains(c);
    // The ALPN characters are the value's own when alphanumeric, either case.
    let alpn_ok = b[8..10].iter().all(u8::is_ascii_alphanumeric);
    if !b[1..8].iter().all(known) || !alpn_ok || !b[11..23].iter().all(hex) || !b[24..].iter().all(hex) {
        return None;
    }
    if !matches!(b[3], b'd' | b'i') || !b[4..8].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut ja4 = [0u8; 36];
    ja4.copy_from_slice(b);
    Some(Hello {
        grease: None,
        // Only a version known to be below 1.3 says 1.3 was not offered
        // (`00` is a version JA4 does not name, maybe a later one).
        tls13: !matches!(&b[1..3], b"12" | b"11" | b"10" | b"s3" | b"s2"),
        alpn: if &b[8..10] == b"h2" { Alpn::H2 } else { Alpn::NotH2 },
        ja4: Ja4(ja4),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hello as bytes: the record and handshake headers around a body
    /// built from `suites`, `extensions` (type, data) and a session id.
    pub(crate) fn hello_bytes(suites: &[u16], extensions: &[(u16, Vec<u8>)]) -> Vec<u8> {
        let mut body = vec![0x03, 0x03];
        body.extend([7u8; 32]);
        body.push(32);
        body.extend([9u8; 32]);
        body.extend(((suites.len() * 2) as u16).to_be_bytes());
        for s in suites {
            body.extend(s.to_be_bytes());
        }
        body.extend([1, 0]);
        let mut ext = Vec::new();
        for (kind, data) in extensions {
            ext.extend(kind.to_be_bytes());
            ext.extend((data.len() as u16).to_be_bytes());
            ext.extend(data);
        }
        body.extend((ext.len() as u16).to_be_bytes());
        body.extend(ext);
        let mut hs = vec![1, 0, (body.len() >> 8) as u8, body.len() as u8];
        hs.extend(body);
        let mut rec = vec![22, 3, 1, (hs.len() >> 8) as u8, hs.len() as u8];
        rec.extend(hs);
        rec
    }

    fn list16(values: &[u16]) -> Vec<u8> {
        let mut v = ((values.len() * 2) as u16).to_be_bytes().to_vec();
        for x in values {
            v.extend(x.to_be_bytes());
        }
        v
    }

    fn alpn(protocols: &[&str]) -> Vec<u8> {
        let mut list = Vec::new();
        for p in protocols {
            list.push(p.len() as u8);
            list.extend(p.as_bytes());
        }
        let mut v = (list.len() as u16).to_be_bytes().to_vec();
        v.extend(list);
        v
    }

    /// The worked example of the JA4 specification (FoxIO's technical
    /// details): its cipher list hashes to `8daaf6152771`, its extensions
    /// and signature algorithms to `e5627efa2ab1`, 15 suites and 16
    /// extensions with SNI and ALPN `h2`; here with Chrome's GREASE added,
    /// which JA4 leaves out.
    fn chrome_like(grease: bool) -> Vec<u8> {
        let mut suites = vec![
            0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013, 0xc014, 0x009c, 0x009d,
            0x002f, 0x0035,
        ];
        let sigs = [0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601];
        let mut ext: Vec<(u16, Vec<u8>)> = vec![
            (0x0000, vec![0, 8, 0, 0, 5, b'a', b'.', b'c', b'o', b'm']),
            (0x0017, vec![]),
            (0xff01, vec![0]),
            (0x000a, list16(&[0x001d, 0x0017, 0x0018])),
            (0x000b, vec![1, 0]),
            (0x0023, vec![]),
            (0x0010, alpn(&["h2", "http/1.1"])),
            (0x0005, vec![1, 0, 0, 0, 0]),
            (0x000d, list16(&sigs)),
            (0x0012, vec![]),
            (0x0033, vec![0, 0]),
            (0x002d, vec![1, 1]),
            (0x002b, vec![4, 0x03, 0x04, 0x03, 0x03]),
            (0x001b, vec![2, 0, 2]),
            (0x4469, vec![0, 3, 2, b'h', b'2']),
            (0x0015, vec![0; 4]),
        ];
        if grease {
            suites.insert(0, 0x3a3a);
            ext.insert(0, (0xdada, vec![]));
            ext.push((0x2a2a, vec![0]));
            ext[3].1 = list16(&[0x8a8a, 0x001d, 0x0017, 0x0018]);
        }
        hello_bytes(&suites, &ext)
    }

    #[test]
    fn the_specifications_example_gives_its_fingerprint() {
        for grease in [false, true] {
            let Read::Hello(h) = read(&chrome_like(grease)) else { panic!("not read") };
            assert_eq!(h.ja4.as_str(), "t13d1516h2_8daaf6152771_e5627efa2ab1");
            assert_eq!((h.grease, h.tls13, h.alpn), (Some(grease), true, Alpn::H2));
        }
    }

    #[test]
    fn a_hello_split_over_records_or_cut_short_is_asked_for_whole() {
        let whole = chrome_like(true);
        for cut in [0, 3, 5, 40, whole.len() - 1] {
            match read(&whole[..cut]) {
                Read::Need(n) => assert!(n > cut && n <= whole.len(), "{cut}: {n}"),
                other => panic!("{cut}: {other:?}"),
            }
        }
        // The same handshake message in two records.
        let hs = &whole[5..];
        let (a, b) = hs.split_at(100);
        let mut split = vec![22, 3, 1, 0, a.len() as u8];
        split.extend(a);
        split.extend([22, 3, 1, (b.len() >> 8) as u8, b.len() as u8]);
        split.extend(b);
        assert_eq!(read(&split), read(&whole));
    }

    #[test]
    fn what_is_not_a_hello_is_left_to_tls() {
        assert_eq!(read(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"), Read::NotHello);
        assert_eq!(read(&[22, 3, 1, 0, 0]), Read::NotHello);
        assert_eq!(read(&[22, 3, 1, 0x40, 1]), Read::NotHello); // longer than a record may be
        let mut not_client = chrome_like(false);
        not_client[5] = 2; // a ServerHello
        assert_eq!(read(&not_client), Read::NotHello);
        // A handshake message longer than its hello: not read.
        let mut inner = chrome_like(false);
        let len = u32::from_be_bytes([0, inner[6], inner[7], inner[8]]) - 9;
        inner[6..9].copy_from_slice(&len.to_be_bytes()[1..]);
        assert_eq!(read(&inner), Read::NotHello);
        // Many tiny records: not read past RECORDS_MAX.
        let hs = &chrome_like(false)[5..];
        let mut tiny = Vec::new();
        for chunk in hs.chunks(8) {
            tiny.extend([22, 3, 1, 0, chunk.len() as u8]);
            tiny.extend(chunk);
        }
        assert_eq!(read(&tiny), Read::NotHello);
    }

    #[test]
    fn a_library_hello_shows_no_grease_nor_h2() {
        let ext = vec![
            (0x0000, vec![0, 8, 0, 0, 5, b'a', b'.', b'c', b'o', b'm']),
            (0x0010, alpn(&["http/1.1"])),
            (0x000d, list16(&[0x0403])),
            (0x002b, vec![2, 0x03, 0x03]),
        ];
        let Read::Hello(h) = read(&hello_bytes(&[0xc02f, 0x009c], &ext)) else { panic!() };
        assert_eq!((h.grease, h.tls13, h.alpn), (Some(false), false, Alpn::NotH2));
        assert_eq!(&h.ja4.as_str()[..10], "t12d0204h1");
        // No extensions at all (TLS 1.2 allows it): no SNI, no ALPN.
        let mut bare = hello_bytes(&[0x002f], &[]);
        let n = bare.len();
        bare.truncate(n - 2);
        bare[4] -= 2;
        bare[8] -= 2;
        let Read::Hello(h) = read(&bare) else { panic!() };
        assert_eq!((&h.ja4.as_str()[..11], &h.ja4.as_str()[23..]), ("t12i010000_", "_000000000000"));
    }

    #[test]
    fn alpn_characters_follow_the_specification() {
        assert_eq!(&alpn_chars(b"h2"), b"h2");
        assert_eq!(&alpn_chars(b"http/1.1"), b"h1");
        assert_eq!(&alpn_chars(b""), b"00");
        assert_eq!(&alpn_chars(&[0xab, 0x01, 0xcd]), b"ad");
    }

    #[test]
    fn an_edges_fingerprint_is_read_only_when_shaped_as_one() {
        let h = from_edge("t13d1516h2_8daaf6152771_e5627efa2ab1").unwrap();
        assert_eq!((h.grease, h.tls13, h.alpn), (None, true, Alpn::H2));
        let h = from_edge(" t12d1209h1_d34a8e72043a_b39be8c56a14 ").unwrap();
        assert_eq!((h.tls13, h.alpn), (false, Alpn::NotH2));
        assert!(from_edge("t00d1516h2_8daaf6152771_e5627efa2ab1").unwrap().tls13, "an unnamed version is not judged");
        for bad in [
            "",
            "q13d1516h2_8daaf6152771_e5627efa2ab1",
            "t13d1516h2_8daaf6152771_e5627efa2ab",
            "t13x1516h2_8daaf6152771_e5627efa2ab1",
            "T13D1516H2_8DAAF6152771_E5627EFA2AB1",
            "t13d1516h2_8daaf615277g_e5627efa2ab1",
        ] {
            assert_eq!(from_edge(bad), None, "{bad}");
        }
    }

    #[test]
    fn grease_is_every_rfc_8701_value_and_nothing_else() {
        let all: Vec<u16> = (0..=u16::MAX).filter(|&v| is_grease(v)).collect();
        assert_eq!(all.len(), 16);
        assert_eq!(all[0], 0x0a0a);
        assert_eq!(all[15], 0xfafa);
    }
}

/// Hellos captured on loopback from the clients themselves (tests/data/tls,
/// README there): what each stack offers, as this reader sees it.
#[cfg(test)]
mod captured {
    use super::*;

    fn of(name: &str) -> Hello {
        let path = format!("{}/tests/data/tls/{name}.hello", env!("CARGO_MANIFEST_DIR"));
        match read(&std::fs::read(&path).unwrap()) {
            Read::Hello(h) => h,
            other => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn each_stack_offers_what_it_is_known_to() {
        let chromium = of("chromium");
        assert_eq!((chromium.grease, chromium.alpn, chromium.tls13), (Some(true), Alpn::H2, true));
        // Chromium's cipher suites hash as every published Chrome JA4 does.
        assert_eq!(&chromium.ja4.as_str()[..11], "t13d1517h2_");
        assert_eq!(&chromium.ja4.as_str()[11..23], "8daaf6152771");
        for name in ["firefox", "curl"] {
            let h = of(name);
            assert_eq!((h.grease, h.alpn, h.tls13), (Some(false), Alpn::H2, true), "{name}");
        }
        for name in ["requests", "httpx-h2", "aiohttp", "wget", "node"] {
            let h = of(name);
            assert_eq!((h.grease, h.alpn, h.tls13), (Some(false), Alpn::NotH2, true), "{name}");
        }
        assert_eq!(&of("wget").ja4.as_str()[8..10], "00");
    }

    #[test]
    fn a_captured_hello_is_read_whole_and_only_it() {
        for name in ["chromium", "firefox", "curl", "requests"] {
            let bytes = std::fs::read(format!("{}/tests/data/tls/{name}.hello", env!("CARGO_MANIFEST_DIR"))).unwrap();
            let whole = read(&bytes);
            for cut in [1, 5, bytes.len() / 2, bytes.len() - 1] {
                assert!(matches!(read(&bytes[..cut]), Read::Need(n) if n > cut), "{name} cut at {cut}");
            }
            let mut more = bytes.clone();
            more.extend_from_slice(&[0x14, 3, 3, 0, 1, 1]);
            assert_eq!(read(&more), whole, "{name}");
        }
    }
}
