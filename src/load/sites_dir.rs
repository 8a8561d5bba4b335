//! `sites_dir`: a directory of site files, each one site or a list of
//! sites shaped as an entry of `sites:`, the way hosting panels lay sites
//! out (nginx's `sites-enabled/`).
//!
//! Each file is read and checked on its own ([`crate::config::parse_site_file`]):
//! a file that does not parse, does not check, or names a host or a site
//! name that the config or another file already has, is refused alone,
//! with its file and line, and the other files' sites are served. A refused
//! file that was good before keeps its last good sites; one that never was
//! serves nothing. A new file is a new site, a removed file removed sites.
//!
//! A file whose stamp has not moved since the previous load is not read
//! again: its sites are that load's (a reload of 10,000 files costs 10,000
//! `stat` calls, and the clash checks, one set look-up a host).
//!
//! Which file holds each host survives a restart (issue 66): the host
//! writes the record ([`Held`], [`write_held`]) beside its other state
//! files ([`held_path`]) after each load it puts in force, and a start
//! reads it, so a start decides a clash as a reload does. A file that
//! held a host before is taken before one that did not, whatever their
//! names; one refused at start (no last good sites to serve) keeps its
//! hosts held all the same, until it is fixed or removed. Before, a start
//! took the files in name order: `000.yaml` naming another file's host,
//! refused while running, took that host at the next restart.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{file, Problem};
use crate::config::{Host, Settings, Site};

/// The most site files read from the directory; beyond, the rest are
/// refused (each file is at least a few hundred bytes of sites).
pub const MAX_FILES: usize = 100_000;

/// The site files, as a load took them.
pub(super) type SiteFiles = BTreeMap<PathBuf, SiteFile>;

/// One file of the directory, as a load took it.
#[derive(Debug, Clone)]
pub(super) struct SiteFile {
    /// Its stamp when it was read.
    stamp: Option<file::Stamp>,
    /// The sites served from it: what it says, or, refused, its last good
    /// sites (none if it never was good).
    sites: Vec<Arc<Site>>,
    /// Refused: read again by the next load, which says so again.
    refused: bool,
}

/// Which site file held each host (canonical, [`crate::net::canonical_host`])
/// when the last load was put in force: the hosts of the sites each file
/// served, and those a refused file still holds.
pub type Held = HashMap<String, PathBuf>;

/// The record's file name, beside robotgate's other state files.
pub const HELD_FILE: &str = "robotgate-site-hosts.json";

/// The most the record may hold (a host and a path a line: 100,000 hosts
/// take a few megabytes).
const HELD_MAX: u64 = 64 << 20;

/// Where the record lives: beside the traps state file `traps_state`
/// ([`super::traps::state_path`]).
pub fn held_path(traps_state: &Path) -> PathBuf {
    traps_state.with_file_name(HELD_FILE)
}

/// Read the record; a missing, refused or unreadable one holds nothing
/// (the files are then taken in name order, as at a first start).
pub fn read_held(path: &Path, reader: file::Reader) -> Held {
    let read = file::read_with(path, HELD_MAX, &file::Timing { reader, ..file::Timing::default() });
    let by_file: BTreeMap<PathBuf, Vec<String>> =
        read.ok().and_then(|c| serde_json::from_slice(&c.body).ok()).unwrap_or_default();
    by_file.into_iter().flat_map(|(file, hosts)| hosts.into_iter().map(move |h| (h, file.clone()))).collect()
}

/// Write the record, `{"file": ["host", ...], ...}`, through a temporary
/// file and a rename, so a crash never leaves half a file.
///
/// # Errors
/// The file cannot be written.
pub fn write_held(path: &Path, held: &Held) -> std::io::Result<()> {
    let mut by_file: BTreeMap<&Path, Vec<&str>> = BTreeMap::new();
    for (host, file) in held {
        by_file.entry(file).or_default().push(host);
    }
    for hosts in by_file.values_mut() {
        hosts.sort_unstable();
    }
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec(&by_file).map_err(std::io::Error::other)?)?;
    std::fs::rename(&tmp, path)
}

