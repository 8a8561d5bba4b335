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
/// when the last load was put in force, by file: the hosts of the sites
/// each file served, and those a refused file still holds, each list
/// sorted. Shared, and each file's list too: a reload that changed no site
/// file keeps the last one's whole, one that changed a file builds that
/// file's list alone (100,000 hosts are megabytes).
pub type Held = Arc<BTreeMap<PathBuf, Arc<[String]>>>;

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
    Arc::new(
        by_file
            .into_iter()
            .filter(|(_, hosts)| !hosts.is_empty())
            .map(|(file, mut hosts)| {
                hosts.sort_unstable();
                (file, hosts.into())
            })
            .collect(),
    )
}

/// Write the record, `{"file": ["host", ...], ...}`, through a temporary
/// file and a rename, so a crash never leaves half a file.
///
/// # Errors
/// The file cannot be written.
pub fn write_held(path: &Path, held: &Held) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    let by_file: BTreeMap<&Path, &[String]> = held.iter().map(|(f, h)| (f.as_path(), &h[..])).collect();
    std::fs::write(&tmp, serde_json::to_vec(&by_file).map_err(std::io::Error::other)?)?;
    std::fs::rename(&tmp, path)
}

/// Keep which file of `snap`'s `sites_dir` holds each host for the next
/// start ([`write_held`] at [`held_path`]), when it differs from `before`'s
/// (at start, from the record on disk, read as `reader` says): the next
/// start then decides a clash as a reload does. Every host calls it once a
/// load is in force (nginx: one worker, off nginx's thread). `Ok(true)`:
/// written.
///
/// # Errors
/// The record cannot be written; the next start reads what it finds.
pub fn keep(snap: &super::Snapshot, before: Option<&super::Snapshot>, reader: file::Reader) -> std::io::Result<bool> {
    let same = |b: &super::Snapshot| Arc::ptr_eq(&b.site_hosts, &snap.site_hosts) || b.site_hosts == snap.site_hosts;
    if snap.settings.sites_dir.is_none() || before.is_some_and(same) {
        return Ok(false);
    }
    let path = held_path(&snap.traps_state);
    if before.is_none() && read_held(&path, reader) == snap.site_hosts {
        return Ok(false);
    }
    write_held(&path, &snap.site_hosts).map(|()| true)
}

/// Which file (by its place in [`Owners::files`]; the config is 0) has
/// each host, site name and the default, during one load. The keys borrow
/// from the sites being taken: a load at 100,000 hosts copies no host to
/// check them (issue 66: copying and hashing them, and comparing paths by
/// their components, cost another customer's edit 130 ms).
struct Owners<'s> {
    hosts: HashMap<&'s str, usize, foldhash::fast::RandomState>,
    names: HashMap<&'s str, usize, foldhash::fast::RandomState>,
    default: Option<usize>,
    files: Vec<&'s Path>,
}

impl<'s> Owners<'s> {
    /// What in `sites` someone else already has, one sentence each, the
    /// first [`Owners::SAID`] of them (and how many more).
    fn clashes(&self, sites: &[Arc<Site>]) -> Vec<String> {
        let mut out = Vec::new();
        let mut more = 0usize;
        let mut say = |out: &mut Vec<String>, line: String| match out.len() < Owners::SAID {
            true => out.push(line),
            false => more += 1,
        };
        let file = |i: usize| self.files[i].display();
        for s in sites {
            if let Some(&other) = self.names.get(s.name.as_str()) {
                say(&mut out, format!("site `{}` is also a site of {}", s.name, file(other)));
            }
            for h in &s.hosts {
                if let Some(&other) = self.hosts.get(h.as_str()) {
                    say(&mut out, format!("site `{}`: host `{h}` is also a host in {}", s.name, file(other)));
                }
            }
            if let (true, Some(other)) = (s.default, self.default) {
                say(&mut out, format!("site `{}` is a default site, and so is one in {}", s.name, file(other)));
            }
        }
        if more > 0 {
            out.push(format!("and {more} more hosts or names another file has"));
        }
        out
    }

    /// How many clashes of one file are said one by one.
    const SAID: usize = 20;

    /// `owner`'s place in [`Owners::files`], added.
    fn file(&mut self, owner: &'s Path) -> usize {
        self.files.push(owner);
        self.files.len() - 1
    }

