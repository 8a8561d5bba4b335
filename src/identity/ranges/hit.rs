//! What a lookup in the range table finds: a feed, and the prefix of it
//! that holds the address. Shared by the table and its interval index.

use super::prefix::Prefix;

/// Names a feed of a [`super::RangeTable`] (its position in the table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FeedId(pub(super) u16);

impl FeedId {
    /// Position of the feed in [`super::RangeTable::feeds`].
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

/// One feed containing an address, with its most specific prefix doing so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// The feed.
    pub feed: FeedId,
    /// The longest prefix of that feed containing the address.
    pub prefix: Prefix,
}
