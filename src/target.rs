//! Request-target normalisation: judge the path the origin will serve.
//!
//! robots.txt rules are compared byte for byte with the path and query, but a
//! static origin decodes and resolves the path before it opens a file. Without
//! this step `/%70rivate/doc.html`, `/blog/../private/doc.html`,
//! `//private/doc.html` and `/private%2fdoc.html` all pass `Disallow: /private/`
//! and reach `/private/doc.html`, and `/report.pd%66` passes `Disallow: /*.pdf$`.
//!
//! [`normalise`] turns the request-target into one canonical spelling of what a
//! decoding origin serves. The proxy judges that spelling **and forwards it**,
//! so the origin receives exactly what was judged. The rule behind every
//! choice below: never judge a reading more permissive than one the origin may
//! take; where no single reading is safe, reject (400).
//!
//! # How it decides
//!
//! * Forms (RFC 9112 3.2): origin-form `/path?query` is judged as is;
//!   absolute-form `http://host/path?q` (scheme `http` or `https`, any case) is
//!   judged and forwarded as its `/path?q` (an empty path is `/`); `*` is
//!   accepted for `OPTIONS` only ([`Target::Asterisk`]); `CONNECT` takes
//!   authority-form `host:port` only ([`Target::Authority`]). Anything else,
//!   including a query alone (`?a=b`) and an empty target, is a 400: it is not
//!   a valid request-target and origins reject it too.
//! * A fragment (`/a#x`) must not be sent (RFC 9110 7.1); origins ignore it,
//!   so it is dropped before judging and forwarding.
//! * Percent-encoded unreserved characters (`ALPHA DIGIT - . _ ~`) are decoded
//!   in path and query (RFC 9309 2.2.2, RFC 3986 6.2.2.2); the remaining escapes
//!   get upper-case hex (RFC 3986 6.2.2.1), the spelling robots.txt patterns
//!   are compiled to.
//! * Other escaped characters stay encoded (`%3F` is not `?`, `%25` is not `%`):
//!   decoding them would change where the path or query ends. Decoding happens
//!   once, so `%252e` is the file `%2e`, never `.`.
//! * Bytes 0x80 and above are percent-encoded with upper-case hex, as the
//!   robots.txt patterns are (robots.cc `MaybeEscapePattern`); invalid UTF-8
//!   stays as its bytes.
//! * `%2F` in the path, with [`EncodedSlash::Decode`] (the default), is a `/`:
//!   it is decoded before dot-segments are removed, as nginx does, so
//!   `/a%2f..%2fprivate/x` is judged as `/private/x`.
//!   [`EncodedSlash::Reject`] answers 400 instead, like Apache's
//!   `AllowEncodedSlashes Off`. In the query `%2F` stays encoded.
//! * Dot-segments (`.`, `..`, also spelled `%2e`) are removed from the path
//!   (RFC 3986 5.2.4), never from the query; `..` above the root stays at the
//!   root, so `/../private/x` is `/private/x`.
//! * With `merge_slashes` (the default, as in nginx) runs of `/` in the path
//!   become one; a trailing `/` is kept. The query is left alone.
//! * A `%` in the path not followed by two hex digits is a 400: nginx and
//!   Apache reject it, and any other reading would be a guess. In the query it
//!   is a literal `%`, written `%25` (the only RFC 3986 spelling of one):
//!   applications read both the same, and `?off=50%` is common enough that
//!   rejecting it would break sites.
//! * A NUL, raw or `%00`, anywhere is a 400: origins written in C cut the
//!   path there.
//! * A backslash in the path, raw or `%5C`, is a 400: IIS and other Windows
//!   origins treat it as `/`, the rest as a byte, so no one reading is safe.
//!   In the query it is data and stays.
//! * Raw space and control bytes are a 400 (they are not allowed in a
//!   request-target; the HTTP parser normally rejects them first).
//! * A target longer than `max_len` (default 8192 bytes, nginx's
//!   `large_client_header_buffers`) is a 414.
//!
//! Not covered: origins that fold case (IIS serves `/PRIVATE/` for
//! `/private/`), and servlet containers that strip `;params` from each segment
//! (Tomcat serves `/private/x` for `/private;a=b/x` and resolves `/..;/`).
//! Both need the site's rules written for them.
//!
//! # Cost
//!
//! One pass over the target decides whether it is already normal; that is the
//! common case and returns [`Cow::Borrowed`] without allocating. Otherwise one
//! more pass writes the normal form into a single buffer, at most three times
//! the input length (each raw byte ≥ 0x80 becomes `%XX`). Both passes are
//! linear; a `..` looks back for the previous `/` once, so the whole run stays
//! linear in the target's length, which `max_len` bounds.

use std::borrow::Cow;

/// How to read `%2F` in the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EncodedSlash {
    /// Judge and forward it as `/`, as origins that decode it serve it
    /// (nginx, most static servers).
    #[default]
    Decode,
    /// Answer 400, like Apache's `AllowEncodedSlashes Off`. Choose it when the
    /// origin rejects `%2F` anyway, or when it would route `a%2Fb` as one
    /// segment and forwarding `a/b` would change its meaning.
    Reject,
}

