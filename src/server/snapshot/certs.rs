//! The certificates of the HTTPS listeners and sites, loaded with the
//! snapshot: a broken or mismatched pair refuses the reload, so the last
//! good pair stays. [`crate::server::http::tls`] picks one per handshake.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pingora::tls::sign::CertifiedKey;
use pingora::tls::CryptoProvider;

use crate::config::Settings;
use crate::server::telemetry::metrics;
use crate::x509::{self, CertInfo};

/// A certificate expiring sooner than this is a warning of `config check`.
pub const EXPIRY_WARNING_SECS: i64 = 14 * 86_400;

/// One loaded certificate, with who it is for.
#[derive(Debug, Clone)]
pub struct CertEntry {
    /// The site's name, or `listen ADDRESS` for a listener's own.
    pub owner: String,
    /// The certificate file.
    pub path: PathBuf,
    /// What the certificate says (expiry, names); `None` if the DER walk
    /// could not read it (rustls accepted it, so it is still served).
    pub info: Option<CertInfo>,
    /// The hosts it must cover (the site's; none for a listener's).
    pub hosts: Vec<String>,
}

/// Every certificate of a configuration.
#[derive(Default)]
pub struct CertSet {
    by_host: HashMap<String, Arc<CertifiedKey>>,
    by_listener: HashMap<String, Arc<CertifiedKey>>,
    /// What was loaded, for warnings and metrics.
    pub entries: Vec<CertEntry>,
}

impl std::fmt::Debug for CertSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertSet").field("entries", &self.entries).finish_non_exhaustive()
    }
}

/// Load a certificate chain and its key, and check that they belong together.
fn load_pair(cert: &Path, key: &Path) -> Result<(Arc<CertifiedKey>, Option<CertInfo>), String> {
    let (c, k) = (cert.to_string_lossy(), key.to_string_lossy());
    let (chain, key_der) = match pingora::tls::load_certs_and_key_files(&c, &k) {
        Ok(Some(pair)) => pair,
        Ok(None) => return Err(format!("no certificate in {c} or no private key in {k}")),
        Err(e) => return Err(e.to_string()),
    };
    pingora::tls::install_default_crypto_provider();
    let provider = CryptoProvider::get_default().ok_or("no TLS crypto provider")?;
    let info = x509::parse(chain[0].as_ref());
    let chain = chain.into_iter().map(|c| c.into_owned()).collect();
    let certified = CertifiedKey::from_der(chain, key_der.clone_key(), provider)
        .map_err(|e| format!("the key {k} does not fit the certificate {c}: {e}"))?;
    Ok((Arc::new(certified), info))
}

impl CertSet {
    /// Load the certificates of every HTTPS listener and every site with
    /// `tls:`. Every problem is returned, naming its file.
    ///
    /// # Errors
    /// (file, reason) per pair that cannot be served.
    pub fn load<'a>(
        settings: &Settings,
        sites: impl IntoIterator<Item = &'a crate::config::Site>,
    ) -> Result<CertSet, Vec<(PathBuf, String)>> {
        let mut set = CertSet::default();
        let mut problems = Vec::new();
        if !settings.listen.iter().any(|l| l.https) {
            return Ok(set);
        }
        for site in sites {
            let Some((cert, key)) = &site.tls else { continue };
            match load_pair(cert, key) {
                Ok((ck, info)) => {
                    for host in &site.hosts {
                        set.by_host.entry(host.clone()).or_insert_with(|| ck.clone());
                    }
                    set.entries.push(CertEntry {
                        owner: site.name.clone(),
                        path: cert.clone(),
                        info,
                        hosts: site.hosts.clone(),
                    });
                }
                Err(e) => problems.push((cert.clone(), format!("site `{}`: {e}", site.name))),
            }
        }
        for l in &settings.listen {
            let Some((cert, key)) = &l.tls else { continue };
            match load_pair(cert, key) {
                Ok((ck, info)) => {
                    set.by_listener.insert(l.address.clone(), ck);
                    let owner = format!("listen {}", l.address);
                    set.entries.push(CertEntry { owner, path: cert.clone(), info, hosts: Vec::new() });
                }
                Err(e) => problems.push((cert.clone(), format!("listen {}: {e}", l.address))),
            }
        }
        if problems.is_empty() {
            Ok(set)
        } else {
            Err(problems)
        }
    }

    /// The certificate for a handshake on `listener` asking for `sni`.
    pub fn resolve(&self, listener: &str, sni: Option<&str>) -> Option<Arc<CertifiedKey>> {
        sni.and_then(|name| {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            self.by_host.get(&name).cloned()
        })
        .or_else(|| self.by_listener.get(listener).cloned())
    }

    /// What `config check` warns about: certificates that expire within 14
    /// days of `now` (Unix seconds), and site certificates that do not
    /// cover one of the site's hosts.
    pub fn warnings(&self, now: i64) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        for e in &self.entries {
            let Some(info) = &e.info else {
                out.push((e.path.clone(), format!("{}: cannot read the certificate's expiry and names", e.owner)));
                continue;
            };
            let left = info.not_after - now;
            if left < EXPIRY_WARNING_SECS {
                let when = crate::record::time::rfc3339_ms(info.not_after.max(0) as u64 * 1000);
                let what = if left <= 0 { "expired" } else { "expires" };
                out.push((e.path.clone(), format!("{}: the certificate {what} at {when}", e.owner)));
            }
            for host in e.hosts.iter().filter(|h| !x509::covers(&info.names, h)) {
                out.push((
                    e.path.clone(),
                    format!(
                        "{}: the certificate does not cover the host `{host}` (it names {})",
                        e.owner,
                        info.names.join(", ")
                    ),
                ));
            }
        }
        out
    }

    /// Set `robotgate_certificate_expiry_seconds{site}` (the expiry's Unix
    /// time) for every certificate; certificates no longer loaded go.
    pub fn publish(&self) {
        let m = &metrics().certificate_expiry;
        m.reset();
        for e in &self.entries {
            if let Some(info) = &e.info {
                m.with_label_values(&[e.owner.as_str()]).set(info.not_after);
            }
        }
    }
}
