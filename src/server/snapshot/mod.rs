//! The snapshot `serve` holds behind an `ArcSwap`: the operator's files as
//! [`crate::load`] read and compiled them, plus what only the proxy needs:
//! per site, its metric handles and the answers it gives itself
//! ([`answer`]), and the HTTPS certificates ([`certs`]).
//!
//! It sits at the bottom of `server/`: it names the types of its parts and
//! asks nobody above it (the HTTP path, the reloader) for theirs.

pub mod answer;
pub mod certs;

use std::fmt;
use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;

use self::answer::{prebuild, Prebuilt};
use self::certs::CertSet;
use crate::agent::Category;
use crate::load::file::Reader;
use crate::load::{self, Problem};
use crate::policy::Action;
use crate::server::telemetry::metrics;

/// Everything a request needs, immutable.
pub struct Snapshot {
    /// The operator's files, read and compiled (what the CLI commands see too).
    pub files: load::Snapshot,
    /// Per site, parallel to `files.sites`: what the proxy resolved for it
    /// (shared with the previous snapshot for a site the reload kept).
    pub answers: Vec<Arc<SiteAnswers>>,
    /// The HTTPS certificates, chosen by SNI ([`crate::server::http::tls`]).
    pub certs: Arc<CertSet>,
}

impl Deref for Snapshot {
    type Target = load::Snapshot;

    fn deref(&self) -> &load::Snapshot {
        &self.files
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.files.fmt(f)
    }
}

/// What the proxy resolved for one site when the snapshot loaded (shared
/// by the sites past `metrics.per_site_limit` that answer alike).
#[derive(Debug)]
pub struct SiteAnswers {
    /// The `site` label of its metrics: its name, or, past
    /// `metrics.per_site_limit`, [`crate::config::OTHER_SITES`].
    pub metric_site: String,
    /// `robotgate_requests_total{site, category}` handles, by [`Category::ALL`]
    /// index, resolved once here rather than looked up per request.
    pub requests: Vec<prometheus::IntCounter>,
    /// The answer of each action robotgate answers itself (block, alternate,
    /// redirect); see [`SiteAnswers::refusal`]. Shared between the sites of
    /// a snapshot whose action is the same and names no file: two response
    /// heads are about 1.4 KB, at 10,000 sites 14 MB of copies (issue 55).
    pub refusals: Vec<(Action, Arc<[Prebuilt; 2]>)>,
}

impl SiteAnswers {
    /// The prebuilt answer to `action`, when robotgate answers it itself.
    /// Cost: one comparison per distinct refusing action of the site (a
    /// status, then a short body or location), a handful in practice.
    pub fn refusal(&self, action: &Action, to: answer::Reader) -> Option<&Prebuilt> {
        let i = usize::from(to == answer::Reader::Edge);
        self.refusals.iter().find(|(a, _)| a == action).map(|(_, p)| &p[i])
    }
}

/// Load the config file and everything it names.
///
/// # Errors
/// Every problem [`load::load`] finds, then certificates that do not load and
/// answers that cannot be built.
pub fn load(config_path: &Path) -> Result<Snapshot, Vec<Problem>> {
    reload(config_path, None)
}

/// [`load`] for `host`: what it needs of the file ([`crate::config::Host::missing`]).
///
/// # Errors
/// As [`load`].
pub fn load_for(config_path: &Path, host: crate::config::Host) -> Result<Snapshot, Vec<Problem>> {
    let files = load::reload_for(config_path, None, &std::collections::HashSet::new(), None, host, Reader::Helper)?;
    build_for(files, config_path, None, host)
}

/// [`load`], reusing what has not changed since `previous`.
///
/// # Errors
/// As [`load`].
pub fn reload(config_path: &Path, previous: Option<&Snapshot>) -> Result<Snapshot, Vec<Problem>> {
    reload_seen(config_path, previous, &std::collections::HashSet::new(), None)
}

/// [`reload`], after what the reloader's watcher saw: the files known to
/// have been put in place whole ([`load::reload_whole`]) and, when it lost
/// no event, every source it named ([`load::reload_named`]: the sites none
/// of whose files is named are kept without a `stat`).
///
/// # Errors
/// As [`load`].
pub fn reload_seen(
    config_path: &Path,
    previous: Option<&Snapshot>,
    whole: &std::collections::HashSet<std::path::PathBuf>,
    named: Option<&std::collections::HashSet<std::path::PathBuf>>,
) -> Result<Snapshot, Vec<Problem>> {
    let (host, reader) = (crate::config::Host::Serve, Reader::Helper);
    let files = load::reload_for(config_path, previous.map(|p| &p.files), whole, named, host, reader)?;
    build(files, config_path, previous)
}

