//! The fixed workloads, written once against the course's contract so that
//! every stage and rslock run the very same loop.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use lockcore::{Connection, DistributedLock, LockError};

use crate::measure::{Latencies, peak_kib, reset_peak, rss_kib};

/// How long a waiter may wait for the lock (w2).
pub const WAIT: Duration = Duration::from_secs(10);

/// `ping`: `count` PINGs, one after another, on one connection.
pub async fn ping(conn: &Connection, count: usize) -> Result<Latencies, LockError> {
    let mut latencies = Latencies::with_capacity(count);
    let mut conn = conn.clone();
    for _ in 0..count {
        let started = Instant::now();
        redis::cmd("PING").query_async::<()>(&mut conn).await?;
        latencies.record(started.elapsed());
    }
    Ok(latencies)
}

/// `PING to 5 nodes at once`: one PING to each node, sent together, `count`
/// times: the floor for anything that asks every node.
pub async fn ping_all(conns: &[Connection], count: usize) -> Result<Latencies, LockError> {
    let mut latencies = Latencies::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        for answer in join_all(conns.iter().map(|conn| async move {
            redis::cmd("PING")
                .query_async::<()>(&mut conn.clone())
                .await
        }))
        .await
        {
            answer?;
        }
        latencies.record(started.elapsed());
    }
    Ok(latencies)
}

/// What `pairs` measured for one lock.
pub struct Paired {
    /// One sample per pair that succeeded.
    pub latencies: Latencies,
    /// The client side's peak resident memory, KiB.
    pub peak_kib: u64,
    /// Pairs that failed (a reply later than redis-rs's 500 ms, on a loaded
    /// machine): not timed, and the run goes on.
    pub errors: usize,
}

/// `w1` and `w3`: for each lock, its count × (acquire, release) by one
/// client, after `warmup` pairs that are not counted. The locks take turns,
/// a tenth of each one's pairs at a time, so that a change in the
/// machine's load during the run falls on all of them alike.
pub async fn pairs(
    locks: &[(Box<dyn DistributedLock>, usize)],
    warmup: usize,
) -> Result<Vec<Paired>, LockError> {
    const TURNS: usize = 10;
    let mut measured = Vec::new();
    for (lock, count) in locks {
        let mut errors = 0;
        for _ in 0..warmup {
            errors += usize::from(pair(lock.as_ref()).await.is_err());
        }
        measured.push(Paired {
            latencies: Latencies::with_capacity(*count),
            peak_kib: 0,
            errors,
        });
    }
    for turn in 0..TURNS {
        for ((lock, count), paired) in locks.iter().zip(&mut measured) {
            let share = count * (turn + 1) / TURNS - count * turn / TURNS;
            reset_peak();
            for _ in 0..share {
                let started = Instant::now();
                match pair(lock.as_ref()).await {
                    Ok(()) => paired.latencies.record(started.elapsed()),
                    Err(_) => paired.errors += 1,
                }
            }
            paired.peak_kib = paired.peak_kib.max(peak_kib());
        }
    }
    Ok(measured)
}

async fn pair(lock: &dyn DistributedLock) -> Result<(), LockError> {
    let held = lock
        .acquire(WAIT)
        .await?
        .ok_or_else(|| LockError::Config("an uncontended lock was not granted".into()))?;
    lock.release(&held).await?;
    Ok(())
}

/// The long `w1`: the client's resident memory after every tenth of
/// `count` pairs.
pub async fn resident_while_pairing(lock: &dyn DistributedLock, count: usize) -> Vec<(usize, u64)> {
    let step = (count / 10).max(1);
    let mut samples = Vec::new();
    for done in (0..count).step_by(step) {
        for _ in done..(done + step).min(count) {
            // A failed pair (a late reply on a loaded machine) is no memory
            // question: go on.
            let _ = pair(lock).await;
        }
        samples.push(((done + step).min(count), rss_kib()));
    }
    samples
}

