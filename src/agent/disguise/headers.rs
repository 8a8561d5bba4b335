//! The headers of a request that a claimed browser is judged by, as the
//! host read them, and the readers of their values.

/// The lower-case names of the headers [`Presented`] reads (hosts that
/// gather only named headers fetch these).
pub const PRESENTED_HEADERS: [&str; 10] = [
    "accept-language",
    "accept-encoding",
    "sec-fetch-site",
    "sec-fetch-mode",
    "sec-fetch-dest",
    "sec-ch-ua",
    "sec-ch-ua-mobile",
    "via",
    "x-bluecoat-via",
    "x-proxy-id",
];

/// What a request presented (the first value of each header, its bytes as
/// sent; borrowed). A value is compared with the bytes browsers send and
/// never read as text: one no browser sends (obs-text, a control byte)
/// matches nothing, and the hosts' headers need no UTF-8 check (issue #67's
/// cost: `HeaderValue::to_str` was 440 instructions a browser's request).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Presented<'r> {
    /// `Accept-Language`.
    pub accept_language: Option<&'r [u8]>,
    /// `Accept-Encoding`.
    pub accept_encoding: Option<&'r [u8]>,
    /// `Sec-Fetch-Site`.
    pub sec_fetch_site: Option<&'r [u8]>,
    /// `Sec-Fetch-Mode`.
    pub sec_fetch_mode: Option<&'r [u8]>,
    /// `Sec-Fetch-Dest`.
    pub sec_fetch_dest: Option<&'r [u8]>,
    /// `Sec-CH-UA`.
    pub sec_ch_ua: Option<&'r [u8]>,
    /// `Sec-CH-UA-Mobile`.
    pub sec_ch_ua_mobile: Option<&'r [u8]>,
    /// The request names a forward proxy on the client's side (`Via`, which
    /// RFC 9110 §7.6.3 asks every proxy to add; `X-BlueCoat-Via`,
    /// `X-Proxy-ID`): headers may have been rewritten on the way. Not
    /// `Forwarded` or `X-Forwarded-For`: the operator's own balancers and
    /// edges add those.
    pub intermediary: bool,
}

/// How much Fetch Metadata a request carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetch {
    /// None of `Sec-Fetch-Site`, `-Mode`, `-Dest`.
    None,
    /// Some, or one with a value no browser sends.
    Partial,
    /// All three, each a value the specification defines.
    Whole,
}

/// Whether `v` is one of `Sec-Fetch-Site`'s values (Fetch Metadata §2.4).
fn site(v: &[u8]) -> bool {
    // By length, then inline (as header names are read in `note`).
    match v.len() {
        4 => is(v, b"none"),
        9 => is(v, b"same-site"),
        10 => is(v, b"cross-site"),
        11 => is(v, b"same-origin"),
        _ => false,
    }
}

/// Whether `v` is one of `Sec-Fetch-Mode`'s values (Fetch §2.2.5, a
/// request's mode).
fn mode(v: &[u8]) -> bool {
    match v.len() {
        4 => is(v, b"cors"),
        7 => is(v, b"no-cors"),
        8 => is(v, b"navigate"),
        9 => is(v, b"websocket"),
        11 => is(v, b"same-origin"),
        _ => false,
    }
}

impl<'r> Presented<'r> {
    /// Note header `name` (lower case) with `value`, keeping the first of
    /// each: one look at the name a header.
    pub fn note<V: AsRef<[u8]> + ?Sized>(&mut self, n: &[u8], value: &'r V) {
        // By length first, then compared as arrays of that length: each name
        // of a request is one jump and at most four inline compares, not a
        // `memcmp` call per name of the same length (issue #67's cost: 745
        // instructions a browser's request, as a `match` on strings).
        let slot = match n.len() {
            3 if is(n, b"via") => None,
            9 if is(n, b"sec-ch-ua") => Some(&mut self.sec_ch_ua),
            10 if is(n, b"x-proxy-id") => None,
            14 if is(n, b"sec-fetch-site") => Some(&mut self.sec_fetch_site),
            14 if is(n, b"sec-fetch-mode") => Some(&mut self.sec_fetch_mode),
            14 if is(n, b"sec-fetch-dest") => Some(&mut self.sec_fetch_dest),
            14 if is(n, b"x-bluecoat-via") => None,
            15 if is(n, b"accept-language") => Some(&mut self.accept_language),
            15 if is(n, b"accept-encoding") => Some(&mut self.accept_encoding),
            16 if is(n, b"sec-ch-ua-mobile") => Some(&mut self.sec_ch_ua_mobile),
            _ => return,
        };
        let Some(slot) = slot else {
            self.intermediary = true;
            return;
        };
        if slot.is_none() {
            *slot = Some(value.as_ref());
        }
    }

