//! The versions of each site's robots.txt served in the last 24 hours, kept
//! in a small JSON file so that they outlive a restart.
//!
//! RFC 9309 2.4 lets a crawler use the robots.txt it fetched for up to 24
//! hours; to judge a request by the copy a crawler holds, robotgate needs
//! that copy ([`crate::policy::EarlierRobots`]). The file sits beside the
//! traps' state ([`super::traps::state_path`]) as
//! `robotgate-robots-versions.json`, one line a site (JSON Lines):
//! `{"site": "name", "kept": [{"hash", "replaced_at", "body"}, ...]}`, the
//! served text (with the managed lines) of each version.
//!
//! A reload that changed a few sites appends their lines ([`append`]); a
//! later line of a site replaces the earlier ones, and one with nothing
//! kept removes the site. When the appended lines outgrow the sites'
//! own, the file is written whole again ([`write`]). At 10,000 sites the
//! whole file is megabytes: written on every robots.txt edit, it was a
//! third of an edit's reload (issue 55). A file of the earlier form (one
//! JSON object, by site) is read too.
//!
//! Bounded: per site, the current version and at most [`MAX_EARLIER`]
//! earlier ones of at most [`MAX_EARLIER_BYTES`] together; a version
//! replaced more than 24 hours ago is dropped. Past the bounds the oldest
//! go first, and a crawler still holding one gets no grace.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::policy::{EarlierRobots, MAX_GRACE};
use crate::robots::{Options, RobotsTxt};

/// Earlier versions kept per site.
pub const MAX_EARLIER: usize = 8;

/// Bytes of earlier versions kept per site (four robots.txt of the 500 KiB
/// crawlers read).
pub const MAX_EARLIER_BYTES: usize = 2 << 20;

/// One version of a site's robots.txt, as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kept {
    /// [`RobotsTxt::hash`] of the served text.
    pub hash: u64,
    /// When it stopped being served (Unix seconds); `None`: it is served.
    #[serde(default)]
    pub replaced_at: Option<u64>,
    /// The served text: the served robots.txt's own buffer, not a copy
    /// (written and read as a JSON string, lossily for bytes that are not UTF-8).
    #[serde(with = "text")]
    pub body: Bytes,
}

/// [`Kept::body`] as a JSON string.
mod text {
    use bytes::Bytes;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(body: &Bytes, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&String::from_utf8_lossy(body))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        String::deserialize(d).map(Bytes::from)
    }
}

/// The kept versions, by site name.
pub type Versions = BTreeMap<String, Vec<Kept>>;

/// Where the file lives: beside the traps' state.
pub fn state_path(traps_state: &Path) -> PathBuf {
    traps_state.with_file_name("robotgate-robots-versions.json")
}

/// Read the file; a missing, refused or unreadable one is empty (crawlers
/// holding an earlier version then get no grace), and so is a line that is
/// not one (a line cut short when the process stopped mid-append).
pub fn read(path: &Path, reader: super::file::Reader) -> Versions {
    let Ok(contents) =
        super::file::read_with(path, super::file::VERSIONS_MAX, &super::file::Timing { reader, ..Default::default() })
    else {
        return Versions::new();
    };
    // The earlier form: one object, by site.
    if let Ok(whole) = serde_json::from_slice::<Versions>(&contents.body) {
        return whole;
    }
    let mut versions = Versions::new();
    for line in contents.body.split(|&b| b == b'\n') {
        let Ok(Line { site, kept }) = serde_json::from_slice::<Line<String, Vec<Kept>>>(line) else { continue };
        match kept.is_empty() {
            true => versions.remove(&site),
            false => versions.insert(site, kept),
        };
    }
    versions
}

/// One line of the file: a site's kept versions (none: the site is gone).
#[derive(Serialize, Deserialize)]
struct Line<S, K> {
    site: S,
    kept: K,
}

/// Write the file whole, one line a site (through a temporary file and a
/// rename).
///
/// # Errors
/// The file cannot be written.
pub fn write(path: &Path, versions: &Versions) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("json.tmp");
    // Streamed through a small buffer: at 10,000 sites the file is
    // megabytes.
    let mut out = std::io::BufWriter::with_capacity(64 << 10, std::fs::File::create(&tmp)?);
    for (site, kept) in versions {
        line(&mut out, site, kept)?;
    }
    out.flush()?;
    drop(out);
    std::fs::rename(&tmp, path)
}

/// Write one site's line.
fn line(out: &mut impl std::io::Write, site: &str, kept: &[Kept]) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, &Line { site, kept }).map_err(std::io::Error::other)?;
    out.write_all(b"\n")
}

