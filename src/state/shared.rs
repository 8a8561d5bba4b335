//! What a store shared between instances needs from the core: the questions
//! a decision asks, the events it leaves, and their names in the store.
//!
//! Deciding stays synchronous ([`crate::pipeline`]):
//!
//! * a rate question stops the decision ([`crate::policy::Step::Ask`]) with
//!   its [`Question`]; the caller puts it to the store (one atomic step
//!   there) and resumes with the answer, which judges nothing again;
//! * a ban or a robots.txt read is applied locally at once, and noted by
//!   [`Asking`] as an [`Event`] that the caller writes to the store and
//!   announces to the other instances, which apply it to their own local
//!   state;
//! * bans and reads are checked locally only: every instance holds what the
//!   others announced, so a browser's request never waits on the store.
//!
//! When the store cannot be reached, the rate question goes to the local
//! state, which starts empty (fail-open: a bot may get up to one extra
//! request per instance per window), and robots.txt rules, which need no
//! state, hold as ever.

use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{BanKey, RateKey, SeenKey, State};

/// A rate question for the store: admit `key` if `interval` has passed
/// since the last request it admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The rate key's name in the store ([`rate_key`]), without the prefix.
    pub key: String,
    /// The interval the bot's group asks for.
    pub interval: Duration,
}

/// A change to announce to the other instances, as it travels: wall-clock
/// times in Unix milliseconds, since instances share no monotonic clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// A client is banned from a site until a time.
    Ban {
        /// The site's name.
        site: String,
        /// The client address.
        client: IpAddr,
        /// When the ban ends.
        until_ms: u64,
    },
    /// A robot fetched a site's robots.txt.
    RobotsRead {
        /// The site's name.
        site: String,
        /// A verified read of a database bot, by name ([`SeenKey::Bot`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bot: Option<String>,
        /// A client's read ([`SeenKey::Client`]): its ban key.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        client: Option<IpAddr>,
        /// A client's read: the database robot it named (empty: none).
        /// Events of releases before issue #39 carried the User-Agent here
        /// (`user_agent`); read as a name, they match no robot's key.
        #[serde(default, alias = "user_agent", skip_serializing_if = "Option::is_none")]
        robot: Option<String>,
        /// When.
        at_ms: u64,
        /// Which version it read ([`crate::robots::RobotsTxt::hash`]; 0:
        /// unknown, as in events of earlier releases).
        #[serde(default)]
        version: u64,
    },
}

/// Bot tokens in rate keys are cut to this many bytes, so a client cannot
/// make long keys.
pub const MAX_KEY_BOT: usize = 100;

impl Event {
    /// The event's key in the store, without the prefix: one per ban and
    /// per reader, so a newer event replaces an older one.
    pub fn key(&self) -> String {
        match self {
            Event::Ban { site, client, .. } => format!("ban:{site}:{client}"),
            Event::RobotsRead { site, bot: Some(bot), .. } => format!("robots:{site}:bot:{bot}"),
            Event::RobotsRead { site, client, robot, .. } => {
                let robot = robot.as_deref().unwrap_or("").as_bytes();
                let client = client.map_or_else(String::new, |c| c.to_string());
                format!("robots:{site}:client:{client}:{:016x}", fnv1a(robot))
            }
        }
    }

    /// How long the store keeps it, from `now_ms`: until the ban ends, or
    /// for the robots.txt read window. At least one millisecond.
    pub fn ttl(&self, now_ms: u64) -> Duration {
        let ms = match self {
            Event::Ban { until_ms, .. } => until_ms.saturating_sub(now_ms),
            Event::RobotsRead { at_ms, .. } => {
                (at_ms + crate::state::ROBOTS_READ_WINDOW.as_millis() as u64).saturating_sub(now_ms)
            }
        };
        Duration::from_millis(ms.max(1))
    }

    /// Apply the event to `local`, given the time now on both clocks.
    /// An event already over (an ended ban, a read older than the window)
    /// has no effect.
    pub fn apply(&self, local: &dyn State, now: Instant, now_ms: u64) {
        let over = match self {
            Event::Ban { until_ms, .. } => *until_ms <= now_ms,
            Event::RobotsRead { .. } => self.ttl(now_ms) <= Duration::from_millis(1),
        };
        if over {
            return;
        }
        let at = |ms: u64| {
            if ms >= now_ms {
                now + Duration::from_millis(ms - now_ms)
            } else {
                // A read moments ago on another instance; a monotonic clock
                // younger than that is "now".
                now.checked_sub(Duration::from_millis(now_ms - ms)).unwrap_or(now)
            }
        };
        match self {
            Event::Ban { site, client, until_ms } => {
                local.ban(&BanKey { client: *client, site }, at(*until_ms));
            }
            Event::RobotsRead { site, bot: Some(name), at_ms, version, .. } => {
                local.saw_robots(&SeenKey::Bot { site, name }, *version, at(*at_ms));
            }
            Event::RobotsRead { site, bot: None, client: Some(client), robot, at_ms, version } => {
                let robot = robot.as_deref().unwrap_or("");
                local.saw_robots(&SeenKey::Client { site, client: *client, robot }, *version, at(*at_ms));
            }
            Event::RobotsRead { .. } => {}
        }
    }
}

