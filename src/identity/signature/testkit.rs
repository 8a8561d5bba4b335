//! What the signature tests share: keys, a signer that writes the base out
//! by hand, and the draft's test vectors.

use std::sync::Arc;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use ed25519_dalek::{Signer as _, SigningKey};
use sha2::{Digest as _, Sha256};

use super::*;

pub(super) const NOW: u64 = 1_735_689_700;

pub(super) const AGENT: &str = "https://crawler.example";

/// A fresh key: the seed hashes a label with a per-process random state.
pub(super) fn new_key(label: &str) -> SigningKey {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write(label.as_bytes());
    let seed: [u8; 32] = Sha256::digest(h.finish().to_le_bytes()).into();
    SigningKey::from_bytes(&seed)
}

pub(super) fn keys_of(agent: &str, key: &SigningKey) -> Vec<(String, Arc<KeySet>)> {
    vec![(agent.to_owned(), Arc::new(KeySet::from_keys([key.verifying_key()])))]
}

/// Signs per the draft, the base written out by hand (RFC 9421 §2.5):
/// returns the Signature-Input and Signature values.
pub(super) fn sign(
    key: &SigningKey,
    authority: &str,
    agent_label: &str,
    agent: &str,
    params: &str,
) -> (String, String) {
    let components = format!(r#"("@authority" "signature-agent";key="{agent_label}")"#);
    let base = format!(
        "\"@authority\": {authority}\n\"signature-agent\";key=\"{agent_label}\": \"{agent}\"\n\"@signature-params\": {components}{params}"
    );
    let sig = key.sign(base.as_bytes());
    (format!("sig1={components}{params}"), format!("sig1=:{}:", STANDARD.encode(sig.to_bytes())))
}

pub(super) fn params(key: &SigningKey, created: u64, expires: u64, tag: &str) -> String {
    format!(
        r#";created={created};expires={expires};keyid="{}";alg="ed25519";tag="{tag}""#,
        thumbprint(&key.verifying_key())
    )
}

pub(super) struct Req {
    pub(super) headers: Vec<(String, String)>,
    pub(super) authority: String,
}

impl Req {
    pub(super) fn new(authority: &str, agent_field: &str, input: &str, sig: &str) -> Req {
        Req {
            headers: vec![
                ("Signature-Agent".into(), agent_field.into()),
                ("Signature-Input".into(), input.into()),
                ("Signature".into(), sig.into()),
            ],
            authority: authority.into(),
        }
    }

    pub(super) fn verdict(&self, keys: &impl Keys) -> Verdict {
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

pub(super) fn signed(key: &SigningKey, p: &str) -> Req {
    let (input, sig) = sign(key, "example.com", "agent1", AGENT, p);
    Req::new("example.com", &format!(r#"agent1="{AGENT}""#), &input, &sig)
}

pub(super) fn invalid(reason: Reason) -> Verdict {
    Verdict::Invalid { reason }
}

// draft-meunier-webbotauth-httpsig-protocol, Appendix C.2, with the
// RFC 9421 B.1.4 Ed25519 test key (public part only).
pub(super) const RFC9421_X: &str = "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs";

pub(super) const RFC9421_KID: &str = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";

pub(super) fn rfc_keys(agent: &str) -> Vec<(String, Arc<KeySet>)> {
    let dir = format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{RFC9421_X}","kid":"ignored"}}]}}"#);
    vec![(agent.to_owned(), Arc::new(KeySet::from_directory(dir.as_bytes()).expect("valid directory")))]
}