/// How the request-target is read; see the [module docs](self).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetOptions {
    /// Collapse runs of `/` in the path, like nginx's `merge_slashes on`
    /// (default `true`).
    pub merge_slashes: bool,
    /// How to read `%2F` in the path (default [`EncodedSlash::Decode`]).
    pub encoded_slash: EncodedSlash,
    /// The longest request-target accepted, in bytes (default 8192).
    pub max_len: usize,
}

impl Default for TargetOptions {
    fn default() -> TargetOptions {
        TargetOptions { merge_slashes: true, encoded_slash: EncodedSlash::Decode, max_len: 8192 }
    }
}

/// A request-target, read the way the proxy judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target<'a> {
    /// The normalised path and query (`/path?query`, always starting with
    /// `/`): what to judge with [`RobotsTxt::check`](crate::robots::RobotsTxt::check)
    /// and what to forward upstream. Borrowed when the target was already
    /// normal.
    Path(Cow<'a, [u8]>),
    /// `OPTIONS *`: about the server, not a resource; no rule applies.
    Asterisk,
    /// `CONNECT host:port`: a tunnel, not a resource; no rule applies.
    Authority,
}

/// Why a request-target is refused. Each maps to an HTTP status
/// ([`status`](Self::status)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// Longer than [`TargetOptions::max_len`].
    #[error("request-target is {len} bytes, longer than the {max} allowed")]
    TooLong {
        /// The target's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Not a form this proxy serves.
    #[error(
        "request-target must be `/path?query`, `http://host/path`, `*` with OPTIONS \
         or `host:port` with CONNECT"
    )]
    BadForm,
    /// A NUL byte, raw or `%00`.
    #[error("request-target contains a NUL byte (raw or %00)")]
    Nul,
    /// A `%` in the path not followed by two hex digits.
    #[error("`%` in the path is not followed by two hex digits")]
    BadEscape,
    /// `%2F` in the path, with [`EncodedSlash::Reject`].
    #[error("encoded slash (%2F) in the path is not allowed")]
    EncodedSlash,
    /// A backslash in the path, raw or `%5C`.
    #[error("backslash (raw or %5C) in the path is not allowed")]
    Backslash,
    /// A raw space or control byte.
    #[error("request-target contains the raw byte 0x{0:02X}")]
    Control(u8),
}

impl TargetError {
    /// The HTTP status to answer with: 414 for [`TooLong`](Self::TooLong),
    /// 400 for the rest.
    pub fn status(&self) -> u16 {
        match self {
            TargetError::TooLong { .. } => 414,
            _ => 400,
        }
    }
}

/// What the gate does with a request-target, before any policy: the one
/// reading the proxy and `robotgate replay` share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gatekeep<'a> {
    /// Judge this normalised path and query (and forward it).
    Judge(Cow<'a, [u8]>),
    /// Forward it unjudged: `OPTIONS *` names no resource.
    Pass,
    /// Refuse it with this status: CONNECT (a reverse proxy opens no
    /// tunnels), or a target with no safe reading.
    Refuse(u16, Cow<'static, str>),
}

/// [`normalise`], as the gate acts on it.
pub fn gatekeep<'a>(method: &[u8], target: &'a [u8], opts: &TargetOptions) -> Gatekeep<'a> {
    match normalise(method, target, opts) {
        Ok(Target::Path(t)) => Gatekeep::Judge(t),
        Ok(Target::Asterisk) => Gatekeep::Pass,
        Ok(Target::Authority) => Gatekeep::Refuse(405, "CONNECT is not served: this is a reverse proxy.".into()),
        Err(e) => Gatekeep::Refuse(e.status(), e.to_string().into()),
    }
}

/// Normalise a request-target for judging and forwarding.
///
/// `method` is the request method as sent (`b"GET"`; methods are
/// case-sensitive, RFC 9110 9.1). Only `OPTIONS` and `CONNECT` change how the
/// target is read. See the [module docs](self) for every rule.
///
/// # Errors
///
/// A [`TargetError`] when the target has no safe reading; answer it with
/// [`TargetError::status`].
///
/// # Example
///
/// ```
/// use robotgate::target::{normalise, Target, TargetOptions};
///
/// let opts = TargetOptions::default();
/// let t = normalise(b"GET", b"/blog/../%70rivate//doc.html?a=%7e", &opts).unwrap();
/// assert_eq!(t, Target::Path(b"/private/doc.html?a=~".as_slice().into()));
/// ```
pub fn normalise<'a>(method: &[u8], target: &'a [u8], opts: &TargetOptions) -> Result<Target<'a>, TargetError> {
    if target.len() > opts.max_len {
        return Err(TargetError::TooLong { len: target.len(), max: opts.max_len });
    }
    if method == b"CONNECT" {
        return authority_form(target);
    }
    if plain_path(target) {
        return Ok(Target::Path(Cow::Borrowed(target)));
    }
    read_target(method, target, opts)
}

