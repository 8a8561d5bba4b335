//! The signature base (RFC 9421 §2.5): the covered components of a request,
//! each serialized as the signer serialized it, then the signature parameters.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use sfv::{BareItem, InnerList, ListEntry, Parser, SerializeValue};

use super::{Reason, RequestParts, MAX_BASE_BYTES};

/// The RFC 9421 §2.5 signature base for the components `params` covers.
pub(super) fn signature_base(req: &RequestParts<'_>, params: &InnerList) -> Result<String, Reason> {
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
    use super::super::testkit::*;
    use super::super::*;

    #[test]
    fn authority_port_and_case_normalised() {
        let key = new_key("port");
        let (input, sig) = sign(&key, "example.com", "agent1", AGENT, &params(&key, NOW, NOW + 60, TAG));
        let req = Req::new("Example.COM:443", &format!(r#"agent1="{AGENT}""#), &input, &sig);
        assert!(matches!(req.verdict(&keys_of(AGENT, &key)), Verdict::Verified { .. }));
    }
}
