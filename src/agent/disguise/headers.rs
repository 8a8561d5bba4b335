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

/// What a request presented (the first value of each header; borrowed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Presented<'r> {
    /// `Accept-Language`.
    pub accept_language: Option<&'r str>,
    /// `Accept-Encoding`.
    pub accept_encoding: Option<&'r str>,
    /// `Sec-Fetch-Site`.
    pub sec_fetch_site: Option<&'r str>,
    /// `Sec-Fetch-Mode`.
    pub sec_fetch_mode: Option<&'r str>,
    /// `Sec-Fetch-Dest`.
    pub sec_fetch_dest: Option<&'r str>,
    /// `Sec-CH-UA`.
    pub sec_ch_ua: Option<&'r str>,
    /// `Sec-CH-UA-Mobile`.
    pub sec_ch_ua_mobile: Option<&'r str>,
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

/// `Sec-Fetch-Site`'s values (Fetch Metadata §2.4).
const SITES: &[&str] = &["cross-site", "same-origin", "same-site", "none"];
/// `Sec-Fetch-Mode`'s values (Fetch §2.2.5 request mode).
const MODES: &[&str] = &["cors", "navigate", "no-cors", "same-origin", "websocket"];

impl<'r> Presented<'r> {
    /// Note header `name` (lower case) with `value`, keeping the first of
    /// each.
    pub fn note(&mut self, name: &str, value: &'r str) {
        self.note_with(name, || Some(value));
    }

    /// [`Presented::note`], with the value read (as text, `None` if it is
    /// not) only when `name` is one kept: one look at the name a header.
    pub fn note_with(&mut self, name: &str, value: impl FnOnce() -> Option<&'r str>) {
        let slot = match name {
            "accept-language" => &mut self.accept_language,
            "accept-encoding" => &mut self.accept_encoding,
            "sec-fetch-site" => &mut self.sec_fetch_site,
            "sec-fetch-mode" => &mut self.sec_fetch_mode,
            "sec-fetch-dest" => &mut self.sec_fetch_dest,
            "sec-ch-ua" => &mut self.sec_ch_ua,
            "sec-ch-ua-mobile" => &mut self.sec_ch_ua_mobile,
            "via" | "x-bluecoat-via" | "x-proxy-id" => {
                self.intermediary = true;
                return;
            }
            _ => return,
        };
        if slot.is_none() {
            *slot = value();
        }
    }

    /// Like [`Presented::note`] for a name in any case.
    pub fn note_any_case(&mut self, name: &str, value: &'r str) {
        if name.bytes().any(|b| b.is_ascii_uppercase()) {
            if let Some(lower) = PRESENTED_HEADERS.iter().find(|n| n.eq_ignore_ascii_case(name)) {
                self.note(lower, value);
            }
        } else {
            self.note(name, value);
        }
    }

    /// How much Fetch Metadata it carried.
    pub fn fetch_metadata(&self) -> Fetch {
        let parts = [self.sec_fetch_site, self.sec_fetch_mode, self.sec_fetch_dest];
        match parts.iter().filter(|p| p.is_some()).count() {
            0 => Fetch::None,
            3 if self.sec_fetch_site.is_some_and(|v| SITES.contains(&v.trim()))
                && self.sec_fetch_mode.is_some_and(|v| MODES.contains(&v.trim()))
                && self.sec_fetch_dest.is_some_and(|v| token(v.trim())) =>
            {
                Fetch::Whole
            }
            _ => Fetch::Partial,
        }
    }

    /// Whether `Sec-CH-UA-Mobile` says the opposite of the User-Agent.
    pub fn mobile_contradicts(&self, ua_mobile: bool) -> bool {
        match self.sec_ch_ua_mobile.map(str::trim) {
            Some("?1") => !ua_mobile,
            Some("?0") => ua_mobile,
            _ => false,
        }
    }

    /// Whether `Accept-Encoding` offers `br` or `zstd`.
    pub fn offers_br_or_zstd(&self) -> bool {
        self.accept_encoding.is_some_and(|v| {
            v.split(',')
                .map(|c| c.split(';').next().unwrap_or("").trim())
                .any(|c| c.eq_ignore_ascii_case("br") || c.eq_ignore_ascii_case("zstd"))
        })
    }
}

/// A `Sec-Fetch-Dest` value: a lower-case token (the list grows with the
/// platform: `document`, `iframe`, `image`, `script`, `webidentity`…).
fn token(v: &str) -> bool {
    !v.is_empty() && v.len() <= 32 && v.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
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

/// The brands of a `Sec-CH-UA` value; `None` when it is not a list of
/// quoted brands each with a quoted `v` parameter (RFC 8941 §3.1, §4.2;
/// GREASE brands hold `;`, `=`, `(` and such inside their quotes), or has
/// more than 8 members (no browser sends more than 4).
pub fn brands(value: &str) -> Option<Brands> {
    let b = value.as_bytes();
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
