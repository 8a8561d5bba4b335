//! Key directories (draft-meunier-http-message-signatures-directory): an
//! agent's published Ed25519 keys, and their ids (JWK thumbprints).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::VerifyingKey;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

/// Path of an agent's key directory (draft-meunier-http-message-signatures-directory).
pub const DIRECTORY_PATH: &str = "/.well-known/http-message-signatures-directory";

/// Media type of a key directory.
pub const DIRECTORY_MEDIA_TYPE: &str = "application/http-message-signatures-directory+json";

/// Most keys a directory may list (draft §5.8: bound the key count).
pub const MAX_DIRECTORY_KEYS: usize = 16;

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

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    #[test]
    fn thumbprint_matches_draft_vector() {
        let set = rfc_keys("https://signature-agent.test");
        assert_eq!(set[0].1.ids().collect::<Vec<_>>(), vec![RFC9421_KID]);
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
}