    /// Like [`Presented::note`] for a name in any case, as bytes (an HTTP/1
    /// host keeps the client's case). A name longer than any read is
    /// passed over unread; a shorter one is lowered on the stack: no UTF-8
    /// check and no search (issue #69's cost: reading a browser's headers
    /// as text was 5,700 instructions a request inside Envoy).
    pub fn note_any_case<V: AsRef<[u8]> + ?Sized>(&mut self, name: &[u8], value: &'r V) {
        const LONGEST: usize = 16;
        if name.len() > LONGEST {
            return;
        }
        let mut lower = [0u8; LONGEST];
        let lower = &mut lower[..name.len()];
        for (l, b) in lower.iter_mut().zip(name) {
            *l = b.to_ascii_lowercase();
        }
        self.note(lower, value);
    }

    /// How much Fetch Metadata it carried.
    pub fn fetch_metadata(&self) -> Fetch {
        match (self.sec_fetch_site, self.sec_fetch_mode, self.sec_fetch_dest) {
            (None, None, None) => Fetch::None,
            (Some(site), Some(mode), Some(dest))
                if self::site(ows(site)) && self::mode(ows(mode)) && dest_token(ows(dest)) =>
            {
                Fetch::Whole
            }
            _ => Fetch::Partial,
        }
    }

    /// Whether `Sec-CH-UA-Mobile` says the opposite of the User-Agent.
    pub fn mobile_contradicts(&self, ua_mobile: bool) -> bool {
        match self.sec_ch_ua_mobile.map(ows) {
            Some(b"?1") => !ua_mobile,
            Some(b"?0") => ua_mobile,
            _ => false,
        }
    }

    /// Whether `Accept-Encoding` offers `br` or `zstd`.
    pub fn offers_br_or_zstd(&self) -> bool {
        self.accept_encoding.is_some_and(|v| {
            v.split(|&b| b == b',')
                .map(|c| c.split(|&b| b == b';').next().unwrap_or(b"").trim_ascii())
                .any(|c| c.eq_ignore_ascii_case(b"br") || c.eq_ignore_ascii_case(b"zstd"))
        })
    }
}

/// Whether `n` is `name`: a compare of `N` bytes the compiler does inline.
#[inline(always)]
fn is<const N: usize>(n: &[u8], name: &[u8; N]) -> bool {
    <&[u8; N]>::try_from(n).is_ok_and(|n| n == name)
}

/// `v` without the optional whitespace around it (RFC 9110 §5.6.3; ASCII
/// only: a `str::trim` of Unicode's was most of `fetch_metadata`'s cost).
/// A look at each end first: most hosts hand values over trimmed.
#[inline]
fn ows(v: &[u8]) -> &[u8] {
    match (v.first(), v.last()) {
        (Some(b' ' | b'\t'), _) | (_, Some(b' ' | b'\t')) => v.trim_ascii(),
        _ => v,
    }
}

/// A `Sec-Fetch-Dest` value: a lower-case token (the list grows with the
/// platform: `document`, `iframe`, `image`, `script`, `webidentity`…);
/// a navigation's `document` at a glance.
fn dest_token(v: &[u8]) -> bool {
    is(v, b"document") || token(v)
}

