//! The holder protocol: how lockstages drives a lock holder that runs in a
//! process of its own, whatever language or library it is written in.
//!
//! This is the one description of the protocol; the Rust child
//! ([`super::child`]), the parent ([`super::wire`], [`super::HolderProcess`],
//! [`super::remote`]) and the adapters under `adapters/` follow it. The
//! book's page "Bring your own lock" says the same for readers.
//!
//! # Start
//!
//! The parent starts the command with its whole configuration, a
//! [`HolderSpec`](super::HolderSpec), as one JSON object in the environment
//! variable `LOCKSTAGES_HOLDER`. Durations are serde's
//! `{"secs": 1, "nanos": 500000000}`.
//!
//! | field | what |
//! |-------|------|
//! | `stage` | the row's name (`stage6`, or the `--name` of a `--holder-cmd` row); may be ignored |
//! | `name` | the client's name, `client-A`, `client-B`…: name every connection with it |
//! | `lock_urls` | where the lock lives: one `redis://host:port`, or one per Redlock master, or `zk://` members |
//! | `db_url` | the Redis server that holds the stock (never faulted) |
//! | `key` | the lock's key, `lock:stock` (a prefix before it on a reader's own server) |
//! | `ttl` | the lock's time to live |
//! | `retry_interval` | how long a waiter sleeps between tries, if the lock polls |
//! | `watchdog_timeout` | the lease a watchdog renews, if the lock has one |
//! | `drift_factor` | Redlock's clock drift factor |
//! | `fencing` | how the resource checks tokens: `reads-and-writes`, `write-only` or `none` |
//! | `request_ids` | whether the resource charges each request id once |
//!
//! # Requests and answers
//!
//! Requests come on stdin, one a line. Each gets exactly one answer: a line
//! on stdout that starts `@holder ` (other lines on stdout are ignored;
//! stderr is shown to the user as it comes). A request is answered before
//! the next is read.
//!
//! | request | answer | what the holder does |
//! |---------|--------|----------------------|
//! | `ping` | `pong` | nothing: the parent asks it once, as soon as the holder starts, and starts the story's clock when it is answered (loading a library may take a second) |
//! | `acquire <ms>` | `acquired <value> <token>` or `not-acquired` | takes the lock, waiting at most `<ms>`; `<value>` is what it stored under the key (may hold spaces; a byte that is not printable ASCII, and a `\`, written `\xHH`), `<token>` its fencing token or `-` |
//! | `read` | `stock <n>` | reads the stock (the business begins) |
//! | `sell <read>` | `sold <read>`, `sold-out`, `rejected <token>` or `duplicate` | writes `<read> - 1` and one order |
//! | `release` | `released deleted`, `released nothing`, `released still-held <n>`, `released unconfirmed <deleted> <not-ours> <unreachable>` or `not-owner` | gives the lock back and says what the lock reported |
//! | `wait-lost <ms>` | `lost yes` or `lost no` | waits up to `<ms>` for the lock's lost-lock signal; a lock without one answers `lost no` at once |
//! | `stall <point> <ms>` | `stalling` | the next time the holder reaches `<point>` it stops until `<ms>` after this request |
//!
//! Anything wrong (a malformed request, a library's exception, a server
//! that does not answer) is answered `@holder error <what>`: never a made-up
//! answer. A holder that cannot take part in the story at all (a library
//! without Redis Cluster support, handed a cluster) answers `@holder n/a
//! <reason>`, and the cell is n/a with that reason. Either, written before
//! the first request (a bad spec, a topology it cannot use), is read as the
//! answer to the first request.
//!
//! A lock whose server refused a command or could not be reached, and
//! whose library said so (an exception: `NOREPLICAS`, a reply that timed
//! out), is not a broken holder: it answers `@holder failed <what>`, and
//! the story hears it as it hears a stage's Redis error (a late reply
//! given up on, a release that found its master gone).
//!
//! # The sale
//!
//! `read` and `sell` act on the stock in `db_url`, with the keys beside the
//! lock key (with the key `<p>lock:stock`: `<p>stock`, `<p>orders`,
//! `<p>stock:fence`, `<p>orders:requests`, `<p>orders:duplicates`):
//!
//! - plain (no token): `GET stock`; then, if the read was above 0,
//!   `SET stock <read-1>` and `RPUSH orders <name>`, answered `sold <read>`;
//!   a read of 0 or less sells nothing: `sold-out`.
//! - fenced (a token, `fencing` not `none`): the read of `reads-and-writes`
//!   registers the token as the highest seen; the write is one script that
//!   refuses a token below the highest (`rejected <token>`). The scripts are
//!   `harness/src/workload.rs`'s, word for word.
//! - idempotent (`request_ids`): each sale carries a request id of the
//!   client's own, `<name>#<n>`, and one script refuses an id charged
//!   before (`duplicate`).
//!
//! A library without fencing tokens answers `-` as its token and never
//! sees `rejected`.
//!
//! # Fault points
//!
//! A stage of this workspace can be stopped between two of its own
//! commands. A library we only call cannot: it has two points, the moment
//! its acquire has returned (`after-acquire`) and the moment before its
//! release is called (`before-release`). When every client is a holder
//! process (a `--holder-cmd` row, [`super::remote`]), the parent keeps both
//! points on its side of the pipe: it plans a pause there by not sending
//! the next request, and a crash there by `kill -9` of the holder. So an
//! adapter needs no `stall` at all for those rows; it answers a stall at a
//! point it cannot reach with an error naming the point.
//!
//! # Telling clients apart
//!
//! The harness tells clients apart by the name of their connections: its
//! `MONITOR` timeline says who sent each command, and its proxies cut or
//! delay one client's connections. So every connection the holder opens,
//! the lock's and the stock's, sends `CLIENT SETNAME <name>` first. A
//! library that cannot name its connections needs a port of its own per
//! client (a proxy that names the connection on its way through) to keep
//! the record truthful; none of the rows here needs one.