/// One client of `w2`: its lock and its own connection for the counter.
pub struct Contender {
    /// The lock client.
    pub lock: Arc<dyn DistributedLock>,
    /// Its own connection to the node that holds the counter.
    pub counter: Connection,
}

/// What `w2` measured.
#[derive(Debug)]
pub struct Contention {
    /// Critical sections run.
    pub sections: usize,
    /// How long they took, all together.
    pub took: Duration,
    /// Who held the lock, section after section.
    pub holders: Vec<usize>,
    /// Sections per client.
    pub per_client: Vec<usize>,
    /// Acquires that gave up after [`WAIT`].
    pub timeouts: usize,
    /// Commands that failed (a reply later than redis-rs's 500 ms, on a
    /// loaded machine): the loop goes on.
    pub errors: usize,
    /// The counter at the end: equal to `sections` when no update was lost.
    pub counter: i64,
    /// Commands the server ran meanwhile (`INFO commandstats`), counter
    /// GET and SET included; `None` when the lock is not on Redis (an
    /// ensemble's requests are not Redis commands).
    pub server_commands: Option<u64>,
    /// CPU time the server used meanwhile: Redis's own count (`INFO cpu`),
    /// or the ensemble members' (`/proc/<pid>/stat`).
    pub server_cpu: Duration,
    /// CPU time the bench process (all eight clients) used meanwhile.
    pub client_cpu: Duration,
}

