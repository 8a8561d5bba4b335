//! Reads the operator's files into one immutable [`Snapshot`]: the config,
//! the bot database, the feeds, every site's robots.txt, humans.txt and
//! alternate content, compiled. No Pingora, no tokio: `serve` wraps the
//! snapshot with what only the proxy needs (`server::snapshot`), and the
//! CLI commands (`check`, `replay`, `robots show`, `config check`) use it as
//! it is.
//!
//! Everything is read and compiled here, off the request path. A request
//! loads the snapshot once and uses that version throughout, so a reload in
//! the middle of a request never mixes two versions.
//!
//! Every file is read through [`file::read`]: regular files only, bounded in
//! size and time, once settled. A robots.txt must also look like one
//! ([`check_robots_body`]). On a reload, a refused robots.txt, humans.txt or
//! alternate-content file keeps its last good version and everything else
//! is loaded ([`Snapshot::refused`] says which); any other problem refuses
//! the whole reload, as at start.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;

mod confine;
mod content;
pub mod file;
pub mod sites_dir;
pub mod traps;
pub mod versions;
pub mod watch;

pub use content::check_robots_body;
pub use file::{Reason, Refusal};

use crate::agent::{BotDb, Classifier};
use crate::config::{self, Config, Host, Settings, Site};
use crate::identity::{ByRanges, FeedId, RangeTable};
use crate::policy::{Action, SiteRules};
use crate::robots::{self, RobotsTxt};

/// A file robotgate serves itself (robots.txt, humans.txt, alternate content).
#[derive(Debug, Clone)]
pub struct ServedFile {
    /// The body.
    pub body: Bytes,
    /// Strong ETag (quoted fingerprint of the body).
    pub etag: String,
    /// `Last-Modified` (HTTP date of the file's mtime).
    pub last_modified: String,
}

impl ServedFile {
    /// A file of `body`, last modified at `mtime`.
    pub fn new(body: Vec<u8>, mtime: SystemTime) -> ServedFile {
        ServedFile::from_bytes(Bytes::from(body), mtime)
    }

    /// [`ServedFile::new`] of a shared buffer.
    pub fn from_bytes(body: Bytes, mtime: SystemTime) -> ServedFile {
        ServedFile {
            etag: format!("\"{:016x}\"", robots::fingerprint(&body)),
            last_modified: httpdate::fmt_http_date(mtime),
            body,
        }
    }
}

/// A site's robots.txt: the file plus the lines robotgate manages
/// ([`crate::managed`]), served and enforced as one.
#[derive(Debug)]
pub struct RobotsFile {
    /// What `/robots.txt` answers.
    pub file: ServedFile,
    /// Which served lines robotgate added; the file line of every other
    /// (violation records cite the site's own file).
    pub lines: robots::LineMap,
    /// Where each added line came from (for `robotgate robots show`).
    pub notes: Vec<(u32, String)>,
    /// The compiled rules.
    pub compiled: RobotsTxt,
    /// Short version hash for logs and metrics.
    pub hash: String,
}

/// One site as requests see it: its configuration, its files, and its
/// resolved upstream.
#[derive(Debug)]
pub struct LiveSite {
    /// The validated configuration of the site.
    pub conf: Arc<Site>,
    /// The upstream address, resolved once at load time (Pingora's `HttpPeer::new`
    /// would otherwise resolve on every request, blocking).
    pub upstream_addr: Option<std::net::SocketAddr>,
    /// robots.txt, when configured.
    pub robots: Option<RobotsFile>,
    /// humans.txt, when configured.
    pub humans: Option<ServedFile>,
    /// Alternate-content files named in the policy, by path. Only these can be served.
    pub alternates: HashMap<PathBuf, ServedFile>,
    /// When each trap path is armed (Unix seconds), parallel to `conf.traps.paths`.
    pub armed_at: Vec<u64>,
    /// The link put into HTML pages, with `traps.inject_link`.
    pub trap_link: Option<Bytes>,
    /// Versions of robots.txt served in the last 24 hours before the current one.
    pub earlier: Vec<crate::policy::EarlierRobots>,
    /// The files the site was built from (a boxed slice: a vector's
    /// spare room was most of what it held, issue 55).
    files: Box<[SiteFile]>,
    /// The files from `site_template` that did not exist: the site is kept
    /// while they still do not.
    absent: Vec<PathBuf>,
    /// Whether a reload may keep the site as it is: no file of it was
    /// refused (a kept last good version is tried again on every reload),
    /// every file had a stamp, and the upstream is an address (a name is
    /// resolved again on every reload, as it always was).
    reusable: bool,
}

impl LiveSite {
    /// What the site brings to a decision.
    pub fn rules(&self) -> SiteRules<'_> {
        SiteRules {
            name: &self.conf.name,
            policy: &self.conf.policy,
            robots: self.robots.as_ref().map(|r| &r.compiled),
            humans: self.humans.is_some(),
            traps: self.conf.traps.as_deref(),
            armed_at: &self.armed_at,
            earlier: &self.earlier,
        }
    }

    /// The actions a request to this site can be answered by: the policy's
    /// (default, categories, bots, spoofed identities) and the traps' ban.
    pub fn actions(&self) -> impl Iterator<Item = &Action> {
        site_actions(&self.conf)
    }

    /// Whether this site, built by an earlier load, is what a load of
    /// `conf` would build now: the same configuration and every file it
    /// read still as it was: one `stat` each, or, when the host's watcher
    /// `named` every source that changed ([`reload_named`]), none of its
    /// files among them (no `stat` at all).
    fn unchanged(&self, conf: &Arc<Site>, named: Option<&HashSet<PathBuf>>) -> bool {
        self.reusable
            && (Arc::ptr_eq(&self.conf, conf) || *self.conf == **conf)
            && match named {
                Some(named) => {
                    // An absolute path is the same path to `named` as its
                    // `absolute` form (paths compare and hash by their
                    // components), without that copy: 10,000 sites a reload.
                    let hit = |path: &PathBuf| match path.is_absolute() {
                        true => named.contains(path),
                        false => std::path::absolute(path).map_or(true, |abs| named.contains(&abs)),
                    };
                    !self.files.iter().any(|f| hit(&f.path)) && !self.absent.iter().any(hit)
                }
                None => {
                    self.files.iter().all(|f| f.stamp.is_some_and(|was| file::stamp(&f.path) == Some(was)))
                        && self.absent.iter().all(|path| absent(path))
                }
            }
    }
}

/// A file a site was built from.
#[derive(Debug)]
struct SiteFile {
    path: PathBuf,
    /// Its stamp, taken before it was read: a reload keeps the site while
    /// no file has moved. `None`: it had none (the site is not reusable).
    stamp: Option<file::Stamp>,
    /// The robots.txt, humans.txt or alternate-content file as read: what a
    /// later reload keeps when it refuses a new version. Kept with the site,
    /// so a reload that keeps the site copies nothing.
    original: Option<Original>,
}

/// What a reload changed among the sites: the reload log's summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Sites that were not in the previous snapshot.
    pub added: usize,
    /// Sites of the previous snapshot built again (a file or their
    /// configuration changed, or they cannot be kept).
    pub rebuilt: usize,
    /// Sites of the previous snapshot that are gone.
    pub removed: usize,
    /// The names of the added and rebuilt sites, the first
    /// [`Changes::NAMED`] of them.
    pub named: Vec<String>,
}

impl Changes {
    /// How many changed sites [`Changes::named`] names at most, so a
    /// reload's log line stays short whatever changed.
    pub const NAMED: usize = 20;

