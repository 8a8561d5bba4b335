//! Where the IP range feeds are read from and refreshed into, and their
//! loading into the snapshot's range table.

use super::*;

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
pub(super) fn load_ranges(
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
pub(super) type RangesKey = Vec<(String, u64, SystemTime)>;