/// Add what the proxy needs to `files`, keeping `previous`'s for every site
/// `files` shares with it.
///
/// # Errors
/// As [`load`].
pub fn build(files: load::Snapshot, config_path: &Path, previous: Option<&Snapshot>) -> Result<Snapshot, Vec<Problem>> {
    build_for(files, config_path, previous, crate::config::Host::Serve)
}

/// [`build`] for `host`.
///
/// # Errors
/// As [`load`].
pub fn build_for(
    files: load::Snapshot,
    config_path: &Path,
    previous: Option<&Snapshot>,
    host: crate::config::Host,
) -> Result<Snapshot, Vec<Problem>> {
    // What `robotgate serve` needs that another host does not (nginx
    // listens and forwards itself); a file of `sites_dir` was checked alone.
    let mut problems: Vec<Problem> = host
        .missing(&files.settings, files.sites[..files.config_sites].iter().map(|s| &*s.conf))
        .into_iter()
        .map(|e| Problem::new(config_path, None, e.to_string()))
        .collect();
    let certs = match CertSet::load(&files.settings, files.sites.iter().map(|s| &*s.conf)) {
        Ok(c) => Arc::new(c),
        Err(failed) => {
            problems.extend(failed);
            Arc::new(CertSet::default())
        }
    };
    let mut answers = Vec::with_capacity(files.sites.len());
    // The previous snapshot's answers, by the address of the site they were
    // made for: a kept site is the same allocation.
    let before: std::collections::HashMap<*const load::LiveSite, &Arc<SiteAnswers>> =
        previous.map(|p| p.files.sites.iter().map(Arc::as_ptr).zip(p.answers.iter()).collect()).unwrap_or_default();
    // Answers already built in this load for an action that names no file
    // (the same action answers alike at every site); a handful at most.
    let mut common: Vec<(&Action, Arc<[Prebuilt; 2]>)> = Vec::new();
    // Whole answers already built in this load for the sites past
    // `metrics.per_site_limit` whose actions name no file, by their
    // distinct actions: nearly every such site has the same (issue 55: half
    // a kilobyte a site at 10,000 sites); a handful at most.
    let mut alike: Vec<(Vec<&Action>, Arc<SiteAnswers>)> = Vec::new();
    let names_file = |a: &Action| matches!(a, Action::Alternate { .. } | Action::Block { file: Some(_), .. });
    for (i, site) in files.sites.iter().enumerate() {
        let name = site.conf.name.as_str();
        // The first sites have series of their own; the rest share one, so
        // a scrape stays bounded at any number of sites.
        let metric_site = files.metric_site(i);
        if let Some(kept) = before.get(&Arc::as_ptr(site)).filter(|a| a.metric_site == metric_site) {
            answers.push(Arc::clone(kept));
            continue;
        }
        let mut distinct: Vec<&Action> = Vec::new();
        for action in site.actions() {
            if !distinct.contains(&action) {
                distinct.push(action);
            }
        }
        // (Past the sites with series of their own.)
        let shared = i >= files.settings.boot.metrics_per_site && !distinct.iter().any(|a| names_file(a));
        if let Some((_, same)) = alike.iter().find(|(k, _)| shared && *k == distinct) {
            answers.push(Arc::clone(same));
            continue;
        }
        let requests =
            Category::ALL.iter().map(|c| metrics().requests.with_label_values(&[metric_site, c.as_str()])).collect();
        let mut refusals: Vec<(Action, Arc<[Prebuilt; 2]>)> = Vec::new();
        for action in site.actions() {
            if refusals.iter().any(|(a, _)| a == action) {
                continue;
            }
            let names_file = names_file(action);
            if let Some((_, answer)) = common.iter().find(|(a, _)| !names_file && *a == action) {
                refusals.push((action.clone(), Arc::clone(answer)));
                continue;
            }
            match prebuild(action, &site.alternates) {
                Some(Ok(answer)) => {
                    let answer = Arc::new(answer);
                    if !names_file && common.len() < 64 {
                        common.push((action, Arc::clone(&answer)));
                    }
                    refusals.push((action.clone(), answer));
                }
                Some(Err(e)) => problems.push(Problem::new(
                    config_path,
                    None,
                    format!("site `{name}`: cannot build the answer of action `{}`: {e}", action.name()),
                )),
                None => {}
            }
        }
        let built = Arc::new(SiteAnswers { metric_site: metric_site.to_owned(), requests, refusals });
        if shared && alike.len() < 64 {
            alike.push((distinct, Arc::clone(&built)));
        }
        answers.push(built);
    }
    if !problems.is_empty() {
        // The whole reload is refused: say which files it had refused too.
        problems.extend(files.refused);
        return Err(problems);
    }
    Ok(Snapshot { files, answers, certs })
}
