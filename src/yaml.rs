//! The one place that names `serde_yaml`.
//!
//! `serde_yaml` is deprecated upstream; every YAML document robotgate reads goes
//! through [`from_str`], so replacing the crate is a change to this file alone.

use serde::de::DeserializeOwned;

/// A YAML syntax or shape error, with the position serde_yaml reports.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct YamlError {
    /// Human-readable description, including line and column when known.
    pub message: String,
    /// 1-based line of the error, when known.
    pub line: Option<usize>,
}

/// Deserialize one YAML document.
///
/// # Errors
/// Returns the parser's message and line when the text is not valid YAML or does
/// not have the shape of `T` (unknown keys are errors where `T` says so).
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    serde_yaml::from_str(text).map_err(|e| YamlError { line: e.location().map(|l| l.line()), message: e.to_string() })
}
