//! A finding about a robots.txt line: what `robotgate lint` prints, made
//! by the linter ([`super::lint`]) and the usage-preference checks
//! ([`super::usage_lint`]) alike.

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Crawlers tolerate it, but it is fragile or crawler-specific.
    Warning,
    /// The line does not do what its author meant.
    Error,
}

impl Severity {
    /// `"warning"` or `"error"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// 1-based line.
    pub line: u32,
    /// Error or warning.
    pub severity: Severity,
    /// A stable identifier (`rule-before-user-agent`, …) for filtering.
    pub code: &'static str,
    /// What is wrong and what to write instead.
    pub message: String,
}
