//! What a site does with a request that breaks its robots.txt: the actions
//! and the per-site policy that picks one.

use std::path::PathBuf;

use crate::agent::Category;

/// What to do with a request that breaks robots.txt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Answer `status` with `body` (default 403).
    Block {
        /// Status code.
        status: u16,
        /// Response body (when no `file`).
        body: String,
        /// A file to answer with instead of `body`, and its Content-Type.
        file: Option<(PathBuf, String)>,
    },
    /// Serve a configured file instead of the page.
    Alternate {
        /// Status code.
        status: u16,
        /// The file (only files named in the config can be served).
        file: PathBuf,
        /// Its Content-Type.
        content_type: String,
    },
    /// Redirect.
    Redirect {
        /// Status code (default 302).
        status: u16,
        /// Location.
        location: String,
    },
    /// Proxy the request and add `X-Robots-Tag: value` to the response.
    Noindex {
        /// Header value.
        value: String,
    },
    /// Proxy the request; only log the violation.
    Log,
}

impl Action {
    /// `block`, `alternate`, `redirect`, `noindex` or `log`.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Block { .. } => "block",
            Action::Alternate { .. } => "alternate",
            Action::Redirect { .. } => "redirect",
            Action::Noindex { .. } => "noindex",
            Action::Log => "log",
        }
    }
}

/// The default body of a `block` answer.
pub const DEFAULT_BLOCK_BODY: &str = "Forbidden: this site's robots.txt disallows this URL for your crawler.\n";
/// The default `X-Robots-Tag` of `noindex`.
pub const DEFAULT_NOINDEX: &str = "noindex, nofollow";

/// A site's validated policy.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyConfig {
    /// The default action.
    pub default: Action,
    /// Overrides by category.
    pub categories: Vec<(Category, Action)>,
    /// Overrides by lower-case bot name.
    pub bots: Vec<(String, Action)>,
    /// Hold `ai-user` fetchers to robots.txt.
    pub enforce_ai_user: bool,
    /// Enforce Crawl-delay and Request-rate.
    pub rate_limit: bool,
    /// Enforce Visit-time.
    pub visit_time: bool,
    /// What a client gets whose User-Agent names a robot it is not.
    pub spoofed: Action,
    /// The prefix an IPv6 client is banned and rate-limited by
    /// ([`crate::net::client_key`]); the config's `limits.ipv6_prefix`.
    pub ipv6_prefix: u8,
    /// What a robot gets for a Crawl-delay, Request-rate or Visit-time its
    /// operator says it ignores.
    pub unsupported: Unsupported,
    /// What a refusal by usage preference does (`policy.preferences`).
    pub preferences: super::PreferenceMode,
    /// What a crawler still using the robots.txt it fetched before a change gets.
    pub robots_change: super::RobotsChange,
    /// What an unknown robot named only by weak evidence gets
    /// (`policy.weak_evidence`, issue #53).
    pub weak_evidence: WeakEvidence,
    /// What a robot in a browser's clothes gets (`policy.disguised`, issue #67).
    pub disguised: Disguised,
    /// Whether the ClientHello's signs refuse (`policy.tls_evidence`).
    pub tls_evidence: TlsEvidence,
}

/// `policy.tls_evidence`: whether a ClientHello that the claimed browser's
/// TLS stack cannot send is strong evidence (the default) or weak. A site
/// whose visitors come through a TLS-inspecting middlebox that makes its
/// own connection and names itself in no header (`Via`) sets `weak`: that
/// middlebox's hello is not the browser's, and nothing tells it from a
/// robot's (docs/classifier.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TlsEvidence {
    /// Strong: refuses as the header signs do (the default).
    #[default]
    Strong,
    /// Weak: recorded, never refused or paced.
    Weak,
}

impl TlsEvidence {
    /// `strong` or `weak`.
    pub fn from_name(name: &str) -> Option<TlsEvidence> {
        match name {
            "strong" => Some(TlsEvidence::Strong),
            "weak" => Some(TlsEvidence::Weak),
            _ => None,
        }
    }
}