/// [`normalise`] past its checks of length and method and its usual case.
fn read_target<'a>(method: &[u8], target: &'a [u8], opts: &TargetOptions) -> Result<Target<'a>, TargetError> {
    if target == b"*" {
        return if method == b"OPTIONS" { Ok(Target::Asterisk) } else { Err(TargetError::BadForm) };
    }
    let (pq, prefix_slash) = match target.first() {
        Some(b'/') => (target, false),
        _ => absolute_form(target)?,
    };
    // RFC 3986 3.5: the fragment starts at the first `#`.
    // 3.4: the query starts at the first `?` before it (a path is short: one
    // pass, a byte at a time, beats a vector search's set-up).
    let (pq, q) = match pq.iter().position(|&b| b == b'#' || b == b'?') {
        Some(i) if pq[i] == b'?' => {
            let end = pq[i..].iter().position(|&b| b == b'#').map_or(pq.len(), |h| i + h);
            (&pq[..end], i)
        }
        Some(h) => (&pq[..h], h),
        None => (pq, pq.len()),
    };
    let (path, query) = pq.split_at(q);
    let path_normal = scan_path(path, opts)?;
    let query_normal = scan_query(query)?;
    if path_normal && query_normal && !prefix_slash {
        return Ok(Target::Path(Cow::Borrowed(pq)));
    }
    let mut out = Vec::with_capacity(pq.len() + 8);
    if prefix_slash {
        out.push(b'/');
    } else {
        write_path(path, opts, &mut out);
    }
    write_query(query, &mut out);
    Ok(Target::Path(Cow::Owned(out)))
}

/// Normalise a robots.txt rule pattern to the spelling [`normalise`] gives
/// requests, so the two compare byte for byte.
///
/// robots.txt patterns keep Google's spelling (`escape_pattern`): a rule
/// written `Disallow: /%7Euser/` stays `%7E`, while `normalise` turns the
/// request `/%7Euser/x` into `/~user/x`; the rule would no longer match. This
/// applies the same per-character rules: unreserved escapes decoded, other
/// hex upper-cased, bytes ≥ 0x80 encoded, a stray `%` written `%25`, and
/// (with [`EncodedSlash::Decode`]) `%2F` before the first `?` decoded to `/`.
/// `*` and `$` stay operators; `%2A` and `%24` stay literal. Dot-segments and
/// slashes are left as written.
pub fn normalise_pattern<'a>(pattern: &'a [u8], opts: &TargetOptions) -> Cow<'a, [u8]> {
    let mut in_query = false;
    let mut i = 0;
    let mut out: Option<Vec<u8>> = None;
    while i < pattern.len() {
        let b = pattern[i];
        let (v, encoded, len) = match (b, hex2(pattern, i)) {
            (b'%', Some(b'/')) if !in_query && opts.encoded_slash == EncodedSlash::Decode => (b'/', false, 3),
            (b'%', Some(v)) => (v, true, 3),
            // A stray `%` is a literal one, spelled `%25` as in requests.
            (b'%', None) => (b'%', true, 1),
            (b, _) => {
                in_query |= b == b'?';
                (b, false, 1)
            }
        };
        let mut spelled = [0u8; 3];
        let n = spell(v, encoded, &mut spelled);
        if out.is_none() && spelled[..n] != pattern[i..i + len] {
            out = Some(pattern[..i].to_vec());
        }
        if let Some(o) = out.as_mut() {
            o.extend_from_slice(&spelled[..n]);
        }
        i += len;
    }
    match out {
        Some(o) => Cow::Owned(o),
        None => Cow::Borrowed(pattern),
    }
}

fn authority_form(target: &[u8]) -> Result<Target<'_>, TargetError> {
    if target.is_empty() || target.iter().any(|&b| matches!(b, b'/' | b'?' | b'#' | b'\\')) {
        return Err(TargetError::BadForm);
    }
    match target.iter().find(|&&b| b <= b' ' || b == 0x7F) {
        Some(0) => Err(TargetError::Nul),
        Some(&b) => Err(TargetError::Control(b)),
        None => Ok(Target::Authority),
    }
}

/// The path-and-query of an absolute-form target, and whether a `/` must be
/// put in front of it (`http://host?q`, `http://host`).
fn absolute_form(target: &[u8]) -> Result<(&[u8], bool), TargetError> {
    let colon = target.iter().position(|&b| b == b':').ok_or(TargetError::BadForm)?;
    let scheme = &target[..colon];
    if !(scheme.eq_ignore_ascii_case(b"http") || scheme.eq_ignore_ascii_case(b"https")) {
        return Err(TargetError::BadForm);
    }
    let rest = target[colon + 1..].strip_prefix(b"//").ok_or(TargetError::BadForm)?;
    let end = rest.iter().position(|&b| matches!(b, b'/' | b'?' | b'#')).unwrap_or(rest.len());
    // RFC 9110 4.2.1: an http URI with an empty host is invalid.
    if end == 0 {
        return Err(TargetError::BadForm);
    }
    let pq = &rest[end..];
    Ok((pq, pq.first() != Some(&b'/')))
}

/// Checks the path for errors; `true` when it is already normal.
/// Bytes of a path that [`scan_path`] has nothing to say about: printable
/// ASCII but `/`, `%` and `\`.
const PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0x21;
    while b < 0x7F {
        t[b] = !matches!(b as u8, b'/' | b'%' | b'\\');
        b += 1;
    }
    t
};

