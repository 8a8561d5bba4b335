//! A request as the pipeline reads it: its headers, its client, its host.

use std::net::IpAddr;

use ngx::http;

use robotgate::agent::disguise::Presented;
use robotgate::pipeline::{Header, Headers};

/// A request's headers, as the pipeline reads them: the ones it asks for
/// found in one pass over nginx's list.
pub(crate) struct Fields<'r> {
    request: &'r http::Request,
    /// The `User-Agent` fields (two are one too many: the pipeline refuses them).
    user_agents: [Option<&'r [u8]>; 2],
    /// `Signature-Input` is present.
    signed: bool,
    /// `X-Forwarded-For` or `Forwarded` is present (for the crowd check:
    /// their values are realip's to read, never the pipeline's).
    forwarded: bool,
}

impl<'r> Fields<'r> {
    pub(crate) fn of(request: &'r http::Request) -> Fields<'r> {
        let mut f = Fields { request, user_agents: [None, None], signed: false, forwarded: false };
        for (k, v) in request.headers_in_iterator() {
            let k = k.as_bytes();
            if k.eq_ignore_ascii_case(b"user-agent") {
                let slot = if f.user_agents[0].is_none() { 0 } else { 1 };
                f.user_agents[slot] = Some(v.as_bytes());
            } else if k.eq_ignore_ascii_case(b"signature-input") {
                f.signed = true;
            } else if k.eq_ignore_ascii_case(b"x-forwarded-for") || k.eq_ignore_ascii_case(b"forwarded") {
                f.forwarded = true;
            }
        }
        f
    }
}

impl<'r> Headers<'r> for Fields<'r> {
    fn each(&self, header: Header, each: &mut dyn FnMut(&'r [u8])) {
        match header {
            Header::UserAgent => self.user_agents.iter().flatten().for_each(|v| each(v)),
            Header::SignatureInput if self.signed => {
                for (k, v) in self.request.headers_in_iterator() {
                    if k.as_bytes().eq_ignore_ascii_case(b"signature-input") {
                        each(v.as_bytes());
                    }
                }
            }
            // The client address is nginx's (realip): the pipeline reads no
            // forwarding header here.
            _ => {}
        }
    }

    fn has(&self, header: Header) -> bool {
        match header {
            Header::UserAgent => self.user_agents[0].is_some(),
            Header::SignatureInput => self.signed,
            Header::XForwardedFor | Header::Forwarded => self.forwarded,
            Header::XRealIp => false,
        }
    }

    fn text(&self, each: &mut dyn FnMut(&'r str, &'r str)) {
        for (k, v) in self.request.headers_in_iterator() {
            if let (Ok(k), Ok(v)) = (k.to_str(), v.to_str()) {
                each(k, v);
            }
        }
    }

    /// Read as bytes, not through [`Headers::text`]: no UTF-8 check of
    /// every header.
    fn presented(&self) -> Option<Presented<'r>> {
        let mut p = Presented::default();
        for (k, v) in self.request.headers_in_iterator() {
            p.note_any_case(k.as_bytes(), v.as_bytes());
        }
        Some(p)
    }
}

/// The client address as nginx has it (after its realip module).
pub(crate) fn client_of(request: &http::Request) -> Option<IpAddr> {
    use ngx::ffi::{sockaddr_in, sockaddr_in6, AF_INET, AF_INET6};
    // SAFETY: a request's connection outlives the request.
    let c = unsafe { &*request.connection() };
    if c.sockaddr.is_null() {
        return None;
    }
    // The address itself, not its text: nginx's (after realip), read as
    // the family says, `socklen` bytes.
    // SAFETY: `sockaddr` points at `socklen` bytes of nginx's peer address.
    let family = u32::from(unsafe { (*c.sockaddr).sa_family });
    let len = c.socklen as usize;
    match family {
        AF_INET if len >= std::mem::size_of::<sockaddr_in>() => {
            // SAFETY: an AF_INET address of a sockaddr_in's size.
            let sin = unsafe { &*(c.sockaddr as *const sockaddr_in) };
            Some(IpAddr::from(sin.sin_addr.s_addr.to_ne_bytes()))
        }
        AF_INET6 if len >= std::mem::size_of::<sockaddr_in6>() => {
            // SAFETY: an AF_INET6 address of a sockaddr_in6's size.
            let sin6 = unsafe { &*(c.sockaddr as *const sockaddr_in6) };
            // SAFETY: every view of the union is the same 16 bytes.
            Some(IpAddr::from(unsafe { sin6.sin6_addr.__in6_u.__u6_addr8 }))
        }
        // A Unix socket: no client address.
        _ => None,
    }
}

/// The client reached nginx over TLS: the connection has an SSL
/// connection, as nginx's `$https` reads it.
pub(crate) fn https_of(request: &http::Request) -> bool {
    // SAFETY: a request's connection outlives the request.
    let c = unsafe { &*request.connection() };
    !c.ssl.is_null()
}

/// The `Host` the request names: the `Host` field as sent, port and all,
/// as the proxy reads it (a Web Bot Auth signature covers it as
/// `@authority`); an absolute request line's authority as sent, port and
/// all, which wins over the field (RFC 9112 3.2.2); or nginx's reading
/// when there is no field (nginx lets through bytes robotgate's host reading
/// refuses, `x@y` or `a{b}`; the core sends those to the default site,
/// [`robotgate::config::Settings::site_for_host`]). Bytes that are not UTF-8
/// read as a name no site has (`?`), never as "no host", which would be
/// another reading.
pub(crate) fn host_of(request: &http::Request) -> &str {
    let r = request.as_ref();
    let field = r.headers_in.host;
    let bytes: &[u8] = if !r.host_start.is_null() && !r.host_end.is_null() {
        // An absolute request line: its authority as sent, port and all
        // (the parser leaves `port_end` null without a port).
        let end = if r.port_end.is_null() { r.host_end } else { r.port_end };
        // SAFETY: nginx's pointers into the request line's buffer, start
        // before end, alive with the request.
        unsafe { std::slice::from_raw_parts(r.host_start, end.offset_from(r.host_start).max(0) as usize) }
    } else {
        // SAFETY: nginx's parsed field, alive with the request (or null).
        let server = if field.is_null() { r.headers_in.server } else { unsafe { (*field).value } };
        if server.data.is_null() {
            return "";
        }
        // SAFETY: nginx's text of the host, `len` bytes, alive with the request.
        unsafe { std::slice::from_raw_parts(server.data, server.len) }
    };
    if bytes.is_ascii() {
        // SAFETY: ASCII is UTF-8 (the usual host, checked a word at a time).
        return unsafe { std::str::from_utf8_unchecked(bytes) };
    }
    std::str::from_utf8(bytes).unwrap_or("?")
}

/// `bytes` as text: borrowed when they are UTF-8 (the usual case, without
/// the replacement scan's cost), else with U+FFFD for each bad sequence.
pub(crate) fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    if bytes.is_ascii() {
        // SAFETY: ASCII is UTF-8 (the usual path and User-Agent, checked a
        // word at a time).
        return std::borrow::Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::text;

    #[test]
    fn text_borrows_utf8_and_marks_what_is_not() {
        assert!(matches!(text(b"/a/b?c"), std::borrow::Cow::Borrowed("/a/b?c")));
        assert!(matches!(text("/é".as_bytes()), std::borrow::Cow::Borrowed("/é")));
        assert_eq!(text(b"/a\xffb"), "/a\u{fffd}b");
        assert_eq!(text(b""), "");
    }
}