    fn note(&mut self, name: &str, existed: bool) {
        if existed {
            self.rebuilt += 1;
        } else {
            self.added += 1;
        }
        if self.named.len() < Changes::NAMED {
            self.named.push(name.to_owned());
        }
    }
}

/// How one load reads its files: which were put in place whole (read at
/// once, not once they settle), and on which thread ([`file::Reader`]).
#[derive(Clone, Copy)]
struct Reads<'w> {
    whole: &'w HashSet<PathBuf>,
    /// Every source the host's watcher named since the previous snapshot
    /// was read, when it lost none ([`reload_named`]): a site none of whose
    /// files is named is kept without a `stat`.
    named: Option<&'w HashSet<PathBuf>>,
    reader: file::Reader,
}

impl Reads<'_> {
    /// How to read `path`.
    fn timing(&self, path: &Path) -> file::Timing {
        let settle = match self.whole.contains(path) {
            true => std::time::Duration::ZERO,
            false => file::Timing::default().settle,
        };
        file::Timing { settle, reader: self.reader, ..file::Timing::default() }
    }
}

/// Reads and compiles one site's files (the part of a load that is per
/// site), noting what it read where the whole load keeps it.
struct SiteReader<'a> {
    refused: &'a mut Vec<Problem>,
    problems: &'a mut Vec<Problem>,
    sources: &'a mut Vec<PathBuf>,
    config_path: &'a Path,
    reads: Reads<'a>,
    /// The template and the rule for a customer's files ([`file::Confine`]).
    template: &'a config::SiteTemplate,
    links: config::CustomerLinks,
}

/// What one site's build read: each file's stamp and its contents as read.
struct Reading<'b> {
    /// The previous snapshot's site of the same name: its last good files.
    before: Option<&'b LiveSite>,
    files: Vec<SiteFile>,
    /// See [`LiveSite::reusable`].
    reusable: bool,
}

impl SiteReader<'_> {
    /// [`read_served`], stamping the file first (in `read`); a refused file
    /// makes the site one a later reload builds again (`reusable`). `from`:
    /// the template's pattern, when the file is the template's; a file in a
    /// customer's directory ([`config::customer_dir`]) is read confined
    /// to it ([`file::read_in`]).
    #[allow(clippy::too_many_arguments)]
    fn served(
        &mut self,
        site: &Site,
        path: &Path,
        from: Option<&str>,
        what: &str,
        limit: u64,
        check: fn(&[u8]) -> Result<(), Refusal>,
        r: &mut Reading<'_>,
    ) -> Option<Original> {
        self.sources.push(path.to_path_buf());
        let stamp = file::stamp(path);
        if stamp.is_none() {
            r.reusable = false;
        }
        let (refused, problems) = (self.refused.len(), self.problems.len());
        let timing = self.reads.timing(path);
        let last_good =
            r.before.and_then(|b| b.files.iter().find_map(|f| f.original.as_ref().filter(|_| f.path == path)));
        let confine =
            config::customer_dir(site, path, from, from.is_some()).map(|dir| file::Confine { dir, links: self.links });
        let read = Served { what, limit, check, confine: confine.as_ref() };
        let got = read_served(path, &read, &timing, last_good, self.refused, self.problems);
        if self.refused.len() != refused || self.problems.len() != problems {
            r.reusable = false;
        }
        r.files.push(SiteFile { path: path.to_path_buf(), stamp, original: got.clone() });
        got
    }

    /// Build `site`: resolve its upstream, read and compile its files.
    /// `before`: the previous snapshot's site of the same name.
    fn build(
        &mut self,
        site: Arc<Site>,
        db: &BotDb,
        traps_first_served: &mut traps::FirstServed,
        robots_versions: &mut versions::Versions,
        now_unix: u64,
        before: Option<&Arc<LiveSite>>,
    ) -> LiveSite {
        use std::net::ToSocketAddrs;
        // A site without an upstream (inside nginx, which forwards itself)
        // has nothing to resolve again.
        let literal = site.upstream.as_ref().map(|up| up.address.parse::<std::net::SocketAddr>().ok());
        let reusable = !matches!(literal, Some(None));
        let upstream_addr = site.upstream.as_ref().map(|up| {
            let found = match up.address.parse::<std::net::SocketAddr>() {
                Ok(a) => Ok(Some(a)),
                Err(_) => up.address.to_socket_addrs().map(|mut a| a.next()),
            };
            match found {
                Ok(Some(a)) => a,
                Ok(None) | Err(_) => {
                    self.problems.push(Problem::new(
                        self.config_path,
                        None,
                        format!("site `{}`: cannot resolve upstream `{}`", site.name, up.address),
                    ));
                    std::net::SocketAddr::from(([127, 0, 0, 1], 0))
                }
            }
        });
        let armed_at = site.traps.as_ref().map_or_else(Vec::new, |t| {
            let arm_after = t.arm_after.as_secs();
            let mut first = |p: &String| *traps_first_served.entry(traps::key(&site.name, p)).or_insert(now_unix);
            t.paths.iter().map(|p| first(p).saturating_add(arm_after)).collect()
        });
        let trap_link = site
            .traps
            .as_ref()
            .filter(|t| t.inject_link)
            .and_then(|t| t.paths.first())
            .map(|p| Bytes::from(crate::managed::trap_link(p)));
        let mut r = Reading { before: before.map(|b| &**b), files: Vec::new(), reusable };
        let mut missing = Vec::new();
        let (mut robots_file, mut humans_file, mut alternates) = (None, None, HashMap::new());
        // A file of the template's that does not exist (yet) is no file:
        // watched, so writing it builds the site again.
        let mut templated = |path: &Option<PathBuf>, from_template: bool| match path {
            Some(p) if from_template && absent(p) => {
                self.sources.push(p.clone());
                missing.push(p.clone());
                None
            }
            other => other.clone(),
        };
        let robots_path = templated(&site.robots, site.from_template.robots);
        let humans_path = templated(&site.humans, site.from_template.humans);
        if let Some(path) = &robots_path {
            let template = self.template;
            let from = template.robots.as_deref().filter(|_| site.from_template.robots);
            let got = self.served(&site, path, from, "robots.txt", file::ROBOTS_MAX, check_robots_body, &mut r);
            if let Some(original) = got {
                let trap_paths = site.traps.as_ref().map_or(&[][..], |t| &t.paths[..]);
                // Without managed lines the served body is the file's own
                // buffer (shared with the last good copy and the kept
                // versions), not a copy of it.
                let (body, effective) = match crate::managed::adds_lines(&site.managed, trap_paths) {
                    true => {
                        let mut e = crate::managed::effective(&original.body, &site.managed, trap_paths, db);
                        (Bytes::from(std::mem::take(&mut e.body)), e)
                    }
                    false => {
                        let bom = original.body.len() - crate::managed::without_bom(&original.body).len();
                        let e = crate::managed::Effective {
                            body: Vec::new(),
                            lines: robots::LineMap::default(),
                            notes: Vec::new(),
                            cut_off: false,
                        };
                        (original.body.slice(bom..), e)
                    }
                };
                if effective.cut_off {
                    self.problems.push(Problem::new(
                        path,
                        None,
                        "with the lines robotgate adds (traps, managed) it is longer than the 500 KiB crawlers read",
                    ));
                }
                // Rules are spelled as the proxy spells request-targets.
                let options = robots::Options { normalise: Some(site.target), ..robots::Options::default() };
                let compiled = RobotsTxt::compile_with(&body, options);
                let hash = compiled.short_hash();
                robots_file = Some(RobotsFile {
                    file: ServedFile::from_bytes(body, original.mtime),
                    lines: effective.lines,
                    notes: effective.notes,
                    compiled,
                    hash,
                });
            }
        }
        if let Some(path) = &humans_path {
            let template = self.template;
            let from = template.humans.as_deref().filter(|_| site.from_template.humans);
            let got = self.served(&site, path, from, "humans.txt", file::HUMANS_MAX, any_body, &mut r);
            if let Some(original) = got {
                humans_file = Some(ServedFile::from_bytes(original.body, original.mtime));
            }
        }
        for action in site_actions(&site) {
            let file = match action {
                Action::Alternate { file, .. } | Action::Block { file: Some((file, _)), .. } => Some(file),
                _ => None,
            };
            if let Some(file) = file {
                if alternates.contains_key(file) {
                    continue;
                }
                let what = "the alternate-content file";
                let got = self.served(&site, file, None, what, file::ALTERNATE_MAX, any_body, &mut r);
                if let Some(original) = got {
                    alternates.insert(file.clone(), ServedFile::from_bytes(original.body, original.mtime));
                }
            }
        }
        let kept = robots_versions.entry(site.name.clone()).or_default();
        versions::update(kept, robots_file.as_ref().map(|r| (r.compiled.hash(), &r.file.body)), now_unix);
        let options = robots::Options { normalise: Some(site.target), ..robots::Options::default() };
        let earlier = versions::compile(kept, before.map_or(&[][..], |s| &s.earlier), options);
        LiveSite {
            conf: site,
            upstream_addr,
            robots: robots_file,
            humans: humans_file,
            alternates,
            armed_at,
            trap_link,
            earlier,
            files: r.files.into_boxed_slice(),
            absent: missing,
            reusable: r.reusable,
        }
    }
}

