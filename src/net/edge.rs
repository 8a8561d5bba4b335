//! What an edge proxy says about the request it asks the auth listener
//! about (nginx `auth_request`, Caddy `forward_auth`, Traefik `forwardAuth`),
//! read so that only the edge is believed (issue #39).
//!
//! An edge's subrequest carries the client's own headers beside the ones the
//! edge writes, and nothing on the wire tells them apart: a client that sends
//! `X-Forwarded-Uri: /index.html` to an nginx that names the target in
//! `X-Original-URI` would otherwise be judged for a page it did not ask for.
//! So each fact (target, method, host, scheme) is read from **one** header,
//! the one the operator's edge writes ([`EdgeHeaders`]), and from no other;
//! a request that carries another header known to name the same fact
//! ([`COMPETING`]) with a different value is refused, so that an edge set up
//! without clearing it is found on its first request, not after a bypass.
//! The shipped snippets (`examples/edge/`) write the chosen headers and
//! clear the others.
//!
//! Pure: a list of header names and values in, the original request or the
//! reason to refuse out.

/// The header each fact is read from (`auth.headers`), lower case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeHeaders {
    /// The original request-target (path and query), as sent.
    pub target: String,
    /// The original method.
    pub method: String,
    /// The original host.
    pub host: String,
    /// The scheme the client used (`https`, else plain).
    pub proto: String,
}

impl Default for EdgeHeaders {
    /// What the shipped nginx, Caddy and Traefik files write (and what
    /// Traefik and Caddy write by themselves).
    fn default() -> Self {
        EdgeHeaders {
            target: "x-forwarded-uri".into(),
            method: "x-forwarded-method".into(),
            host: "x-forwarded-host".into(),
            proto: "x-forwarded-proto".into(),
        }
    }
}

/// One fact of the original request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fact {
    /// The request-target.
    Target,
    /// The method.
    Method,
    /// The host.
    Host,
    /// The scheme.
    Proto,
}

impl Fact {
    /// Every fact, in the order they are read.
    pub const ALL: [Fact; 4] = [Fact::Target, Fact::Method, Fact::Host, Fact::Proto];

    /// The `auth.headers` key that names its header.
    pub fn key(self) -> &'static str {
        match self {
            Fact::Target => "target",
            Fact::Method => "method",
            Fact::Host => "host",
            Fact::Proto => "proto",
        }
    }
}

/// Headers that edges, frameworks and proxies use for each fact, lower case:
/// whichever of them is not the chosen one is a competitor. Sources: nginx's
/// `auth_request` documentation and common set-ups (`X-Original-URI`,
/// `X-Original-Method`), Traefik's and Caddy's forward auth
/// (`X-Forwarded-Uri`, `-Method`, `-Host`, `-Proto`), IIS's URL rewrite
/// (`X-Original-URL`, `X-Rewrite-URL`), and method overrides that frameworks
/// honour (`X-HTTP-Method-Override`, `X-HTTP-Method`, `X-Method-Override`).
pub const COMPETING: [(Fact, &[&str]); 4] = [
    (Fact::Target, &["x-forwarded-uri", "x-original-uri", "x-original-url", "x-rewrite-url"]),
    (
        Fact::Method,
        &["x-forwarded-method", "x-original-method", "x-http-method-override", "x-http-method", "x-method-override"],
    ),
    (Fact::Host, &["x-forwarded-host", "x-original-host", "x-host"]),
    (Fact::Proto, &["x-forwarded-proto", "x-forwarded-scheme", "x-scheme"]),
];

impl EdgeHeaders {
    /// The header `fact` is read from.
    pub fn name(&self, fact: Fact) -> &str {
        match fact {
            Fact::Target => &self.target,
            Fact::Method => &self.method,
            Fact::Host => &self.host,
            Fact::Proto => &self.proto,
        }
    }

    /// Set the header for `fact`: `name` must be an HTTP field name (RFC
    /// 9110 5.1); it is kept lower case. The same header cannot name two facts.
    ///
    /// # Errors
    /// What is wrong with `name`, for `config check`.
    pub fn set(&mut self, fact: Fact, name: &str) -> Result<(), String> {
        let name = name.trim();
        if name.is_empty() || !name.bytes().all(super::is_tchar) {
            return Err(format!("`{name}` is not a header name"));
        }
        let lower = name.to_ascii_lowercase();
        if let Some(other) = Fact::ALL.into_iter().find(|f| *f != fact && self.name(*f) == lower) {
            return Err(format!("`{name}` already names auth.headers.{}", other.key()));
        }
        match fact {
            Fact::Target => self.target = lower,
            Fact::Method => self.method = lower,
            Fact::Host => self.host = lower,
            Fact::Proto => self.proto = lower,
        }
        Ok(())
    }
}

/// Whether `s` is an HTTP method: a token (RFC 9110 9.1, 5.6.2).
pub fn is_method(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(super::is_tchar)
}

