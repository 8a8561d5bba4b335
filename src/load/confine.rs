//! The check of a file read from a customer's directory (issue 66): the
//! link rule of [`crate::config::CustomerLinks`], applied to the file
//! [`super::file::read_in`] opened.

use std::fs::Metadata;
use std::path::Path;

/// Why a file is refused by [`confined`]; the reader makes it a refusal of
/// its own (`file::Refusal`), so this room needs nothing of the reader's.
#[derive(Debug)]
pub(super) enum Refusal {
    /// The system could not resolve or stat the path.
    Unreadable(String),
    /// The file lies outside what the customer's directory allows.
    CustomerLink(String),
}

/// A customer's directory, and which links to follow in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confine {
    /// The directory ([`crate::config::customer_dir`]).
    pub dir: std::path::PathBuf,
    /// The operator's rule.
    pub links: crate::config::CustomerLinks,
}

/// Whether the file opened at `path` (`opened`: its handle's metadata) was
/// reached as `confine` allows. Checked after the open, so what is checked
/// is what was opened: the path is resolved again and the file there must
/// be the opened one (same device and inode), else a link was swapped in
/// between.
pub(super) fn confined(path: &Path, opened: &Metadata, confine: &Confine) -> Result<(), Refusal> {
    use crate::config::CustomerLinks;
    let unreadable = |e: std::io::Error| Refusal::Unreadable(e.to_string());
    let dir = &confine.dir;
    let reached = match confine.links {
        CustomerLinks::Inside => {
            let root = std::fs::canonicalize(dir).map_err(unreadable)?;
            let real = std::fs::canonicalize(path).map_err(unreadable)?;
            if !real.starts_with(&root) {
                return Err(Refusal::CustomerLink(format!(
                    "it leads out of the customer's directory {} (to {}), and `customer_links: inside` follows no link out of it",
                    dir.display(),
                    real.display()
                )));
            }
            real
        }
        CustomerLinks::Owner => {
            let below = path.strip_prefix(dir).map_err(|_| {
                Refusal::CustomerLink(format!("it is not below the customer's directory {}", dir.display()))
            })?;
            let mut at = dir.clone();
            for part in below.components() {
                at.push(part);
                let link = std::fs::symlink_metadata(&at).map_err(unreadable)?;
                if !link.file_type().is_symlink() {
                    continue;
                }
                let target = std::fs::metadata(&at).map_err(unreadable)?;
                let (by, of) = (owner(&link), owner(&target));
                if by != of {
                    return Err(Refusal::CustomerLink(format!(
                        "{} is a link (owner uid {by}) to a file of another owner (uid {of}), and `customer_links: owner` follows a link only to its owner's files",
                        at.display()
                    )));
                }
            }
            path.to_path_buf()
        }
    };
    let now = std::fs::metadata(&reached).map_err(unreadable)?;
    if node(&now) != node(opened) {
        return Err(Refusal::CustomerLink(format!(
            "{} changed while it was being checked (a link swapped in?)",
            path.display()
        )));
    }
    Ok(())
}

/// A file's owner (uid).
fn owner(meta: &Metadata) -> u32 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        meta.uid()
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        0
    }
}

/// A file's device and inode.
fn node(meta: &Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}
