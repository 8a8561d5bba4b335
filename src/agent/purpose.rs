//! What a robot fetches for, as its operator documents it: the `purposes`
//! of `conf/bots.yaml`, matched against a site's usage preferences
//! (`Content-Usage`, `Content-Signal`; see `robots::usage`).

use std::fmt;

use serde::Serialize;

/// One documented purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Purpose {
    /// Training AI models (draft-ietf-aipref-vocab `train-ai`; Content Signals `ai-train`).
    TrainAi,
    /// Building a search index (`search`).
    Search,
    /// Retrieval to answer a question, grounding (Content Signals `ai-input`).
    AiInput,
    /// Fetching a page a person asked for (no preference category: such
    /// fetchers follow `enforce_ai_user`).
    UserFetch,
}

impl Purpose {
    /// Every purpose, in bit order.
    pub const ALL: [Purpose; 4] = [Purpose::TrainAi, Purpose::Search, Purpose::AiInput, Purpose::UserFetch];

    /// The label in `bots.yaml`, records and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::TrainAi => "train-ai",
            Purpose::Search => "search",
            Purpose::AiInput => "ai-input",
            Purpose::UserFetch => "user-fetch",
        }
    }

    /// The purpose a label names.
    pub fn from_name(name: &str) -> Option<Purpose> {
        Purpose::ALL.into_iter().find(|p| p.as_str() == name)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for Purpose {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of purposes, copied into every classification (one byte).
/// Empty: the robot's purposes are not documented.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Purposes(u8);

impl Purposes {
    /// No documented purpose.
    pub const UNKNOWN: Purposes = Purposes(0);

    /// Whether no purpose is documented.
    pub fn is_unknown(self) -> bool {
        self.0 == 0
    }

    /// Whether `p` is one of them.
    pub fn contains(self, p: Purpose) -> bool {
        self.0 & p.bit() != 0
    }

    /// The purposes, in [`Purpose::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Purpose> {
        Purpose::ALL.into_iter().filter(move |p| self.contains(*p))
    }
}

impl FromIterator<Purpose> for Purposes {
    fn from_iter<I: IntoIterator<Item = Purpose>>(iter: I) -> Self {
        Purposes(iter.into_iter().fold(0, |acc, p| acc | p.bit()))
    }
}

/// A documented purpose with where it is documented.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PurposeSource {
    /// The purpose.
    pub purpose: Purpose,
    /// An http(s) URL of the operator's statement; `url` for the entry's
    /// own `url`; `category` when it is only read from the entry's category
    /// (no operator statement cited).
    pub source: String,
}

/// Check a `purposes` mapping of `bots.yaml` (`{train-ai: url, search: category}`).
///
/// # Errors
/// A message naming the bad label or source.
pub(super) fn validate(raw: &[(String, String)], has_url: bool) -> Result<Vec<PurposeSource>, String> {
    let mut out: Vec<PurposeSource> = Vec::new();
    for (label, source) in raw {
        let purpose = Purpose::from_name(label).ok_or_else(|| {
            let known: Vec<&str> = Purpose::ALL.iter().map(|p| p.as_str()).collect();
            format!("purposes: unknown purpose `{label}` (one of: {})", known.join(", "))
        })?;
        let ok = match source.as_str() {
            "category" => true,
            "url" => has_url,
            s => (s.starts_with("https://") || s.starts_with("http://")) && !s.contains(char::is_whitespace),
        };
        if !ok {
            return Err(format!(
                "purposes: `{label}` source `{source}`: an http(s) URL, `url` (the entry has one) or `category`"
            ));
        }
        if out.iter().any(|p| p.purpose == purpose) {
            return Err(format!("purposes: `{label}` twice"));
        }
        out.push(PurposeSource { purpose, source: source.clone() });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_sets() {
        for p in Purpose::ALL {
            assert_eq!(Purpose::from_name(p.as_str()), Some(p));
        }
        let s: Purposes = [Purpose::Search, Purpose::AiInput].into_iter().collect();
        assert!(s.contains(Purpose::Search) && !s.contains(Purpose::TrainAi));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![Purpose::Search, Purpose::AiInput]);
        assert!(Purposes::UNKNOWN.is_unknown());
    }

    #[test]
    fn the_database_documents_purposes_for_search_and_ai_robots() {
        use crate::agent::{BotDb, Category};
        let db = BotDb::builtin();
        for bot in db.bots() {
            let needs =
                matches!(bot.category, Category::Search | Category::AiCrawler | Category::AiSearch | Category::AiUser);
            assert!(!needs || !bot.purposes.is_empty(), "{} has no purposes", bot.name);
        }
        let gpt = db.get("GPTBot").unwrap().purpose_set();
        assert!(gpt.contains(Purpose::TrainAi) && !gpt.contains(Purpose::Search));
        let oai = db.get("OAI-SearchBot").unwrap().purpose_set();
        assert!(oai.contains(Purpose::Search) && oai.contains(Purpose::AiInput));
    }

    #[test]
    fn validation() {
        let raw = |l: &str, s: &str| vec![(l.to_owned(), s.to_owned())];
        assert!(validate(&raw("train-ai", "https://e.com/bot"), false).is_ok());
        assert!(validate(&raw("train-ai", "url"), false).is_err());
        assert!(validate(&raw("train-ai", "url"), true).is_ok());
        assert!(validate(&raw("tdm", "category"), true).is_err());
        assert!(validate(&raw("search", "somewhere"), true).is_err());
    }
}