/// Whether `target` is the usual one, which every rule below leaves as it
/// is, found in one pass: `/`, then plain bytes ([`PLAIN`] but `?` and
/// `#`) and single slashes, no segment starting with a dot (no
/// dot-segment), no query. Anything else takes the full reading.
fn plain_path(target: &[u8]) -> bool {
    let Some((b'/', rest)) = target.split_first() else { return false };
    let mut after_slash = true;
    for &b in rest {
        if b == b'/' {
            if after_slash {
                return false;
            }
            after_slash = true;
        } else if PLAIN[usize::from(b)] && b != b'?' && b != b'#' && !(after_slash && b == b'.') {
            after_slash = false;
        } else {
            return false;
        }
    }
    true
}

fn scan_path(path: &[u8], opts: &TargetOptions) -> Result<bool, TargetError> {
    let mut normal = true;
    let mut seg_start = 0;
    let mut i = 0;
    while i < path.len() {
        // Most of a path is plain bytes: over them at a table look each.
        if PLAIN[usize::from(path[i])] {
            i += 1;
            continue;
        }
        match path[i] {
            b'/' => {
                if is_dot_segment(&path[seg_start..i]) || (opts.merge_slashes && i > 0 && path[i - 1] == b'/') {
                    normal = false;
                }
                seg_start = i + 1;
            }
            b'%' => {
                let v = hex2(path, i).ok_or(TargetError::BadEscape)?;
                match v {
                    0 => return Err(TargetError::Nul),
                    b'\\' => return Err(TargetError::Backslash),
                    b'/' if opts.encoded_slash == EncodedSlash::Reject => return Err(TargetError::EncodedSlash),
                    _ => {}
                }
                if v == b'/' || is_unreserved(v) || path[i + 1..i + 3].iter().any(u8::is_ascii_lowercase) {
                    normal = false;
                }
                i += 3;
                continue;
            }
            b'\\' => return Err(TargetError::Backslash),
            b => {
                check_raw(b)?;
                if b >= 0x80 {
                    normal = false;
                }
            }
        }
        i += 1;
    }
    Ok(normal && !is_dot_segment(&path[seg_start..]))
}

/// Checks the query (with its `?`, or empty) for errors; `true` when it is
/// already normal.
fn scan_query(query: &[u8]) -> Result<bool, TargetError> {
    let mut normal = true;
    let mut i = 0;
    while i < query.len() {
        let b = query[i];
        if b == b'%' {
            match hex2(query, i) {
                Some(0) => return Err(TargetError::Nul),
                Some(v) => {
                    if is_unreserved(v) || query[i + 1..i + 3].iter().any(u8::is_ascii_lowercase) {
                        normal = false;
                    }
                    i += 3;
                    continue;
                }
                // A stray `%` is rewritten as `%25`.
                None => normal = false,
            }
        } else {
            check_raw(b)?;
            if b >= 0x80 {
                normal = false;
            }
        }
        i += 1;
    }
    Ok(normal)
}

fn check_raw(b: u8) -> Result<(), TargetError> {
    match b {
        0 => Err(TargetError::Nul),
        0x01..=b' ' | 0x7F => Err(TargetError::Control(b)),
        _ => Ok(()),
    }
}

/// Writes the normal form of a path `scan_path` accepted: each segment is
/// spelled canonically, then RFC 3986 5.2.4 is applied segment by segment
/// against what is already written (a stack of `/segment` chunks).
fn write_path(path: &[u8], opts: &TargetOptions, out: &mut Vec<u8>) {
    let base = out.len();
    // path[0] is the `/` every origin-form path starts with.
    let mut seg = out.len();
    out.push(b'/');
    let mut i = 1;
    loop {
        if i == path.len() {
            end_segment(out, base, seg, true, opts.merge_slashes);
            break;
        }
        let (v, encoded, len) = match path[i] {
            b'%' => (hex2(path, i).expect("scan_path checked every escape"), true, 3),
            b => (b, false, 1),
        };
        i += len;
        // `%2F` reaching here means EncodedSlash::Decode: it is a separator.
        if v == b'/' {
            end_segment(out, base, seg, false, opts.merge_slashes);
            seg = out.len();
            out.push(b'/');
            continue;
        }
        let mut spelled = [0u8; 3];
        let n = spell(v, encoded, &mut spelled);
        out.extend_from_slice(&spelled[..n]);
    }
    if out.len() == base {
        out.push(b'/');
    }
}

/// Applies RFC 3986 5.2.4 to the segment written at `out[seg..]` (its `/`
/// included). A dot-segment that ends the path leaves a trailing `/`.
fn end_segment(out: &mut Vec<u8>, base: usize, seg: usize, last: bool, merge_slashes: bool) {
    let text = &out[seg + 1..];
    if text == b"." {
        out.truncate(seg);
    } else if text == b".." {
        out.truncate(seg);
        // Pop the previous segment; above the root there is nothing to pop.
        let prev = out[base..].iter().rposition(|&b| b == b'/').map_or(base, |p| base + p);
        out.truncate(prev);
    } else if text.is_empty() && merge_slashes && !last {
        out.truncate(seg);
        return;
    } else {
        return;
    }
    if last {
        out.push(b'/');
    }
}

