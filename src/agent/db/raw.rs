//! The YAML shape of `bots.yaml`, read with every unknown key refused and
//! each entry validated into a [`Bot`] (its index and name in every error).

use serde::Deserialize;

use super::super::extensions::{claims_of, RawClaim};
use super::*;

/// The YAML shape of one entry. Category stays a string so that a bad value is
/// reported with the entry's index and name rather than as a bare serde error.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBot {
    pub(super) name: String,
    pub(super) operator: String,
    pub(super) category: String,
    pub(super) robots_tokens: Vec<String>,
    #[serde(default)]
    pub(super) control_tokens: Vec<String>,
    #[serde(default)]
    pub(super) ua: Vec<String>,
    #[serde(default)]
    pub(super) ua_regex: Option<String>,
    pub(super) obeys_robots: bool,
    #[serde(default)]
    pub(super) url: Option<String>,
    #[serde(default)]
    pub(super) samples: Vec<String>,
    #[serde(default)]
    pub(super) ip_ranges: Vec<String>,
    #[serde(default)]
    pub(super) rdns: Vec<String>,
    #[serde(default)]
    pub(super) ranges_complete: Option<String>,
    #[serde(default)]
    pub(super) listed: bool,
    #[serde(default)]
    pub(super) signature_agents: Vec<String>,
    #[serde(default)]
    pub(super) extensions: Vec<RawClaim>,
    #[serde(default)]
    pub(super) purposes: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDb {
    pub(super) version: u32,
    pub(super) bots: Vec<RawBot>,
}

impl RawBot {
    pub(super) fn validate(mut self, index: usize) -> Result<Bot, DbError> {
        let category = match Category::from_name(&self.category) {
            Some(c) => c,
            None => {
                let known: Vec<&str> = Category::ALL[..11].iter().map(|c| c.as_str()).collect();
                return Err(invalid(
                    index,
                    &self.name,
                    format!("unknown category `{}` (one of: {})", self.category, known.join(", ")),
                ));
            }
        };
        let extensions = claims_of(self.extensions).map_err(|reason| invalid(index, &self.name, reason))?;
        let raw: Vec<(String, String)> = std::mem::take(&mut self.purposes).into_iter().collect();
        let purposes = crate::agent::purpose::validate(&raw, self.url.is_some())
            .map_err(|reason| invalid(index, &self.name, reason))?;
        let bot = Bot {
            purposes,
            name: self.name,
            operator: self.operator,
            category,
            robots_tokens: self.robots_tokens,
            control_tokens: self.control_tokens,
            ua: self.ua,
            ua_regex: self.ua_regex,
            obeys_robots: self.obeys_robots,
            url: self.url,
            samples: self.samples,
            ip_ranges: self.ip_ranges,
            rdns: self.rdns,
            ranges_complete: self.ranges_complete,
            listed: self.listed,
            signature_agents: self.signature_agents,
            extensions,
        };
        bot.check(index)?;
        Ok(bot)
    }
}

pub(super) fn invalid(index: usize, name: &str, reason: String) -> DbError {
    DbError::Invalid { index, name: name.to_owned(), reason }
}
