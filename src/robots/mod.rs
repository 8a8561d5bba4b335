//! robots.txt: the RFC 9309 parser, the compiled matcher and the linter.
//!
//! [`RobotsTxt::compile`] reads a body once (any bytes, never fails) into an
//! immutable value; [`RobotsTxt::allows`] answers with Google's semantics
//! (what `robotgate check` and the conformance suite use), and
//! [`RobotsTxt::select`] + [`RobotsTxt::check`] answer for the proxy, which
//! knows a bot by several candidate tokens.

mod build;
mod diagnostic;
pub mod ext;
pub mod lines;
pub mod lint;
pub mod parse;
pub mod pattern;
mod query;
pub mod usage;
mod usage_lint;

pub use build::{
    fingerprint, short_hash, AgentLine, Group, GroupExt, Located, Options, RobotsTxt, Rule, UsageRule,
    DEFAULT_MAX_BYTES,
};
pub use lines::LineMap;
pub use pattern::RuleKind;
pub use query::{GroupMatch, Selection, UsageMatch, Verdict};
