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
mod feeds;
pub mod file;
mod site;
pub mod sites_dir;
mod snapshot;
pub mod traps;
pub mod versions;
pub mod watch;

pub use content::check_robots_body;
pub use feeds::{feeds_dir, ANY_JSON, REFRESHED_FEEDS};
use feeds::{load_ranges, RangesKey};
pub use file::{Reason, Refusal};
use site::{absent, read, site_actions, Reads, SiteReader};
pub use snapshot::{Changes, LiveSite, Problem, RobotsFile, ServedFile, Snapshot};
use snapshot::{Original, SiteFile};

use crate::agent::{BotDb, Classifier};
use crate::config::{self, Config, Host, Settings, Site};
use crate::identity::{ByRanges, FeedId, RangeTable};
use crate::policy::{Action, SiteRules};
use crate::robots::{self, RobotsTxt};

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