use std::str::FromStr;
use std::time::Duration;

use lockcore::{Acquired, LockConfig, Release};

use crate::error::{HarnessError, Result};
use crate::workload::Sale;

/// What every answer line starts with.
pub const PREFIX: &str = "@holder ";
/// The environment variable that carries a [`HolderSpec`](super::HolderSpec) as JSON.
pub const ENV_SPEC: &str = "LOCKSTAGES_HOLDER";

/// A number in a request or an answer; anything else is an error naming
/// the whole line.
pub fn number<T: FromStr>(word: &str, line: &str) -> Result<T> {
    word.parse()
        .map_err(|_| HarnessError::Holder(format!("`{word}` is not a number in `{line}`")))
}

/// A number of milliseconds in `line`.
pub fn millis(word: &str, line: &str) -> Result<Duration> {
    number(word, line).map(Duration::from_millis)
}

fn malformed(answer: &str, expected: &str) -> HarnessError {
    HarnessError::Holder(format!("malformed answer `{answer}` (expected {expected})"))
}

/// A `failed <what>` answer (the lock's server refused or was out of
/// reach) as the Redis error a stage would have met.
pub fn failed(answer: &str) -> Option<lockcore::LockError> {
    answer
        .strip_prefix("failed ")
        .map(|what| lockcore::LockError::Redis(std::io::Error::other(what.to_owned()).into()))
}

/// The answer to `acquire`: the lock taken, or `None`.
pub fn acquired(answer: &str) -> Result<Option<Acquired>> {
    if answer == "not-acquired" {
        return Ok(None);
    }
    // `acquired <value> <token>`; a value may hold spaces (stage 0's is
    // "(no lock)"), the token never does.
    let expected = "`acquired <value> <token or ->` or `not-acquired`";
    let Some((value, token)) = answer
        .strip_prefix("acquired ")
        .and_then(|rest| rest.rsplit_once(' '))
    else {
        return Err(malformed(answer, expected));
    };
    if value.is_empty() {
        return Err(malformed(answer, expected));
    }
    let mut held = Acquired::with_value(unescape(value, answer)?);
    if token != "-" {
        held.fencing_token = Some(number(token, answer)?);
    }
    Ok(Some(held))
}