    fn take(&mut self, sites: &'s [Arc<Site>], owner: usize) {
        for s in sites {
            self.names.insert(&s.name, owner);
            for h in &s.hosts {
                self.hosts.insert(h, owner);
            }
            if s.default {
                self.default = Some(owner);
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

/// One site file as a load first finds it: its sites if it reads and
/// checks alone (kept from the load before when its stamp has not moved),
/// else why not.
struct Candidate<'p> {
    path: PathBuf,
    stamp: Option<file::Stamp>,
    before: Option<&'p SiteFile>,
    parsed: Result<Vec<Arc<Site>>, Vec<Problem>>,
}

/// What a load did with a [`Candidate`].
enum Taken {
    /// Its sites are served.
    Sites,
    /// Refused for these problems; its last good sites (`true`) are
    /// served, or nothing.
    Refused(Vec<Problem>, bool),
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
            return (Vec::new(), SiteFiles::new(), Held::default());
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
    let empty = SiteFiles::new();
    let previous = previous.unwrap_or(&empty);
    let good_before = |path: &Path, stamp: &Option<file::Stamp>| {
        previous.get(path).filter(|f| !f.refused && stamp.is_some() && f.stamp == *stamp)
    };
    // Files good before and unchanged are taken first: a new file cannot
    // push out a site already served; then those that held a host (at
    // start, by the record); among the others, by name.
    let stamped: Vec<(PathBuf, Option<file::Stamp>)> = paths
        .into_iter()
        .map(|p| {
            let stamp = file::stamp(&p);
            (p, stamp)
        })
        .collect();
    let (first, rest): (Vec<_>, Vec<_>) = stamped.into_iter().partition(|(p, s)| good_before(p, s).is_some());
    let (then, last): (Vec<_>, Vec<_>) = rest.into_iter().partition(|(p, _)| held.contains_key(p));
    let candidates: Vec<Candidate<'_>> = first
        .into_iter()
        .chain(then)
        .chain(last)
        .map(|(path, stamp)| {
            let parsed = match good_before(&path, &stamp) {
                Some(f) => Ok(f.sites.clone()),
                None => {
                    parse(&path, settings, host, reads.timing(&path)).map(|s| s.into_iter().map(Arc::new).collect())
                }
            };
            Candidate { before: previous.get(&path), path, stamp, parsed }
        })
        .collect();
    // Then each is taken, or refused, in that order; the owners borrow
    // from the candidates, the files before and the record.
    let mut owners = Owners {
        hosts: HashMap::with_capacity_and_hasher(held.values().map(|h| h.len()).sum(), Default::default()),
        names: HashMap::default(),
        default: None,
        files: Vec::with_capacity(candidates.len() + 1),
    };
    let config = owners.file(config_path);
    owners.take(own, config);
    // The hosts a refused file holds although it serves nothing (from the
    // record), by candidate.
    let mut kept_over: Vec<Vec<&str>> = vec![Vec::new(); candidates.len()];
    let mut taken = Vec::with_capacity(candidates.len());
    for (c, over) in candidates.iter().zip(&mut kept_over) {
        let at = owners.file(&c.path);
        let clashes = c.parsed.as_ref().map(|sites| owners.clashes(sites));
        match (&c.parsed, clashes) {
            (Ok(sites), Ok(clashes)) if clashes.is_empty() => {
                owners.take(sites, at);
                taken.push(Taken::Sites);
            }
            (_, clashes) => {
                let said = match clashes {
                    Ok(clashes) => clashes.into_iter().map(|m| Problem::new(&c.path, None, m)).collect(),
                    Err(problems) => problems.clone(),
                };
                // The last good sites stay, unless they clash now too.
                let last = c.before.map(|f| &f.sites).filter(|s| !s.is_empty() && owners.clashes(s).is_empty());
                match last {
                    Some(sites) => owners.take(sites, at),
                    None => {
                        // Nothing to serve: what it held stays its own, so no
                        // other file takes it while this one is being fixed.
                        for host in held.get(&c.path).into_iter().flat_map(|h| h.iter()) {
                            if let std::collections::hash_map::Entry::Vacant(v) = owners.hosts.entry(host.as_str()) {
                                v.insert(at);
                                over.push(host.as_str());
                            }
                        }
                    }
                }
                taken.push(Taken::Refused(said, last.is_some()));
            }
        }
    }
    // Which file holds each host now: a file whose sites are those it
    // held before keeps its list (shared); the others' are made anew.
    let mut now = BTreeMap::new();
    let mut files = SiteFiles::new();
    for ((c, taken), over) in candidates.iter().zip(taken).zip(kept_over) {
        sources.push(c.path.clone());
        let (sites, refused_now) = match taken {
            Taken::Sites => (c.parsed.as_ref().map_or_else(|_| Vec::new(), Clone::clone), false),
            Taken::Refused(mut said, has_last) => {
                let tail = match has_last {
                    true => "; refused, its last good version stays in force",
                    false => "; refused, its sites are not served",
                };
                for p in &mut said {
                    p.message.push_str(tail);
                }
                refused.append(&mut said);
                (if has_last { c.before.map(|f| f.sites.clone()).unwrap_or_default() } else { Vec::new() }, true)
            }
        };
        let same = c.before.is_some_and(|f| {
            f.sites.len() == sites.len() && f.sites.iter().zip(&sites).all(|(a, b)| Arc::ptr_eq(a, b))
        });
        let list = match (same && over.is_empty() && !sites.is_empty(), held.get(&c.path)) {
            (true, Some(list)) => Some(Arc::clone(list)),
            _ => {
                let mut hosts: Vec<String> = sites
                    .iter()
                    .flat_map(|s| s.hosts.iter().cloned())
                    .chain(over.iter().map(|h| (*h).to_owned()))
                    .collect();
                hosts.sort_unstable();
                (!hosts.is_empty()).then(|| hosts.into())
            }
        };
        if let Some(list) = list {
            now.insert(c.path.clone(), list);
        }
        files.insert(c.path.clone(), SiteFile { stamp: c.stamp, sites, refused: refused_now });
    }
    let sites = files.values().flat_map(|f| f.sites.iter().cloned()).collect();
    // The record as it was, shared, when no file's list moved.
    let now = match now == **held {
        true => Arc::clone(held),
        false => Arc::new(now),
    };
    (sites, files, now)
}

/// Whether `previous` is what [`read`] would take from `dir` now, given the
/// config's own sites as they were: the same site files, none refused and
/// none moved (one `stat` each). A reload then keeps its sites, their hosts
/// and the routing as they are: with one file of 100,000 hosts, taking them
/// again was most of the time another site's edit took to be in force
/// (issue 66).
pub(super) fn unchanged(dir: &Path, previous: &SiteFiles) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    let mut seen = 0usize;
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| is_site_file(p)) {
        seen += 1;
        match previous.get(&path) {
            Some(f) if !f.refused && f.stamp.is_some() && file::stamp(&path) == f.stamp => {}
            _ => return false,
        }
    }
    seen == previous.len()
}

/// What [`read`] returns, from the load before when it is
/// [`unchanged`]: the sites in file order, the files, who holds each host.
/// Its sources go in `sources`, as [`read`] puts them.
pub(super) fn kept(
    dir: &Path,
    previous: &SiteFiles,
    held: &Held,
    sources: &mut Vec<PathBuf>,
) -> (Vec<Arc<Site>>, SiteFiles, Held) {
    sources.push(dir.to_path_buf());
    sources.extend(PATTERNS.iter().map(|p| dir.join(p)));
    sources.extend(previous.keys().cloned());
    let sites = previous.values().flat_map(|f| f.sites.iter().cloned()).collect();
    (sites, previous.clone(), Arc::clone(held))
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::load::{load, reload};

    #[test]
    fn a_reload_that_moved_no_site_file_shares_the_hosts_and_one_that_did_rebuilds_that_files_alone() {
        let dir = tempfile::tempdir().unwrap();
        let sites = dir.path().join("sites");
        std::fs::create_dir(&sites).unwrap();
        let big: String = (0..2_000).map(|i| format!("  - h{i}.big.example\n")).collect();
        std::fs::write(sites.join("big.yaml"), format!("hosts:\n{big}")).unwrap();
        std::fs::write(sites.join("small.yaml"), "hosts: [a.example]\n").unwrap();
        let config = dir.path().join("robotgate.yaml");
        std::fs::write(&config, format!("sites_dir: {}\nsites:\n  - hosts: [own.example]\n", sites.display())).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let first = load(&config).unwrap();
        assert_eq!(first.site_hosts.len(), 2, "the config's own host is not a file's");
        assert_eq!(first.site_hosts[&sites.join("big.yaml")].len(), 2_000);
        // Nothing moved: the record and the routing are the same allocations.
        let second = reload(&config, Some(&first)).unwrap();
        assert!(Arc::ptr_eq(&first.site_hosts, &second.site_hosts));
        assert!(Arc::ptr_eq(&first.settings.hosts, &second.settings.hosts));
        assert_eq!(second.settings.site_for_host("h1999.big.example"), Some(1));
        // The small file moves: its list is new, the big file's is shared.
        std::fs::write(sites.join("small.yaml"), "hosts: [a.example, b.example]\n").unwrap();
        let third = reload(&config, Some(&second)).unwrap();
        let (was, now) = (&second.site_hosts, &third.site_hosts);
        assert!(Arc::ptr_eq(&was[&sites.join("big.yaml")], &now[&sites.join("big.yaml")]));
        assert_eq!(&now[&sites.join("small.yaml")][..], ["a.example", "b.example"]);
        assert_eq!(third.settings.site_for_host("b.example"), Some(2));
        // A file that now takes another's host is refused and holds nothing
        // new; the host stays the big file's.
        std::fs::write(sites.join("small.yaml"), "hosts: [a.example, h7.big.example]\n").unwrap();
        let fourth = reload(&config, Some(&third)).unwrap();
        assert_eq!(fourth.refused.len(), 1, "{:?}", fourth.refused);
        assert_eq!(
            &fourth.site_hosts[&sites.join("small.yaml")][..],
            ["a.example", "b.example"],
            "its last good sites"
        );
        assert_eq!(fourth.settings.site_for_host("h7.big.example"), Some(1));
    }
}
