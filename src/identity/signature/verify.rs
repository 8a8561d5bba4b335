//! Verification: each candidate signature against the keys of the agent it
//! names, one Ed25519 check per candidate.

use std::collections::HashMap;
use std::sync::Arc;

use ed25519_dalek::{Signature, Verifier as _, VerifyingKey};

use super::{inspect, Candidate, Inspection, KeySet, Limits, Reason, RequestParts};

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

/// Checks a request's Web Bot Auth signature against `keys` at time `now`
/// (Unix seconds): [`inspect`] then [`Inspection::verify`].
pub fn verify(req: &RequestParts<'_>, now: u64, limits: &Limits, keys: &impl Keys) -> Verdict {
    inspect(req, now, limits).verify(keys)
}

impl Inspection {
    /// Checks each candidate against the keys of its own agent; the first that
    /// verifies wins.
    pub fn verify(&self, keys: &(impl Keys + ?Sized)) -> Verdict {
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

fn check_candidate(c: &Candidate, keys: &(impl Keys + ?Sized)) -> Result<(), Reason> {
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

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::*;

    #[test]
    fn valid_signature_verifies() {
        let key = new_key("valid");
        let req = signed(&key, &params(&key, NOW - 10, NOW + 3600, TAG));
        let keyid = thumbprint(&key.verifying_key());
        assert_eq!(req.verdict(&keys_of(AGENT, &key)), Verdict::Verified { agent: AGENT.into(), keyid });
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