/// Keep `now` in the file, which holds `before`: append the lines of the
/// sites whose versions differ (a removed site's with nothing kept), or,
/// when the file would then be more than twice what its sites need (or
/// does not exist), write it whole. Cost: a pass over both maps comparing
/// hashes and times, and the changed sites' bodies written.
///
/// # Errors
/// The file cannot be written.
pub fn keep(path: &Path, before: &Versions, now: &Versions) -> std::io::Result<()> {
    use std::io::Write;
    let same = |a: &[Kept], b: &[Kept]| {
        a.len() == b.len() && a.iter().zip(b).all(|(a, b)| (a.hash, a.replaced_at) == (b.hash, b.replaced_at))
    };
    let changed: Vec<(&str, &[Kept])> = now
        .iter()
        .filter(|(site, kept)| before.get(*site).is_none_or(|b| !same(b, kept)))
        .map(|(site, kept)| (site.as_str(), kept.as_slice()))
        .chain(before.keys().filter(|site| !now.contains_key(*site)).map(|site| (site.as_str(), &[][..])))
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    // What the sites' own lines take, about: their bodies and a line's frame.
    let need = |v: &Versions| v.values().flatten().map(|k| k.body.len() + 64).sum::<usize>() as u64;
    let adds = changed.iter().flat_map(|(_, kept)| kept.iter()).map(|k| k.body.len() as u64 + 64).sum::<u64>();
    let size = std::fs::metadata(path).map(|m| m.len()).ok();
    if size.is_none_or(|size| size + adds > 2 * need(now) + (64 << 10)) {
        return write(path, now);
    }
    let mut out = Vec::new();
    for (site, kept) in changed {
        line(&mut out, site, kept)?;
    }
    // One write of whole lines: a stop in the middle cuts at most the last.
    std::fs::OpenOptions::new().append(true).open(path)?.write_all(&out)
}

/// Bring a site's kept versions up to `now`, with `current` (hash and
/// served text) in force: the version it replaces is marked replaced now,
/// and those past 24 hours or the bounds are dropped.
pub fn update(kept: &mut Vec<Kept>, current: Option<(u64, &Bytes)>, now: u64) {
    let hash = current.map(|(h, _)| h);
    for k in kept.iter_mut() {
        if Some(k.hash) == hash {
            k.replaced_at = None;
        } else if k.replaced_at.is_none() {
            k.replaced_at = Some(now);
        }
    }
    if let Some((h, body)) = current {
        if !kept.iter().any(|k| k.hash == h) {
            kept.push(Kept { hash: h, replaced_at: None, body: body.clone() });
        }
    }
    kept.retain(|k| k.replaced_at.is_none_or(|t| t.saturating_add(MAX_GRACE.as_secs()) > now));
    // Newest first: the current version, then by replacement time.
    kept.sort_by_key(|k| std::cmp::Reverse(k.replaced_at.unwrap_or(u64::MAX)));
    let (mut count, mut bytes) = (0, 0);
    kept.retain(|k| {
        if k.replaced_at.is_none() {
            return true;
        }
        count += 1;
        bytes += k.body.len();
        count <= MAX_EARLIER && bytes <= MAX_EARLIER_BYTES
    });
}

