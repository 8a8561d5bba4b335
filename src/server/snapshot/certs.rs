//! The certificates of the HTTPS listeners and sites, loaded with the
//! snapshot: a broken or mismatched pair refuses the reload, so the last
//! good pair stays. [`crate::server::http::tls`] picks one per handshake.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pingora::tls::sign::CertifiedKey;
use pingora::tls::{CertificateDer, CryptoProvider, PrivateKeyDer};
use rustls_pki_types::pem::{self, PemObject};

use crate::config::Settings;
use crate::load::{file, Problem};
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

/// Load a certificate chain and its key (PEM, read by [`file::read`]), and
/// check that they belong together. `owner` opens each message.
fn load_pair(cert: &Path, key: &Path, owner: &str) -> Result<(Arc<CertifiedKey>, Option<CertInfo>), Problem> {
    let (c, k) = (cert.display(), key.display());
    let read = |path: &Path, what: &str| {
        file::read(path, file::PEM_MAX).map(|f| f.body).map_err(|refusal| {
            let mut p = Problem::refused(path, what, &refusal);
            p.message = format!("{owner}: {}", p.message);
            p
        })
    };
    let (cert_pem, key_pem) = (read(cert, "the certificate")?, read(key, "the private key")?);
    let fail = |file: &Path, message: String| Problem::new(file, None, format!("{owner}: {message}"));
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(cert, format!("cannot read the certificates in {c}: {e}")))?;
    if chain.is_empty() {
        return Err(fail(cert, format!("no certificate in {c}")));
    }
    let key_der = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| match e {
        pem::Error::NoItemsFound => fail(key, format!("no private key in {k}")),
        e => fail(key, format!("cannot read the private key in {k}: {e}")),
    })?;
    pingora::tls::install_default_crypto_provider();
    let provider = CryptoProvider::get_default().ok_or_else(|| fail(cert, "no TLS crypto provider".into()))?;
    let info = x509::parse(chain[0].as_ref());
    let certified = CertifiedKey::from_der(chain, key_der, provider)
        .map_err(|e| fail(key, format!("the key {k} does not fit the certificate {c}: {e}")))?;
    Ok((Arc::new(certified), info))
}

impl CertSet {
    /// Load the certificates of every HTTPS listener and every site with
    /// `tls:`. Every problem is returned, naming its file.
    ///
    /// # Errors
    /// One problem per pair that cannot be served.
    pub fn load<'a>(
        settings: &Settings,
        sites: impl IntoIterator<Item = &'a crate::config::Site>,
    ) -> Result<CertSet, Vec<Problem>> {
        let mut set = CertSet::default();
        let mut problems = Vec::new();
        if !settings.boot.listen.iter().any(|l| l.https) {
            return Ok(set);
        }
        for site in sites {
            let Some((cert, key)) = site.tls.as_deref() else { continue };
            match load_pair(cert, key, &format!("site `{}`", site.name)) {
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
                Err(p) => problems.push(p),
            }
        }
        for l in &settings.boot.listen {
            let Some((cert, key)) = &l.tls else { continue };
            match load_pair(cert, key, &format!("listen {}", l.address)) {
                Ok((ck, info)) => {
                    set.by_listener.insert(l.address.clone(), ck);
                    let owner = format!("listen {}", l.address);
                    set.entries.push(CertEntry { owner, path: cert.clone(), info, hosts: Vec::new() });
                }
                Err(p) => problems.push(p),
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
                let when = crate::time::rfc3339_ms(info.not_after.max(0) as u64 * 1000);
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
    /// time) for every certificate; certificates no longer loaded go. Those
    /// of the sites in `other` (past `metrics.per_site_limit`) are one
    /// series, `site="_other"`: the soonest expiry among them.
    pub fn publish(&self, other: &std::collections::HashSet<&str>) {
        let m = &metrics().certificate_expiry;
        m.reset();
        let mut soonest: Option<i64> = None;
        for e in &self.entries {
            if let Some(info) = &e.info {
                match other.contains(e.owner.as_str()) {
                    true => soonest = Some(soonest.map_or(info.not_after, |s| s.min(info.not_after))),
                    false => m.with_label_values(&[e.owner.as_str()]).set(info.not_after),
                }
            }
        }
        if let Some(s) = soonest {
            m.with_label_values(&[crate::config::OTHER_SITES]).set(s);
        }
    }
}