/// `policy.disguised`: what a client gets whose User-Agent names a browser
/// and whose request that browser cannot send (issue #67). Only strong
/// findings ever refuse or pace; weak ones are recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Disguised {
    /// Held to the `*` group like any unknown robot (the default).
    #[default]
    Enforce,
    /// Judged and recorded, neither refused nor paced.
    Log,
    /// Not judged: a browser's User-Agent is a browser.
    Off,
}

impl Disguised {
    /// `enforce`, `log` or `off`.
    pub fn from_name(name: &str) -> Option<Disguised> {
        match name {
            "enforce" => Some(Disguised::Enforce),
            "log" => Some(Disguised::Log),
            "off" => Some(Disguised::Off),
            _ => None,
        }
    }
}

/// `policy.weak_evidence`: what an unknown robot named only by weak
/// evidence ([`crate::agent::Agent::weak_evidence`]: a weak robot word, a
/// bare URL, a shape no browser sends) gets. Such a verdict is the one a
/// person's odd software most likely meets, so by default it costs no one
/// anything: the violation is recorded, the request goes through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WeakEvidence {
    /// Recorded (with `evidence: weak`), neither refused nor paced (the
    /// default).
    #[default]
    Log,
    /// Held to robots.txt like any robot.
    Enforce,
}

impl WeakEvidence {
    /// `log` or `enforce`.
    pub fn from_name(name: &str) -> Option<WeakEvidence> {
        match name {
            "log" => Some(WeakEvidence::Log),
            "enforce" => Some(WeakEvidence::Enforce),
            _ => None,
        }
    }
}

impl PolicyConfig {
    /// Whether `agent`'s violations and pace are only recorded because it
    /// is named only by weak evidence and the site does not enforce such
    /// verdicts ([`WeakEvidence::Log`]). An override of its own name in
    /// `policy.bots` is the operator's word and still applies.
    pub fn only_records(&self, agent: &crate::agent::Agent<'_>) -> bool {
        if agent.disguised() {
            // Never refused on evidence a person's setup can produce.
            return !agent.disguise.strong() || self.disguised != Disguised::Enforce;
        }
        agent.weak_evidence
            && self.weak_evidence == WeakEvidence::Log
            && !agent.name.is_some_and(|name| self.bots.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)))
    }
}

/// What a robot gets for a directive its operator documents it ignores
/// (`policy.unsupported_directives`): never a violation, since it never
/// promised to keep to it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Unsupported {
    /// Not held to it, no record (the default).
    #[default]
    Pass,
    /// Not held to it; a request that comes too soon or outside the hours
    /// is recorded as `unsupported-directive`.
    Log,
    /// Held to it (429), recorded as `unsupported-directive`.
    Enforce,
}

impl Unsupported {
    /// `pass`, `log` or `enforce`.
    pub fn from_name(name: &str) -> Option<Unsupported> {
        match name {
            "pass" => Some(Unsupported::Pass),
            "log" => Some(Unsupported::Log),
            "enforce" => Some(Unsupported::Enforce),
            _ => None,
        }
    }
}

/// The default body of the answer to a spoofed identity.
pub const DEFAULT_SPOOFED_BODY: &str =
    "Forbidden: this client is not the crawler its User-Agent names (checked against the operator's published addresses).\n";

impl Action {
    /// How much of the request the action takes away, for choosing the
    /// strictest of several: refusing, then other content, then a redirect,
    /// then marking the page, then only logging.
    pub fn strictness(&self) -> u8 {
        match self {
            Action::Block { .. } => 4,
            Action::Alternate { .. } => 3,
            Action::Redirect { .. } => 2,
            Action::Noindex { .. } => 1,
            Action::Log => 0,
        }
    }
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            default: Action::Block { status: 403, body: DEFAULT_BLOCK_BODY.into(), file: None },
            categories: Vec::new(),
            bots: Vec::new(),
            enforce_ai_user: false,
            rate_limit: true,
            visit_time: true,
            spoofed: Action::Block { status: 403, body: DEFAULT_SPOOFED_BODY.into(), file: None },
            ipv6_prefix: crate::net::BAN_PREFIX_V6,
            unsupported: Unsupported::Pass,
            preferences: super::PreferenceMode::Enforce,
            robots_change: super::RobotsChange::default(),
            weak_evidence: WeakEvidence::Log,
            disguised: Disguised::Enforce,
            tls_evidence: TlsEvidence::Strong,
        }
    }
}