/// The compiled earlier versions of `kept`, reusing those of `previous`.
pub fn compile(kept: &[Kept], previous: &[EarlierRobots], options: Options) -> Vec<EarlierRobots> {
    kept.iter()
        .filter_map(|k| {
            let replaced_at = k.replaced_at?;
            let robots = match previous.iter().find(|p| p.hash == k.hash) {
                Some(p) => p.robots.clone(),
                None => Arc::new(RobotsTxt::compile_with(&k.body, options)),
            };
            Some(EarlierRobots { hash: k.hash, robots, replaced_at })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_keeps_the_old_version_for_a_day_within_bounds() {
        let mut kept = Vec::new();
        update(&mut kept, Some((1, &Bytes::from_static(b"User-agent: *\nDisallow:\n"))), 1_000);
        assert_eq!(kept.len(), 1);
        update(&mut kept, Some((2, &Bytes::from_static(b"User-agent: *\nDisallow: /newly/\n"))), 2_000);
        assert_eq!(kept.iter().map(|k| (k.hash, k.replaced_at)).collect::<Vec<_>>(), [(2, None), (1, Some(2_000))]);
        // Back to the first: it is current again.
        update(&mut kept, Some((1, &Bytes::from_static(b"User-agent: *\nDisallow:\n"))), 3_000);
        assert_eq!(kept.iter().map(|k| (k.hash, k.replaced_at)).collect::<Vec<_>>(), [(1, None), (2, Some(3_000))]);
        // A day later the replaced one is gone.
        update(&mut kept, Some((1, &Bytes::new())), 3_000 + 86_400);
        assert_eq!(kept.len(), 1);
        // Many changes: at most MAX_EARLIER earlier versions, and bytes bounded.
        for h in 10..40u64 {
            update(&mut kept, Some((h, &Bytes::from(vec![b'x'; 400 << 10]))), 10_000 + h);
        }
        let earlier: Vec<_> = kept.iter().filter(|k| k.replaced_at.is_some()).collect();
        assert!(earlier.len() <= MAX_EARLIER);
        assert!(earlier.iter().map(|k| k.body.len()).sum::<usize>() <= MAX_EARLIER_BYTES);
        assert_eq!(earlier[0].hash, 38, "the newest earlier version stays");
        let compiled = compile(&kept, &[], Options::default());
        assert_eq!(compiled.len(), earlier.len());
    }

    #[test]
    fn the_file_keeps_each_body_as_a_json_string_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("robotgate-robots-versions.json");
        let body = Bytes::from_static(b"User-agent: *\nDisallow: /\"x\"/\n");
        let versions = Versions::from([("s".to_owned(), vec![Kept { hash: 7, replaced_at: Some(9), body }])]);
        write(&path, &versions).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(r#""body":"User-agent: *\nDisallow: /\"x\"/\n""#), "{text}");
        assert_eq!(read(&path, crate::load::file::Reader::Helper), versions);
        // The earlier form, one object by site, reads as it did.
        std::fs::write(&path, serde_json::to_vec(&versions).unwrap()).unwrap();
        assert_eq!(read(&path, crate::load::file::Reader::Helper), versions);
    }

    /// `n` sites of one version each, site `i` with hash `i`.
    fn sites(n: u64) -> Versions {
        (0..n)
            .map(|i| (format!("s{i}"), vec![Kept { hash: i, replaced_at: None, body: Bytes::from(vec![b'x'; 100]) }]))
            .collect()
    }

    #[test]
    fn a_few_changed_sites_are_appended_and_read_back_as_the_whole() {
        use crate::load::file::Reader::Helper;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("robotgate-robots-versions.json");
        let first = sites(1000);
        keep(&path, &Versions::new(), &first).unwrap();
        let whole = std::fs::metadata(&path).unwrap().len();
        assert_eq!(read(&path, Helper), first);
        // One site edited, one removed, one added: three lines appended.
        let mut second = first.clone();
        update(second.get_mut("s7").unwrap(), Some((70_000, &Bytes::from_static(b"User-agent: *\n"))), 5);
        second.remove("s8");
        second.insert("new".into(), vec![Kept { hash: 1, replaced_at: None, body: Bytes::from_static(b"x") }]);
        keep(&path, &first, &second).unwrap();
        let grown = std::fs::metadata(&path).unwrap().len() - whole;
        assert!(grown < 1000, "appended {grown} bytes for three sites");
        assert_eq!(read(&path, Helper), second);
        // Nothing changed: nothing written.
        keep(&path, &second, &second).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), whole + grown);
        // A line cut short (a stop mid-append) loses that line alone.
        let mut third = second.clone();
        update(third.get_mut("s9").unwrap(), Some((90_000, &Bytes::from_static(b"User-agent: *\n"))), 6);
        keep(&path, &second, &third).unwrap();
        let text = std::fs::read(&path).unwrap();
        std::fs::write(&path, &text[..text.len() - 10]).unwrap();
        assert_eq!(read(&path, Helper), second);
        // Past twice what the sites need, the file is written whole again.
        write(&path, &third).unwrap();
        let mut now = third.clone();
        let (mut size, mut rewritten) = (std::fs::metadata(&path).unwrap().len(), 0);
        for round in 0..40u64 {
            let before = now.clone();
            for i in 10..110 {
                let kept = now.get_mut(&format!("s{i}")).unwrap();
                update(kept, Some((1_000_000 + round * 1000 + i, &Bytes::from(vec![b'y'; 100]))), 100 + round);
            }
            keep(&path, &before, &now).unwrap();
            assert_eq!(read(&path, Helper), now, "round {round}");
            let was = std::mem::replace(&mut size, std::fs::metadata(&path).unwrap().len());
            rewritten += usize::from(size < was);
        }
        assert!(rewritten > 0, "the file was never written whole again");
        let need: usize = now.values().flatten().map(|k| k.body.len() + 64).sum();
        assert!(std::fs::metadata(&path).unwrap().len() <= 2 * need as u64 + (64 << 10) + 20_000);
    }
}