/// Whether nothing is at `path` (a file of `site_template` not written yet).
fn absent(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
}

/// The actions of `site` that a request can be answered by.
fn site_actions(site: &Site) -> impl Iterator<Item = &Action> {
    let policy = &site.policy;
    std::iter::once(&policy.default)
        .chain(policy.categories.iter().map(|(_, a)| a))
        .chain(policy.bots.iter().map(|(_, a)| a))
        .chain(std::iter::once(&policy.spoofed))
        .chain(site.traps.as_ref().map(|t| &t.action))
}

/// Everything a request needs, immutable, as read from the operator's files.
pub struct Snapshot {
    /// The settings that apply to the whole process.
    pub settings: Settings,
    /// The User-Agent classifier (shared between snapshots while the bot database is unchanged).
    pub classifier: Arc<Classifier>,
    /// The crawler IP range feeds.
    pub ranges: Arc<RangeTable>,
    /// Each database entry's feeds, by entry index (resolved once here).
    pub bot_feeds: Vec<Vec<FeedId>>,
    /// What reverse DNS can say of each database entry outside its ranges
    /// ([`crate::agent::Bot::rdns_use`]), by entry index.
    pub bot_rdns: Vec<crate::identity::Rdns>,
    /// The directory the feeds are read from and refreshed into
    /// ([`feeds_dir`]); `None`: the embedded feeds alone.
    pub feeds_dir: Option<PathBuf>,
    /// The sites, in file order (the config's, then those of `sites_dir`
    /// file by file); a site a reload did not change is shared with the
    /// snapshot before it.
    pub sites: Vec<Arc<LiveSite>>,
    /// How many of `sites` the config file itself has (the first ones).
    pub config_sites: usize,
    /// The files of `sites_dir` as this load took them.
    site_files: sites_dir::SiteFiles,
    /// Which file of `sites_dir` holds each host: what the host keeps in
    /// [`sites_dir::held_path`] once this snapshot is in force, so that a
    /// start decides a clash as a reload does.
    pub site_hosts: sites_dir::Held,
    /// Files of `site_template` that did not exist when read: not a change
    /// while they still do not ([`Snapshot::changed_since`]).
    absent: HashSet<PathBuf>,
    /// What this load changed among the sites of the previous snapshot
    /// (all added at start).
    pub changes: Changes,
    /// Files the snapshot was built from (the watcher watches their directories).
    pub sources: Vec<PathBuf>,
    /// What the classifier was built from: bot file, replace flag, body fingerprint.
    bots_key: (Option<PathBuf>, bool, Option<u64>),
    /// What `ranges` was built from.
    ranges_key: RangesKey,
    /// The config file's stamp when it was read: a reload that finds it
    /// unchanged takes this snapshot's configuration without parsing it.
    config_stamp: Option<file::Stamp>,
    /// When reading the sources began: a source modified at or after this
    /// may not be what the snapshot holds.
    pub read_at: SystemTime,
    /// When each trap path was first served, new ones included: what
    /// `serve` keeps in [`traps::state_path`].
    pub traps_first_served: traps::FirstServed,
    /// Where that is kept.
    pub traps_state: PathBuf,
    /// The robots.txt versions of the last 24 hours: what `serve` keeps in
    /// [`versions::state_path`].
    pub robots_versions: versions::Versions,
    /// Files this reload refused whose last good version it kept (robots.txt,
    /// humans.txt, alternate content), one problem each; and the files of
    /// `sites_dir` refused (each alone, at start too), one problem per thing
    /// wrong. Otherwise empty at start, where a refused file is an error.
    pub refused: Vec<Problem>,
}

/// A served file as read from disk (robots.txt before the managed lines).
#[derive(Debug, Clone)]
struct Original {
    body: Bytes,
    mtime: SystemTime,
}

impl Snapshot {
    /// Identity by the range table alone.
    pub fn by_ranges(&self) -> ByRanges<'_> {
        ByRanges {
            table: &self.ranges,
            feeds: &self.bot_feeds,
            rdns: &self.bot_rdns,
            complete_for: self.settings.boot.verify.refresh.map(|d| d.as_secs()),
        }
    }

    /// The site for a `Host` header value, else the default site.
    pub fn site_for_host(&self, host: &str) -> Option<&LiveSite> {
        self.settings.site_for_host(host).and_then(|i| self.sites.get(i)).map(|s| &**s)
    }

    /// The `site` label of site `at`'s series: its name for the first
    /// `metrics.per_site_limit` sites, [`crate::config::OTHER_SITES`] past
    /// them (a scrape stays bounded at any number of sites, issue 55).
    pub fn metric_site(&self, at: usize) -> &str {
        match self.sites.get(at) {
            Some(site) if at < self.settings.boot.metrics_per_site => site.conf.name.as_str(),
            _ => crate::config::OTHER_SITES,
        }
    }

    /// `robotgate_robots_info`'s series: each site with series of its own
    /// ([`Snapshot::metric_site`]) and a robots.txt, with the hash of the
    /// version in force. At most `metrics.per_site_limit` of them.
    pub fn robots_versions(&self) -> impl Iterator<Item = (&str, &str)> {
        let own = self.settings.boot.metrics_per_site;
        self.sites.iter().take(own).filter_map(|s| Some((s.conf.name.as_str(), s.robots.as_ref()?.hash.as_str())))
    }

    /// Whether any source file may have been modified (or became unreadable)
    /// since the snapshot was read. File times come from the kernel's coarse
    /// clock, which may lag by a tick (up to 10 ms), so a file stamped up to
    /// 10 ms before `read_at` counts too: at worst an unneeded reload.
    pub fn stale(&self) -> bool {
        self.changed_since(self.read_at)
    }

    /// Whether any source file may have been modified (or became
    /// unreadable) at or after `at` (less the coarse clock's tick, as
    /// [`Snapshot::stale`]): a host that tried a reload at `at` and was
    /// refused asks this, so it tries again when a file changes, not every
    /// time it looks.
    pub fn changed_since(&self, at: SystemTime) -> bool {
        let since = at.checked_sub(std::time::Duration::from_millis(10)).unwrap_or(at);
        let moved = |m: &std::fs::Metadata| m.modified().map_or(true, |t| t >= since);
        self.sources.iter().filter(|p| watch::pattern(p).is_none()).any(|p| {
            // A templated file not written yet is no change until it is.
            let gone = || !self.absent.contains(p);
            match std::fs::symlink_metadata(p) {
                // A link put in place (renamed over the file) is a change
                // even when the file it leads to is older.
                Ok(link) if link.file_type().is_symlink() => {
                    moved(&link) || std::fs::metadata(p).map_or_else(|_| gone(), |m| moved(&m))
                }
                Ok(file) => moved(&file),
                Err(_) => gone(),
            }
        })
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot").field("sites", &self.sites.len()).field("sources", &self.sources).finish()
    }
}

