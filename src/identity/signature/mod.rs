//! Web Bot Auth: HTTP Message Signatures (RFC 9421) from automated clients,
//! as profiled by draft-meunier-webbotauth-httpsig-protocol.
//!
//! A signing bot sends three fields:
//!
//! ```text
//! Signature-Agent: agent1="https://crawler.example"
//! Signature-Input: sig1=("@authority" "signature-agent";key="agent1");created=1735689600;\
//!                  expires=1735693200;keyid="poqk…";alg="ed25519";tag="web-bot-auth"
//! Signature: sig1=:base64 of an Ed25519 signature:
//! ```
//!
//! This module is the pure half of the check: it parses those fields
//! ([`inspect`]), builds the RFC 9421 §2.5 signature base from a plain
//! [`RequestParts`], and verifies it against keys the caller supplies
//! ([`verify`]). Keys belong to an agent: they come from that agent's
//! `/.well-known/http-message-signatures-directory`, parsed here by
//! [`KeySet::from_directory`], and a key id is only looked up in the directory
//! of the agent the signature names. [`fetch`] holds what every host's
//! fetcher shares (the SSRF rules, the caps, the response reader, the cache);
//! the I/O itself lives in `server::verify::wba` and in the nginx module.
//!
//! Rules enforced (draft §4.2 and §4.4 unless noted):
//! * `tag="web-bot-auth"`; signatures with another tag are not ours.
//! * `@authority` (or `@target-uri`, which contains it; draft -04 allows
//!   either) is covered.
//! * `created` and `expires` are present; `expires` is after now, `created` is
//!   not later than now plus [`Limits::max_skew`], and the lifetime is at most
//!   [`Limits::max_lifetime`] (24 h: the draft RECOMMENDS no more).
//! * `keyid` is the JWK SHA-256 thumbprint (RFC 7638, RFC 8037 A.3) of an
//!   Ed25519 key in the agent's directory; `alg`, when present, is `ed25519`.
//! * `Signature-Agent` is present and covered: a dictionary member
//!   (`"signature-agent";key="…"`, draft -04 on) or, for older signers, the
//!   whole field as an sf-string (`"signature-agent"`).
//!
//! Worst-case cost: every input is attacker-controlled, so each signature field
//! is capped at [`MAX_FIELD_BYTES`], at most [`MAX_SIGNATURES`] web-bot-auth
//! signatures are tried, each covering at most [`MAX_COMPONENTS`] components,
//! and a signature base is at most [`MAX_BASE_BYTES`]. One verification is one
//! Ed25519 check per tried signature.
//!
//! One concern per file: `inspect` reads the fields (parsing, freshness, the
//! covered agent), `base` builds the signature base, `verify` checks the
//! Ed25519 signatures against an agent's keys, and `directory` parses key
//! directories and computes key ids.

mod base;
mod directory;
pub mod fetch;
mod inspect;
mod verify;

use std::fmt;

pub use base::byte_sequence;
pub use directory::{
    directory_url, jwk, thumbprint, DirectoryError, KeySet, DIRECTORY_MEDIA_TYPE, DIRECTORY_PATH, MAX_DIRECTORY_KEYS,
};
pub use inspect::{inspect, Candidate, Inspection};
pub use verify::{verify, Keys, Verdict};

/// The tag that marks a Web Bot Auth signature (draft §4.2).
pub const TAG: &str = "web-bot-auth";

/// Largest `Signature`, `Signature-Input` or `Signature-Agent` value (all
/// lines of the field together) that is parsed; a longer one is invalid.
pub const MAX_FIELD_BYTES: usize = 8 * 1024;

/// Most web-bot-auth signatures tried on one request.
pub const MAX_SIGNATURES: usize = 4;

/// Most components one signature may cover.
pub const MAX_COMPONENTS: usize = 32;

/// Largest signature base built.
pub const MAX_BASE_BYTES: usize = 32 * 1024;

/// Longest agent URL accepted.
pub const MAX_AGENT_BYTES: usize = 512;

/// Time bounds for a signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest `expires - created`, in seconds.
    pub max_lifetime: u64,
    /// How far in the future `created` may be (clock skew), in seconds.
    pub max_skew: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_lifetime: 24 * 3600, max_skew: 60 }
    }
}

