//! Files a customer controls (issue 66): which of a site's files lie in a
//! customer's directory, and which links in there robotgate follows.
//!
//! A hosting operator's customers write their own robots.txt in their own
//! document root (`site_template: {robots: /srv/www/{host}/robots.txt}`);
//! robotgate reads it with its own rights, which reach every customer's
//! files and its own keys. A customer who makes their robots.txt a link
//! (`ln -s ../b.example/private/secret.txt robots.txt`) had robotgate serve
//! another customer's file, or robotgate's TLS key, to the world as their
//! robots.txt. So a file in a customer's directory is opened only if no
//! link takes it out of there ([`CustomerLinks::Inside`], the default), or
//! only through links whose owner owns what they point at
//! ([`CustomerLinks::Owner`], the rule Apache calls `SymLinksIfOwnerMatch`).
//! The loader applies the rule (`load::file::read_in`); this module only
//! says where each directory is, from the paths and the template, as data.

use std::path::{Path, PathBuf};

use super::{Site, SiteTemplate};

/// Which links robotgate follows inside a customer's directory
/// (`customer_links:`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CustomerLinks {
    /// `inside`: a link is followed only while the file it leads to lies
    /// inside the customer's directory (after every link, the operator's
    /// own above it too).
    #[default]
    Inside,
    /// `owner`: a link below the customer's directory is followed only if
    /// its owner owns what it points at (Apache's `SymLinksIfOwnerMatch`);
    /// the file may then lie anywhere that owner's files do.
    Owner,
}

impl CustomerLinks {
    /// `inside` or `owner`.
    pub fn from_name(name: &str) -> Option<CustomerLinks> {
        match name {
            "inside" => Some(CustomerLinks::Inside),
            "owner" => Some(CustomerLinks::Owner),
            _ => None,
        }
    }

    /// The key's value, for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            CustomerLinks::Inside => "inside",
            CustomerLinks::Owner => "owner",
        }
    }
}

/// The customer's directory that `path`, one of `site`'s files, lies in:
///
/// - a file from `site_template` (`from_template`): the directory the
///   pattern names by `{host}` or `{name}` (`/srv/www/{host}/robots.txt`:
///   `/srv/www/a.example`), or, when the placeholder is in the file's own
///   name (`/srv/robots/{host}.txt`), the directory the file is in;
/// - any other file: the first directory on its path named as one of the
///   site's hosts or as its name (`/srv/www/a.example/robots.txt`:
///   `/srv/www/a.example`);
///
/// `None`: the file is the operator's (its links are followed as every
/// other file's).
pub fn customer_dir(site: &Site, path: &Path, template: Option<&str>, from_template: bool) -> Option<PathBuf> {
    if let (true, Some(pattern)) = (from_template, template) {
        let at = ["{host}", "{name}"].iter().filter_map(|p| pattern.find(p)).min()?;
        return match pattern[at..].find('/') {
            Some(slash) => {
                let prefix = &pattern[..at + slash];
                let host = site.hosts.first().map_or(site.name.as_str(), String::as_str);
                Some(SiteTemplate::path(prefix, &site.name, Some(host)))
            }
            None => path.parent().map(Path::to_path_buf),
        };
    }
    let mut dir = PathBuf::new();
    let components: Vec<_> = path.components().collect();
    // The last component is the file itself.
    for c in components.iter().take(components.len().saturating_sub(1)) {
        dir.push(c);
        let name = c.as_os_str().to_string_lossy();
        let lowered = name.to_ascii_lowercase();
        let lowered = lowered.strip_suffix('.').unwrap_or(&lowered);
        if site.hosts.iter().any(|h| h == lowered) || (!site.name.is_empty() && site.name == name) {
            return Some(dir);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(hosts: &[&str], name: &str) -> Site {
        let yaml = format!(
            "sites:\n  - {{ name: \"{name}\", hosts: [{}] }}\n",
            hosts.iter().map(|h| format!("\"{h}\"")).collect::<Vec<_>>().join(", ")
        );
        crate::config::parse(&yaml).unwrap().sites.remove(0)
    }

    #[test]
    fn a_templated_file_lies_in_the_directory_its_pattern_names() {
        let s = site(&["a.example", "www.a.example"], "shop");
        let path = Path::new("/srv/www/a.example/robots.txt");
        let t = Some("/srv/www/{host}/robots.txt");
        assert_eq!(customer_dir(&s, path, t, true), Some(PathBuf::from("/srv/www/a.example")));
        let deep = Path::new("/home/shop/www/public/robots.txt");
        assert_eq!(
            customer_dir(&s, deep, Some("/home/{name}/www/public/robots.txt"), true),
            Some(PathBuf::from("/home/shop"))
        );
        let flat = Path::new("/srv/robots/a.example.txt");
        assert_eq!(customer_dir(&s, flat, Some("/srv/robots/{host}.txt"), true), Some(PathBuf::from("/srv/robots")));
    }

    #[test]
    fn another_file_lies_in_the_first_directory_named_as_the_site() {
        let s = site(&["a.example", "www.a.example"], "shop");
        let own = Path::new("/srv/www/WWW.A.Example/htdocs/robots.txt");
        assert_eq!(customer_dir(&s, own, None, false), Some(PathBuf::from("/srv/www/WWW.A.Example")));
        assert_eq!(
            customer_dir(&s, Path::new("/home/shop/robots.txt"), None, false),
            Some(PathBuf::from("/home/shop"))
        );
        // The operator's own files: no directory is named as the site.
        assert_eq!(customer_dir(&s, Path::new("/etc/robotgate/robots.txt"), None, false), None);
        // The file's own name is not a directory.
        assert_eq!(customer_dir(&s, Path::new("/etc/robotgate/a.example"), None, false), None);
    }
}