/// One problem found while loading, with its file and line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file.
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// Why the file itself was refused (for `robotgate_reload_refused_total`);
    /// `None` for a problem with what a readable file says.
    pub reason: Option<Reason>,
}

impl Problem {
    /// A problem with what `file` says.
    pub fn new(file: impl Into<PathBuf>, line: Option<usize>, message: impl Into<String>) -> Problem {
        Problem { file: file.into(), line, message: message.into(), reason: None }
    }

    /// Its `robotgate_reload_refused_total` label values (file, reason):
    /// a file refused whole; `None` for a problem with what a file says.
    pub fn refused_series(&self) -> Option<(std::borrow::Cow<'_, str>, &'static str)> {
        Some((self.file.to_string_lossy(), self.reason?.as_str()))
    }

    /// `file`, read as `what`, was refused.
    pub fn refused(file: impl Into<PathBuf>, what: &str, refusal: &Refusal) -> Problem {
        let message = match refusal {
            Refusal::Unreadable(e) => format!("cannot read {what}: {e}"),
            other => format!("refused {what}: {other}"),
        };
        Problem { file: file.into(), line: None, message, reason: Some(refusal.reason()) }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: {}", self.file.display(), self.message),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

/// Read `path` as `what`, at most `limit` bytes ([`file::read`]); a refusal
/// is a problem.
fn read(path: &Path, what: &str, limit: u64, reads: Reads<'_>, problems: &mut Vec<Problem>) -> Option<file::Contents> {
    file::read_with(path, limit, &reads.timing(path))
        .map_err(|refusal| problems.push(Problem::refused(path, what, &refusal)))
        .ok()
}

/// How one served file is read: as what, at most how many bytes, what its
/// body must pass, and the customer's directory it must stay in.
struct Served<'c> {
    what: &'c str,
    limit: u64,
    check: fn(&[u8]) -> Result<(), Refusal>,
    confine: Option<&'c file::Confine>,
}

/// Read a served file (robots.txt, humans.txt, alternate content) as
/// `how` says. Refused on a reload whose `previous` snapshot has the file,
/// the previous version is kept and the refusal goes to `refused`. A
/// customer's file refused with no last good version (at start) goes to
/// `refused` too, and its site is served without it: a customer's file
/// never stops robotgate (issue 66). Otherwise it goes to `problems`,
/// which refuses the load.
fn read_served(
    path: &Path,
    how: &Served<'_>,
    timing: &file::Timing,
    last_good: Option<&Original>,
    refused: &mut Vec<Problem>,
    problems: &mut Vec<Problem>,
) -> Option<Original> {
    let read = file::read_in(path, how.limit, timing, how.confine).and_then(|c| (how.check)(&c.body).map(|()| c));
    match read {
        Ok(c) => Some(Original { body: Bytes::from(c.body), mtime: c.mtime }),
        Err(refusal) => {
            let mut problem = Problem::refused(path, how.what, &refusal);
            match (last_good, how.confine) {
                (Some(kept), _) => {
                    problem.message.push_str("; the last good version stays in force");
                    refused.push(problem);
                    Some(kept.clone())
                }
                (None, Some(_)) => {
                    problem.message.push_str("; the site is served without it until it is fixed");
                    refused.push(problem);
                    None
                }
                (None, None) => {
                    problems.push(problem);
                    None
                }
            }
        }
    }
}

/// Any body will do (humans.txt, alternate content).
fn any_body(_: &[u8]) -> Result<(), Refusal> {
    Ok(())
}

/// Load the config file and everything it names.
///
/// # Errors
/// Every problem: YAML and validation errors with their lines, files that
/// are refused ([`file::read`]: missing, not regular files, too large, still
/// changing), a robots.txt that is not one ([`check_robots_body`]), an
/// invalid bot database. A robots.txt that is merely odd (unknown lines,
/// typos) is not a problem: `robotgate lint` is for those.
pub fn load(config_path: &Path) -> Result<Snapshot, Vec<Problem>> {
    reload(config_path, None)
}

/// [`load`], reusing what has not changed since `previous`, and keeping
/// from it the last good version of a refused robots.txt, humans.txt or
/// alternate-content file (listed in [`Snapshot::refused`]).
///
/// # Errors
/// As [`load`], less the refused files `previous` had.
pub fn reload(config_path: &Path, previous: Option<&Snapshot>) -> Result<Snapshot, Vec<Problem>> {
    reload_for(config_path, previous, &HashSet::new(), None, Host::Nginx, file::Reader::Helper)
}

/// [`reload_whole`] for `host`: a site file of `sites_dir` that lacks what
/// `host` needs ([`Host::missing_in`]) is refused alone. [`load`],
/// [`reload`] and [`reload_whole`] load for nginx (and the CLI commands),
/// which need no `upstream`. `reader`: which thread reads each file, the
/// host's choice ([`file::Reader`]: nginx's processes read on their own).
/// `named`: as [`reload_named`], when the host's watcher named every change;
/// `None`: every file of the kept sites is looked at (one `stat` each).
///
/// # Errors
/// As [`reload`].
pub fn reload_for(
    config_path: &Path,
    previous: Option<&Snapshot>,
    whole: &HashSet<PathBuf>,
    named: Option<&HashSet<PathBuf>>,
    host: Host,
    reader: file::Reader,
) -> Result<Snapshot, Vec<Problem>> {
    reload_inner(config_path, previous, Reads { whole, named, reader }, host)
}

/// [`reload_whole`], when the host's watcher saw every change since
/// `previous` was read and `named` holds every source it named (absolute
/// paths, as [`crate::load::watch::Sources`] has them): a site none of whose
/// files is named is kept without a `stat` of its files (at 10,000 sites
/// of two files each, 20,000 `stat`s a reload). Only for a watcher that
/// loses nothing silently: one that may have lost events (a full queue, a
/// directory gone, a file no watch covers) reloads with [`reload_whole`].
///
/// # Errors
/// As [`reload`].
pub fn reload_named(
    config_path: &Path,
    previous: Option<&Snapshot>,
    whole: &HashSet<PathBuf>,
    named: &HashSet<PathBuf>,
    reader: file::Reader,
) -> Result<Snapshot, Vec<Problem>> {
    reload_for(config_path, previous, whole, Some(named), Host::Nginx, reader)
}

fn reload_inner(
    config_path: &Path,
    previous: Option<&Snapshot>,
    reads: Reads<'_>,
    host: Host,
) -> Result<Snapshot, Vec<Problem>> {
    let read_at = SystemTime::now();
    let mut problems = Vec::new();
    let stamp = file::stamp(config_path);
    let unchanged = previous.filter(|p| stamp.is_some() && p.config_stamp == stamp);
    let config = match unchanged {
        // The same file: the same configuration (it names no other file).
        // Its sites are shared, not copied.
        Some(p) => (p.settings.clone(), p.sites[..p.config_sites].iter().map(|s| Arc::clone(&s.conf)).collect()),
        None => {
            let body = file::read_with(config_path, file::CONFIG_MAX, &reads.timing(config_path))
                .map_err(|refusal| vec![Problem::refused(config_path, "the config", &refusal)])?
                .body;
            let text = String::from_utf8(body).map_err(|e| {
                vec![Problem::new(config_path, None, format!("cannot read the config: it is not UTF-8 text ({e})"))]
            })?;
            let config = config::parse(&text).map_err(|errors| {
                errors.into_iter().map(|e| Problem::new(config_path, e.line, e.to_string())).collect::<Vec<_>>()
            })?;
            (config.settings, config.sites.into_iter().map(Arc::new).collect())
        }
    };
    let mut snapshot = load_config_whole(config, config_path, previous, reads, host, &mut problems)?;
    snapshot.read_at = read_at;
    snapshot.config_stamp = stamp;
    Ok(snapshot)
}

/// [`reload`], knowing that each file of `whole` was put in place whole
/// (renamed over its path, not written since), so it is read at once
/// rather than once it has settled ([`file::Timing::settle`]): what makes
/// an edit saved by rename in force in well under the settle time. Each
/// file is read as `reader` says.
///
/// Cost: one `stat` per file of the sites kept; only the sites whose
/// configuration or files changed are read and compiled again, and the
/// config file is parsed again only when its own stamp moved.
///
/// # Errors
/// As [`reload`].
pub fn reload_whole(
    config_path: &Path,
    previous: Option<&Snapshot>,
    whole: &HashSet<PathBuf>,
    reader: file::Reader,
) -> Result<Snapshot, Vec<Problem>> {
    reload_for(config_path, previous, whole, None, Host::Nginx, reader)
}

/// Build a snapshot from an already validated config.
///
/// # Errors
/// As [`load`].
pub fn load_config(
    config: Config,
    config_path: &Path,
    previous: Option<&Snapshot>,
    problems: &mut Vec<Problem>,
) -> Result<Snapshot, Vec<Problem>> {
    let config = (config.settings, config.sites.into_iter().map(Arc::new).collect());
    let reads = Reads { whole: &HashSet::new(), named: None, reader: file::Reader::Helper };
    load_config_whole(config, config_path, previous, reads, Host::Nginx, problems)
}

/// [`load_config`] with the files known whole ([`reload_whole`]).
fn load_config_whole(
    config: (Settings, Vec<Arc<Site>>),
    config_path: &Path,
    previous: Option<&Snapshot>,
    reads: Reads<'_>,
    host: Host,
    problems: &mut Vec<Problem>,
) -> Result<Snapshot, Vec<Problem>> {
    let read_at = SystemTime::now();
    let (mut settings, mut site_confs) = config;
    let mut sources = vec![config_path.to_path_buf()];
    let mut refused = Vec::new();
    let config_sites = site_confs.len();
    // Where the state is kept is settled at start (`state_dir` and
    // `log.violations` take effect on restart; the reads' file is opened once).
    let traps_state = previous.map_or_else(|| traps::state_path(&settings, config_path), |p| p.traps_state.clone());
    let (site_files, site_hosts) = match settings.sites_dir.clone() {
        None => (sites_dir::SiteFiles::new(), sites_dir::Held::default()),
        // The config as it was (its routing table is the same allocation,
        // its own sites the same ones) and no site file moved: what the
        // last load took, kept whole, the routing with it.
        Some(dir)
            if previous.is_some_and(|p| {
                Arc::ptr_eq(&p.settings.hosts, &settings.hosts)
                    && p.config_sites == site_confs.len()
                    && p.sites.iter().zip(&site_confs).all(|(was, is)| Arc::ptr_eq(&was.conf, is))
                    && sites_dir::unchanged(&dir, &p.site_files)
            }) =>
        {
            let p = previous.expect("checked just above");
            let (more, files, hosts) = sites_dir::kept(&dir, &p.site_files, &p.site_hosts, &mut sources);
            site_confs.extend(more);
            (files, hosts)
        }
        Some(dir) => {
            let found = sites_dir::Found { sources: &mut sources, refused: &mut refused, problems };
            let before = previous.map(|p| &p.site_files);
            let record;
            let held = match previous {
                Some(p) => &p.site_hosts,
                None => {
                    record = sites_dir::read_held(&sites_dir::held_path(&traps_state), reads.reader);
                    &record
                }
            };
            let (more, files, hosts) =
                sites_dir::read(&dir, &settings, &site_confs, config_path, host, before, reads, held, found);
            site_confs.extend(more);
            settings.route(&site_confs);
            (files, hosts)
        }
    };
    // Certificates and keys are watched like every other file.
    let pairs = settings.boot.listen.iter().filter(|l| l.https).filter_map(|l| l.tls.as_ref());
    let site_pairs = site_confs.iter().filter_map(|s| s.tls.as_deref());
    for (cert, key) in pairs.chain(site_pairs) {
        sources.push(cert.clone());
        sources.push(key.clone());
    }
    let bots_body = match &settings.bots {
        None => None,
        Some(path) => {
            sources.push(path.clone());
            read(path, "the bot database", file::BOTS_MAX, reads, problems).map(|c| c.body)
        }
    };
    // Compiling the classifier is the slowest part of a reload; reuse it while
    // the bot database is unchanged.
    let bots_key = (settings.bots.clone(), settings.bots_replace, bots_body.as_deref().map(robots::fingerprint));
    let reuse = previous.filter(|p| p.bots_key == bots_key).map(|p| p.classifier.clone());
    let new_db = match reuse {
        Some(_) => None,
        None => Some(match (&settings.bots, bots_body) {
            (Some(path), Some(body)) => match BotDb::from_yaml(&String::from_utf8_lossy(&body)) {
                Ok(extra) if settings.bots_replace => extra,
                Ok(extra) => BotDb::builtin().merge(extra),
                Err(e) => {
                    problems.push(Problem::new(path, None, e.to_string()));
                    BotDb::builtin()
                }
            },
            _ => BotDb::builtin(),
        }),
    };
    let mut traps_first_served = traps::read(&traps_state, reads.reader);
    let mut robots_versions = previous.map_or_else(
        || versions::read(&versions::state_path(&traps_state), reads.reader),
        |p| p.robots_versions.clone(),
    );
    let now_unix = crate::policy::Clock::System.unix_secs();
    let mut sites: Vec<Arc<LiveSite>> = Vec::with_capacity(site_confs.len());
    // A site whose configuration, classifier and files are as the previous
    // snapshot had them is that snapshot's site, shared: a reload costs what
    // changed (one `stat` per file of every other site).
    let before: HashMap<&str, &Arc<LiveSite>> =
        previous.map(|p| p.sites.iter().map(|s| (s.conf.name.as_str(), s)).collect()).unwrap_or_default();
    let same_classifier = reuse.is_some();
    let mut changed = Changes::default();
    // A new classifier (at start, or a changed bot database) compiles on a
    // thread of its own while the sites are read and compiled: the two were
    // most of a start's time one after the other (0.6 to 0.9 s and 1.3 s at
    // 10,000 sites). The sites need only its database.
    // A host that must stay single-threaded compiles it after the sites
    // ([`file::Reader::Alone`]).
    let classifier = std::thread::scope(|scope| {
        let building = new_db.as_ref().filter(|_| reads.reader != file::Reader::Alone).and_then(|db| {
            let compile = std::thread::Builder::new().name("robotgate-classifier".into());
            compile.spawn_scoped(scope, move || Classifier::new(db)).ok()
        });
        let db = match (&reuse, &new_db) {
            (Some(c), _) => c.db(),
            (None, Some(db)) => db,
            (None, None) => unreachable!("a classifier is reused or its database is new"),
        };
        for site in site_confs {
            let old = before.get(site.name.as_str()).copied();
            let kept = old.filter(|old| same_classifier && old.unchanged(&site, reads.named));
            if let Some(old) = kept {
                sources.extend(old.files.iter().map(|f| f.path.clone()));
                sources.extend(old.absent.iter().cloned());
                sites.push(Arc::clone(old));
                continue;
            }
            changed.note(&site.name, old.is_some());
            let mut reader = SiteReader {
                refused: &mut refused,
                problems,
                sources: &mut sources,
                config_path,
                reads,
                template: &settings.site_template,
                links: settings.customer_links,
            };
            let live = reader.build(site, db, &mut traps_first_served, &mut robots_versions, now_unix, old);
            sites.push(Arc::new(live));
        }
        let compiled = match (reuse, building) {
            (Some(c), _) => return c,
            (None, Some(thread)) => match thread.join() {
                Ok(compiled) => compiled,
                Err(panic) => std::panic::resume_unwind(panic),
            },
            // No thread to be had: compile it here.
            (None, None) => Classifier::new(new_db.as_ref().expect("a classifier is reused or its database is new")),
        };
        match compiled {
            Ok(c) => Arc::new(c),
            Err(e) => {
                problems.push(Problem::new(settings.bots.clone().unwrap_or_default(), None, e.to_string()));
                Arc::new(Classifier::builtin())
            }
        }
    });
    changed.removed = before.len().saturating_sub(sites.len() - changed.added);
    {
        let names: std::collections::HashSet<&str> = sites.iter().map(|s| s.conf.name.as_str()).collect();
        robots_versions.retain(|name, _| names.contains(name.as_str()));
    }
    if !problems.is_empty() {
        // The whole load is refused: say which files were refused too.
        problems.append(&mut refused);
        return Err(std::mem::take(problems));
    }
    // By bytes: as good an order for finding duplicates, and much cheaper
    // than comparing 20,000 paths component by component.
    sources.sort_unstable_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
    sources.dedup();
    let feeds_dir = feeds_dir(&settings, &traps_state);
    let given = settings.verify_feeds.is_some();
    let reuse = previous.map(|p| (&p.ranges_key, &p.ranges));
    let (ranges, ranges_key) = load_ranges(feeds_dir.as_deref(), given, reads, (&mut sources, problems), reuse);
    if !problems.is_empty() {
        problems.append(&mut refused);
        return Err(std::mem::take(problems));
    }
    let bot_feeds = classifier
        .db()
        .bots()
        .iter()
        .map(|b| crate::identity::resolve(&ranges, &b.ip_ranges).unwrap_or_default())
        .collect();
    let bot_rdns = classifier.db().bots().iter().map(|b| b.rdns_use()).collect();
    Ok(Snapshot {
        settings,
        classifier,
        ranges,
        bot_feeds,
        bot_rdns,
        feeds_dir,
        absent: sites.iter().flat_map(|s| s.absent.iter().cloned()).collect(),
        sites,
        config_sites,
        site_files,
        site_hosts,
        sources,
        bots_key,
        read_at,
        traps_first_served,
        traps_state,
        robots_versions,
        refused,
        changes: changed,
        config_stamp: None,
        ranges_key,
    })
}

/// The last component of a source that stands for every JSON file of its
/// directory (the feeds directory: a feed that appears there reloads too).
pub const ANY_JSON: &str = "*.json";

/// The name of the directory, beside robotgate's other state files, that
/// `verify.refresh` fetches the feeds into when `verify.feeds` names none.
pub const REFRESHED_FEEDS: &str = "robotgate-feeds";

/// Where the feeds are read from and refreshed into: `verify.feeds`, else,
/// with `verify.refresh` on (the default), [`REFRESHED_FEEDS`] beside the
/// state file `traps_state` ([`traps::state_path`]); `None`: neither.
pub fn feeds_dir(settings: &Settings, traps_state: &Path) -> Option<PathBuf> {
    match (&settings.verify_feeds, settings.boot.verify.refresh) {
        (Some(dir), _) => Some(dir.clone()),
        (None, Some(_)) => {
            let parent = traps_state.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            Some(parent.join(REFRESHED_FEEDS))
        }
        (None, None) => None,
    }
}

/// The range table: the embedded feeds, with those of `dir` (`NAME.json`)
/// in their place. A feed that does not parse is a problem, so a broken or
/// empty download never replaces a good feed: the reload is refused. A
/// file whose own date is older than the embedded feed's is passed over:
/// the embedded snapshot is the floor. A file's age counts from its
/// modification time (when it was fetched) when that is later than its
/// date. `given`: the operator named `dir` (`verify.feeds`), so it must
/// exist; robotgate's own directory may not exist yet.
///
/// The table is built again only when the feed files differ from those of
/// `previous` (name, content, modification time): otherwise its table is
/// shared.
fn load_ranges(
    dir: Option<&Path>,
    given: bool,
    reads: Reads<'_>,
    (sources, problems): (&mut Vec<PathBuf>, &mut Vec<Problem>),
    previous: Option<(&RangesKey, &Arc<RangeTable>)>,
) -> (Arc<RangeTable>, RangesKey) {
    let mut files: Vec<(String, String, SystemTime)> = Vec::new();
    if let Some(dir) = dir {
        match std::fs::read_dir(dir) {
            Err(e) if given || e.kind() != std::io::ErrorKind::NotFound => {
                problems.push(Problem::new(dir, None, format!("cannot read the feeds directory: {e}")));
            }
            // Not made yet: watched all the same, once `serve` makes it.
            Err(_) => sources.push(dir.join(ANY_JSON)),
            Ok(entries) => {
                sources.push(dir.join(ANY_JSON));
                let mut paths: Vec<PathBuf> = entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "json"))
                    .collect();
                paths.sort();
                for path in paths {
                    sources.push(path.clone());
                    let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                    if let Some(c) = read(&path, "the feed", file::FEED_MAX, reads, problems) {
                        files.push((name, String::from_utf8_lossy(&c.body).into_owned(), c.mtime));
                    }
                }
            }
        }
    }
    // The floor: never a list older than the one embedded.
    files.retain(|(name, text, _)| {
        let date = |text: &str| crate::identity::Feed::parse(text).ok().and_then(|f| f.created_unix());
        let embedded = crate::identity::BUILTIN_FEEDS.iter().find(|(n, _)| n == name).and_then(|(_, t)| date(t));
        match (embedded, date(text)) {
            (Some(embedded), Some(file)) => file >= embedded,
            _ => true,
        }
    });
    let key: RangesKey = files.iter().map(|(n, b, m)| (n.clone(), robots::fingerprint(b.as_bytes()), *m)).collect();
    if let Some((_, table)) = previous.filter(|(k, _)| **k == key && problems.is_empty()) {
        return (Arc::clone(table), key);
    }
    let overrides: Vec<(&str, &str)> = files.iter().map(|(n, b, _)| (n.as_str(), b.as_str())).collect();
    let mut table = RangeTable::with_overrides(&overrides).unwrap_or_else(|e| {
        problems.push(Problem::new(dir.map(Path::to_path_buf).unwrap_or_default(), None, e.to_string()));
        RangeTable::builtin()
    });
    for (name, _, mtime) in &files {
        let secs = mtime.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if let Some(id) = table.feed_id(name) {
            table.known_current_at(id, secs);
        }
    }
    (Arc::new(table), key)
}