/// A lower-case token of at most 32 bytes.
fn token(v: &[u8]) -> bool {
    !v.is_empty() && v.len() <= 32 && v.iter().all(|&b| b.is_ascii_lowercase() || b == b'-')
}

/// `Sec-CH-UA`'s brands, read as the structured-field list it is (RFC 8941
/// §3.1: `"Brand";v="major"` members, comma separated).
#[derive(Debug, Clone, Copy, Default)]
pub struct Brands {
    /// Some brand's version (besides the GREASE one) is this major.
    majors: [u32; 4],
    count: usize,
}

impl Brands {
    /// Whether some brand's major version is `major` (0: not read, any).
    pub fn matches(&self, major: u32) -> bool {
        major == 0 || self.majors[..self.count.min(4)].contains(&major)
    }
}

/// `Sec-CH-UA` as [`judge`](super::judge) reads it: what a request sent,
/// parsed once ([`Hints::of`]) and kept where the same value comes again
/// (the classifier's memo keeps it beside a User-Agent's claim: a browser
/// sends the same value on every request).
#[derive(Debug, Clone, Copy)]
pub enum Hints {
    /// No `Sec-CH-UA`.
    Absent,
    /// One that is not a list of brands ([`brands`] gave `None`).
    Malformed,
    /// One read as these brands.
    Read(Brands),
}

impl Hints {
    /// The reading of `Sec-CH-UA` `value`, if the request sent one.
    pub fn of(value: Option<&[u8]>) -> Hints {
        match value {
            None => Hints::Absent,
            Some(v) => brands(v).map_or(Hints::Malformed, Hints::Read),
        }
    }
}

/// The brands of a `Sec-CH-UA` value; `None` when it is not a list of
/// quoted brands each with a quoted `v` parameter (RFC 8941 §3.1, §4.2;
/// GREASE brands hold `;`, `=`, `(` and such inside their quotes), or has
/// more than 8 members (no browser sends more than 4).
pub fn brands(b: &[u8]) -> Option<Brands> {
    let mut out = Brands::default();
    let (mut i, mut members) = (0, 0);
    let ows = |i: &mut usize| {
        while *i < b.len() && (b[*i] == b' ' || b[*i] == b'\t') {
            *i += 1;
        }
    };
    loop {
        ows(&mut i);
        members += 1;
        if members > 8 {
            return None;
        }
        string(b, &mut i)?;
        let mut major = None;
        while b.get(i) == Some(&b';') {
            i += 1;
            ows(&mut i);
            let key = i;
            while i < b.len() && (b[i].is_ascii_lowercase() || b[i].is_ascii_digit() || b"_-.*".contains(&b[i])) {
                i += 1;
            }
            let key = &b[key..i];
            if key.is_empty() || b.get(i) != Some(&b'=') {
                return None;
            }
            i += 1;
            let v = string(b, &mut i)?;
            if key == b"v" {
                let m = v.split(|&c| c == b'.').next().unwrap_or(b"");
                if m.is_empty() || m.len() > 6 || !m.iter().all(u8::is_ascii_digit) {
                    return None;
                }
                major = Some(m.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0')));
            }
        }
        let major = major?;
        if out.count < 4 {
            out.majors[out.count] = major;
            out.count += 1;
        }
        ows(&mut i);
        match b.get(i) {
            None => return Some(out),
            Some(b',') => i += 1,
            Some(_) => return None,
        }
    }
}

/// An RFC 8941 string at `b[*i..]`, its content returned and `*i` moved
/// past it: quoted, printable ASCII, `\"` and `\\` escaped.
fn string<'b>(b: &'b [u8], i: &mut usize) -> Option<&'b [u8]> {
    if b.get(*i) != Some(&b'"') {
        return None;
    }
    let start = *i + 1;
    let mut j = start;
    loop {
        match *b.get(j)? {
            b'"' => break,
            b'\\' if matches!(b.get(j + 1), Some(b'"' | b'\\')) => j += 2,
            c if (0x20..0x7f).contains(&c) && c != b'\\' => j += 1,
            _ => return None,
        }
    }
    *i = j + 1;
    Some(&b[start..j])
}