fn write_query(query: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < query.len() {
        let (v, encoded, len) = match query[i] {
            b'%' => match hex2(query, i) {
                Some(v) => (v, true, 3),
                None => (b'%', true, 1),
            },
            b => (b, false, 1),
        };
        i += len;
        let mut spelled = [0u8; 3];
        let n = spell(v, encoded, &mut spelled);
        out.extend_from_slice(&spelled[..n]);
    }
}

/// The canonical spelling of one character: unreserved ones raw, others as
/// they came (`encoded`) except that bytes ≥ 0x80 are always encoded. Hex is
/// upper-case. Returns how many bytes of `buf` were written.
fn spell(v: u8, encoded: bool, buf: &mut [u8; 3]) -> usize {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    if is_unreserved(v) || !(encoded || v >= 0x80) {
        buf[0] = v;
        1
    } else {
        *buf = [b'%', HEX[usize::from(v >> 4)], HEX[usize::from(v & 0xF)]];
        3
    }
}

/// The byte `%XX` at `s[i..]` stands for, if `s[i + 1..i + 3]` are hex digits.
fn hex2(s: &[u8], i: usize) -> Option<u8> {
    let digit = |b: u8| (b as char).to_digit(16);
    let hi = digit(*s.get(i + 1)?)?;
    let lo = digit(*s.get(i + 2)?)?;
    u8::try_from(hi * 16 + lo).ok()
}

