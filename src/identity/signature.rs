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
//! of the agent the signature names. Fetching directories is I/O and lives in
//! `server::wba`.
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

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ed25519_dalek::{Signature, Verifier as _, VerifyingKey};
use serde::Deserialize;
use sfv::{BareItem, Dictionary, InnerList, ListEntry, Parser, SerializeValue};
use sha2::{Digest as _, Sha256};

/// The tag that marks a Web Bot Auth signature (draft §4.2).
pub const TAG: &str = "web-bot-auth";

/// Path of an agent's key directory (draft-meunier-http-message-signatures-directory).
pub const DIRECTORY_PATH: &str = "/.well-known/http-message-signatures-directory";

/// Media type of a key directory.
pub const DIRECTORY_MEDIA_TYPE: &str = "application/http-message-signatures-directory+json";

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

/// Most keys a directory may list (draft §5.8: bound the key count).
pub const MAX_DIRECTORY_KEYS: usize = 16;

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

/// The outcome of checking a request's Web Bot Auth signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A web-bot-auth signature verified with a key from `agent`'s directory.
    Verified {
        /// The agent URL the signature names (the `Signature-Agent` member).
        agent: String,
        /// The key's JWK thumbprint.
        keyid: String,
    },
    /// Signature fields are present but no web-bot-auth signature verified;
    /// `reason` is why the first one failed.
    Invalid {
        /// What failed.
        reason: Reason,
    },
    /// The request carries no `Signature` nor `Signature-Input`.
    Absent,
}

/// One web-bot-auth signature found on a request, before key lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Its label in `Signature-Input` / `Signature`.
    pub label: String,
    /// The agent URL the signature covers.
    pub agent: String,
    /// The `keyid` parameter.
    pub keyid: String,
    /// The Ed25519 signature.
    signature: Vec<u8>,
    /// The signature base (RFC 9421 §2.5).
    base: String,
}

/// What [`inspect`] finds on a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inspection {
    /// No signature fields.
    Absent,
    /// Signature fields that cannot verify whatever the keys (the first
    /// signature's reason).
    Invalid(Reason),
    /// Well-formed, fresh web-bot-auth signatures (at most
    /// [`MAX_SIGNATURES`]), in `Signature-Input` order: fetch the keys of
    /// their agents, then call [`Inspection::verify`].
    Signed(Vec<Candidate>),
}

impl Inspection {
    /// The distinct agent URLs whose directories are needed, in order.
    pub fn agents(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        if let Inspection::Signed(c) = self {
            for c in c {
                if !out.contains(&c.agent.as_str()) {
                    out.push(&c.agent);
                }
            }
        }
        out
    }

    /// Checks each candidate against the keys of its own agent; the first that
    /// verifies wins.
    pub fn verify(&self, keys: &impl Keys) -> Verdict {
        let candidates = match self {
            Inspection::Absent => return Verdict::Absent,
            Inspection::Invalid(reason) => return Verdict::Invalid { reason: reason.clone() },
            Inspection::Signed(c) => c,
        };
        let mut first: Option<Reason> = None;
        for c in candidates {
            match check_candidate(c, keys) {
                Ok(()) => return Verdict::Verified { agent: c.agent.clone(), keyid: c.keyid.clone() },
                Err(r) => {
                    first.get_or_insert(r);
                }
            }
        }
        Verdict::Invalid { reason: first.unwrap_or(Reason::WrongTag) }
    }
}

fn check_candidate(c: &Candidate, keys: &impl Keys) -> Result<(), Reason> {
    let key = keys.key(&c.agent, &c.keyid).ok_or(Reason::UnknownKey)?;
    let sig = Signature::from_slice(&c.signature).map_err(|_| Reason::BadSignature)?;
    key.verify(c.base.as_bytes(), &sig).map_err(|_| Reason::BadSignature)
}

/// Where [`Inspection::verify`] finds keys: by agent URL and key id, never by
/// key id alone, so an agent cannot sign with a key from another agent's
/// directory.
pub trait Keys {
    /// The key `keyid` in `agent`'s directory.
    fn key(&self, agent: &str, keyid: &str) -> Option<&VerifyingKey>;
}

impl<S: std::hash::BuildHasher> Keys for HashMap<String, Arc<KeySet>, S> {
    fn key(&self, agent: &str, keyid: &str) -> Option<&VerifyingKey> {
        self.get(agent)?.get(keyid)
    }
}

