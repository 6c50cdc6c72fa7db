//! Keyspace notifications: the flags a watcher needs, and how they are
//! switched on.
//!
//! The key record is built from keyspace notifications (who wrote, deleted
//! or let expire each key), and a server sends none until its
//! `notify-keyspace-events` asks for them. A server the harness started is
//! simply configured. A reader's own server (`LOCKSTAGES_REDIS_URL`) is
//! another matter: the harness changes nothing of it for good. There the
//! flags are added to whatever the server already had, for as long as some
//! run of this process watches it, and the value found is put back when the
//! last such run ends (a panic and Ctrl-C included; only `kill -9` of this
//! process leaves the flags on). Notifications cost the server a little
//! work per write, and nobody receives them who did not subscribe.

use std::collections::HashMap;
use std::sync::OnceLock;

use redis::aio::ConnectionLike;

use crate::error::Result;
use crate::server::external::{config_refused, notify_flags};

/// `K` (keyspace channel), `g` (DEL, EXPIRE…), `$` (strings), `h`
/// (hashes), `x` (expiries), `e` (evictions: a key that went to make room
/// ends as an expired one does).
pub const NOTIFY: &str = "Kg$hxe";

/// The flags after adding ours to `found`. `A` is Redis's alias for every
/// class of event, so a value with it needs nothing more.
fn with_ours(found: &str) -> String {
    let mut flags = found.to_owned();
    for flag in NOTIFY.chars() {
        let covered = flags.contains(flag) || (flag != 'K' && flag != 'E' && flags.contains('A'));
        if !covered {
            flags.push(flag);
        }
    }
    flags
}

fn same_flags(a: &str, b: &str) -> bool {
    let sorted = |s: &str| {
        let mut chars: Vec<char> = s.chars().collect();
        chars.sort_unstable();
        chars
    };
    sorted(a) == sorted(b)
}

/// What one reader's server had before the harness added its flags.
#[derive(Debug)]
struct Borrowed {
    /// Runs of this process that watch it.
    watchers: usize,
    /// The value found.
    found: String,
    /// The value set (equal to `found` when nothing needed adding).
    set: String,
}

/// Reader's servers (by URL) whose flags this process has borrowed. An
/// async lock: it is held across the `CONFIG` round trips, so that two runs
/// starting or ending together agree on what the server had.
fn borrowed() -> &'static tokio::sync::Mutex<HashMap<String, Borrowed>> {
    static BORROWED: OnceLock<tokio::sync::Mutex<HashMap<String, Borrowed>>> = OnceLock::new();
    BORROWED.get_or_init(tokio::sync::Mutex::default)
}

async fn set_notify_flags(conn: &mut impl ConnectionLike, flags: &str) -> redis::RedisResult<()> {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("notify-keyspace-events")
        .arg(flags)
        .query_async(conn)
        .await
}

/// Keyspace notifications switched on for a reader's server while this is
/// alive; the value found is put back when the last one is dropped.
#[derive(Debug)]
pub struct BorrowedNotifications {
    url: String,
}

impl BorrowedNotifications {
    /// Adds the watcher's flags to the server at `url`, unless a run of this
    /// process already has. A server that refuses `CONFIG` is a clear error:
    /// without notifications nothing could be judged.
    pub async fn switch_on(url: &str) -> Result<Self> {
        let mut map = borrowed().lock().await;
        if let Some(entry) = map.get_mut(url) {
            entry.watchers += 1;
        } else {
            let mut conn = lockcore::connect(url, "harness-config").await?;
            let found = notify_flags(&mut conn)
                .await
                .map_err(|e| config_refused(url, &e))?;
            let set = with_ours(&found);
            if set != found {
                set_notify_flags(&mut conn, &set)
                    .await
                    .map_err(|e| config_refused(url, &e))?;
            }
            map.insert(
                url.to_owned(),
                Borrowed {
                    watchers: 1,
                    found,
                    set,
                },
            );
        }
        Ok(Self {
            url: url.to_owned(),
        })
    }
}

impl Drop for BorrowedNotifications {
    fn drop(&mut self) {
        let url = self.url.clone();
        // Its own thread and runtime: a destructor cannot await.
        let _ = std::thread::spawn(move || -> Result<()> {
            let mut map = borrowed().blocking_lock();
            let last = map.get_mut(&url).is_some_and(|entry| {
                entry.watchers -= 1;
                entry.watchers == 0
            });
            let Some(borrowed) = last.then(|| map.remove(&url)).flatten() else {
                return Ok(());
            };
            if borrowed.set == borrowed.found {
                return Ok(());
            }
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async move {
                let mut conn = lockcore::connect(&url, "harness-config").await?;
                // Someone changed it since: theirs stands. (Redis writes
                // the flags back in an order of its own.)
                if same_flags(&notify_flags(&mut conn).await?, &borrowed.set) {
                    set_notify_flags(&mut conn, &borrowed.found).await?;
                }
                Ok(())
            })
        })
        .join();
    }
}

#[cfg(test)]
mod tests {
    use super::with_ours;

    #[test]
    fn our_flags_are_added_to_what_the_server_had_and_nothing_is_doubled() {
        assert_eq!(with_ours(""), "Kg$hxe");
        assert_eq!(with_ours("Ex"), "ExKg$he");
        assert_eq!(with_ours("KA"), "KA");
        assert_eq!(with_ours("EA"), "EAK");
        assert_eq!(with_ours("Kg$hx"), "Kg$hxe");
    }

    #[test]
    fn flags_are_the_same_in_any_order() {
        assert!(super::same_flags("g$hxK", "Kg$hx"));
        assert!(!super::same_flags("g$hxK", "Kg$h"));
    }
}
