//! The one mapping from an [`Outcome`] to what robotgate does about it
//! (issue #40). The proxy, the auth listener and replay each turn the
//! [`Enforcement`] into their own form (a response; an answer to the edge;
//! a status in a report), and none of them decides again: a new outcome is
//! a compile error here, not a forgotten case in one of them.

use std::time::Duration;

use super::{Action, Outcome, SiteFile};

/// What robotgate does with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enforcement<'a> {
    /// The origin answers. `noindex`: the `X-Robots-Tag` value to add to
    /// its answer (the `noindex` action).
    Pass {
        /// `X-Robots-Tag` to add, if any.
        noindex: Option<&'a str>,
    },
    /// robotgate answers with one of the site's files.
    File(SiteFile),
    /// robotgate answers with the action's own response: `block`,
    /// `alternate` or `redirect` (never `noindex` or `log`, which pass).
    Answer(&'a Action),
    /// robotgate answers 429: too soon, or outside the robot's hours.
    TooManyRequests {
        /// `Retry-After`, whole seconds, at least 1.
        retry_after: u64,
        /// `crawl-delay`, `request-rate` or `visit-time`.
        directive: &'static str,
        /// Its line in the served robots.txt.
        line: u32,
        /// The group's interval between requests (`RateLimit` headers).
        interval: Option<Duration>,
    },
}

impl Enforcement<'_> {
    /// The status robotgate answers with itself; `None` when the origin
    /// answers (or, for a file, the file's answer: 200 or 304).
    pub fn status(&self) -> Option<u16> {
        match self {
            Enforcement::Answer(a) => a.status(),
            Enforcement::TooManyRequests { .. } => Some(429),
            Enforcement::Pass { .. } | Enforcement::File(_) => None,
        }
    }

    /// Whether robotgate answers the request itself, in place of the origin
    /// (a file, a refusal, a 429).
    pub fn answers(&self) -> bool {
        !matches!(self, Enforcement::Pass { .. })
    }
}

impl Action {
    /// The status of an action robotgate answers with itself; `None` for
    /// `noindex` and `log`, which let the request through.
    pub fn status(&self) -> Option<u16> {
        match self {
            Action::Block { status, .. } | Action::Alternate { status, .. } | Action::Redirect { status, .. } => {
                Some(*status)
            }
            Action::Noindex { .. } | Action::Log => None,
        }
    }
}

/// An action applied: answered, or passed with its `X-Robots-Tag`.
fn apply(action: &Action) -> Enforcement<'_> {
    match action {
        Action::Noindex { value } => Enforcement::Pass { noindex: Some(value) },
        Action::Log => Enforcement::Pass { noindex: None },
        refusing => Enforcement::Answer(refusing),
    }
}

const PASS: Enforcement<'static> = Enforcement::Pass { noindex: None };

impl<'a> Outcome<'a> {
    /// What robotgate does about this outcome.
    pub fn enforcement(&self) -> Enforcement<'a> {
        match *self {
            Outcome::Pass => PASS,
            Outcome::File(which) => Enforcement::File(which),
            Outcome::Violation(v) => apply(v.action),
            Outcome::Banned(b) => apply(b.action),
            Outcome::Spoofed(s) => apply(s.action),
            Outcome::Refused(r) => apply(r.action),
            // A trap not yet armed, or hit from the crowd's address: recorded only.
            Outcome::Trap(t) if t.enforce => apply(t.action),
            Outcome::Trap(_) => PASS,
            // RFC 9309 2.4: the crawler's copy allows it (`robots_change.action: pass`).
            Outcome::Stale(s) => s.action.map_or(PASS, apply),
            Outcome::Limited(l) if l.enforce => Enforcement::TooManyRequests {
                retry_after: (l.wait.as_secs() + u64::from(l.wait.subsec_nanos() > 0)).max(1),
                directive: l.directive,
                line: l.line,
                interval: l.interval,
            },
            Outcome::Limited(_) => PASS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Limited, Stale, TrapHit};
    use crate::robots::RobotsTxt;

    #[test]
    fn each_outcome_has_one_enforcement() {
        let block = Action::Block { status: 403, body: String::new(), file: None };
        let noindex = Action::Noindex { value: "noindex".into() };
        assert_eq!(Outcome::Pass.enforcement(), PASS);
        let trap = |enforce| TrapHit { path: "/t/", banned: false, why: "verified-crawler", action: &block, enforce };
        // A verified crawler on an armed trap gets the site's action; one not armed passes.
        assert_eq!(Outcome::Trap(trap(true)).enforcement(), Enforcement::Answer(&block));
        assert_eq!(Outcome::Trap(trap(false)).enforcement(), PASS);
        let robots = RobotsTxt::compile(b"User-agent: *\nDisallow: /x\n");
        let rule = &robots.rules()[0];
        let stale = |action| Stale { group: None, rule, action, fetched: 1, fetched_at: 0 };
        assert_eq!(Outcome::Stale(stale(Some(&block))).enforcement().status(), Some(403));
        assert_eq!(Outcome::Stale(stale(None)).enforcement(), PASS);
        assert_eq!(
            Outcome::Violation(crate::policy::Violation { group: None, rule, action: &noindex }).enforcement(),
            Enforcement::Pass { noindex: Some("noindex") }
        );
        let limited = |enforce| Limited {
            group: None,
            directive: "crawl-delay",
            line: 3,
            wait: Duration::from_millis(1_500),
            enforce,
            unsupported: false,
            recorded: true,
            interval: Some(Duration::from_secs(5)),
        };
        let e = Outcome::Limited(limited(true)).enforcement();
        assert_eq!((e.status(), e.answers()), (Some(429), true));
        assert!(matches!(e, Enforcement::TooManyRequests { retry_after: 2, .. }));
        assert_eq!(Outcome::Limited(limited(false)).enforcement(), PASS);
    }
}
