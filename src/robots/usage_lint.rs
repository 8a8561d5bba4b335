//! What `robotgate lint` says about `Content-Usage` lines
//! (draft-ietf-aipref-attach, draft-ietf-aipref-vocab).

use super::build::RobotsTxt;
use super::diagnostic::{Diagnostic, Severity};
use super::usage::{self, UsageError};

/// Findings about one `Content-Usage` line: a value that does not parse, the
/// labels of earlier drafts, a line before any group.
pub(super) fn line(text: &str, seen_agent: bool) -> Vec<(Severity, &'static str, String)> {
    let mut out = Vec::new();
    match usage::parse_rule(text) {
        Err(UsageError::NoPreference) => out.push((
            Severity::Error,
            "bad-value",
            format!("`Content-Usage: {text}` names a path but no preference; write e.g. `Content-Usage: {text} train-ai=n`"),
        )),
        Err(e) => out.push((
            Severity::Error,
            "bad-value",
            format!("`Content-Usage: {text}` is ignored by crawlers: {e}; write e.g. `train-ai=n, search=y` (lowercase labels, `y` or `n`)"),
        )),
        Ok((_, parsed)) => {
            for label in parsed.unreadable {
                out.push((
                    Severity::Warning,
                    "bad-value",
                    format!("`{label}` in `Content-Usage: {text}` is not `{label}=y` or `{label}=n`, so it states nothing"),
                ));
            }
            for old in parsed.old_labels {
                out.push((
                    Severity::Warning,
                    "old-usage-vocabulary",
                    format!("`{old}` is a label of an earlier AI Preferences draft; the current vocabulary (draft-ietf-aipref-vocab) has `train-ai` and `search`, and crawlers ignore `{old}`"),
                ));
            }
        }
    }
    if !seen_agent {
        out.push((
            Severity::Warning,
            "record-before-user-agent",
            "`content-usage` before any `User-agent` line applies to no group".into(),
        ));
    }
    out
}

/// A `Content-Usage` rule on a path its own group disallows: crawlers that
/// obey never fetch it, so the preference contradicts the `Disallow` (or
/// states nothing).
pub(super) fn contradictions(robots: &RobotsTxt, out: &mut Vec<Diagnostic>) {
    for (gi, g) in robots.groups().iter().enumerate() {
        for r in &g.ext().content_usage {
            // The literal part of the pattern stands for the paths it covers.
            let literal: &[u8] = match r.raw.iter().position(|&b| b == b'*') {
                Some(i) => &r.raw[..i],
                None => r.raw.strip_suffix(b"$").unwrap_or(&r.raw),
            };
            let probe: &[u8] = if literal.is_empty() { b"/" } else { literal };
            if !robots.group_allows(gi, probe) {
                let path = r.path.as_deref().unwrap_or("every path");
                out.push(Diagnostic {
                    line: r.line,
                    severity: Severity::Warning,
                    code: "usage-contradicts-disallow",
                    message: format!("the preference `{}` for {path} contradicts this group's `Disallow`: a crawler that obeys never fetches the path, so it never reads the preference", r.pref),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::robots::lint::lint;

    fn codes(body: &str) -> Vec<(u32, &'static str)> {
        lint(body.as_bytes()).into_iter().map(|d| (d.line, d.code)).collect()
    }

    #[test]
    fn content_usage_findings() {
        assert!(
            codes("User-agent: *\nAllow: /\nContent-Usage: train-ai=n\nContent-Usage: /news/ search=y\n").is_empty()
        );
        assert_eq!(codes("User-agent: *\nContent-Usage: train-ai=no,\n"), vec![(2, "bad-value")]);
        assert_eq!(codes("User-agent: *\nContent-Usage: /x\n"), vec![(2, "bad-value")]);
        assert_eq!(codes("User-agent: *\nContent-Usage: tdm=n\n"), vec![(2, "old-usage-vocabulary")]);
        assert_eq!(codes("User-agent: *\nContent-Usage: train-ai=no\n"), vec![(2, "bad-value")]);
        assert!(codes("Content-Usage: train-ai=n\nUser-agent: *\nDisallow: /x\n")
            .contains(&(1, "record-before-user-agent")));
        assert_eq!(
            codes("User-agent: *\nDisallow: /private\nContent-Usage: /private/ train-ai=y\n"),
            vec![(3, "usage-contradicts-disallow")]
        );
    }
}