/// The original request, as the edge names it. Borrows the subrequest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Original<'r> {
    /// The request-target, as sent (not yet normalised).
    pub target: &'r [u8],
    /// The method.
    pub method: &'r str,
    /// The host, as sent (read by [`super::site_host`] to choose the site).
    pub host: &'r str,
    /// The client used `https`.
    pub https: bool,
}

/// Why a subrequest is refused (`400`): each names the header to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EdgeError {
    /// The chosen header is missing (the scheme's may be: then plain http).
    #[error(
        "the subrequest names no original {fact} in {header} (auth.headers.{key}): \
         the edge must set it on every subrequest"
    )]
    Missing {
        /// What it names.
        fact: &'static str,
        /// The header expected.
        header: String,
        /// Its `auth.headers` key.
        key: &'static str,
    },
    /// The chosen header came more than once.
    #[error("{header} came more than once: which request is this about?")]
    Twice {
        /// The header.
        header: String,
    },
    /// Another header names the same fact with another value.
    #[error(
        "{other} says another {fact} than {header}, the header this listener reads (auth.headers.{key}): \
         the edge must clear {other} (a client may have sent it)"
    )]
    Competing {
        /// What both name.
        fact: &'static str,
        /// The header that is read.
        header: String,
        /// The other header.
        other: &'static str,
        /// The `auth.headers` key.
        key: &'static str,
    },
    /// A value that is not what the fact must be (a method that is no
    /// token, a host or target that is not text, an empty target).
    #[error("{header} is not a valid {fact}")]
    Invalid {
        /// What it names.
        fact: &'static str,
        /// The header.
        header: String,
    },
}

fn noun(fact: Fact) -> &'static str {
    match fact {
        Fact::Target => "target",
        Fact::Method => "method",
        Fact::Host => "host",
        Fact::Proto => "scheme",
    }
}

