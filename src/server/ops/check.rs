//! `robotgate config check`: load everything `serve` would, and say what
//! is wrong (problems) and what is odd (warnings).

use std::path::Path;
use std::time::SystemTime;

use crate::load::Problem;
use crate::robots;
use crate::server::snapshot::load;
use crate::server::store::redis::SharedStore;

/// What `robotgate config check` prints: problems, plus robots.txt lint errors
/// as warnings (they do not stop the proxy: crawlers read such files leniently),
/// and the directives a robot that obeys their group says it ignores.
pub fn check(config_path: &Path) -> (Vec<Problem>, Vec<Problem>) {
    match load(config_path) {
        Err(problems) => (problems, Vec::new()),
        Ok(snapshot) => {
            let mut warnings = Vec::new();
            let now = SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
            for (file, message) in snapshot.certs.warnings(now) {
                warnings.push(Problem::new(file, None, message));
            }
            for site in &snapshot.sites {
                if let (Some(path), Some(robots)) = (&site.conf.robots, &site.robots) {
                    for d in robots::lint::lint(&robots.file.body) {
                        if d.severity == robots::lint::Severity::Error {
                            warnings.push(Problem::new(path, Some(d.line as usize), d.message));
                        }
                    }
                    // A Crawl-delay (or Request-rate, Visit-time) that a robot
                    // obeying its group ignores: it will not be held to it.
                    let own = robots::RobotsTxt::compile(&robots.file.body);
                    for d in crate::policy::unsupported::ignored_directives(&own, snapshot.classifier.db()) {
                        warnings.push(Problem::new(path, Some(d.line as usize), d.message));
                    }
                }
            }
            // A shared store that cannot be reached is an error: instances
            // would silently stop sharing.
            let mut problems = Vec::new();
            if let Some(state) = &snapshot.settings.shared_state {
                let tried = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())
                    .and_then(|rt| rt.block_on(SharedStore::try_connection(state)));
                if let Err(e) = tried {
                    problems.push(Problem::new(
                        config_path,
                        None,
                        format!("state.redis: cannot reach the shared state store: {e}"),
                    ));
                }
            }
            (problems, warnings)
        }
    }
}