/// The parts of a request a signature can cover, as plain data.
///
/// `headers` holds every header line as received (name in any case, value
/// without the line ending); lines with one name are combined per RFC 9421
/// §2.1. Non-UTF-8 header values should be left out by the caller.
#[derive(Debug, Clone, Copy)]
pub struct RequestParts<'a> {
    /// `GET`, `POST`, ...
    pub method: &'a str,
    /// `https` or `http`.
    pub scheme: &'a str,
    /// Host and optional port, as the client sent it (`Host` or the
    /// HTTP/2 `:authority`).
    pub authority: &'a str,
    /// The path, starting with `/` (empty is read as `/`).
    pub path: &'a str,
    /// The query without its `?`, if there is one.
    pub query: Option<&'a str>,
    /// Header lines, `(name, value)`.
    pub headers: &'a [(&'a str, &'a str)],
}

impl RequestParts<'_> {
    /// Every value of header `name`, trimmed and joined with `", "` (RFC 9421
    /// §2.1); `None` when absent. `Err` past `cap` bytes.
    fn field(&self, name: &str, cap: usize) -> Result<Option<String>, Reason> {
        let mut out: Option<String> = None;
        for (n, v) in self.headers {
            if !n.eq_ignore_ascii_case(name) {
                continue;
            }
            let v = v.trim_matches(|c| c == ' ' || c == '\t');
            match out.as_mut() {
                None => out = Some(v.to_owned()),
                Some(s) => {
                    s.push_str(", ");
                    s.push_str(v);
                }
            }
            if out.as_ref().is_some_and(|s| s.len() > cap) {
                return Err(Reason::TooLarge);
            }
        }
        Ok(out)
    }
}

/// Why a signed request was not verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// A signature field or the signature base is over its cap.
    TooLarge,
    /// `Signature`, `Signature-Input` or `Signature-Agent` is not a valid
    /// structured field, or one of the two signature fields is missing.
    Malformed(&'static str),
    /// Signature fields are present but none has `tag="web-bot-auth"`.
    WrongTag,
    /// Neither `@authority` nor `@target-uri` is covered.
    AuthorityNotCovered,
    /// `created` or `expires` is missing.
    MissingTimestamps,
    /// `expires` is not after now.
    Expired,
    /// `created` is in the future beyond the allowed skew.
    CreatedInFuture,
    /// `expires - created` is over the limit (or negative).
    LifetimeTooLong,
    /// `keyid` is missing.
    MissingKeyId,
    /// `alg` names something other than `ed25519`.
    UnsupportedAlgorithm,
    /// A covered component this verifier does not build (`@query-param`,
    /// `;bs`, `;sf`, ...), or an identifier that is not a lowercase string.
    UnsupportedComponent(String),
    /// A covered component is absent from the request, or listed twice.
    MissingComponent(String),
    /// No `Signature-Agent`, or it is not covered by the signature.
    AgentNotCovered,
    /// The `Signature-Agent` value is not an http(s) URL (or is too long), or
    /// asks for a discovery type other than the directory.
    BadAgent,
    /// The agent's directory has no key with this id.
    UnknownKey,
    /// The agent's directory could not be fetched (set by the I/O layer;
    /// the draft's "unverified" outcome, A.1: not proof of a forgery).
    DirectoryUnavailable,
    /// The Ed25519 check failed.
    BadSignature,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::TooLarge => f.write_str("signature field or base too large"),
            Reason::Malformed(what) => write!(f, "malformed {what}"),
            Reason::WrongTag => f.write_str("no signature tagged web-bot-auth"),
            Reason::AuthorityNotCovered => f.write_str("@authority not covered"),
            Reason::MissingTimestamps => f.write_str("created or expires missing"),
            Reason::Expired => f.write_str("signature expired"),
            Reason::CreatedInFuture => f.write_str("created in the future"),
            Reason::LifetimeTooLong => f.write_str("signature lifetime too long"),
            Reason::MissingKeyId => f.write_str("keyid missing"),
            Reason::UnsupportedAlgorithm => f.write_str("algorithm is not ed25519"),
            Reason::UnsupportedComponent(c) => write!(f, "unsupported component {c}"),
            Reason::MissingComponent(c) => write!(f, "covered component {c} missing or repeated"),
            Reason::AgentNotCovered => f.write_str("signature-agent missing or not covered"),
            Reason::BadAgent => f.write_str("signature-agent is not an http(s) URL"),
            Reason::UnknownKey => f.write_str("keyid not in the agent's directory"),
            Reason::DirectoryUnavailable => f.write_str("agent's key directory unavailable"),
            Reason::BadSignature => f.write_str("signature does not verify"),
        }
    }
}

#[cfg(test)]
mod testkit;
