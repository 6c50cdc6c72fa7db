//! rslock 0.10 (crates.io; github.com/hexcowboy/rslock), the Redlock of
//! Rust, as a row of the matrix: this program's `holder --library rslock`
//! serves the holder protocol over rslock's public API, configured as its
//! README's quick start: `LockManager::new(uris)` and, for each critical
//! section, `acquire(resource, ttl)` (which loops until it gets the lock;
//! the adapter bounds it by the request's wait) and `unlock(&lock)`.
//!
//! What rslock does, read in its `src/lock.rs` (0.10.0):
//!
//! - acquire: `SET key <20 random bytes> NX PX ttl` on every server, a
//!   quorum of N/2+1 and a validity of `ttl - elapsed - (ttl * 0.01 + 2)`
//!   ms, or `unlock` everywhere and retry (3 tries, up to 200 ms apart);
//!   `acquire` starts over until it succeeds. No watchdog: the key expires
//!   after `ttl` whatever the holder is doing (`extend` exists, called by
//!   hand; `using` renews around a routine, not used by the quick start).
//! - release: a compare-and-delete script on every server (`GET` ==
//!   value, then `DEL`), best effort: `unlock` returns nothing, so the
//!   adapter answers `released deleted`, what its caller believes. The
//!   timeline's "release deleted the lock key" is that belief; the
//!   `MONITOR` lines under it (a `GET` and no `DEL` when the key was a
//!   rival's) are what the server did, and what the judge reads.
//! - no fencing token, no lost-lock signal (`lost no` at once).
//!
//! Its row (`src/matrix/library_rows.rs`), run here on 7 December 2026,
//! is stage 5's on one node but for network-delay, and each cell that is
//! not ok comes from those lines:
//!
//! - slow-business, stale-write-first, gc-pause: OVERSOLD OVERLAP. Nothing
//!   renews the key (`lock` is one `SET NX PX`; `extend` only when called),
//!   so it expires under a holder that works, or is frozen, past its TTL,
//!   and the holder's late write follows a rival's. No fencing token
//!   reaches the resource to refuse it.
//! - failover, restart-without-persistence, clock-jump, sentinel-failover,
//!   split-brain, sentinel-failover-wait-other-replica, eviction: OVERSOLD
//!   OVERLAP. On one server the quorum is one (`servers.len() / 2 + 1`):
//!   the key is lost with the master, its memory, its clock or its cache,
//!   as stage 5's is.
//! - reentrant: SELF-BLOCKED. Every `lock` makes a new random value
//!   (`get_unique_lock_id`), so the holder's second acquire is a stranger's
//!   and waits for its own key to expire.
//! - network-delay: REFUSED. `exec_or_retry` subtracts the time the
//!   `SET`s took from the TTL and returns `TtlExceeded` when nothing is
//!   left: a reply three TTLs late is never a grant. (It returns before
//!   its unlock-everywhere step, so that key stays until it expires;
//!   `acquire` starts over.)
//! - arrival-order: OUT-OF-ORDER. Waiters poll, each retry after a random
//!   0-200 ms, with no queue.
//! - the cluster columns: n/a, the adapter's answer (the quick start takes
//!   plain servers).
//!
//! It runs here on one server (the spec's one lock URL, as the stages 1-6
//! rows do): a quorum of one. rslock's value is 20 raw bytes, sent with
//! the protocol's `\xHH` escapes.
//!
//! redis-rs cannot name a connection, so rslock cannot: the adapter puts a
//! forwarder of its own in front of each lock URL (a local port per
//! client), which sends `CLIENT SETNAME <name>` on each connection before
//! passing rslock's bytes through. It lives in this process, so it dies
//! and freezes with it.

use std::process::ExitCode;

use harness::holder::{HolderSpec, protocol};
use harness::workload::{Database, Fencing, RequestIds};
use lockcore::{ClientSetup, Home};
use rslock::{Lock, LockManager};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{Library, Runs};

/// The row.
pub const LIBRARY: Library = Library {
    name: "rslock",
    version: "0.10.0",
    title: "rslock's Redlock (crates.io), acquire and unlock as its quick start",
    nodes: 1,
    home: Home::REDIS,
    runs: Runs::InProcess(serve),
};

fn serve() -> ExitCode {
    let Ok(text) = std::env::var(protocol::ENV_SPEC) else {
        eprintln!("rslock holder: not started as a holder process");
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            answer(&format!("error rslock: cannot start a runtime: {e}"));
            return ExitCode::from(1);
        }
    };
    let served = HolderSpec::from_json(&text)
        .map_err(|e| e.to_string())
        .and_then(|spec| runtime.block_on(serve_spec(spec)));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            answer(&format!("error rslock: {e}"));
            ExitCode::from(1)
        }
    }
}