impl Keys for [(String, Arc<KeySet>)] {
    fn key(&self, agent: &str, keyid: &str) -> Option<&VerifyingKey> {
        self.iter().find(|(a, _)| a == agent)?.1.get(keyid)
    }
}

impl Keys for Vec<(String, Arc<KeySet>)> {
    fn key(&self, agent: &str, keyid: &str) -> Option<&VerifyingKey> {
        self.as_slice().key(agent, keyid)
    }
}

/// The Ed25519 keys of one agent's directory, by JWK thumbprint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeySet {
    keys: Vec<(String, VerifyingKey)>,
}

/// Why a key directory was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DirectoryError {
    /// Not JSON of the directory shape.
    #[error("not a key directory: {0}")]
    Json(String),
    /// More keys than allowed.
    #[error("directory lists {0} keys (at most {MAX_DIRECTORY_KEYS})")]
    TooManyKeys(usize),
    /// No usable Ed25519 key.
    #[error("directory has no Ed25519 key")]
    NoKeys,
}

#[derive(Deserialize)]
struct RawDirectory {
    keys: Vec<RawJwk>,
}

#[derive(Deserialize)]
struct RawJwk {
    #[serde(default)]
    kty: String,
    #[serde(default)]
    crv: String,
    #[serde(default)]
    x: String,
}

impl KeySet {
    /// Parses a directory (`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"…"}]}`).
    ///
    /// Entries that are not Ed25519 public keys (RSA, EC, bad `x`) are
    /// skipped; the key id of each kept key is its thumbprint, computed here
    /// (a `kid` in the file is not trusted).
    ///
    /// # Errors
    /// Not JSON of that shape, more than [`MAX_DIRECTORY_KEYS`] entries, or no
    /// Ed25519 key.
    pub fn from_directory(body: &[u8]) -> Result<KeySet, DirectoryError> {
        let raw: RawDirectory = serde_json::from_slice(body).map_err(|e| DirectoryError::Json(e.to_string()))?;
        if raw.keys.len() > MAX_DIRECTORY_KEYS {
            return Err(DirectoryError::TooManyKeys(raw.keys.len()));
        }
        let mut set = KeySet::default();
        for k in &raw.keys {
            if k.kty != "OKP" || k.crv != "Ed25519" {
                continue;
            }
            let Ok(bytes) = URL_SAFE_NO_PAD.decode(k.x.as_bytes()) else { continue };
            let Ok(bytes) = <[u8; 32]>::try_from(bytes.as_slice()) else { continue };
            let Ok(key) = VerifyingKey::from_bytes(&bytes) else { continue };
            set.insert(key);
        }
        if set.keys.is_empty() {
            return Err(DirectoryError::NoKeys);
        }
        Ok(set)
    }

    /// A set of the given keys.
    pub fn from_keys(keys: impl IntoIterator<Item = VerifyingKey>) -> KeySet {
        let mut set = KeySet::default();
        for k in keys {
            set.insert(k);
        }
        set
    }

    fn insert(&mut self, key: VerifyingKey) {
        let id = thumbprint(&key);
        if !self.keys.iter().any(|(k, _)| *k == id) {
            self.keys.push((id, key));
        }
    }

    /// The key with this thumbprint.
    pub fn get(&self, keyid: &str) -> Option<&VerifyingKey> {
        self.keys.iter().find(|(k, _)| k == keyid).map(|(_, v)| v)
    }

    /// The key ids, in directory order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|(k, _)| k.as_str())
    }

    /// How many keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// The JWK SHA-256 thumbprint of an Ed25519 key, base64url without padding
/// (RFC 7638 §3; members for OKP keys per RFC 8037 A.3, in lexicographic
/// order: `crv`, `kty`, `x`).
pub fn thumbprint(key: &VerifyingKey) -> String {
    let x = URL_SAFE_NO_PAD.encode(key.as_bytes());
    let json = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
    URL_SAFE_NO_PAD.encode(Sha256::digest(json.as_bytes()))
}