/// A value as sent: `\xHH` is the byte HH, read as the character of that
/// number (as the harness reads `MONITOR`'s escapes); any other character
/// is itself.
fn unescape(value: &str, answer: &str) -> Result<String> {
    let mut text = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            text.push(c);
            continue;
        }
        let hex: String = chars.by_ref().take(3).collect();
        let byte = hex
            .strip_prefix('x')
            .and_then(|hh| u8::from_str_radix(hh, 16).ok())
            .ok_or_else(|| malformed(answer, "`\\xHH` after a `\\` in the value"))?;
        text.push(char::from(byte));
    }
    Ok(text)
}

/// A value's bytes as sent: printable ASCII as is but for `\`, which is
/// escaped like any other byte (a space too): `\xHH`. For a library whose
/// values are raw bytes.
pub fn escape(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| match b {
            b'!'..=b'~' if b != b'\\' => char::from(b).to_string(),
            _ => format!("\\x{b:02x}"),
        })
        .collect()
}

/// How an [`Acquired`] goes over the pipe.
pub fn acquired_answer(held: &Acquired) -> String {
    let token = held.fencing_token.map_or("-".to_owned(), |t| t.to_string());
    format!("acquired {} {token}", held.value)
}

/// The answer to `read`.
pub fn stock(answer: &str) -> Result<i64> {
    match answer.strip_prefix("stock ") {
        Some(n) => number(n, answer),
        None => Err(malformed(answer, "`stock <n>`")),
    }
}

/// The answer to `sell`.
pub fn sale(answer: &str) -> Result<Sale> {
    Ok(match answer.split_whitespace().collect::<Vec<_>>()[..] {
        ["sold", from] => Sale::Sold(number(from, answer)?),
        ["rejected", token] => Sale::Rejected {
            token: number(token, answer)?,
        },
        ["sold-out"] => Sale::SoldOut,
        ["duplicate"] => Sale::Duplicate,
        _ => {
            return Err(malformed(
                answer,
                "`sold <read>`, `sold-out`, `rejected <token>` or `duplicate`",
            ));
        }
    })
}

/// How a [`Sale`] goes over the pipe.
pub fn sale_answer(sale: Sale) -> String {
    match sale {
        Sale::Sold(from) => format!("sold {from}"),
        Sale::SoldOut => "sold-out".to_owned(),
        Sale::Rejected { token } => format!("rejected {token}"),
        Sale::Duplicate => "duplicate".to_owned(),
    }
}

/// The answer to `release`: what the lock reported, or `Err(())` for
/// `not-owner` (a refusal, not an error).
pub fn released(answer: &str) -> Result<Result<Release, ()>> {
    Ok(Ok(
        match answer.split_whitespace().collect::<Vec<_>>()[..] {
            ["released", "deleted"] => Release::Deleted,
            ["released", "nothing"] => Release::NothingDeleted,
            ["released", "still-held", n] => Release::StillHeld(number(n, answer)?),
            ["released", "unconfirmed", deleted, not_ours, unreachable] => Release::Unconfirmed {
                deleted: number(deleted, answer)?,
                not_ours: number(not_ours, answer)?,
                unreachable: number(unreachable, answer)?,
            },
            ["not-owner"] => return Ok(Err(())),
            _ => {
                return Err(malformed(
                    answer,
                    "`released deleted|nothing|still-held <n>|unconfirmed <d> <n> <u>` or `not-owner`",
                ));
            }
        },
    ))
}

/// How a release's outcome goes over the pipe (`None`: not the owner).
pub fn released_answer(release: Option<Release>) -> String {
    match release {
        Some(Release::Deleted) => "released deleted".to_owned(),
        Some(Release::NothingDeleted) => "released nothing".to_owned(),
        Some(Release::StillHeld(n)) => format!("released still-held {n}"),
        Some(Release::Unconfirmed {
            deleted,
            not_ours,
            unreachable,
        }) => format!("released unconfirmed {deleted} {not_ours} {unreachable}"),
        None => "not-owner".to_owned(),
    }
}

