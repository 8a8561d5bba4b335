//! Reading a request's signature fields: which web-bot-auth signatures it
//! carries, whether each is well-formed and fresh, and which agent it names
//! (draft §4.2, §4.4). Everything but the keys.

use sfv::{BareItem, Dictionary, InnerList, ListEntry, Parser};

use super::base::signature_base;
use super::{Limits, Reason, RequestParts, MAX_AGENT_BYTES, MAX_COMPONENTS, MAX_FIELD_BYTES, MAX_SIGNATURES, TAG};

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
    pub(super) signature: Vec<u8>,
    /// The signature base (RFC 9421 §2.5).
    pub(super) base: String,
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

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::*;
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine as _;
    use ed25519_dalek::Signer as _;

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
}