/// The JWK (`{"kty":"OKP","crv":"Ed25519","x":"…"}`) of a key, for building
/// directories in tests and tools.
pub fn jwk(key: &VerifyingKey) -> String {
    let x = URL_SAFE_NO_PAD.encode(key.as_bytes());
    format!(r#"{{"kty":"OKP","crv":"Ed25519","x":"{x}"}}"#)
}

/// The directory URL for an agent URL: the well-known path on the agent's
/// origin when the URL has no path (`https://crawler.example`), else the URL
/// itself.
pub fn directory_url(agent: &str) -> String {
    let rest = agent.split_once("://").map_or(agent, |(_, r)| r);
    match rest.find('/') {
        None => format!("{agent}{DIRECTORY_PATH}"),
        Some(i) if &rest[i..] == "/" => format!("{}{DIRECTORY_PATH}", &agent[..agent.len() - 1]),
        Some(_) => agent.to_owned(),
    }
}

/// Checks a request's Web Bot Auth signature against `keys` at time `now`
/// (Unix seconds): [`inspect`] then [`Inspection::verify`].
pub fn verify(req: &RequestParts<'_>, now: u64, limits: &Limits, keys: &impl Keys) -> Verdict {
    inspect(req, now, limits).verify(keys)
}

/// Parses and checks everything but the keys: fields, tag, covered
/// components, timestamps, agent; builds each candidate's signature base.
///
/// Cost: bounded by the caps in the module docs.
pub fn inspect(req: &RequestParts<'_>, now: u64, limits: &Limits) -> Inspection {
    match inspect_inner(req, now, limits) {
        Ok(None) => Inspection::Absent,
        Ok(Some(c)) => Inspection::Signed(c),
        Err(r) => Inspection::Invalid(r),
    }
}

fn inspect_inner(req: &RequestParts<'_>, now: u64, limits: &Limits) -> Result<Option<Vec<Candidate>>, Reason> {
    let input = req.field("signature-input", MAX_FIELD_BYTES)?;
    let signature = req.field("signature", MAX_FIELD_BYTES)?;
    let (input, signature) = match (input, signature) {
        (None, None) => return Ok(None),
        (Some(i), Some(s)) => (i, s),
        (None, Some(_)) => return Err(Reason::Malformed("Signature-Input (missing)")),
        (Some(_), None) => return Err(Reason::Malformed("Signature (missing)")),
    };
    let inputs = Parser::parse_dictionary(input.as_bytes()).map_err(|_| Reason::Malformed("Signature-Input"))?;
    let signatures = Parser::parse_dictionary(signature.as_bytes()).map_err(|_| Reason::Malformed("Signature"))?;
    let agent_field = req.field("signature-agent", MAX_FIELD_BYTES)?;

    let mut candidates = Vec::new();
    let mut first_error: Option<Reason> = None;
    let mut tried = 0;
    for (label, entry) in &inputs {
        let ListEntry::InnerList(params) = entry else { continue };
        if params.params.get("tag").and_then(BareItem::as_str) != Some(TAG) {
            continue;
        }
        // Bounded work: failed signatures count too.
        tried += 1;
        if tried > MAX_SIGNATURES {
            break;
        }
        match candidate(req, now, limits, label, params, &signatures, agent_field.as_deref()) {
            Ok(c) => candidates.push(c),
            Err(r) => {
                first_error.get_or_insert(r);
            }
        }
    }
    if candidates.is_empty() {
        return Err(first_error.unwrap_or(Reason::WrongTag));
    }
    Ok(Some(candidates))
}

fn candidate(
    req: &RequestParts<'_>,
    now: u64,
    limits: &Limits,
    label: &str,
    params: &InnerList,
    signatures: &Dictionary,
    agent_field: Option<&str>,
) -> Result<Candidate, Reason> {
    let p = &params.params;
    if params.items.len() > MAX_COMPONENTS {
        return Err(Reason::TooLarge);
    }
    // Draft §4.2: @authority (or @target-uri, draft -04) must be covered.
    let covers = |name: &str| params.items.iter().any(|i| i.bare_item.as_str() == Some(name));
    if !covers("@authority") && !covers("@target-uri") {
        return Err(Reason::AuthorityNotCovered);
    }
    // RFC 9421 §2.3 parameters; draft §4.2 makes created and expires mandatory.
    let (Some(created), Some(expires)) =
        (p.get("created").and_then(BareItem::as_int), p.get("expires").and_then(BareItem::as_int))
    else {
        return Err(Reason::MissingTimestamps);
    };
    let now = i64::try_from(now).unwrap_or(i64::MAX);
    if expires <= now {
        return Err(Reason::Expired);
    }
    if created > now.saturating_add(i64::try_from(limits.max_skew).unwrap_or(i64::MAX)) {
        return Err(Reason::CreatedInFuture);
    }
    let lifetime = expires.saturating_sub(created);
    if lifetime < 0 || lifetime as u64 > limits.max_lifetime {
        return Err(Reason::LifetimeTooLong);
    }
    let keyid = p.get("keyid").and_then(BareItem::as_str).ok_or(Reason::MissingKeyId)?;
    if let Some(alg) = p.get("alg") {
        if alg.as_str() != Some("ed25519") {
            return Err(Reason::UnsupportedAlgorithm);
        }
    }
    let agent = covered_agent(params, agent_field)?;
    let signature = match signatures.get(label) {
        Some(ListEntry::Item(item)) => match &item.bare_item {
            BareItem::ByteSeq(b) => b.clone(),
            _ => return Err(Reason::Malformed("Signature (not a byte sequence)")),
        },
        _ => return Err(Reason::Malformed("Signature (no member for the label)")),
    };
    let base = signature_base(req, params)?;
    Ok(Candidate { label: label.to_owned(), agent, keyid: keyid.to_owned(), signature, base })
}

/// The agent URL a signature covers (draft §4.2.1): the member named by a
/// covered `"signature-agent";key="…"`, else (legacy) the whole field as an
/// sf-string when `"signature-agent"` is covered.
fn covered_agent(params: &InnerList, field: Option<&str>) -> Result<String, Reason> {
    let field = field.ok_or(Reason::AgentNotCovered)?;
    let mut chosen: Option<String> = None;
    for item in &params.items {
        if item.bare_item.as_str() != Some("signature-agent") {
            continue;
        }
        let value = match item.params.get("key") {
            Some(key) => {
                let key = key.as_str().ok_or(Reason::Malformed("signature-agent key parameter"))?;
                let dict =
                    Parser::parse_dictionary(field.as_bytes()).map_err(|_| Reason::Malformed("Signature-Agent"))?;
                match dict.get(key) {
                    Some(ListEntry::Item(i)) => {
                        // Draft §4.5: typed discovery; only the directory (the default) is fetched.
                        if let Some(t) = i.params.get("type") {
                            if t.as_token().or_else(|| t.as_str()) != Some("directory") {
                                return Err(Reason::BadAgent);
                            }
                        }
                        i.bare_item.as_str().ok_or(Reason::BadAgent)?.to_owned()
                    }
                    _ => return Err(Reason::AgentNotCovered),
                }
            }
            None => {
                let item = Parser::parse_item(field.as_bytes()).map_err(|_| Reason::Malformed("Signature-Agent"))?;
                item.bare_item.as_str().ok_or(Reason::BadAgent)?.to_owned()
            }
        };
        chosen = Some(value);
        break;
    }
    let agent = chosen.ok_or(Reason::AgentNotCovered)?;
    let lower = agent.to_ascii_lowercase();
    let rest = lower.strip_prefix("https://").or_else(|| lower.strip_prefix("http://")).ok_or(Reason::BadAgent)?;
    if agent.len() > MAX_AGENT_BYTES || rest.is_empty() || rest.starts_with('/') {
        return Err(Reason::BadAgent);
    }
    Ok(agent)
}

/// The RFC 9421 §2.5 signature base for the components `params` covers.
fn signature_base(req: &RequestParts<'_>, params: &InnerList) -> Result<String, Reason> {
    let mut base = String::new();
    let mut seen: Vec<String> = Vec::with_capacity(params.items.len());
    for item in &params.items {
        // The identifier, serialized: "name" plus its parameters.
        let id = serialize_item(item)?;
        if seen.contains(&id) {
            return Err(Reason::MissingComponent(id));
        }
        let value = component_value(req, item, &id)?;
        base.push_str(&id);
        base.push_str(": ");
        base.push_str(&value);
        base.push('\n');
        seen.push(id);
        if base.len() > MAX_BASE_BYTES {
            return Err(Reason::TooLarge);
        }
    }
    let list = vec![ListEntry::InnerList(params.clone())];
    let serialized = list.serialize_value().map_err(|_| Reason::Malformed("Signature-Input"))?;
    base.push_str("\"@signature-params\": ");
    base.push_str(&serialized);
    if base.len() > MAX_BASE_BYTES {
        return Err(Reason::TooLarge);
    }
    Ok(base)
}

fn serialize_item(item: &sfv::Item) -> Result<String, Reason> {
    item.serialize_value().map_err(|_| Reason::Malformed("Signature-Input component"))
}

fn component_value(req: &RequestParts<'_>, item: &sfv::Item, id: &str) -> Result<String, Reason> {
    let name = match item.bare_item.as_str() {
        Some(n) if !n.is_empty() && !n.bytes().any(|b| b.is_ascii_uppercase()) => n,
        _ => return Err(Reason::UnsupportedComponent(id.to_owned())),
    };
    let unsupported = || Reason::UnsupportedComponent(id.to_owned());
    if name.starts_with('@') {
        if !item.params.is_empty() {
            return Err(unsupported());
        }
        let path = if req.path.is_empty() { "/" } else { req.path };
        let query = req.query.map(|q| format!("?{q}")).unwrap_or_default();
        // RFC 9421 §2.2.
        return Ok(match name {
            "@method" => req.method.to_owned(),
            "@authority" => authority(req),
            "@scheme" => req.scheme.to_ascii_lowercase(),
            "@target-uri" => format!("{}://{}{path}{query}", req.scheme.to_ascii_lowercase(), authority(req)),
            "@request-target" => format!("{path}{query}"),
            "@path" => path.to_owned(),
            "@query" => req.query.map_or_else(|| "?".to_owned(), |q| format!("?{q}")),
            _ => return Err(unsupported()),
        });
    }
    // RFC 9421 §2.1: a header field, or one member of a dictionary field (`key`).
    let value = req.field(name, MAX_BASE_BYTES)?.ok_or_else(|| Reason::MissingComponent(id.to_owned()))?;
    match item.params.len() {
        0 => Ok(value),
        1 => {
            let key = item.params.get("key").and_then(BareItem::as_str).ok_or_else(unsupported)?;
            let dict =
                Parser::parse_dictionary(value.as_bytes()).map_err(|_| Reason::MissingComponent(id.to_owned()))?;
            match dict.get(key) {
                Some(ListEntry::Item(i)) => serialize_item(i),
                Some(ListEntry::InnerList(l)) => vec![ListEntry::InnerList(l.clone())]
                    .serialize_value()
                    .map_err(|_| Reason::MissingComponent(id.to_owned())),
                None => Err(Reason::MissingComponent(id.to_owned())),
            }
        }
        _ => Err(unsupported()),
    }
}

/// RFC 9421 §2.2.3: lowercase host, default port dropped.
fn authority(req: &RequestParts<'_>) -> String {
    let a = req.authority.trim().to_ascii_lowercase();
    let default = match req.scheme.to_ascii_lowercase().as_str() {
        "https" => ":443",
        "http" => ":80",
        _ => return a,
    };
    match a.strip_suffix(default) {
        Some(host) if !host.is_empty() => host.to_owned(),
        _ => a,
    }
}

/// Encodes `bytes` as an RFC 8941 byte sequence body (standard base64), for
/// signers in tests and tools.
pub fn byte_sequence(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer as _, SigningKey};

    const NOW: u64 = 1_735_689_700;
    const AGENT: &str = "https://crawler.example";

    /// A fresh key: the seed hashes a label with a per-process random state.
    fn new_key(label: &str) -> SigningKey {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write(label.as_bytes());
        let seed: [u8; 32] = Sha256::digest(h.finish().to_le_bytes()).into();
        SigningKey::from_bytes(&seed)
    }

    fn keys_of(agent: &str, key: &SigningKey) -> Vec<(String, Arc<KeySet>)> {
        vec![(agent.to_owned(), Arc::new(KeySet::from_keys([key.verifying_key()])))]
    }

    /// Signs per the draft, the base written out by hand (RFC 9421 §2.5):
    /// returns the Signature-Input and Signature values.
    fn sign(key: &SigningKey, authority: &str, agent_label: &str, agent: &str, params: &str) -> (String, String) {
        let components = format!(r#"("@authority" "signature-agent";key="{agent_label}")"#);
        let base = format!(
            "\"@authority\": {authority}\n\"signature-agent\";key=\"{agent_label}\": \"{agent}\"\n\"@signature-params\": {components}{params}"
        );
        let sig = key.sign(base.as_bytes());
        (format!("sig1={components}{params}"), format!("sig1=:{}:", STANDARD.encode(sig.to_bytes())))
    }

    fn params(key: &SigningKey, created: u64, expires: u64, tag: &str) -> String {
        format!(
            r#";created={created};expires={expires};keyid="{}";alg="ed25519";tag="{tag}""#,
            thumbprint(&key.verifying_key())
        )
    }

    struct Req {
        headers: Vec<(String, String)>,
        authority: String,
    }

    impl Req {
        fn new(authority: &str, agent_field: &str, input: &str, sig: &str) -> Req {
            Req {
                headers: vec![
                    ("Signature-Agent".into(), agent_field.into()),
                    ("Signature-Input".into(), input.into()),
                    ("Signature".into(), sig.into()),
                ],
                authority: authority.into(),
            }
        }

        fn verdict(&self, keys: &impl Keys) -> Verdict {
            let headers: Vec<(&str, &str)> = self.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            let req = RequestParts {
                method: "GET",
                scheme: "https",
                authority: &self.authority,
                path: "/page",
                query: None,
                headers: &headers,
            };
            verify(&req, NOW, &Limits::default(), keys)
        }
    }

    fn signed(key: &SigningKey, p: &str) -> Req {
        let (input, sig) = sign(key, "example.com", "agent1", AGENT, p);
        Req::new("example.com", &format!(r#"agent1="{AGENT}""#), &input, &sig)
    }

    fn invalid(reason: Reason) -> Verdict {
        Verdict::Invalid { reason }
    }

    #[test]
    fn valid_signature_verifies() {
        let key = new_key("valid");
        let req = signed(&key, &params(&key, NOW - 10, NOW + 3600, TAG));
        let keyid = thumbprint(&key.verifying_key());
        assert_eq!(req.verdict(&keys_of(AGENT, &key)), Verdict::Verified { agent: AGENT.into(), keyid });
    }

    #[test]
    fn authority_port_and_case_normalised() {
        let key = new_key("port");
        let (input, sig) = sign(&key, "example.com", "agent1", AGENT, &params(&key, NOW, NOW + 60, TAG));
        let req = Req::new("Example.COM:443", &format!(r#"agent1="{AGENT}""#), &input, &sig);
        assert!(matches!(req.verdict(&keys_of(AGENT, &key)), Verdict::Verified { .. }));
    }

    #[test]
    fn one_byte_changed_in_covered_component_fails() {
        let key = new_key("tamper");
        let mut req = signed(&key, &params(&key, NOW - 10, NOW + 3600, TAG));
        req.authority = "examplf.com".into();
        assert_eq!(req.verdict(&keys_of(AGENT, &key)), invalid(Reason::BadSignature));
    }

    #[test]
    fn changed_agent_fails() {
        let key = new_key("agent");
        let mut req = signed(&key, &params(&key, NOW - 10, NOW + 3600, TAG));
        req.headers[0].1 = r#"agent1="https://crawler.exampld""#.into();
        // Keys of the new agent: the agent's own directory has the key, yet the
        // signature covered the old URL.
        assert_eq!(req.verdict(&keys_of("https://crawler.exampld", &key)), invalid(Reason::BadSignature));
    }

    #[test]
    fn expired_fails() {
        let key = new_key("expired");
        let req = signed(&key, &params(&key, NOW - 3600, NOW, TAG));
        assert_eq!(req.verdict(&keys_of(AGENT, &key)), invalid(Reason::Expired));
    }

    #[test]
    fn created_in_future_fails() {
        let key = new_key("future");
        let req = signed(&key, &params(&key, NOW + 600, NOW + 3600, TAG));
        assert_eq!(req.verdict(&keys_of(AGENT, &key)), invalid(Reason::CreatedInFuture));
        // Within the skew it passes.
        let req = signed(&key, &params(&key, NOW + 30, NOW + 3600, TAG));
        assert!(matches!(req.verdict(&keys_of(AGENT, &key)), Verdict::Verified { .. }));
    }

    #[test]
    fn lifetime_over_24h_fails() {
        let key = new_key("lifetime");
        let req = signed(&key, &params(&key, NOW - 10, NOW - 10 + 24 * 3600 + 1, TAG));
        assert_eq!(req.verdict(&keys_of(AGENT, &key)), invalid(Reason::LifetimeTooLong));
    }

    #[test]
    fn wrong_tag_fails() {
        let key = new_key("tag");
        let req = signed(&key, &params(&key, NOW - 10, NOW + 3600, "other-tag"));
        assert_eq!(req.verdict(&keys_of(AGENT, &key)), invalid(Reason::WrongTag));
    }

    #[test]
    fn missing_authority_fails() {
        let key = new_key("authority");
        let p = params(&key, NOW - 10, NOW + 3600, TAG);
        let components = r#"("signature-agent";key="agent1")"#;
        let base = format!("\"signature-agent\";key=\"agent1\": \"{AGENT}\"\n\"@signature-params\": {components}{p}");
        let sig = STANDARD.encode(key.sign(base.as_bytes()).to_bytes());
        let req = Req::new(
            "example.com",
            &format!(r#"agent1="{AGENT}""#),
            &format!("sig1={components}{p}"),
            &format!("sig1=:{sig}:"),
        );
        assert_eq!(req.verdict(&keys_of(AGENT, &key)), invalid(Reason::AuthorityNotCovered));
    }

    #[test]
    fn unknown_keyid_fails() {
        let key = new_key("unknown");
        let other = new_key("unknown-other");
        let req = signed(&key, &params(&key, NOW - 10, NOW + 3600, TAG));
        assert_eq!(req.verdict(&keys_of(AGENT, &other)), invalid(Reason::UnknownKey));
    }

    #[test]
    fn keyid_from_another_agents_directory_fails() {
        let key = new_key("cross");
        let req = signed(&key, &params(&key, NOW - 10, NOW + 3600, TAG));
        // The key is real and listed, but by another agent; this agent's
        // directory has a different key.
        let mut keys = keys_of("https://other.example", &key);
        keys.extend(keys_of(AGENT, &new_key("cross-own")));
        assert_eq!(req.verdict(&keys), invalid(Reason::UnknownKey));
    }

    #[test]
    fn agent_must_be_covered() {
        let key = new_key("uncovered");
        let p = params(&key, NOW - 10, NOW + 3600, TAG);
        let base = format!("\"@authority\": example.com\n\"@signature-params\": (\"@authority\"){p}");
        let sig = STANDARD.encode(key.sign(base.as_bytes()).to_bytes());
        let req = Req::new(
            "example.com",
            &format!(r#"agent1="{AGENT}""#),
            &format!(r#"sig1=("@authority"){p}"#),
            &format!("sig1=:{sig}:"),
        );
        assert_eq!(req.verdict(&keys_of(AGENT, &key)), invalid(Reason::AgentNotCovered));
    }

    #[test]
    fn absent_and_malformed() {
        let key = new_key("absent");
        let req = Req { headers: vec![("Host".into(), "example.com".into())], authority: "example.com".into() };
        assert_eq!(req.verdict(&keys_of(AGENT, &key)), Verdict::Absent);
        let req = Req::new("example.com", "agent1=\"x", "sig1=(", "sig1=:x:");
        assert!(matches!(req.verdict(&keys_of(AGENT, &key)), Verdict::Invalid { reason: Reason::Malformed(_) }));
        let long = "a".repeat(MAX_FIELD_BYTES + 1);
        let req = Req::new("example.com", "", &long, "sig1=:x:");
        assert_eq!(req.verdict(&keys_of(AGENT, &key)), invalid(Reason::TooLarge));
    }

    // draft-meunier-webbotauth-httpsig-protocol, Appendix C.2, with the
    // RFC 9421 B.1.4 Ed25519 test key (public part only).
    const RFC9421_X: &str = "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs";
    const RFC9421_KID: &str = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";

    fn rfc_keys(agent: &str) -> Vec<(String, Arc<KeySet>)> {
        let dir = format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{RFC9421_X}","kid":"ignored"}}]}}"#);
        vec![(agent.to_owned(), Arc::new(KeySet::from_directory(dir.as_bytes()).expect("valid directory")))]
    }

    #[test]
    fn thumbprint_matches_draft_vector() {
        let set = rfc_keys("https://signature-agent.test");
        assert_eq!(set[0].1.ids().collect::<Vec<_>>(), vec![RFC9421_KID]);
    }

    #[test]
    fn draft_vector_dictionary_agent() {
        let headers = [
            ("Signature-Agent", r#"agent2="https://signature-agent.test""#),
            (
                "Signature-Input",
                r#"sig2=("@authority" "signature-agent";key="agent2");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=4889289600;nonce="n9p433xm+NJ3ph3upfBIGmsuwHw387YV7Q/F+6BSpGCVjYCqQw6rznNA8PVVLySrAWsv0hQtFioQb6E1YsauiA==";tag="web-bot-auth""#,
            ),
            (
                "Signature",
                "sig2=:RdNFx5Bj6au3YgAMQL/RzmUlZE8QZLIaXGRpw985hWnwPfMxT228NMk6ehRS1PSl4e8PhbNZACSanGdhEwYCCg==:",
            ),
        ];
        let req = RequestParts {
            method: "GET",
            scheme: "https",
            authority: "example.com",
            path: "/",
            query: None,
            headers: &headers,
        };
        // The vector's lifetime is a century: allow it for this known-answer test.
        let limits = Limits { max_lifetime: u64::MAX, max_skew: 60 };
        let agent = "https://signature-agent.test";
        assert_eq!(
            verify(&req, NOW, &limits, &rfc_keys(agent)),
            Verdict::Verified { agent: agent.into(), keyid: RFC9421_KID.into() }
        );
        assert_eq!(verify(&req, NOW, &Limits::default(), &rfc_keys(agent)), invalid(Reason::LifetimeTooLong));
    }

    #[test]
    fn draft_vector_legacy_string_agent() {
        let headers = [
            ("Signature-Agent", r#""https://signature-agent.test""#),
            (
                "Signature-Input",
                r#"sig2=("@authority" "signature-agent");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1735693200;nonce="e8N7S2MFd/qrd6T2R3tdfAuuANngKI7LFtKYI/vowzk4lAZYadIX6wW25MwG7DCT9RUKAJ0qVkU0mEeLElW1qg==";tag="web-bot-auth""#,
            ),
            (
                "Signature",
                "sig2=:jdq0SqOwHdyHr9+r5jw3iYZH6aNGKijYp/EstF4RQTQdi5N5YYKrD+mCT1HA1nZDsi6nJKuHxUi/5Syp3rLWBA==:",
            ),
        ];
        let req = RequestParts {
            method: "GET",
            scheme: "https",
            authority: "example.com",
            path: "/",
            query: None,
            headers: &headers,
        };
        let agent = "https://signature-agent.test";
        assert_eq!(
            verify(&req, NOW, &Limits::default(), &rfc_keys(agent)),
            Verdict::Verified { agent: agent.into(), keyid: RFC9421_KID.into() }
        );
    }

    #[test]
    fn directory_limits() {
        let one = r#"{"kty":"OKP","crv":"Ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}"#;
        let many = format!(r#"{{"keys":[{}]}}"#, vec![one; MAX_DIRECTORY_KEYS + 1].join(","));
        assert_eq!(KeySet::from_directory(many.as_bytes()), Err(DirectoryError::TooManyKeys(MAX_DIRECTORY_KEYS + 1)));
        assert_eq!(
            KeySet::from_directory(br#"{"keys":[{"kty":"RSA","n":"x","e":"AQAB"}]}"#),
            Err(DirectoryError::NoKeys)
        );
        assert!(matches!(KeySet::from_directory(b"<html>"), Err(DirectoryError::Json(_))));
    }

    #[test]
    fn directory_url_forms() {
        assert_eq!(directory_url("https://a.example"), format!("https://a.example{DIRECTORY_PATH}"));
        assert_eq!(directory_url("https://a.example/"), format!("https://a.example{DIRECTORY_PATH}"));
        assert_eq!(directory_url("https://a.example/keys.json"), "https://a.example/keys.json");
    }

    #[test]
    fn hostile_input_never_panics() {
        let keys = rfc_keys(AGENT);
        let inputs = [
            "", ",", "sig1=()", "sig1=();tag=\"web-bot-auth\"", "sig1=(\"@authority\");tag=\"web-bot-auth\";created=-1;expires=99999999999999",
            "sig1=(\"@authority\" \"@authority\");tag=\"web-bot-auth\";created=1735689600;expires=1735689800;keyid=\"k\"",
            "sig1=(\"@query-param\";name=\"a\" \"@authority\" \"signature-agent\");tag=\"web-bot-auth\";created=1735689600;expires=1735689800;keyid=\"k\"",
            "sig1=(\"X-Upper\" \"@authority\" \"signature-agent\");tag=\"web-bot-auth\";created=1735689600;expires=1735689800;keyid=\"k\"",
            "sig1=(1 2 3);tag=\"web-bot-auth\"", "sig1=\"x\";tag=\"web-bot-auth\"",
        ];
        for input in inputs {
            for agent in ["", "\"https://x\"", "a=\"https://x\"", "a=1", "\"ftp://x\""] {
                let headers = [("Signature-Input", input), ("Signature", "sig1=:AAAA:"), ("Signature-Agent", agent)];
                let req = RequestParts {
                    method: "GET",
                    scheme: "https",
                    authority: "",
                    path: "",
                    query: Some("a=1"),
                    headers: &headers,
                };
                let v = verify(&req, NOW, &Limits::default(), &keys);
                assert!(matches!(v, Verdict::Invalid { .. }), "{input} / {agent}: {v:?}");
            }
        }
    }
}
