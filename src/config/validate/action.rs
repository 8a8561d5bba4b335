//! The responses a policy chooses (`action:` blocks), and a site's
//! `policy:` made of them.

use super::super::{ConfigError, RawAction, RawPolicy, RawRobotsChange};
use super::fields::header_value;
use crate::agent::Category;
use crate::policy::{
    Action, ChangeAction, Disguised, PolicyConfig, PreferenceMode, RobotsChange, TlsEvidence, Unsupported,
    WeakEvidence, DEFAULT_BLOCK_BODY, DEFAULT_NOINDEX, DEFAULT_SPOOFED_BODY, MAX_GRACE,
};

pub(super) fn action(field: &str, raw: &RawAction, errors: &mut Vec<ConfigError>) -> Option<Action> {
    let name = raw.action.as_deref().unwrap_or("block");
    let status = |default: u16, errors: &mut Vec<ConfigError>| -> u16 {
        match raw.status {
            Some(s) if (200..=599).contains(&s) => s,
            Some(s) => {
                errors
                    .push(ConfigError::new(format!("{field}.status"), format!("{s} is not an HTTP status (200-599)")));
                default
            }
            None => default,
        }
    };
    let unused = |keys: &[(&str, bool)], errors: &mut Vec<ConfigError>| {
        for (key, set) in keys {
            if *set {
                errors
                    .push(ConfigError::new(format!("{field}.{key}"), format!("has no meaning with `action: {name}`")));
            }
        }
    };
    let a = match name {
        "block" => {
            unused(&[("redirect", raw.redirect.is_some()), ("header", raw.header.is_some())], errors);
            if raw.body.is_some() && raw.file.is_some() {
                errors.push(ConfigError::new(field, "`action: block` takes `body` or `file`, not both"));
            }
            let body = raw.body.clone().unwrap_or_else(|| DEFAULT_BLOCK_BODY.into());
            if body.contains('\0') {
                errors.push(ConfigError::new(format!("{field}.body"), "must not contain NUL"));
            }
            let content_type = raw.content_type.clone().unwrap_or_else(|| "text/html; charset=utf-8".into());
            header_value(&format!("{field}.content_type"), &content_type, errors);
            let file = raw.file.clone().map(|f| (f, content_type));
            Action::Block { status: status(403, errors), body, file }
        }
        "alternate" => {
            unused(&[("body", raw.body.is_some()), ("header", raw.header.is_some())], errors);
            match (&raw.file, &raw.redirect) {
                (Some(file), None) => {
                    let content_type = raw.content_type.clone().unwrap_or_else(|| "text/html; charset=utf-8".into());
                    header_value(&format!("{field}.content_type"), &content_type, errors);
                    Action::Alternate { status: status(200, errors), file: file.clone(), content_type }
                }
                (None, Some(location)) => {
                    header_value(&format!("{field}.redirect"), location, errors);
                    let s = status(302, errors);
                    if !(300..400).contains(&s) {
                        errors.push(ConfigError::new(format!("{field}.status"), "a redirect needs a 3xx status"));
                    }
                    Action::Redirect { status: s, location: location.clone() }
                }
                _ => {
                    errors
                        .push(ConfigError::new(field, "`action: alternate` needs exactly one of `file` or `redirect`"));
                    return None;
                }
            }
        }
        "noindex" => {
            unused(
                &[
                    ("file", raw.file.is_some()),
                    ("redirect", raw.redirect.is_some()),
                    ("body", raw.body.is_some()),
                    ("status", raw.status.is_some()),
                ],
                errors,
            );
            let value = raw.header.clone().unwrap_or_else(|| DEFAULT_NOINDEX.into());
            header_value(&format!("{field}.header"), &value, errors);
            Action::Noindex { value }
        }
        "log" => {
            unused(
                &[
                    ("file", raw.file.is_some()),
                    ("redirect", raw.redirect.is_some()),
                    ("body", raw.body.is_some()),
                    ("status", raw.status.is_some()),
                    ("header", raw.header.is_some()),
                ],
                errors,
            );
            Action::Log
        }
        other => {
            errors.push(ConfigError::new(
                format!("{field}.action"),
                format!("`{other}` is not one of block, alternate, noindex, log"),
            ));
            return None;
        }
    };
    Some(a)
}