impl Contention {
    /// Critical sections per second.
    pub fn per_second(&self) -> f64 {
        self.sections as f64 / self.took.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    /// The share of handoffs that went to another client than the last
    /// holder.
    pub fn owner_changes(&self) -> f64 {
        let handoffs = self.holders.len().saturating_sub(1);
        let changes = self.holders.windows(2).filter(|w| w[0] != w[1]).count();
        changes as f64 / handoffs.max(1) as f64
    }
}

/// `w2`: every contender loops acquire, GET the counter, SET it + 1,
/// release, until `sections` sections in all or `limit` has passed. The
/// counter is always on Redis; `members` are the processes of the
/// ensemble that keeps the lock, when it is not Redis (their CPU is the
/// server's).
pub async fn contend(
    contenders: Vec<Contender>,
    counter_key: &str,
    sections: usize,
    limit: Duration,
    members: Option<&[u32]>,
) -> Result<Contention, LockError> {
    let mut judge = contenders[0].counter.clone();
    redis::cmd("SET")
        .arg(counter_key)
        .arg(0)
        .query_async::<()>(&mut judge)
        .await?;
    let commands_before = commands_run(&mut judge).await?;
    let lock_server_cpu = async |judge: &mut Connection| match members {
        Some(pids) => Ok(pids.iter().map(|&pid| process_cpu(&pid.to_string())).sum()),
        None => server_cpu(judge).await,
    };
    let server_cpu_before = lock_server_cpu(&mut judge).await?;
    let client_cpu_before = process_cpu("self");
    let done = Arc::new(AtomicUsize::new(0));
    let holders = Arc::new(Mutex::new(Vec::with_capacity(sections)));
    let started = Instant::now();
    let tasks = contenders.into_iter().enumerate().map(|(id, contender)| {
        let done = Arc::clone(&done);
        let holders = Arc::clone(&holders);
        let key = counter_key.to_owned();
        // A task per client: each is its own owner (stage 6 counts owners
        // per task), as separate processes would be.
        tokio::spawn(async move {
            let Contender { lock, mut counter } = contender;
            let (mut mine, mut timeouts, mut errors) = (0, 0, 0);
            while started.elapsed() < limit && done.load(Ordering::SeqCst) < sections {
                let held = match lock.acquire(WAIT).await {
                    Ok(Some(held)) => held,
                    Ok(None) => {
                        timeouts += 1;
                        continue;
                    }
                    Err(_) => {
                        errors += 1;
                        continue;
                    }
                };
                // Checked under the lock, so exactly `sections` run.
                if done.load(Ordering::SeqCst) < sections {
                    match increment(&mut counter, &key).await {
                        Ok(true) => {
                            holders.lock().unwrap_or_else(|p| p.into_inner()).push(id);
                            done.fetch_add(1, Ordering::SeqCst);
                            mine += 1;
                        }
                        Ok(false) | Err(_) => errors += 1,
                    }
                }
                if lock.release(&held).await.is_err() {
                    errors += 1;
                }
            }
            (mine, timeouts, errors)
        })
    });
    let mut per_client = Vec::new();
    let (mut timeouts, mut errors) = (0, 0);
    for finished in join_all(tasks).await {
        let (mine, gave_up, failed) =
            finished.map_err(|e| LockError::Config(format!("a contender panicked: {e}")))?;
        per_client.push(mine);
        timeouts += gave_up;
        errors += failed;
    }
    let took = started.elapsed();
    let counter: i64 = redis::cmd("GET")
        .arg(counter_key)
        .query_async(&mut judge)
        .await?;
    let server_commands = commands_run(&mut judge).await? - commands_before;
    let server_commands = members.is_none().then_some(server_commands);
    let server_cpu = lock_server_cpu(&mut judge).await? - server_cpu_before;
    let client_cpu = process_cpu("self") - client_cpu_before;
    let holders = std::mem::take(&mut *holders.lock().unwrap_or_else(|p| p.into_inner()));
    Ok(Contention {
        sections: holders.len(),
        took,
        holders,
        per_client,
        timeouts,
        errors,
        counter,
        server_commands,
        server_cpu,
        client_cpu,
    })
}

/// The CPU time the server has used so far, by its own count (`INFO cpu`:
/// `used_cpu_user` + `used_cpu_sys`, main thread and all).
async fn server_cpu(conn: &mut Connection) -> Result<Duration, LockError> {
    let info: String = redis::cmd("INFO").arg("cpu").query_async(conn).await?;
    let seconds: f64 = info
        .lines()
        .filter_map(|line| {
            let value = line
                .strip_prefix("used_cpu_user:")
                .or_else(|| line.strip_prefix("used_cpu_sys:"))?;
            value.trim().parse::<f64>().ok()
        })
        .sum();
    Ok(Duration::from_secs_f64(seconds))
}

/// The CPU time process `pid` (`self`: this one, the clients) has used so
/// far: utime + stime of `/proc/<pid>/stat`, in clock ticks of 10 ms.
fn process_cpu(pid: &str) -> Duration {
    let ticks = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            // Fields after the command name (which may hold spaces).
            let rest = stat.rsplit_once(')')?.1;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let utime: u64 = fields.get(11)?.parse().ok()?;
            let stime: u64 = fields.get(12)?.parse().ok()?;
            Some(utime + stime)
        })
        .unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// The critical section: GET the counter, SET it + 1. `false` when the
/// SET's answer was lost and a second look shows it did not run; an answer
/// lost after the SET ran still counts, so the counter check stays exact.
async fn increment(counter: &mut Connection, key: &str) -> Result<bool, LockError> {
    let value: i64 = redis::cmd("GET").arg(key).query_async(counter).await?;
    let set = redis::cmd("SET")
        .arg(key)
        .arg(value + 1)
        .query_async::<()>(counter)
        .await;
    if set.is_ok() {
        return Ok(true);
    }
    let now: i64 = redis::cmd("GET").arg(key).query_async(counter).await?;
    Ok(now == value + 1)
}

/// How many commands the server has run so far, by its own count (the
/// `calls=` of every `cmdstat_` line of `INFO commandstats`).
async fn commands_run(conn: &mut Connection) -> Result<u64, LockError> {
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await?;
    Ok(stats
        .lines()
        .filter(|line| line.starts_with("cmdstat_"))
        .filter_map(|line| {
            let calls = line.split_once("calls=")?.1;
            calls.split(',').next()?.parse::<u64>().ok()
        })
        .sum())
}
