//! What a load makes: the [`Snapshot`] and its sites ([`LiveSite`]), the
//! files they serve, what a reload changed, and the problems it found.

use super::*;

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
    pub(super) files: Box<[SiteFile]>,
    /// The files from `site_template` that did not exist: the site is kept
    /// while they still do not.
    pub(super) absent: Vec<PathBuf>,
    /// Whether a reload may keep the site as it is: no file of it was
    /// refused (a kept last good version is tried again on every reload),
    /// every file had a stamp, and the upstream is an address (a name is
    /// resolved again on every reload, as it always was).
    pub(super) reusable: bool,
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
    pub(super) fn unchanged(&self, conf: &Arc<Site>, named: Option<&HashSet<PathBuf>>) -> bool {
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
pub(super) struct SiteFile {
    pub(super) path: PathBuf,
    /// Its stamp, taken before it was read: a reload keeps the site while
    /// no file has moved. `None`: it had none (the site is not reusable).
    pub(super) stamp: Option<file::Stamp>,
    /// The robots.txt, humans.txt or alternate-content file as read: what a
    /// later reload keeps when it refuses a new version. Kept with the site,
    /// so a reload that keeps the site copies nothing.
    pub(super) original: Option<Original>,
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

    pub(super) fn note(&mut self, name: &str, existed: bool) {
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
    pub(super) site_files: sites_dir::SiteFiles,
    /// Which file of `sites_dir` holds each host: what the host keeps in
    /// [`sites_dir::held_path`] once this snapshot is in force, so that a
    /// start decides a clash as a reload does.
    pub site_hosts: sites_dir::Held,
    /// Files of `site_template` that did not exist when read: not a change
    /// while they still do not ([`Snapshot::changed_since`]).
    pub(super) absent: HashSet<PathBuf>,
    /// What this load changed among the sites of the previous snapshot
    /// (all added at start).
    pub changes: Changes,
    /// Files the snapshot was built from (the watcher watches their directories).
    pub sources: Vec<PathBuf>,
    /// What the classifier was built from: bot file, replace flag, body fingerprint.
    pub(super) bots_key: (Option<PathBuf>, bool, Option<u64>),
    /// What `ranges` was built from.
    pub(super) ranges_key: RangesKey,
    /// The config file's stamp when it was read: a reload that finds it
    /// unchanged takes this snapshot's configuration without parsing it.
    pub(super) config_stamp: Option<file::Stamp>,
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
pub(super) struct Original {
    pub(super) body: Bytes,
    pub(super) mtime: SystemTime,
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
