//! Counting a decision and recording it.

use std::net::IpAddr;
use std::sync::Arc;

use ngx::http;

use robotgate::load::Snapshot;
use robotgate::pipeline::answer::Counts;
use robotgate::policy::{Decision, Outcome};

use crate::headers::{host_of, text};
use crate::worker::{count, count_request, CounterKey, Hot, Scratch};
use crate::{log, zone};

/// What counting a decision and recording it read.
pub(crate) struct Books<'a> {
    pub(crate) request: &'a http::Request,
    pub(crate) snap: &'a Arc<Snapshot>,
    /// The site's index.
    pub(crate) at: usize,
    pub(crate) shared: &'a zone::Shared,
    /// A violation log is configured.
    pub(crate) logging: bool,
    /// The client.
    pub(crate) client: Option<IpAddr>,
    /// Its User-Agent.
    pub(crate) user_agent: &'a [u8],
}

/// Count the decision in the shared series, as the proxy counts it, and
/// offer its violation record to the log. Whether its time is observed
/// ([`Counts::timed`]).
pub(crate) fn count_and_record(b: &Books<'_>, d: &Decision<'_, '_>, hot: &mut Hot, scratch: &mut Scratch) -> bool {
    let (shared, at) = (b.shared, b.at);
    let live = &b.snap.sites[at];
    let site = b.snap.metric_site(at);
    // The core's one list ([`Counts`]); a site file counts only when it was
    // loaded, and so answered.
    let served = match d.outcome {
        Outcome::File(which) => robotgate::pipeline::answer::site_file(live, which).is_some(),
        _ => false,
    };
    let counts = Counts::of(d, served);
    if let Some(result) = counts.preference {
        let key = CounterKey::of_site("robotgate_preferences_total", at, result);
        count(hot, &shared.series, key, &["site", "result"], &[site, result]);
    }
    if let Some(file) = counts.file {
        let key = CounterKey::of_site("robotgate_files_served_total", at, file.as_str());
        count(hot, &shared.series, key, &["site", "file"], &[site, file.as_str()]);
    }
    let Some(category) = counts.request else { return counts.timed };
    count_request(hot, &shared.series, (at, site), category);
    if counts.record {
        record(b, d, hot, scratch);
    }
    counts.timed
}

/// The record of a decision that has one, folded into the log, and its
/// tally counted. Out of line: a browser's pass never comes here, and the
/// code it runs stays compact.
#[inline(never)]
pub(crate) fn record(b: &Books<'_>, d: &Decision<'_, '_>, hot: &mut Hot, scratch: &mut Scratch) {
    let (request, shared) = (b.request, b.shared);
    let live = &b.snap.sites[b.at];
    let site = live.conf.name.as_str();
    let (client, ua) = (b.client, b.user_agent);
    let method = request.method();
    let requested = robotgate::policy::Requested {
        site,
        // Written into the record below, in its own buffer.
        client: "",
        method: method.as_str(),
        path: &text(request.unparsed_uri().as_bytes()),
        host: host_of(request),
        user_agent: &text(ua),
        robots_hash: live.robots.as_ref().map_or("", |r| r.hash.as_str()),
        lines: live.robots.as_ref().map_or(robotgate::robots::LineMap::nothing_added(), |r| &r.lines),
        ja4: None,
    };
    // One record per worker, written over for each refusal: a repeat is
    // folded into the one its window keeps, and neither allocates once
    // their strings are long enough.
    let r = &mut scratch.record;
    if !d.record_into(&requested, r) {
        return;
    }
    match client {
        Some(ip) => robotgate::net::write_ip_text(&mut r.client, ip),
        None => r.client.clear(),
    }
    if let Some(tally) = d.tally(b.snap.metric_site(b.at), r) {
        count(hot, &shared.series, CounterKey::of_tally(&tally, b.at), tally.family().1, &tally.values());
    }
    if b.logging {
        let now = log::now_ms();
        robotgate::time::write_rfc3339_ms(&mut r.time, now);
        r.status = d.outcome.enforcement().status().unwrap_or(0);
        log::offer(r, now);
    }
}