/// The answer to `wait-lost`.
pub fn lost(answer: &str) -> Result<bool> {
    match answer {
        "lost yes" => Ok(true),
        "lost no" => Ok(false),
        _ => Err(malformed(answer, "`lost yes` or `lost no`")),
    }
}

/// How long a holder may take to answer a request, beyond what the request
/// itself may wait. A Python adapter starts in under a second here; a
/// holder that answers nothing in this long is not going to.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(20);

/// Everything a holder process needs, as it crosses the process boundary:
/// the parent's [`ClientFactory`](crate::client::ClientFactory) without its history, every field of the
/// [`LockConfig`] included (stage 7's drift factor too).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HolderSpec {
    /// The stage the holder runs (`stage6-fair`): a test binary may serve
    /// more than one ([`holder_entry!`](crate::holder_entry)).
    #[serde(default)]
    pub stage: String,
    /// `client-A`…
    pub name: String,
    /// Where the lock lives.
    pub lock_urls: Vec<String>,
    /// Where the stock lives.
    pub db_url: String,
    /// [`LockConfig::key`].
    pub key: String,
    /// [`LockConfig::ttl`].
    pub ttl: Duration,
    /// [`LockConfig::retry_interval`].
    pub retry_interval: Duration,
    /// [`LockConfig::watchdog_timeout`].
    pub watchdog_timeout: Duration,
    /// [`LockConfig::drift_factor`].
    pub drift_factor: f64,
    /// [`Fencing::label`].
    pub fencing: String,
    /// Whether the resource checks request ids ([`RequestIds::Checked`](crate::workload::RequestIds::Checked)).
    #[serde(default)]
    pub request_ids: bool,
}

impl HolderSpec {
    /// The configuration the child's lock runs with.
    pub fn config(&self) -> LockConfig {
        LockConfig {
            key: self.key.clone(),
            ttl: self.ttl,
            retry_interval: self.retry_interval,
            watchdog_timeout: self.watchdog_timeout,
            drift_factor: self.drift_factor,
        }
    }

    /// Reads a spec from its JSON text; malformed text is an error.
    pub fn from_json(text: &str) -> Result<Self> {
        serde_json::from_str(text)
            .map_err(|e| HarnessError::Holder(format!("malformed {ENV_SPEC}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_number_or_answer_is_an_error_not_a_zero() {
        assert!(number::<u64>("12x", "acquire 12x").is_err());
        assert_eq!(number::<u64>("12", "acquire 12").ok(), Some(12));
        assert!(acquired("acquired").is_err());
        assert!(acquired("acquired abc 12x").is_err());
        assert!(stock("stock").is_err());
        assert!(sale("sold").is_err());
        assert!(released("released").is_err());
        assert!(lost("lost maybe").is_err());
    }

    #[test]
    fn every_answer_reads_back_as_written() {
        let held = acquired("acquired (no lock) 7").ok().flatten();
        assert_eq!(held.as_ref().map(|h| h.value.as_str()), Some("(no lock)"));
        assert_eq!(held.as_ref().and_then(|h| h.fencing_token), Some(7));
        for sold in [Sale::Sold(3), Sale::SoldOut, Sale::Duplicate] {
            assert_eq!(sale(&sale_answer(sold)).ok(), Some(sold));
        }
        let unconfirmed = Release::Unconfirmed {
            deleted: 2,
            not_ours: 1,
            unreachable: 2,
        };
        assert_eq!(
            released(&released_answer(Some(unconfirmed))).ok(),
            Some(Ok(unconfirmed))
        );
        assert_eq!(released("not-owner").ok(), Some(Err(())));
        let raw = [0u8, b' ', b'\\', 0xff, b'a'];
        let sent = format!("acquired {} -", escape(&raw));
        let value = acquired(&sent).ok().flatten().map(|h| h.value);
        let latin1: String = raw.iter().map(|&b| char::from(b)).collect();
        assert_eq!(value, Some(latin1));
        assert!(acquired("acquired a\\q -").is_err());
    }
}