/// The name of a rate key in the store, without the prefix.
///
/// The bot token comes from the User-Agent: its `:`s become `_`, so no
/// token can end where another key's client address begins (an IPv6
/// address has `:`s too) and take another client's pace.
pub fn rate_key(key: &RateKey<'_>) -> String {
    let mut end = key.bot.len().min(MAX_KEY_BOT);
    while !key.bot.is_char_boundary(end) {
        end -= 1;
    }
    let bot = key.bot[..end].replace(':', "_");
    format!("rate:{}:{bot}:{}", key.site, key.client)
}

pub use crate::hash::fnv1a;

/// A [`State`] for one decision in front of a shared store: see the module
/// documentation. Made per request; it holds at most one question and one
/// event, since a decision asks at most one rate question and makes at most
/// one ban or read.
pub struct Asking<'a> {
    local: &'a dyn State,
    /// The clock, read only to give an event its wall-clock time (most
    /// decisions make none).
    clock: crate::time::Clock,
    /// A ban, or a read (a client's, and a verified robot's).
    events: Mutex<Vec<Event>>,
}

impl<'a> Asking<'a> {
    /// A state in front of `local` that notes its changes, dated by `clock`.
    pub fn new(local: &'a dyn State, clock: crate::time::Clock) -> Asking<'a> {
        Asking { local, clock, events: Mutex::new(Vec::new()) }
    }

    /// The ban or reads the decision made, to announce.
    pub fn into_events(self) -> Vec<Event> {
        self.events.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    /// The ban or reads the decision made so far, to announce.
    pub fn events(&mut self) -> Vec<Event> {
        std::mem::take(self.events.get_mut().unwrap_or_else(|e| e.into_inner()))
    }

    fn announce(&self, event: Event) {
        self.events.lock().unwrap_or_else(|e| e.into_inner()).push(event);
    }

    fn ms(&self, t: Instant) -> u64 {
        let (now, now_ms) = (self.clock.instant(), self.clock.unix_ms());
        match t.checked_duration_since(now) {
            Some(ahead) => now_ms.saturating_add(ahead.as_millis() as u64),
            None => now_ms.saturating_sub(now.duration_since(t).as_millis() as u64),
        }
    }
}

impl State for Asking<'_> {
    fn admit(&self, key: &RateKey<'_>, interval: Duration, now: Instant) -> Result<(), Duration> {
        self.local.admit(key, interval, now)
    }

    fn ban(&self, key: &BanKey<'_>, until: Instant) {
        self.local.ban(key, until);
        self.announce(Event::Ban { site: key.site.to_owned(), client: key.client, until_ms: self.ms(until) });
    }

    fn banned(&self, key: &BanKey<'_>, now: Instant) -> Option<Duration> {
        self.local.banned(key, now)
    }

    fn saw_robots(&self, key: &SeenKey<'_>, version: u64, now: Instant) {
        self.local.saw_robots(key, version, now);
        let at_ms = self.ms(now);
        let event = match *key {
            SeenKey::Bot { site, name } => Event::RobotsRead {
                site: site.to_owned(),
                bot: Some(name.to_owned()),
                client: None,
                robot: None,
                at_ms,
                version,
            },
            SeenKey::Client { site, client, robot } => Event::RobotsRead {
                site: site.to_owned(),
                bot: None,
                client: Some(client),
                robot: Some(robot.to_owned()),
                at_ms,
                version,
            },
        };
        self.announce(event);
    }

    fn robots_read(&self, key: &SeenKey<'_>) -> Option<(Instant, u64)> {
        self.local.robots_read(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::MemoryState;
    use crate::time::Clock;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_rate_key_is_named_for_the_store_and_asking_leaves_rates_to_the_local_state() {
        let local = MemoryState::new(64);
        let now = Instant::now();
        let key = RateKey { client: ip("192.0.2.1"), site: "shop", bot: "Googlebot" };
        assert_eq!(rate_key(&key), "rate:shop:Googlebot:192.0.2.1");
        let mut asking = Asking::new(&local, Clock::Fixed { instant: now, unix_secs: 1 });
        assert_eq!(asking.admit(&key, Duration::from_secs(2), now), Ok(()));
        assert!(local.admit(&key, Duration::from_secs(2), now).is_err(), "the local clock moved");
        assert!(asking.events().is_empty(), "a rate is no event");
    }

    #[test]
    fn a_ban_is_local_at_once_and_travels_to_another_instance() {
        let (a, b) = (MemoryState::new(64), MemoryState::new(64));
        let t = Instant::now();
        let key = BanKey { client: ip("2001:db8::7"), site: "shop" };
        let mut asking = Asking::new(&a, Clock::Fixed { instant: t, unix_secs: 50 });
        asking.ban(&key, t + Duration::from_secs(60));
        assert!(a.banned(&key, t).is_some());
        let event = asking.events().pop().expect("a ban is announced");
        assert_eq!(event, Event::Ban { site: "shop".into(), client: ip("2001:db8::7"), until_ms: 110_000 });
        assert_eq!(event.key(), "ban:shop:2001:db8::7");
        assert_eq!(event.ttl(50_000), Duration::from_secs(60));
        // Over the wire and into the other instance, whose clocks differ.
        let wire = serde_json::to_string(&event).unwrap();
        let back: Event = serde_json::from_str(&wire).unwrap();
        let t2 = Instant::now();
        back.apply(&b, t2, 80_000); // 30 s later on the wall clock
        let left = b.banned(&key, t2).expect("banned on the other instance");
        assert!(left <= Duration::from_secs(30) && left > Duration::from_secs(29), "{left:?}");
        // An ended ban applies as ended.
        let c = MemoryState::new(64);
        back.apply(&c, t2, 200_000);
        assert_eq!(c.banned(&key, t2), None);
    }

    #[test]
    fn robots_reads_travel_by_name_or_by_client() {
        let (a, b) = (MemoryState::new(64), MemoryState::new(64));
        let t = Instant::now();
        let window = crate::state::ROBOTS_READ_WINDOW;
        for key in [
            SeenKey::Bot { site: "shop", name: "GPTBot" },
            SeenKey::Client { site: "shop", client: ip("198.51.100.4"), robot: "GPTBot" },
            SeenKey::Client { site: "shop", client: ip("198.51.100.4"), robot: "" },
        ] {
            let mut asking = Asking::new(&a, Clock::Fixed { instant: t, unix_secs: 7 });
            asking.saw_robots(&key, 0xfeed, t);
            let event = asking.events().pop().expect("announced");
            assert_eq!(event.ttl(7_000), window);
            let back: Event = serde_json::from_str(&serde_json::to_string(&event).unwrap()).unwrap();
            assert!(!b.read_robots_within(&key, window, t));
            back.apply(&b, t, 7_000);
            assert!(b.read_robots_within(&key, window, t), "{event:?}");
            assert_eq!(b.robots_read(&key).map(|(_, v)| v), Some(0xfeed), "the version travels");
        }
        // Two reads of one decision (a client's and a verified robot's) both go out.
        let mut asking = Asking::new(&a, Clock::Fixed { instant: t, unix_secs: 7 });
        asking.saw_robots(&SeenKey::Client { site: "s", client: ip("192.0.2.9"), robot: "Googlebot" }, 1, t);
        asking.saw_robots(&SeenKey::Bot { site: "s", name: "Googlebot" }, 1, t);
        assert_eq!(asking.events().len(), 2);
        // An event of an earlier release (a User-Agent where the robot now
        // is) reads, and its key stays short.
        let old = r#"{"event":"robots-read","site":"s","client":"192.0.2.9","user_agent":"odd/1.0","at_ms":0}"#;
        let e: Event = serde_json::from_str(old).unwrap();
        assert!(e.key().len() < 64, "{}", e.key());
    }

    #[test]
    fn rate_keys_are_bounded_and_cut_on_a_character() {
        let bot = "é".repeat(200);
        let k = rate_key(&RateKey { client: ip("192.0.2.1"), site: "s", bot: &bot });
        assert!(k.len() <= "rate:s::192.0.2.1".len() + MAX_KEY_BOT, "{}", k.len());
        // A token with `:`s cannot make another client's key.
        let victim = rate_key(&RateKey { client: ip("2001:db8::5"), site: "s", bot: "Googlebot" });
        // From db8::5, "Googlebot:2001" would otherwise spell the same key.
        let forged = rate_key(&RateKey { client: ip("db8::5"), site: "s", bot: "Googlebot:2001" });
        assert_eq!(victim, "rate:s:Googlebot:2001:db8::5");
        assert_eq!(forged, "rate:s:Googlebot_2001:db8::5");
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c); // the published FNV-1a 64 test vector
    }
}