/// Which file (or the config) has each host, site name and the default.
struct Owners {
    hosts: HashMap<String, PathBuf>,
    names: HashMap<String, PathBuf>,
    default: Option<PathBuf>,
}

impl Owners {
    /// What in `sites` someone else already has, one sentence each, the
    /// first [`Owners::SAID`] of them (and how many more).
    fn clashes(&self, sites: &[Arc<Site>]) -> Vec<String> {
        let mut out = Vec::new();
        let mut more = 0usize;
        let mut say = |out: &mut Vec<String>, line: String| match out.len() < Owners::SAID {
            true => out.push(line),
            false => more += 1,
        };
        for s in sites {
            if let Some(other) = self.names.get(&s.name) {
                say(&mut out, format!("site `{}` is also a site of {}", s.name, other.display()));
            }
            for h in &s.hosts {
                if let Some(other) = self.hosts.get(h) {
                    say(&mut out, format!("site `{}`: host `{h}` is also a host in {}", s.name, other.display()));
                }
            }
            if let (true, Some(other)) = (s.default, &self.default) {
                say(&mut out, format!("site `{}` is a default site, and so is one in {}", s.name, other.display()));
            }
        }
        if more > 0 {
            out.push(format!("and {more} more hosts or names another file has"));
        }
        out
    }

    /// How many clashes of one file are said one by one.
    const SAID: usize = 20;

    fn take(&mut self, sites: &[Arc<Site>], owner: &Path) {
        for s in sites {
            self.names.insert(s.name.clone(), owner.to_path_buf());
            for h in &s.hosts {
                self.hosts.insert(h.clone(), owner.to_path_buf());
            }
            if s.default {
                self.default = Some(owner.to_path_buf());
            }
        }
    }
}

/// Where a load puts what it found in the directory.
pub(super) struct Found<'a> {
    /// Every file read or kept (the watcher watches them), the directory
    /// itself (its time moves when a file comes or goes) and its patterns.
    pub(super) sources: &'a mut Vec<PathBuf>,
    /// Refused files: the load goes on without them.
    pub(super) refused: &'a mut Vec<Problem>,
    /// Problems that refuse the whole load (the directory cannot be read).
    pub(super) problems: &'a mut Vec<Problem>,
}

