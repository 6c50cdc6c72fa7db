//! A reader's own Redis server (`LOCKSTAGES_REDIS_URL`).
//!
//! The single-node stories run against it with a key prefix of their own
//! for each run (see [`run_prefix`]), so that nothing of the reader's is
//! read or written, and the run's keys are deleted at its end. The run is
//! judged from the server's own record, as everywhere: its watcher keeps
//! only the run's lines of `MONITOR`, and borrows the server's keyspace
//! notifications while it watches (`observe::BorrowedNotifications` puts
//! back what it found). Stories that must fault the node (kill, pause,
//! restart, promote, partition) cannot run against it and say so.

use std::net::{SocketAddr, ToSocketAddrs};

use redis::aio::ConnectionLike;

use crate::error::{HarnessError, Result};

/// Names a reader's own server: `redis://[:password@]host:port[/db]`.
pub const URL_VAR: &str = "LOCKSTAGES_REDIS_URL";

/// How the timeline names a reader's own server, the lock's and the
/// database's at once.
pub(crate) const LABEL: &str = "redis";

/// Why a story that faults a node does not run on a reader's server.
pub const NO_FAULTS: &str = "it faults a Redis node, and LOCKSTAGES_REDIS_URL names a server of yours that the harness leaves alone";

/// Why Redlock does not run on a reader's server.
pub const ONE_SERVER: &str =
    "Redlock needs independent masters, and LOCKSTAGES_REDIS_URL names one server";

/// A server the harness did not start and never faults.
#[derive(Debug, Clone)]
pub struct ExternalServer {
    url: String,
    addr: SocketAddr,
}

impl ExternalServer {
    /// The server at `url`, which [`check`] has accepted.
    pub fn new(url: &str) -> Result<Self> {
        Ok(Self {
            url: url.to_owned(),
            addr: address_of(url)?,
        })
    }

    /// Its URL, password and database included.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

/// A key prefix no other run shares: `lockstages:<uuid>:`.
pub fn run_prefix() -> String {
    format!("lockstages:{}:", uuid::Uuid::new_v4().simple())
}

fn address_of(url: &str) -> Result<SocketAddr> {
    let info = redis::Client::open(url)
        .map_err(|e| malformed(url, &e.to_string()))?
        .get_connection_info()
        .addr()
        .to_string();
    info.to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| malformed(url, &format!("cannot resolve {info}")))
}

fn malformed(url: &str, why: &str) -> HarnessError {
    HarnessError::NoRedis(format!(
        "{URL_VAR}={url} is not a usable Redis URL ({why}); expected redis://host:port/db, \
         or redis://:password@host:port/db"
    ))
}

/// Checks that `url` names a server the stories can use: a well-formed URL,
/// a server that answers, that accepts us (a password, if it needs one),
/// and that takes writes (a master, not a read-only replica). Each failure
/// is one clear error.
pub fn check(url: &str) -> Result<()> {
    let client = redis::Client::open(url).map_err(|e| malformed(url, &e.to_string()))?;
    address_of(url)?;
    let url = url.to_owned();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async move {
            let mut conn = client
                .get_multiplexed_async_connection()
                .await
                .map_err(|e| refused(&url, &e))?;
            let role: Vec<redis::Value> = redis::cmd("ROLE")
                .query_async(&mut conn)
                .await
                .map_err(|e| refused(&url, &e))?;
            match role.first() {
                Some(redis::Value::BulkString(role)) if role == b"master" => {}
                _ => {
                    return Err(HarnessError::NoRedis(format!(
                        "{URL_VAR}={url} is a read-only replica; the locks must write: point it at the master"
                    )));
                }
            }
            // The watcher borrows the server's keyspace notifications: say
            // now, once, if it cannot.
            check_config_allowed(&url, &mut conn).await
        })
    })
    .join()
    .unwrap_or_else(|_| Err(HarnessError::NoRedis("the check of the server panicked".into())))
}

/// The server's `notify-keyspace-events` flags (`CONFIG GET`).
pub(crate) async fn notify_flags(conn: &mut impl ConnectionLike) -> redis::RedisResult<String> {
    let (_, flags): (String, String) = redis::cmd("CONFIG")
        .arg("GET")
        .arg("notify-keyspace-events")
        .query_async(conn)
        .await?;
    Ok(flags)
}

/// Checks, once and before any run, that the server at `url` lets the
/// harness read (and so set) its notification flags: the watchers borrow
/// them (`observe::notifications`).
async fn check_config_allowed(url: &str, conn: &mut impl ConnectionLike) -> Result<()> {
    notify_flags(conn)
        .await
        .map(drop)
        .map_err(|e| config_refused(url, &e))
}

/// The server at `url` refused the harness `CONFIG`.
pub(crate) fn config_refused(url: &str, e: &redis::RedisError) -> HarnessError {
    HarnessError::NoRedis(format!(
        "{URL_VAR}={url}: the verdicts are read from the server's own record, which needs \
         CONFIG (notify-keyspace-events) and MONITOR; the server refused CONFIG ({e})"
    ))
}

fn refused(url: &str, e: &redis::RedisError) -> HarnessError {
    let text = e.to_string();
    HarnessError::NoRedis(if text.contains("NOAUTH") || text.contains("WRONGPASS") {
        format!(
            "{URL_VAR}={url}: the server needs a password (or refused this one): \
             redis://:password@host:port ({text})"
        )
    } else if e.is_connection_refusal() || e.is_io_error() || e.is_timeout() {
        format!("{URL_VAR}={url}: nothing answers there ({text})")
    } else {
        format!("{URL_VAR}={url}: the server refused us ({text})")
    })
}