/// What a range table was built from: each feed file's name, content
/// fingerprint and modification time.
type RangesKey = Vec<(String, u64, SystemTime)>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_changed_after_reading_makes_the_snapshot_stale() {
        let dir = tempfile::tempdir().unwrap();
        let robots = dir.path().join("robots.txt");
        std::fs::write(&robots, "User-agent: *\nDisallow: /a/\n").unwrap();
        let config = dir.path().join("robotgate.yaml");
        let text = format!(
            "listen: [\"127.0.0.1:8080\"]\nsites:\n  - hosts: [\"localhost\"]\n    upstream: \"127.0.0.1:8000\"\n    robots: {}\n",
            robots.display()
        );
        std::fs::write(&config, text).unwrap();
        // Older than the coarse-clock margin.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let snap = load(&config).unwrap();
        assert!(!snap.stale(), "nothing changed");
        std::fs::write(&robots, "User-agent: *\nDisallow: /b/\n").unwrap();
        assert!(snap.stale(), "robots.txt was rewritten");
        std::fs::remove_file(&robots).unwrap();
        assert!(snap.stale(), "robots.txt is gone");
    }

    #[test]
    fn a_link_renamed_over_a_source_is_a_change_though_what_it_leads_to_is_older() {
        let dir = tempfile::tempdir().unwrap();
        let robots = dir.path().join("robots.txt");
        std::fs::write(&robots, "User-agent: *\nDisallow: /a/\n").unwrap();
        std::fs::write(dir.path().join("older.txt"), "User-agent: *\nDisallow: /older/\n").unwrap();
        let config = dir.path().join("robotgate.yaml");
        let text = format!("sites:\n  - hosts: [\"localhost\"]\n    robots: {}\n", robots.display());
        std::fs::write(&config, text).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let snap = load(&config).unwrap();
        assert!(!snap.stale());
        let tmp = dir.path().join(".link");
        std::os::unix::fs::symlink("older.txt", &tmp).unwrap();
        std::fs::rename(&tmp, &robots).unwrap();
        assert!(snap.stale(), "the link is new, the file it leads to is not");
    }

    /// A config with robots.txt and humans.txt in `dir`, both written.
    fn site(dir: &Path, robots: &[u8], humans: &[u8]) -> PathBuf {
        std::fs::write(dir.join("robots.txt"), robots).unwrap();
        std::fs::write(dir.join("humans.txt"), humans).unwrap();
        let config = dir.join("robotgate.yaml");
        let text = format!(
            "listen: [\"127.0.0.1:8080\"]\nsites:\n  - hosts: [\"localhost\"]\n    upstream: \"127.0.0.1:8000\"\n    robots: {0}/robots.txt\n    humans: {0}/humans.txt\n",
            dir.display()
        );
        std::fs::write(&config, text).unwrap();
        config
    }

    fn robots_body(snap: &Snapshot) -> &[u8] {
        &snap.sites[0].robots.as_ref().unwrap().file.body
    }

    #[test]
    fn at_start_a_robots_txt_that_is_not_one_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let config = site(dir.path(), b"<!DOCTYPE html>\n<title>Error</title>", b"hi\n");
        let problems = load(&config).unwrap_err();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].file, dir.path().join("robots.txt"));
        assert_eq!(problems[0].reason, Some(Reason::NotRobotsTxt));
        assert!(problems[0].to_string().contains("refused robots.txt: it is an HTML document"), "{}", problems[0]);
    }

    #[test]
    fn an_empty_robots_txt_is_legal() {
        let dir = tempfile::tempdir().unwrap();
        let config = site(dir.path(), b"", b"");
        let snap = load(&config).unwrap();
        assert_eq!(robots_body(&snap), b"");
        assert!(snap.refused.is_empty());
    }

    #[test]
    fn a_refused_robots_txt_keeps_its_last_good_version_and_the_rest_reloads() {
        let dir = tempfile::tempdir().unwrap();
        let config = site(dir.path(), b"User-agent: *\nDisallow: /old/\n", b"old humans\n");
        let first = load(&config).unwrap();
        // UTF-16 robots.txt, and a new humans.txt.
        let utf16: Vec<u8> =
            "\u{feff}User-agent: *\nDisallow: /new/\n".encode_utf16().flat_map(u16::to_le_bytes).collect();
        std::fs::write(dir.path().join("robots.txt"), utf16).unwrap();
        std::fs::write(dir.path().join("humans.txt"), b"new humans\n").unwrap();
        let second = reload(&config, Some(&first)).unwrap();
        assert_eq!(robots_body(&second), b"User-agent: *\nDisallow: /old/\n");
        assert!(!second.sites[0].robots.as_ref().unwrap().compiled.allows("foobot", "/old/x").allowed);
        assert_eq!(&second.sites[0].humans.as_ref().unwrap().body[..], b"new humans\n");
        assert_eq!(second.refused.len(), 1, "{:?}", second.refused);
        let p = &second.refused[0];
        assert_eq!((p.file.as_path(), p.reason), (dir.path().join("robots.txt").as_path(), Some(Reason::NotRobotsTxt)));
        assert!(p.message.contains("UTF-16") && p.message.ends_with("the last good version stays in force"), "{p}");

        // Kept again by the next reload (a FIFO now), which loads the rest.
        std::fs::remove_file(dir.path().join("robots.txt")).unwrap();
        let made = std::process::Command::new("mkfifo").arg(dir.path().join("robots.txt")).status().unwrap();
        assert!(made.success());
        std::fs::write(dir.path().join("humans.txt"), b"newer humans\n").unwrap();
        let third = reload(&config, Some(&second)).unwrap();
        assert_eq!(robots_body(&third), b"User-agent: *\nDisallow: /old/\n");
        assert_eq!(&third.sites[0].humans.as_ref().unwrap().body[..], b"newer humans\n");
        assert_eq!(third.refused[0].reason, Some(Reason::NotRegular));

        // A good file is taken again, and nothing is refused.
        std::fs::remove_file(dir.path().join("robots.txt")).unwrap();
        std::fs::write(dir.path().join("robots.txt"), b"User-agent: *\nDisallow: /new/\n").unwrap();
        let fourth = reload(&config, Some(&third)).unwrap();
        assert_eq!(robots_body(&fourth), b"User-agent: *\nDisallow: /new/\n");
        assert!(fourth.refused.is_empty());
    }

    /// A config of `n` sites, `s0`..`s{n-1}`, each with its robots.txt in `dir`.
    fn sites(dir: &Path, n: usize) -> PathBuf {
        let mut text = String::from("listen: [\"127.0.0.1:8080\"]\nsites:\n");
        for i in 0..n {
            std::fs::write(dir.join(format!("r{i}.txt")), format!("User-agent: *\nDisallow: /{i}/\n")).unwrap();
            text.push_str(&format!(
                "  - name: s{i}\n    hosts: [\"s{i}.example\"]\n    upstream: \"127.0.0.1:8000\"\n    robots: {}/r{i}.txt\n",
                dir.display()
            ));
        }
        let config = dir.join("robotgate.yaml");
        std::fs::write(&config, text).unwrap();
        config
    }

    #[test]
    fn a_robots_txt_without_managed_lines_is_held_once() {
        let dir = tempfile::tempdir().unwrap();
        let config = site(dir.path(), b"\xEF\xBB\xBFUser-agent: *\nDisallow: /a/\n", b"hi\n");
        let snap = load(&config).unwrap();
        let site = &snap.sites[0];
        let served = &site.robots.as_ref().unwrap().file.body;
        assert_eq!(&served[..], b"User-agent: *\nDisallow: /a/\n", "served past its BOM");
        // The served body, the last good copy and the kept version are one buffer.
        let original = site.files.iter().find(|f| f.path.ends_with("robots.txt")).unwrap().original.as_ref().unwrap();
        assert_eq!(served.as_ptr(), original.body[3..].as_ptr());
        let kept = &snap.robots_versions[site.conf.name.as_str()][0];
        assert_eq!(kept.body.as_ptr(), served.as_ptr());
    }

    #[test]
    fn a_reload_builds_again_only_the_site_whose_file_changed() {
        let dir = tempfile::tempdir().unwrap();
        let config = sites(dir.path(), 3);
        let first = load(&config).unwrap();
        assert_eq!((first.changes.added, first.changes.rebuilt), (3, 0));
        // Nothing changed: every site is shared, and the classifier and ranges too.
        let second = reload(&config, Some(&first)).unwrap();
        assert!(first.sites.iter().zip(&second.sites).all(|(a, b)| Arc::ptr_eq(a, b)));
        assert!(Arc::ptr_eq(&first.classifier, &second.classifier) && Arc::ptr_eq(&first.ranges, &second.ranges));
        assert_eq!(second.changes, Changes::default());
        // One robots.txt renamed over: that site alone is built again.
        let tmp = dir.path().join("r1.tmp");
        std::fs::write(&tmp, "User-agent: *\nDisallow: /new/\n").unwrap();
        std::fs::rename(&tmp, dir.path().join("r1.txt")).unwrap();
        let whole = HashSet::from([dir.path().join("r1.txt")]);
        let third = reload_whole(&config, Some(&second), &whole, file::Reader::Helper).unwrap();
        assert!(Arc::ptr_eq(&second.sites[0], &third.sites[0]) && Arc::ptr_eq(&second.sites[2], &third.sites[2]));
        assert!(!Arc::ptr_eq(&second.sites[1], &third.sites[1]));
        assert!(!third.sites[1].robots.as_ref().unwrap().compiled.allows("foobot", "/new/x").allowed);
        assert_eq!((third.changes.rebuilt, third.changes.named.clone()), (1, vec!["s1".to_owned()]));
        // A site removed from the config goes; the others stay shared.
        let text = std::fs::read_to_string(&config).unwrap();
        let cut = text.find("  - name: s2").unwrap();
        std::fs::write(&config, &text[..cut]).unwrap();
        let fourth = reload(&config, Some(&third)).unwrap();
        assert_eq!(fourth.sites.len(), 2);
        assert!(Arc::ptr_eq(&third.sites[0], &fourth.sites[0]) && Arc::ptr_eq(&third.sites[1], &fourth.sites[1]));
        assert_eq!((fourth.changes.added, fourth.changes.rebuilt, fourth.changes.removed), (0, 0, 1));
    }

    #[test]
    fn a_site_whose_file_was_refused_is_tried_again_and_a_good_file_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let config = sites(dir.path(), 2);
        let first = load(&config).unwrap();
        std::fs::write(dir.path().join("r0.txt"), "<html><body>oops</body></html>").unwrap();
        let second = reload(&config, Some(&first)).unwrap();
        assert_eq!(second.refused.len(), 1, "{:?}", second.refused);
        assert!(!second.sites[0].robots.as_ref().unwrap().compiled.allows("foobot", "/0/x").allowed, "kept");
        // Not kept as it is: the refusal is said again while the file is bad.
        let third = reload(&config, Some(&second)).unwrap();
        assert_eq!(third.refused.len(), 1);
        assert!(Arc::ptr_eq(&second.sites[1], &third.sites[1]));
        std::fs::write(dir.path().join("r0.txt"), "User-agent: *\nDisallow: /fixed/\n").unwrap();
        let fourth = reload(&config, Some(&third)).unwrap();
        assert!(fourth.refused.is_empty());
        assert!(!fourth.sites[0].robots.as_ref().unwrap().compiled.allows("foobot", "/fixed/x").allowed);
    }

    #[test]
    fn a_site_file_is_checked_alone_and_an_unchanged_one_is_not_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let sites = dir.path().join("sites");
        std::fs::create_dir(&sites).unwrap();
        std::fs::write(dir.path().join("a.txt"), "User-agent: *\nDisallow: /a/\n").unwrap();
        let a = format!("hosts: [a.example]\nrobots: {}/a.txt\n", dir.path().display());
        std::fs::write(sites.join("a.yaml"), &a).unwrap();
        std::fs::write(sites.join("b.yml"), "- hosts: [b.example]\n- hosts: [c.example]\n  default: true\n").unwrap();
        let config = dir.path().join("robotgate.yaml");
        std::fs::write(&config, format!("sites_dir: {}\n", sites.display())).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let first = load(&config).unwrap();
        assert_eq!(first.sites.len(), 3);
        assert!(first.refused.is_empty(), "{:?}", first.refused);
        assert_eq!(first.settings.site_for_host("B.Example:80"), Some(1));
        assert_eq!(first.settings.site_for_host("unknown.example"), Some(2), "c is the default");
        assert!(!first.stale());
        // A broken file: refused alone, with its line; its last good sites stay.
        std::fs::write(sites.join("b.yml"), "- hosts: [b.example]\n- hosts: [c.example]\n  defalt: true\n").unwrap();
        assert!(first.stale());
        let second = reload(&config, Some(&first)).unwrap();
        assert!(Arc::ptr_eq(&first.sites[0], &second.sites[0]), "a.yaml's site is shared");
        assert_eq!(second.sites.len(), 3);
        assert_eq!(second.refused.len(), 1, "{:?}", second.refused);
        assert_eq!((second.refused[0].file.clone(), second.refused[0].line), (sites.join("b.yml"), Some(3)));
        // A new file naming a host another has: refused, naming both.
        std::fs::write(sites.join("0.yaml"), "hosts: [a.example]\n").unwrap();
        let third = reload(&config, Some(&second)).unwrap();
        assert_eq!(third.sites.len(), 3);
        let clash = third.refused.iter().find(|p| p.file == sites.join("0.yaml")).expect("0.yaml refused");
        assert!(clash.message.contains("a.example") && clash.message.contains("a.yaml"), "{clash}");
        // Removed: its sites go.
        std::fs::remove_file(sites.join("b.yml")).unwrap();
        std::fs::remove_file(sites.join("0.yaml")).unwrap();
        let fourth = reload(&config, Some(&third)).unwrap();
        assert_eq!(fourth.sites.len(), 1);
        assert_eq!((fourth.changes.removed, fourth.settings.site_for_host("b.example")), (2, None));
    }

    #[test]
    fn a_refused_config_refuses_the_whole_reload() {
        let dir = tempfile::tempdir().unwrap();
        let config = site(dir.path(), b"User-agent: *\n", b"hi\n");
        let first = load(&config).unwrap();
        std::fs::remove_file(&config).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &config).unwrap();
        let problems = reload(&config, Some(&first)).unwrap_err();
        assert_eq!(problems[0].reason, Some(Reason::NotRegular));
        assert!(problems[0].message.contains("refused the config: it is a character device"), "{}", problems[0]);
    }
}
