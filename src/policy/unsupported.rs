//! Directives a robot's operator says it ignores, found in a robots.txt: a
//! `Crawl-delay`, `Request-rate` or `Visit-time` in a group that such a robot
//! obeys. `robotgate lint` and `robotgate config check` warn about each, naming
//! the robots, since the site's author most likely meant to slow them down and
//! they will not be (see [`crate::agent::extensions`]).

use crate::agent::{BotDb, Extension, Ignored};
use crate::robots::lint::{Diagnostic, Severity};
use crate::robots::RobotsTxt;

/// Robots named per warning; the others are counted.
const NAMED: usize = 4;

/// The warning code.
pub const CODE: &str = "ignored-directive";

/// One warning per line of `robots` holding a Crawl-delay, Request-rate or
/// Visit-time that a robot of `db` obeys (its group is the one the robot
/// picks) while its operator says it ignores the directive.
///
/// Cost: one group selection per robot of the database with a claim (a few
/// dozen), no matching of paths.
pub fn ignored_directives(robots: &RobotsTxt, db: &BotDb) -> Vec<Diagnostic> {
    // (line, extension, robots, a source)
    let mut found: Vec<(u32, Extension, Vec<&str>, &str)> = Vec::new();
    for bot in db.bots() {
        let ignored = Ignored::of(&bot.extensions);
        if ignored.is_empty() {
            continue;
        }
        let selection = robots.select(&bot.robots_tokens);
        let lines = [
            (Extension::CrawlDelay, robots.crawl_delay(&selection).filter(|d| d.value > 0.0).map(|d| d.line)),
            (Extension::RequestRate, robots.request_rate(&selection).map(|r| r.line)),
            (Extension::VisitTime, robots.visit_time(&selection).map(|v| v.line)),
        ];
        for (extension, line) in lines {
            let (Some(line), true) = (line, ignored.contains(extension)) else { continue };
            let source = bot.extensions.iter().find(|c| c.extension == extension).map_or("", |c| c.source.as_str());
            match found.iter_mut().find(|f| f.0 == line && f.1 == extension) {
                Some(f) => f.2.push(&bot.name),
                None => found.push((line, extension, vec![&bot.name], source)),
            }
        }
    }
    found.sort_by_key(|f| f.0);
    found
        .into_iter()
        .map(|(line, extension, names, source)| {
            let mut who = names[..names.len().min(NAMED)].join(", ");
            if names.len() > NAMED {
                who.push_str(&format!(" and {} more", names.len() - NAMED));
            }
            let message = format!(
                "{who} obey this group, but their operators say they ignore `{extension}` ({source}): \
                 robotgate does not hold them to it unless `policy.unsupported_directives: enforce`"
            );
            Diagnostic { line, severity: Severity::Warning, code: CODE, message }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> BotDb {
        BotDb::from_yaml(
            "version: 1\nbots:\n\
             - {name: SlowBot, operator: A, category: search, robots_tokens: [SlowBot], ua: [SlowBot], obeys_robots: true, \
                extensions: [{ignores: [crawl-delay, visit-time], source: \"https://a.example/bot\"}]}\n\
             - {name: KeenBot, operator: B, category: search, robots_tokens: [KeenBot], ua: [KeenBot], obeys_robots: true, \
                extensions: [{follows: [crawl-delay], source: \"https://b.example/bot\"}]}\n",
        )
        .unwrap()
    }

    #[test]
    fn names_the_robots_that_ignore_a_directive_of_their_group() {
        let robots = RobotsTxt::compile(b"User-agent: *\nDisallow: /a\nCrawl-delay: 5\nRequest-rate: 1/10s\n\nUser-agent: KeenBot\nDisallow: /b\nCrawl-delay: 9\nVisit-time: 0100-0200\n");
        let found = ignored_directives(&robots, &db());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].line, found[0].code), (3, CODE));
        assert!(found[0].message.starts_with("SlowBot obey"), "{}", found[0].message);
        assert!(found[0].message.contains("`crawl-delay` (https://a.example/bot)"), "{}", found[0].message);
    }

    #[test]
    fn says_nothing_when_no_such_robot_obeys_the_group() {
        let robots = RobotsTxt::compile(
            b"User-agent: KeenBot\nDisallow: /k\nCrawl-delay: 5\n\nUser-agent: SlowBot\nDisallow: /x\n",
        );
        assert!(ignored_directives(&robots, &db()).is_empty());
        let zero = RobotsTxt::compile(b"User-agent: *\nCrawl-delay: 0\n");
        assert!(ignored_directives(&zero, &db()).is_empty());
    }

    #[test]
    fn the_builtin_database_names_googlebot_for_a_star_crawl_delay() {
        let robots = RobotsTxt::compile(b"User-agent: *\nCrawl-delay: 10\n");
        let found = ignored_directives(&robots, &BotDb::builtin());
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.starts_with("Googlebot, "), "{}", found[0].message);
    }
}
