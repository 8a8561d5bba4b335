//! Classify User-Agents with the built-in bot database, as a library.
//!
//! Run: `cargo run --release --example classify_agents`

use robotgate::agent::Classifier;
use robotgate::robots::RobotsTxt;

fn main() {
    let classifier = Classifier::builtin();
    let robots = RobotsTxt::compile(b"User-agent: GPTBot\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\n");
    for ua in [
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        "Mozilla/5.0 (compatible; SomeNewCrawler/0.3; +https://crawler.example/)",
        "curl/8.5.0",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    ] {
        let agent = classifier.classify(ua.as_bytes());
        let group = agent.is_bot().then(|| robots.selection_name(&robots.select(&agent.tokens))).flatten();
        println!(
            "{:>9} {:24} tokens {:?} group {:?}\n          {ua}",
            agent.category.as_str(),
            agent.name.unwrap_or("-"),
            agent.tokens,
            group
        );
    }
}