/// The value of the chosen header for `fact`, after checking every
/// competitor: one pass over the headers per fact.
fn fact_value<'r, I>(names: &EdgeHeaders, fact: Fact, headers: I) -> Result<Option<&'r [u8]>, EdgeError>
where
    I: IntoIterator<Item = (&'r str, &'r [u8])>,
{
    let chosen = names.name(fact);
    let competitors = COMPETING.iter().find(|(f, _)| *f == fact).map_or(&[][..], |(_, c)| c);
    let mut value: Option<&[u8]> = None;
    let mut rival: Option<(&'static str, &[u8])> = None;
    for (name, v) in headers {
        if name.eq_ignore_ascii_case(chosen) {
            if value.is_some() {
                return Err(EdgeError::Twice { header: chosen.to_owned() });
            }
            value = Some(v);
        } else if let Some(other) = competitors.iter().find(|c| name.eq_ignore_ascii_case(c)) {
            match rival {
                // Two competitors that disagree with each other: one of them
                // differs from whatever the chosen header says.
                Some((_, seen)) if !same(fact, seen, v) => {
                    return Err(competing(names, fact, other));
                }
                _ => rival = Some((other, v)),
            }
        }
    }
    if let Some((other, v)) = rival {
        if value.is_none_or(|chosen| !same(fact, chosen, v)) {
            return Err(competing(names, fact, other));
        }
    }
    Ok(value)
}

fn competing(names: &EdgeHeaders, fact: Fact, other: &'static str) -> EdgeError {
    EdgeError::Competing { fact: noun(fact), header: names.name(fact).to_owned(), other, key: fact.key() }
}

/// Whether two values name the same fact: targets byte for byte, the rest
/// without regard to case or surrounding blanks.
fn same(fact: Fact, a: &[u8], b: &[u8]) -> bool {
    match fact {
        Fact::Target => a == b,
        _ => a.trim_ascii().eq_ignore_ascii_case(b.trim_ascii()),
    }
}

/// Read the original request from a subrequest's headers: `headers` lists
/// them (`(name, value)`, names in any case, each as often as it came),
/// afresh at each call.
///
/// Target, method and host are required, each from its own header; the
/// scheme is plain http when its header is absent. A competing header is
/// accepted only when it says the same as the chosen one.
///
/// # Errors
/// [`EdgeError`], naming the header to fix.
pub fn read_original<'r, I>(names: &EdgeHeaders, headers: impl Fn() -> I) -> Result<Original<'r>, EdgeError>
where
    I: IntoIterator<Item = (&'r str, &'r [u8])>,
{
    let missing =
        |fact: Fact| EdgeError::Missing { fact: noun(fact), header: names.name(fact).to_owned(), key: fact.key() };
    let invalid = |fact: Fact| EdgeError::Invalid { fact: noun(fact), header: names.name(fact).to_owned() };
    let target = fact_value(names, Fact::Target, headers())?.ok_or_else(|| missing(Fact::Target))?;
    if target.is_empty() || target.iter().any(|b| b.is_ascii_control() || *b == b' ') {
        return Err(invalid(Fact::Target));
    }
    let method = fact_value(names, Fact::Method, headers())?.ok_or_else(|| missing(Fact::Method))?;
    let method = std::str::from_utf8(method).ok().filter(|m| is_method(m)).ok_or_else(|| invalid(Fact::Method))?;
    let host = fact_value(names, Fact::Host, headers())?.ok_or_else(|| missing(Fact::Host))?;
    let host = std::str::from_utf8(host).map_err(|_| invalid(Fact::Host))?;
    let https = match fact_value(names, Fact::Proto, headers())? {
        None => false,
        Some(p) if p.trim_ascii().eq_ignore_ascii_case(b"https") => true,
        Some(p) if p.trim_ascii().eq_ignore_ascii_case(b"http") => false,
        Some(_) => return Err(invalid(Fact::Proto)),
    };
    Ok(Original { target, method, host, https })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read<'r>(names: &EdgeHeaders, h: &'r [(&'r str, &'r str)]) -> Result<Original<'r>, EdgeError> {
        read_original(names, || h.iter().map(|(k, v)| (*k, v.as_bytes())))
    }

    const NGINX: [(&str, &str); 4] = [
        ("X-Forwarded-Uri", "/private/x"),
        ("X-Forwarded-Method", "GET"),
        ("X-Forwarded-Host", "example.com"),
        ("X-Forwarded-Proto", "https"),
    ];

    #[test]
    fn each_fact_from_its_one_header() {
        let o = read(&EdgeHeaders::default(), &NGINX).unwrap();
        assert_eq!(o, Original { target: b"/private/x", method: "GET", host: "example.com", https: true });
        // The scheme's header may be missing: plain http.
        let o = read(&EdgeHeaders::default(), &NGINX[..3]).unwrap();
        assert!(!o.https);
    }

    #[test]
    fn a_clients_own_competing_header_is_refused_not_believed() {
        // The bypass of issue #39: the edge writes X-Original-URI, the client adds X-Forwarded-Uri.
        let mut names = EdgeHeaders::default();
        names.set(Fact::Target, "X-Original-URI").unwrap();
        names.set(Fact::Method, "X-Original-Method").unwrap();
        let h = [
            ("x-original-uri", "/private/x"),
            ("x-original-method", "GET"),
            ("x-forwarded-host", "example.com"),
            ("x-forwarded-uri", "/index.html"),
        ];
        let e = read(&names, &h).unwrap_err();
        assert!(matches!(e, EdgeError::Competing { other: "x-forwarded-uri", .. }), "{e}");
        assert!(e.to_string().contains("clear x-forwarded-uri"), "{e}");
        // The same value is no contradiction.
        let h = [
            ("x-original-uri", "/private/x"),
            ("x-original-method", "GET"),
            ("x-forwarded-host", "example.com"),
            ("x-forwarded-uri", "/private/x"),
            ("x-http-method-override", "get"),
        ];
        assert_eq!(read(&names, &h).unwrap().target, b"/private/x");
        // Nor is a competitor read when the chosen header is missing.
        let h = [("x-forwarded-uri", "/index.html"), ("x-original-method", "GET"), ("x-forwarded-host", "e")];
        assert!(matches!(read(&names, &h).unwrap_err(), EdgeError::Competing { .. }));
    }

    #[test]
    fn every_competitor_of_every_fact_is_checked() {
        for (fact, competitors) in COMPETING {
            for other in competitors.iter().filter(|c| **c != EdgeHeaders::default().name(fact)) {
                let mut h: Vec<(&str, &str)> = NGINX.to_vec();
                h.push((other, "/else"));
                let e = read(&EdgeHeaders::default(), &h).unwrap_err();
                assert!(matches!(e, EdgeError::Competing { .. }), "{fact:?} {other}: {e}");
            }
        }
    }

    #[test]
    fn missing_doubled_and_malformed_facts_are_refused() {
        let names = EdgeHeaders::default();
        assert!(matches!(read(&names, &NGINX[1..]).unwrap_err(), EdgeError::Missing { key: "target", .. }));
        let mut h = NGINX.to_vec();
        h.push(("x-forwarded-uri", "/private/x"));
        assert!(matches!(read(&names, &h).unwrap_err(), EdgeError::Twice { .. }));
        for (i, bad) in [(0, ""), (0, "/a b"), (1, "G T"), (3, "gopher")] {
            let mut h = NGINX.to_vec();
            h[i].1 = bad;
            assert!(matches!(read(&names, &h).unwrap_err(), EdgeError::Invalid { .. }), "{bad:?}");
        }
    }

    #[test]
    fn header_names_are_checked_and_kept_apart() {
        let mut names = EdgeHeaders::default();
        assert!(names.set(Fact::Target, "X Original").is_err());
        assert!(names.set(Fact::Target, "X-Forwarded-Method").unwrap_err().contains("auth.headers.method"));
        names.set(Fact::Host, "Host").unwrap();
        assert_eq!(names.host, "host");
        assert!(is_method("PROPFIND") && is_method("M-SEARCH") && !is_method("") && !is_method("G\u{e9}T"));
    }
}