/// `sites[i].policy`: the default action, per category and per bot, and
/// what to do with spoofed robots.
pub(super) fn policy(site_field: &str, raw: &RawPolicy, errors: &mut Vec<ConfigError>) -> PolicyConfig {
    let field = format!("{site_field}.policy");
    let default = action(&field, &raw.default, errors).unwrap_or_else(|| PolicyConfig::default().default);
    let mut categories = Vec::new();
    for (name, a) in &raw.categories {
        let f = format!("{field}.categories.{name}");
        match Category::from_name(name) {
            Some(c) => {
                if let Some(a) = action(&f, a, errors) {
                    categories.push((c, a));
                }
            }
            None => errors.push(ConfigError::new(
                f,
                format!("`{name}` is not a category ({})", Category::ALL.map(|c| c.as_str()).join(", ")),
            )),
        }
    }
    let mut bots = Vec::new();
    for (name, a) in &raw.bots {
        if let Some(a) = action(&format!("{field}.bots.{name}"), a, errors) {
            bots.push((name.to_ascii_lowercase(), a));
        }
    }
    PolicyConfig {
        default,
        categories,
        bots,
        enforce_ai_user: raw.enforce_ai_user,
        preferences: match raw.preferences.as_deref() {
            None => PreferenceMode::Enforce,
            Some(word) => PreferenceMode::from_name(word).unwrap_or_else(|| {
                errors.push(ConfigError::new(format!("{field}.preferences"), format!("`{word}`: enforce, log or off")));
                PreferenceMode::Enforce
            }),
        },
        rate_limit: raw.rate_limit.unwrap_or(true),
        visit_time: raw.visit_time.unwrap_or(true),
        spoofed: match &raw.spoofed {
            None => PolicyConfig::default().spoofed,
            Some(a) => {
                let a = RawAction { body: a.body.clone().or_else(|| Some(DEFAULT_SPOOFED_BODY.into())), ..a.clone() };
                let a = if a.file.is_some() { RawAction { body: None, ..a } } else { a };
                action(&format!("{field}.spoofed"), &a, errors).unwrap_or_else(|| PolicyConfig::default().spoofed)
            }
        },
        ipv6_prefix: crate::net::BAN_PREFIX_V6,
        unsupported: match raw.unsupported_directives.as_deref() {
            None => Unsupported::Pass,
            Some(name) => Unsupported::from_name(name).unwrap_or_else(|| {
                errors.push(ConfigError::new(
                    format!("{field}.unsupported_directives"),
                    format!("`{name}` is not one of pass, log, enforce"),
                ));
                Unsupported::Pass
            }),
        },
        robots_change: robots_change(&format!("{field}.robots_change"), &raw.robots_change, errors),
        disguised: match raw.disguised.as_deref() {
            None => Disguised::Enforce,
            Some(name) => Disguised::from_name(name).unwrap_or_else(|| {
                errors.push(ConfigError::new(
                    format!("{field}.disguised"),
                    format!("`{name}` is not one of enforce, log, off"),
                ));
                Disguised::Enforce
            }),
        },
        tls_evidence: match raw.tls_evidence.as_deref() {
            None => TlsEvidence::Strong,
            Some(name) => TlsEvidence::from_name(name).unwrap_or_else(|| {
                errors.push(ConfigError::new(
                    format!("{field}.tls_evidence"),
                    format!("`{name}` is not one of strong, weak"),
                ));
                TlsEvidence::Strong
            }),
        },
        weak_evidence: match raw.weak_evidence.as_deref() {
            None => WeakEvidence::Log,
            Some(name) => WeakEvidence::from_name(name).unwrap_or_else(|| {
                errors.push(ConfigError::new(
                    format!("{field}.weak_evidence"),
                    format!("`{name}` is not one of log, enforce"),
                ));
                WeakEvidence::Log
            }),
        },
    }
}

/// `policy.robots_change`: a grace of at most 24 hours (RFC 9309 2.4, and
/// earlier versions are kept no longer), `pass` or `enforce`.
fn robots_change(field: &str, raw: &RawRobotsChange, errors: &mut Vec<ConfigError>) -> RobotsChange {
    let mut change = RobotsChange::default();
    if let Some(g) = &raw.grace {
        match super::fields::duration(g) {
            Ok(g) if g <= MAX_GRACE => change.grace = g,
            Ok(_) => errors.push(ConfigError::new(
                format!("{field}.grace"),
                "must be at most 24h: RFC 9309 2.4 lets a crawler use its copy of robots.txt for 24 hours, no longer",
            )),
            Err(e) => errors.push(ConfigError::new(format!("{field}.grace"), e)),
        }
    }
    match raw.action.as_deref() {
        None | Some("pass") => {}
        Some("enforce") => change.action = ChangeAction::Enforce,
        Some(other) => {
            errors.push(ConfigError::new(format!("{field}.action"), format!("`{other}` is not `pass` or `enforce`")))
        }
    }
    change
}