/// Read `dir`'s site files for the config's `own` sites (named by
/// `config_path`), reusing `previous`'s for each file whose stamp has not
/// moved, reading each file as `reads` says (one put in place whole
/// without waiting for it to settle); `host`
/// says what each site needs ([`Host::missing_in`]); `held`: which file
/// held each host when the last load was put in force (the record, at
/// start). Returns the sites in file order, the files as taken, and which
/// file holds each host now.
#[allow(clippy::too_many_arguments)]
pub(super) fn read(
    dir: &Path,
    settings: &Settings,
    own: &[Arc<Site>],
    config_path: &Path,
    host: Host,
    previous: Option<&SiteFiles>,
    reads: super::Reads<'_>,
    held: &Held,
    found: Found<'_>,
) -> (Vec<Arc<Site>>, SiteFiles, Held) {
    let Found { sources, refused, problems } = found;
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            problems.push(Problem::new(dir, None, format!("cannot read the sites directory: {e}")));
            return (Vec::new(), SiteFiles::new(), Held::new());
        }
    };
    sources.push(dir.to_path_buf());
    sources.extend(PATTERNS.iter().map(|p| dir.join(p)));
    let mut paths: Vec<PathBuf> =
        entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| is_site_file(p)).collect();
    paths.sort();
    if paths.len() > MAX_FILES {
        for p in paths.drain(MAX_FILES..) {
            refused.push(Problem::new(p, None, format!("refused: more than {MAX_FILES} site files in the directory")));
        }
    }
    let mut owners = Owners { hosts: HashMap::new(), names: HashMap::new(), default: None };
    owners.take(own, config_path);
    let empty = SiteFiles::new();
    let previous = previous.unwrap_or(&empty);
    // Files good before and unchanged are taken first: a new file cannot
    // push out a site already served; then those that held a host (at
    // start, by the record); among the others, by name.
    let stamps: Vec<(PathBuf, Option<file::Stamp>)> = paths
        .into_iter()
        .map(|p| {
            let stamp = file::stamp(&p);
            (p, stamp)
        })
        .collect();
    let kept = |(p, s): &(PathBuf, Option<file::Stamp>)| {
        previous.get(p).is_some_and(|f| !f.refused && s.is_some() && f.stamp == *s)
    };
    let holders: HashMap<&Path, Vec<&str>> = held.iter().fold(HashMap::new(), |mut by, (host, file)| {
        by.entry(file.as_path()).or_default().push(host.as_str());
        by
    });
    let (first, rest): (Vec<_>, Vec<_>) = stamps.iter().partition(|e| kept(e));
    let (then, last): (Vec<_>, Vec<_>) = rest.into_iter().partition(|(p, _)| holders.contains_key(p.as_path()));
    let mut files = SiteFiles::new();
    for (path, stamp) in first.into_iter().chain(then).chain(last) {
        sources.push(path.clone());
        let before = previous.get(path);
        let parsed = match before.filter(|f| !f.refused && stamp.is_some() && f.stamp == *stamp) {
            Some(f) => Ok(f.sites.clone()),
            None => parse(path, settings, host, reads.timing(path)).map(|s| s.into_iter().map(Arc::new).collect()),
        };
        let taken = parsed.and_then(|sites| {
            let clashes = owners.clashes(&sites);
            match clashes.is_empty() {
                true => Ok(sites),
                false => Err(clashes.into_iter().map(|c| Problem::new(path, None, c)).collect()),
            }
        });
        match taken {
            Ok(sites) => {
                owners.take(&sites, path);
                files.insert(path.clone(), SiteFile { stamp: *stamp, sites, refused: false });
            }
            Err(mut said) => {
                // The last good sites stay, unless they clash now too.
                let last = before.map(|f| &f.sites).filter(|s| !s.is_empty() && owners.clashes(s).is_empty());
                let tail = match last {
                    Some(_) => "; refused, its last good version stays in force",
                    None => "; refused, its sites are not served",
                };
                for p in &mut said {
                    p.message.push_str(tail);
                }
                refused.append(&mut said);
                let sites = last.cloned().unwrap_or_default();
                owners.take(&sites, path);
                if sites.is_empty() {
                    // Nothing to serve: what it held stays its own, so no
                    // other file takes it while this one is being fixed.
                    for &host in holders.get(path.as_path()).into_iter().flatten() {
                        owners.hosts.entry(host.to_owned()).or_insert_with(|| path.clone());
                    }
                }
                files.insert(path.clone(), SiteFile { stamp: *stamp, sites, refused: true });
            }
        }
    }
    let sites = files.values().flat_map(|f| f.sites.iter().cloned()).collect();
    let mut now = owners.hosts;
    now.retain(|_, owner| owner.as_path() != config_path);
    (sites, files, now)
}

/// The last components of a site file's path, as sources: the watcher
/// takes a new file of either kind in the directory for a change.
pub const PATTERNS: [&str; 2] = ["*.yaml", "*.yml"];

/// A site file: `*.yaml` or `*.yml`, not hidden (an editor's swap or
/// backup file, a file being written before its rename).
pub fn is_site_file(path: &Path) -> bool {
    let hidden = path.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'));
    !hidden && path.extension().is_some_and(|x| x == "yaml" || x == "yml")
}

/// Read and check one site file alone.
fn parse(path: &Path, settings: &Settings, host: Host, timing: file::Timing) -> Result<Vec<Site>, Vec<Problem>> {
    let body = file::read_with(path, file::CONFIG_MAX, &timing)
        .map_err(|refusal| vec![Problem::refused(path, "the site file", &refusal)])?
        .body;
    let text = String::from_utf8(body).map_err(|e| {
        vec![Problem::new(path, None, format!("cannot read the site file: it is not UTF-8 text ({e})"))]
    })?;
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    crate::config::parse_site_file(&text, settings, &stem, host)
        .map_err(|errors| errors.into_iter().map(|e| Problem::new(path, e.line, e.to_string())).collect())
}