/// RFC 3986 2.3.
fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn is_dot_segment(seg: &[u8]) -> bool {
    seg == b"." || seg == b".."
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robots::RobotsTxt;

    const ROBOTS: &str = "User-agent: *\nDisallow: /private/\nDisallow: /*.pdf$\n";

    fn with(opts: &TargetOptions, target: &str) -> Result<String, TargetError> {
        match normalise(b"GET", target.as_bytes(), opts)? {
            Target::Path(p) => Ok(String::from_utf8(p.into_owned()).expect("output is ASCII")),
            other => panic!("{target}: {other:?}"),
        }
    }

    fn n(target: &str) -> Result<String, TargetError> {
        with(&TargetOptions::default(), target)
    }

    fn ok(target: &str) -> String {
        n(target).unwrap_or_else(|e| panic!("{target}: {e}"))
    }

    fn allowed(robots: &RobotsTxt, path: &[u8]) -> bool {
        robots.check(&robots.select(&["FooBot"]), path).allowed
    }

    #[test]
    fn evasions_are_judged_as_the_origin_serves_them() {
        let robots = RobotsTxt::compile(ROBOTS.as_bytes());
        for (evasion, served) in [
            ("/%70rivate/doc-1.html", "/private/doc-1.html"),
            ("/files/report-1.pd%66", "/files/report-1.pdf"),
            ("/blog/../private/doc-1.html", "/private/doc-1.html"),
            ("//private/doc-1.html", "/private/doc-1.html"),
            ("/private%2fdoc-1.html", "/private/doc-1.html"),
            ("/blog/%2e%2E/private/doc-1.html", "/private/doc-1.html"),
            ("/a%2f..%2fprivate/x", "/private/x"),
            ("/./private/x", "/private/x"),
            ("/../../private/x", "/private/x"),
        ] {
            // Raw, the evasion gets past the matcher; normalised, it does not.
            assert!(allowed(&robots, evasion.as_bytes()), "{evasion} was already caught");
            assert_eq!(ok(evasion), served, "{evasion}");
            assert!(!allowed(&robots, served.as_bytes()), "{served}");
        }
    }

    #[test]
    fn normal_targets_are_borrowed() {
        let opts = TargetOptions::default();
        for t in ["/", "/a/b.html", "/a/?q=1&b=%2F%3F", "/caf%C3%A9/", "/a.b/..c/...", "/a?x=/../&y=//"] {
            match normalise(b"GET", t.as_bytes(), &opts) {
                Ok(Target::Path(Cow::Borrowed(p))) => assert_eq!(p, t.as_bytes()),
                other => panic!("{t}: {other:?}"),
            }
        }
        // The fragment is cut off without copying.
        assert!(matches!(normalise(b"GET", b"/a#f", &opts), Ok(Target::Path(Cow::Borrowed(b"/a")))));
        assert!(matches!(normalise(b"GET", b"http://h/a?b", &opts), Ok(Target::Path(Cow::Borrowed(b"/a?b")))));
    }

    #[test]
    fn forms() {
        let opts = TargetOptions::default();
        assert_eq!(ok("http://example.com/p?q"), "/p?q");
        assert_eq!(ok("HTTPS://user@example.com:8443/%70"), "/p");
        assert_eq!(ok("http://example.com"), "/");
        assert_eq!(ok("http://example.com?q=1"), "/?q=1");
        assert_eq!(ok("http://example.com#top"), "/");
        for bad in ["ftp://h/p", "http:/p", "http:///p", "p", "?a=b", "", "*", "h:80", "http//h/p"] {
            assert_eq!(n(bad), Err(TargetError::BadForm), "{bad:?}");
        }
        assert_eq!(normalise(b"OPTIONS", b"*", &opts), Ok(Target::Asterisk));
        assert_eq!(normalise(b"OPTIONS", b"/a/../b", &opts), Ok(Target::Path(b"/b".as_slice().into())));
        // Methods are case-sensitive (RFC 9110 9.1).
        assert_eq!(normalise(b"options", b"*", &opts), Err(TargetError::BadForm));
        assert_eq!(normalise(b"CONNECT", b"example.com:443", &opts), Ok(Target::Authority));
        assert_eq!(normalise(b"CONNECT", b"/a", &opts), Err(TargetError::BadForm));
        assert_eq!(normalise(b"CONNECT", b"", &opts), Err(TargetError::BadForm));
        assert_eq!(normalise(b"CONNECT", b"h:1\0", &opts), Err(TargetError::Nul));
    }

    #[test]
    fn fragment_is_dropped() {
        assert_eq!(ok("/a#frag"), "/a");
        assert_eq!(ok("/a?b=1#frag?c"), "/a?b=1");
        assert_eq!(ok("/a#/../../private/"), "/a");
        // An encoded `#` is a character of the path.
        assert_eq!(ok("/a%23b"), "/a%23b");
    }

    #[test]
    fn length_limit() {
        let opts = TargetOptions { max_len: 8, ..TargetOptions::default() };
        assert!(with(&opts, "/1234567").is_ok());
        let e = with(&opts, "/12345678").unwrap_err();
        assert_eq!(e, TargetError::TooLong { len: 9, max: 8 });
        assert_eq!(e.status(), 414);
        assert_eq!(TargetError::BadEscape.status(), 400);
        assert_eq!(n(&format!("/{}", "a".repeat(8191))).map(|s| s.len()), Ok(8192));
        // The output may grow past max_len: each raw byte >= 0x80 becomes three.
        let long = "é".repeat(4000);
        assert_eq!(n(&format!("/{long}")).map(|s| s.len()), Ok(1 + 4000 * 6));
    }

    #[test]
    fn escapes() {
        // Unreserved characters are decoded everywhere (RFC 9309 2.2.2).
        assert_eq!(ok("/%41%7a%30%2D%2e%5F%7E?%41=%7e"), "/Az0-._~?A=~");
        // Other escapes stay, with upper-case hex (RFC 3986 6.2.2.1).
        assert_eq!(ok("/a%3fb%3Ac%2a%24?x=%2f%3d%26"), "/a%3Fb%3Ac%2A%24?x=%2F%3D%26");
        // Decoding happens once.
        assert_eq!(ok("/%252e%252E/%2570rivate"), "/%252e%252E/%2570rivate");
        // Non-ASCII and invalid UTF-8 become upper-case escapes.
        assert_eq!(ok("/café"), "/caf%C3%A9");
        assert_eq!(ok("/caf%c3%a9?q=é"), "/caf%C3%A9?q=%C3%A9");
        let raw = normalise(b"GET", b"/\xff\xfe?\x80", &TargetOptions::default()).unwrap();
        assert_eq!(raw, Target::Path(b"/%FF%FE?%80".as_slice().into()));
    }

    #[test]
    fn stray_percent() {
        for bad in ["/100%", "/%zz", "/%4", "/a%g1/b", "/%%70"] {
            assert_eq!(n(bad), Err(TargetError::BadEscape), "{bad}");
        }
        assert_eq!(ok("/a?off=50%"), "/a?off=50%25");
        assert_eq!(ok("/a?x=%zz&y=%%37%30"), "/a?x=%25zz&y=%2570");
    }

    #[test]
    fn nul_backslash_and_control_bytes() {
        for (t, e) in [
            ("/a%00.html", TargetError::Nul),
            ("/a?b=%00", TargetError::Nul),
            ("/a\0", TargetError::Nul),
            ("/a?\0", TargetError::Nul),
            ("/a\\private", TargetError::Backslash),
            ("/a%5cprivate", TargetError::Backslash),
            ("/a%5C..%5Cprivate", TargetError::Backslash),
            ("/a b", TargetError::Control(b' ')),
            ("/a?b\tc", TargetError::Control(b'\t')),
            ("/a\x7f", TargetError::Control(0x7F)),
        ] {
            assert_eq!(n(t), Err(e), "{t:?}");
            assert!(!e.to_string().is_empty());
        }
        // In the query a backslash is data.
        assert_eq!(ok("/a?p=C:\\x%5c"), "/a?p=C:\\x%5C");
    }

    #[test]
    fn dot_segments_in_the_path_only() {
        assert_eq!(ok("/a/b/../c/./d"), "/a/c/d");
        assert_eq!(ok("/a/b/.."), "/a/");
        assert_eq!(ok("/a/b/."), "/a/b/");
        assert_eq!(ok("/.."), "/");
        assert_eq!(ok("/."), "/");
        assert_eq!(ok("/a/.%2E/%2e"), "/");
        // Not dot-segments.
        assert_eq!(ok("/a/.../..b/b../.c"), "/a/.../..b/b../.c");
        assert_eq!(ok("/a/%252e%252e/b"), "/a/%252e%252e/b");
        // The query is data.
        assert_eq!(ok("/a/?next=/b/../private/"), "/a/?next=/b/../private/");
        assert_eq!(ok("/a/..?x/../y"), "/?x/../y");
    }

    #[test]
    fn slashes() {
        assert_eq!(ok("//a///b//"), "/a/b/");
        assert_eq!(ok("/a?x=//y"), "/a?x=//y");
        let keep = TargetOptions { merge_slashes: false, ..TargetOptions::default() };
        assert_eq!(with(&keep, "//a//b/"), Ok("//a//b/".into()));
        assert_eq!(with(&keep, "/a//../b"), Ok("/a/b".into()));
        assert_eq!(with(&keep, "/a/%2F/b"), Ok("/a///b".into()));
    }

    #[test]
    fn encoded_slash() {
        // Decoded before dot-segments are removed, as nginx does.
        assert_eq!(ok("/a%2F..%2Fprivate/x"), "/private/x");
        assert_eq!(ok("/a%2f%2f%2fb"), "/a/b");
        assert_eq!(ok("/a?b=%2f"), "/a?b=%2F");
        let reject = TargetOptions { encoded_slash: EncodedSlash::Reject, ..TargetOptions::default() };
        assert_eq!(with(&reject, "/private%2fdoc.html"), Err(TargetError::EncodedSlash));
        assert_eq!(with(&reject, "/a?b=%2F"), Ok("/a?b=%2F".into()));
    }

    #[test]
    fn output_is_what_check_compares() {
        // check() re-escapes its input like the patterns; normal output is a fixed point.
        for t in ["/caf%c3%a9", "/é?é", "/a?b=50%", "/%7e%2f"] {
            let out = ok(t);
            assert_eq!(&*crate::robots::parse::escape_pattern(out.as_bytes()), out.as_bytes(), "{t}");
        }
        let robots = RobotsTxt::compile("User-agent: *\nDisallow: /café\nDisallow: /*?print\n".as_bytes());
        for t in ["/caf%c3%a9", "/caf%C3%A9/x", "/café", "/a?%70rint=1"] {
            assert!(!allowed(&robots, ok(t).as_bytes()), "{t}");
        }
        assert!(allowed(&robots, ok("/robots%2etxt").as_bytes()));
    }

    #[test]
    fn patterns_normalised_the_same_way_match() {
        let opts = TargetOptions::default();
        let p = |s: &str| String::from_utf8(normalise_pattern(s.as_bytes(), &opts).into_owned()).unwrap();
        assert_eq!(p("/%7Euser/"), "/~user/");
        assert_eq!(p("/caf%c3%a9*$"), "/caf%C3%A9*$");
        assert_eq!(p("/café"), "/caf%C3%A9");
        assert_eq!(p("/a%2fb?c=%2f"), "/a/b?c=%2F");
        assert_eq!(p("/*?off=50%$"), "/*?off=50%25$");
        assert_eq!(p("/%2A%24"), "/%2A%24");
        assert!(matches!(normalise_pattern(b"/private/*.pdf$", &opts), Cow::Borrowed(_)));
        let reject = TargetOptions { encoded_slash: EncodedSlash::Reject, ..TargetOptions::default() };
        assert_eq!(&*normalise_pattern(b"/a%2fb", &reject), b"/a%2Fb");

        let rules = ["/%7Euser/", "/a%2fb", "/*?off=50%$", "/caf%c3%a9"];
        let body: String = rules.iter().map(|r| format!("Disallow: {}\n", p(r))).collect();
        let robots = RobotsTxt::compile(format!("User-agent: *\n{body}").as_bytes());
        for t in ["/~user/x", "/%7euser/x", "/a/b", "/a%2Fb", "/x?off=50%", "/x?off=50%25", "/café/"] {
            assert!(!allowed(&robots, ok(t).as_bytes()), "{t}");
        }
    }

    #[test]
    fn idempotent_on_examples() {
        for t in ["/a/../b/%2e/c//", "/%70?%7e%zz%", "/a%2f..", "/é", "http://h?%41"] {
            let once = ok(t);
            assert_eq!(ok(&once), once, "{t}");
        }
    }

    /// An independent model of a decoding static-file origin: tokenise into
    /// characters (remembering which were escaped), split into segments at
    /// every `/` (escaped too, under `Decode`), resolve dot-segments with a
    /// stack, then spell each character canonically. `None`: rejected.
    fn model(target: &[u8], opts: &TargetOptions) -> Option<Vec<u8>> {
        let target = &target[..target.iter().position(|&b| b == b'#').unwrap_or(target.len())];
        let q = target.iter().position(|&b| b == b'?').unwrap_or(target.len());
        let tokens = |s: &[u8], stray_ok: bool| -> Option<Vec<(u8, bool)>> {
            let mut v = Vec::new();
            let mut i = 0;
            while i < s.len() {
                let hex = s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
                match (s[i], hex) {
                    (b'%', Some(x)) if s[i + 1] != b'+' => {
                        v.push((x, true));
                        i += 3;
                    }
                    (b'%', _) if !stray_ok => return None,
                    (b'%', _) => {
                        v.push((b'%', true));
                        i += 1;
                    }
                    (b, _) => {
                        v.push((b, false));
                        i += 1;
                    }
                }
            }
            let bad = v.iter().any(|&(b, enc)| b == 0 || (!enc && (b <= b' ' || b == 0x7F)));
            (!bad).then_some(v)
        };
        let spell = |out: &mut Vec<u8>, (b, enc): (u8, bool)| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || !(enc || b >= 0x80) {
                out.push(b);
            } else {
                out.extend_from_slice(format!("%{b:02X}").as_bytes());
            }
        };
        let path = tokens(&target[..q], false)?;
        if path.iter().any(|&(b, enc)| b == b'\\' || (enc && b == b'/' && opts.encoded_slash == EncodedSlash::Reject)) {
            return None;
        }
        let segments: Vec<&[(u8, bool)]> = path.split(|&(b, _)| b == b'/').skip(1).collect();
        let mut stack: Vec<&[(u8, bool)]> = Vec::new();
        for (k, seg) in segments.iter().enumerate() {
            let last = k + 1 == segments.len();
            let text: Vec<u8> = seg.iter().map(|t| t.0).collect();
            if text == b"." || text == b".." {
                if text == b".." {
                    stack.pop();
                }
                if last {
                    stack.push(&[]);
                }
            } else if !(seg.is_empty() && opts.merge_slashes && !last) {
                stack.push(seg);
            }
        }
        let mut out = Vec::new();
        for seg in &stack {
            out.push(b'/');
            seg.iter().for_each(|&t| spell(&mut out, t));
        }
        if out.is_empty() {
            out.push(b'/');
        }
        tokens(&target[q..], true)?.into_iter().for_each(|t| spell(&mut out, t));
        Some(out)
    }

    const PIECES: &[&[u8]] = &[
        b"a",
        b"private",
        b".",
        b"..",
        b"",
        b"%2e",
        b"%2E",
        b"%2e%2E",
        b"%2f",
        b"%2F",
        b"%70",
        b"%7E",
        b"%7e",
        b"~",
        b"%",
        b"%zz",
        b"%4",
        b"\xc3\xa9",
        b"%C3%A9",
        b"%c3%a9",
        b"\xff",
        b"?",
        b"$",
        b"*",
        b"#",
        b"%00",
        b"\\",
        b"%5c",
        b"%25",
        b"%252e",
        b"%3F",
        b"%3a",
        b"=",
        b"%20",
        b".pdf",
        b"%2B",
    ];

    fn build(prefix: usize, parts: &[(usize, bool)]) -> Vec<u8> {
        let mut t = [&b""[..], b"http://h", b"HTTPS://u@h:80"][prefix].to_vec();
        t.push(b'/');
        for &(p, slash) in parts {
            t.extend_from_slice(PIECES[p]);
            if slash {
                t.push(b'/');
            }
        }
        t
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]

        /// The usual case, taken in one pass, is what the full reading
        /// gives: the target as it is.
        #[test]
        fn a_plain_path_is_what_the_full_reading_leaves_alone(
            target in proptest::collection::vec(proptest::sample::select(
                &b"/.a?#%\\ ~\x7f\x80:;"[..]), 0..12),
            merge in proptest::bool::ANY,
        ) {
            let opts = TargetOptions { merge_slashes: merge, ..TargetOptions::default() };
            if plain_path(&target) {
                let full = read_target(b"GET", &target, &opts);
                proptest::prop_assert_eq!(full, Ok(Target::Path(Cow::Borrowed(&target[..]))));
            }
        }

        #[test]
        fn agrees_with_the_origin_model(
            prefix in 0..3usize,
            parts in proptest::collection::vec((0..PIECES.len(), proptest::bool::ANY), 0..12),
            merge_slashes in proptest::bool::ANY,
            reject in proptest::bool::ANY,
        ) {
            let encoded_slash = if reject { EncodedSlash::Reject } else { EncodedSlash::Decode };
            let opts = TargetOptions { merge_slashes, encoded_slash, ..TargetOptions::default() };
            let target = build(prefix, &parts);
            let got = normalise(b"GET", &target, &opts);
            let origin = target.strip_prefix(&b"http://h"[..]).or(target.strip_prefix(&b"HTTPS://u@h:80"[..]));
            let want = model(origin.unwrap_or(&target), &opts);
            match (&got, &want) {
                (Ok(Target::Path(p)), Some(w)) => {
                    proptest::prop_assert_eq!(&**p, &w[..], "{:?}", String::from_utf8_lossy(&target));
                    // Idempotent, and a fixed point of the matcher's own escaping.
                    let again = normalise(b"GET", p, &opts);
                    proptest::prop_assert_eq!(again, Ok(Target::Path(Cow::Borrowed(&**p))));
                    proptest::prop_assert_eq!(&*crate::robots::parse::escape_pattern(p), &**p);
                }
                (Err(_), None) => {}
                _ => proptest::prop_assert!(false, "{:?}: {:?} vs model {:?}", String::from_utf8_lossy(&target), got, want),
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(method in 0..3usize, target in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let method = [&b"GET"[..], b"OPTIONS", b"CONNECT"][method];
            let opts = TargetOptions { max_len: 48, ..TargetOptions::default() };
            if let Ok(Target::Path(p)) = normalise(method, &target, &opts) {
                let big = TargetOptions::default();
                proptest::prop_assert_eq!(normalise(b"GET", &p, &big), Ok(Target::Path(Cow::Borrowed(&*p))));
            }
        }
    }
}