fn answer(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}{text}", protocol::PREFIX);
    let _ = out.flush();
}

async fn serve_spec(spec: HolderSpec) -> Result<(), String> {
    if let Some(url) = spec.lock_urls.iter().find(|u| !u.starts_with("redis://")) {
        // Its quick start takes plain servers; its cluster client (a
        // feature of its own) finds the nodes itself, past any forwarder
        // that would name its connections.
        answer(&format!(
            "n/a rslock's quick start takes plain redis:// servers, not {}",
            url.split("://").next().unwrap_or(url)
        ));
        return Ok(());
    }
    let mut uris = Vec::with_capacity(spec.lock_urls.len());
    for url in &spec.lock_urls {
        uris.push(named_forwarder(url, &spec.name).await?);
    }
    let manager = LockManager::new(uris);
    let setup = ClientSetup::new(vec![], &spec.name, spec.config());
    let fencing = Fencing::from_label(&spec.fencing)
        .ok_or_else(|| format!("`{}` is not a fencing mode", spec.fencing))?;
    let request_ids = if spec.request_ids {
        RequestIds::Checked
    } else {
        RequestIds::Ignored
    };
    let db = Database::connect(&setup, &spec.db_url)
        .await
        .map_err(|e| e.to_string())?
        .with_fencing(fencing)
        .with_request_ids(request_ids);
    let mut held: Option<Lock> = None;
    let mut purchases = 0;
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await.map_err(|e| e.to_string())? {
        let words: Vec<&str> = line.split_whitespace().collect();
        let reply: Result<String, String> = match (words.as_slice(), &held) {
            (["ping"], _) => Ok("pong".to_owned()),
            (["acquire", ms], _) => match protocol::millis(ms, &line) {
                Err(e) => Err(e.to_string()),
                Ok(wait) => {
                    match tokio::time::timeout(wait, manager.acquire(spec.key.as_str(), spec.ttl))
                        .await
                    {
                        Err(_) => Ok("not-acquired".to_owned()),
                        Ok(Err(e)) => Err(format!("acquire: {e}")),
                        Ok(Ok(guard)) => {
                            let value = protocol::escape(&guard.lock.val);
                            held = Some(guard.lock);
                            Ok(format!("acquired {value} -"))
                        }
                    }
                }
            },
            (["read"], Some(_)) => db
                .read_stock(None)
                .await
                .map(|n| format!("stock {n}"))
                .map_err(|e| e.to_string()),
            (["sell", read], Some(_)) => match protocol::number::<i64>(read, &line) {
                Err(e) => Err(e.to_string()),
                Ok(read) => {
                    purchases += 1;
                    let own = format!("{}#{purchases}", spec.name);
                    let request = db.checks_request_ids().then_some(own.as_str());
                    db.sell_request(read, None, request)
                        .await
                        .map(protocol::sale_answer)
                        .map_err(|e| e.to_string())
                }
            },
            (["release"], Some(lock)) => {
                manager.unlock(lock).await;
                Ok("released deleted".to_owned())
            }
            (["wait-lost", _], Some(_)) => Ok("lost no".to_owned()),
            (["read" | "sell" | "release" | "wait-lost", ..], None) => {
                Err(format!("`{line}` needs the lock to be held first"))
            }
            _ => Err(format!("rslock cannot do `{line}`")),
        };
        answer(&reply.unwrap_or_else(|e| format!("error rslock: {e}")));
    }
    Ok(())
}

/// A local port in front of the server at `url` whose every connection is
/// named `name` before rslock's bytes pass: the URL rslock is given.
async fn named_forwarder(url: &str, name: &str) -> Result<String, String> {
    let address = url
        .strip_prefix("redis://")
        .map(|rest| rest.split('/').next().unwrap_or(rest).to_owned())
        .ok_or_else(|| format!("`{url}` is not a redis:// URL"))?;
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("cannot listen for rslock's connections: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let setname = format!(
        "*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n${}\r\n{name}\r\n",
        name.len()
    );
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let address = address.clone();
            let setname = setname.clone();
            tokio::spawn(async move {
                let Ok(mut server) = TcpStream::connect(&address).await else {
                    return;
                };
                // `+OK\r\n`: five bytes, read before rslock's replies.
                let mut ok = [0u8; 5];
                if server.write_all(setname.as_bytes()).await.is_err()
                    || server.read_exact(&mut ok).await.is_err()
                {
                    return;
                }
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut server).await;
            });
        }
    });
    Ok(format!("redis://127.0.0.1:{port}/"))
}
