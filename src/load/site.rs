//! One site's files read and compiled (the part of a load that is per
//! site), and the reading of a served file: its bounds, its check, the
//! customer's directory it must stay in, the last good version it falls
//! back to.

use super::*;

/// How one load reads its files: which were put in place whole (read at
/// once, not once they settle), and on which thread ([`file::Reader`]).
#[derive(Clone, Copy)]
pub(super) struct Reads<'w> {
    pub(super) whole: &'w HashSet<PathBuf>,
    /// Every source the host's watcher named since the previous snapshot
    /// was read, when it lost none ([`reload_named`]): a site none of whose
    /// files is named is kept without a `stat`.
    pub(super) named: Option<&'w HashSet<PathBuf>>,
    pub(super) reader: file::Reader,
}

impl Reads<'_> {
    /// How to read `path`.
    pub(super) fn timing(&self, path: &Path) -> file::Timing {
        let settle = match self.whole.contains(path) {
            true => std::time::Duration::ZERO,
            false => file::Timing::default().settle,
        };
        file::Timing { settle, reader: self.reader, ..file::Timing::default() }
    }
}

/// Reads and compiles one site's files (the part of a load that is per
/// site), noting what it read where the whole load keeps it.
pub(super) struct SiteReader<'a> {
    pub(super) refused: &'a mut Vec<Problem>,
    pub(super) problems: &'a mut Vec<Problem>,
    pub(super) sources: &'a mut Vec<PathBuf>,
    pub(super) config_path: &'a Path,
    pub(super) reads: Reads<'a>,
    /// The template and the rule for a customer's files ([`file::Confine`]).
    pub(super) template: &'a config::SiteTemplate,
    pub(super) links: config::CustomerLinks,
}

/// What one site's build read: each file's stamp and its contents as read.
pub(super) struct Reading<'b> {
    /// The previous snapshot's site of the same name: its last good files.
    pub(super) before: Option<&'b LiveSite>,
    pub(super) files: Vec<SiteFile>,
    /// See [`LiveSite::reusable`].
    pub(super) reusable: bool,
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
    pub(super) fn build(
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
pub(super) fn absent(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
}

/// The actions of `site` that a request can be answered by.
pub(super) fn site_actions(site: &Site) -> impl Iterator<Item = &Action> {
    let policy = &site.policy;
    std::iter::once(&policy.default)
        .chain(policy.categories.iter().map(|(_, a)| a))
        .chain(policy.bots.iter().map(|(_, a)| a))
        .chain(std::iter::once(&policy.spoofed))
        .chain(site.traps.as_ref().map(|t| &t.action))
}

/// Read `path` as `what`, at most `limit` bytes ([`file::read`]); a refusal
/// is a problem.
pub(super) fn read(
    path: &Path,
    what: &str,
    limit: u64,
    reads: Reads<'_>,
    problems: &mut Vec<Problem>,
) -> Option<file::Contents> {
    file::read_with(path, limit, &reads.timing(path))
        .map_err(|refusal| problems.push(Problem::refused(path, what, &refusal)))
        .ok()
}

/// How one served file is read: as what, at most how many bytes, what its
/// body must pass, and the customer's directory it must stay in.
pub(super) struct Served<'c> {
    pub(super) what: &'c str,
    pub(super) limit: u64,
    pub(super) check: fn(&[u8]) -> Result<(), Refusal>,
    pub(super) confine: Option<&'c file::Confine>,
}

/// Read a served file (robots.txt, humans.txt, alternate content) as
/// `how` says. Refused on a reload whose `previous` snapshot has the file,
/// the previous version is kept and the refusal goes to `refused`. A
/// customer's file refused with no last good version (at start) goes to
/// `refused` too, and its site is served without it: a customer's file
/// never stops robotgate (issue 66). Otherwise it goes to `problems`,
/// which refuses the load.
pub(super) fn read_served(
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
pub(super) fn any_body(_: &[u8]) -> Result<(), Refusal> {
    Ok(())
}
