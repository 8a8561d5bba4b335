//! A request as a host hands it to the pipeline: its facts, its headers
//! behind [`Headers`] (each host's own map, read without copies), and
//! where its client address comes from ([`Peer`]).

use std::net::IpAddr;

use crate::agent::disguise::{Hello, Presented};
use crate::net::ClientHeader;

/// The headers the pipeline reads a fact from: a closed list, so a host
/// can look each up by a name it made once (parsing a header name per
/// lookup costs more than the lookup).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header {
    /// `User-Agent`.
    UserAgent,
    /// `X-Forwarded-For`.
    XForwardedFor,
    /// `Forwarded` (RFC 7239).
    Forwarded,
    /// `X-Real-IP`.
    XRealIp,
    /// `Signature-Input` (RFC 9421).
    SignatureInput,
}

impl Header {
    /// The header's name, in lower case.
    pub fn name(self) -> &'static str {
        match self {
            Header::UserAgent => "user-agent",
            Header::XForwardedFor => "x-forwarded-for",
            Header::Forwarded => "forwarded",
            Header::XRealIp => "x-real-ip",
            Header::SignatureInput => "signature-input",
        }
    }

    /// The header trusted proxies write the client address in.
    pub fn of_client(header: ClientHeader) -> Header {
        match header {
            ClientHeader::XForwardedFor => Header::XForwardedFor,
            ClientHeader::Forwarded => Header::Forwarded,
            ClientHeader::XRealIp => Header::XRealIp,
        }
    }
}

/// The request's headers, as its driver holds them. Every value borrowed
/// from the request (`'r`): reading copies nothing.
pub trait Headers<'r> {
    /// Calls `each` with every value of `header`, in the order received.
    fn each(&self, header: Header, each: &mut dyn FnMut(&'r [u8]));

    /// Calls `each` with every header whose value is text, name in lower
    /// case (what a signature covers).
    fn text(&self, each: &mut dyn FnMut(&'r str, &'r str));

    /// The headers a claimed browser is judged by (issue #67), read from
    /// [`Headers::text`]; `None` from a host that does not hold every
    /// header of the request (replay holds a log line's few), so that what
    /// it lacks is never taken for what the client did not send.
    fn presented(&self) -> Option<Presented<'r>> {
        let mut p = Presented::default();
        self.text(&mut |name, value| p.note_any_case(name.as_bytes(), value));
        Some(p)
    }

    /// Whether the request carries `header`.
    fn has(&self, header: Header) -> bool {
        let mut found = false;
        self.each(header, &mut |_| found = true);
        found
    }

    /// Which of the headers the pipeline asks about by presence the request
    /// carries, by [`Headers::has`]. A host that walks its headers anyway
    /// tells them in that walk (issue #67's cost: three lookups by name
    /// were 486 instructions a browser's request through Pingora).
    fn carried(&self) -> Carried {
        Carried {
            forwarding: self.has(Header::XForwardedFor) || self.has(Header::Forwarded),
            signature_input: self.has(Header::SignatureInput),
        }
    }
}

/// The headers the pipeline asks about by presence, not by value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Carried {
    /// `X-Forwarded-For` or `Forwarded`: someone between forwarded it.
    pub forwarding: bool,
    /// `Signature-Input`: a signature to verify.
    pub signature_input: bool,
}

impl Carried {
    /// Note a header named `name`, in any case (an HTTP/1 host keeps the
    /// client's). By length first: most names are neither length.
    pub fn note(&mut self, name: &[u8]) {
        match name.len() {
            9 => self.forwarding |= name.eq_ignore_ascii_case(b"forwarded"),
            15 if name.eq_ignore_ascii_case(b"x-forwarded-for") => self.forwarding = true,
            15 if name.eq_ignore_ascii_case(b"signature-input") => self.signature_input = true,
            _ => {}
        }
    }
}

/// Where the client address comes from.
#[derive(Debug, Clone, Copy)]
pub enum Peer {
    /// The socket peer: the client, or a trusted proxy in front of it
    /// (`trusted_proxies`, `client_header`). Also nginx's address after its
    /// realip module: one `trusted_proxies` still lists is a proxy that
    /// named no client, as for the proxy.
    Socket(Option<IpAddr>),
    /// The client as a web server logged it (replay), or as an edge named
    /// it in a field of its own, never a header a client can send
    /// (HAProxy's `src` over SPOE, Envoy ext_authz's `source.address` after
    /// its `xff_num_trusted_hops`): taken as it is.
    Logged(Option<IpAddr>),
}

/// A request, as its driver read it.
pub struct Request<'r, H> {
    /// The method, as sent.
    pub method: &'r str,
    /// The request target (path and query) as sent, before normalisation.
    pub target: &'r [u8],
    /// The host the request names (one reading: [`crate::net::site_host`]).
    pub host: &'r str,
    /// The client reached the site over TLS.
    pub https: bool,
    /// Where the client address comes from.
    pub peer: Peer,
    /// Its headers.
    pub headers: H,
    /// The ClientHello of its connection, when the host terminated TLS and
    /// read it ([`crate::agent::disguise::hello`]).
    pub hello: Option<&'r Hello>,
}
