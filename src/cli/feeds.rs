//! `robotgate feeds update`: download the operators' IP range feeds.

use std::process::ExitCode;

use anyhow::Context;

use super::FeedsCommand;

pub fn run(command: FeedsCommand) -> anyhow::Result<ExitCode> {
    match command {
        FeedsCommand::Update { dir, urls } => update(&dir, &urls),
    }
}

fn update(dir: &std::path::Path, urls: &[String]) -> anyhow::Result<ExitCode> {
    use robotgate::server::verify::feeds;
    let wanted: Vec<(String, String)> = if urls.is_empty() {
        feeds::sources(&[])
    } else {
        urls.iter()
            .map(|s| s.split_once('=').map(|(n, u)| (n.to_owned(), u.to_owned())))
            .collect::<Option<_>>()
            .context("--url takes NAME=URL")?
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let connector = pingora::connectors::http::v1::Connector::new(None);
    let mut failed = 0;
    for (name, url) in &wanted {
        match runtime.block_on(feeds::update(&connector, dir, name, url)) {
            Ok(feed) => {
                let created = feed.creation_time.as_deref().unwrap_or("no creationTime");
                println!("{name}: updated, {} prefixes ({created})", feed.prefixes.len());
            }
            Err(e) => {
                failed += 1;
                let kept =
                    if dir.join(format!("{name}.json")).exists() { "kept the old file" } else { "no file written" };
                eprintln!("{name}: {kept}: {url}: {e}");
            }
        }
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
