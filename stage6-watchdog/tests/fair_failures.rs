//! The fair variant's failure paths: what a release, a wait and a reentrant
//! acquire leave behind when a command fails, and what a waiter gone from
//! its place in line costs the waiters behind it.
//!
//! A failed command is made by the server, not by a mock: a Lua script that
//! loops until `SCRIPT KILL` makes Redis answer every other command `BUSY`
//! (after `busy-reply-threshold`, 10 ms here), and `CONFIG SET maxclients`
//! makes it refuse new connections. Each test waits on what the client was
//! answered (its replies, watched as the harness's timelines watch them)
//! or on what the server holds, never on a guess of how long a step takes.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use harness::error::HarnessError;
use harness::server::{Backend, Node};
use lockcore::{ClientSetup, Connection, DistributedLock, LockConfig, Release, SeenReply};
use redis::Value;
use stage6::fair::{ENQUEUE_SCRIPT, FairLock, queue_name, timeout_name};
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, sleep, timeout};

/// How long a test waits for something the server must show.
const PATIENCE: Duration = Duration::from_secs(10);
const KEY: &str = "lock:stock";

/// A lock node this test may configure: a busy script is answered `BUSY`
/// after 10 ms. `None` (the test is skipped) on a reader's own server,
/// which the harness never configures.
async fn lock_node() -> Option<Node> {
    let backend = Backend::from_env().unwrap_or_else(|e| panic!("{e}"));
    match Node::start(&backend, "lock", &["--busy-reply-threshold", "10"]).await {
        Ok(node) => Some(node),
        Err(HarnessError::NotApplicable(why)) => {
            eprintln!("skipped: {why}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

fn setup(node: &Node, name: &str, lease: Duration) -> ClientSetup {
    ClientSetup::new(vec![node.url()], name, LockConfig::with_ttl(lease))
}

async fn connect(setup: ClientSetup) -> Arc<FairLock> {
    Arc::new(
        FairLock::connect(setup)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
}

async fn admin(node: &Node) -> Connection {
    lockcore::connect(&node.url(), "inspector")
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The owner fields of the lock hash: one while someone holds it.
async fn owners(admin: &mut Connection) -> Vec<String> {
    redis::cmd("HKEYS")
        .arg(KEY)
        .query_async(admin)
        .await
        .unwrap()
}

/// How many ms the lock has left (`PTTL`; -2 once it is gone).
async fn pttl(admin: &mut Connection) -> i64 {
    redis::cmd("PTTL")
        .arg(KEY)
        .query_async(admin)
        .await
        .unwrap()
}

/// Waits until the lock key is gone, at most `within`; false if it never
/// went.
async fn gone_within(admin: &mut Connection, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if pttl(admin).await == -2 {
            return true;
        }
        sleep(Duration::from_millis(10)).await;
    }
    pttl(admin).await == -2
}

/// The waiters' deadlines (request, server time in ms), first first.
async fn deadlines(admin: &mut Connection) -> Vec<(String, i64)> {
    redis::cmd("ZRANGE")
        .arg(timeout_name(KEY))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(admin)
        .await
        .unwrap()
}

/// Waits until `ready` holds of the deadlines, for at most the patience
/// window.
async fn deadlines_until(
    admin: &mut Connection,
    what: &str,
    ready: impl Fn(&[(String, i64)]) -> bool,
) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let now = deadlines(admin).await;
        if ready(&now) {
            return;
        }
        assert!(Instant::now() < deadline, "{what} never came: {now:?}");
        sleep(Duration::from_millis(2)).await;
    }
}

/// The owner a request names: the part before its `#`.
fn owner_of(request: &str) -> &str {
    request.rsplit_once('#').map_or(request, |(owner, _)| owner)
}

/// Whether `command` is an `EVALSHA` of the script whose hash is `sha`.
fn runs(command: &redis::Cmd, sha: &str) -> bool {
    let mut args = command.args_iter().filter_map(|arg| match arg {
        redis::Arg::Simple(bytes) => Some(bytes),
        _ => None,
    });
    args.next()
        .is_some_and(|name| name.eq_ignore_ascii_case(b"EVALSHA"))
        && args.next() == Some(sha.as_bytes())
}

/// A client's renewals as its connection was answered: how many renewed,
/// and how many failed (a `NOSCRIPT`, which the client answers by loading
/// the script, aside).
#[derive(Clone)]
struct Renewals {
    renewed: watch::Receiver<usize>,
    failed: Arc<AtomicUsize>,
}

impl Renewals {
    /// Watches the renewals of the client `setup` makes.
    fn watch(setup: &mut ClientSetup) -> Self {
        let (renewed_tx, renewed) = watch::channel(0);
        let failed = Arc::new(AtomicUsize::new(0));
        let failures = Arc::clone(&failed);
        let renew = redis::Script::new(stage6::RENEW_SCRIPT)
            .get_hash()
            .to_owned();
        setup.replies = Some(Arc::new(move |seen: SeenReply<'_>| {
            if !runs(seen.command, &renew) {
                return;
            }
            match seen.reply {
                Ok(Value::Int(1)) => renewed_tx.send_modify(|n| *n += 1),
                Ok(_) => {}
                Err(e) if e.code() == Some("NOSCRIPT") => {}
                Err(_) => {
                    failures.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
        Self { renewed, failed }
    }

    fn renewed(&self) -> usize {
        *self.renewed.borrow()
    }

    fn failed(&self) -> usize {
        self.failed.load(Ordering::SeqCst)
    }

    /// Waits until `n` renewals in all were answered "renewed", at most
    /// `within`; false if they never were.
    async fn reach(&mut self, n: usize, within: Duration) -> bool {
        matches!(
            timeout(within, self.renewed.wait_for(|done| *done >= n)).await,
            Ok(Ok(_))
        )
    }
}

/// The server busy with a script that loops until it is killed: every
/// other command is answered `BUSY` meanwhile.
struct Busy {
    admin: Connection,
}

impl Busy {
    /// Starts the script, and returns once the server answers `BUSY`.
    async fn start(node: &Node) -> Self {
        let mut script = lockcore::connect(&node.url(), "busy-script").await.unwrap();
        let mut admin = admin(node).await;
        tokio::spawn(async move {
            // Its reply (an error, once killed) may come after the
            // connection's reply timeout: either way it is not needed.
            let _: Result<(), _> = redis::cmd("EVAL")
                .arg("while true do end")
                .arg(0)
                .query_async(&mut script)
                .await;
        });
        let deadline = Instant::now() + PATIENCE;
        loop {
            match redis::cmd("PING").query_async::<String>(&mut admin).await {
                Err(e) if e.code() == Some("BUSY") => return Self { admin },
                Ok(_) => assert!(Instant::now() < deadline, "the script never ran"),
                Err(e) => panic!("PING: {e}"),
            }
            sleep(Duration::from_millis(1)).await;
        }
    }

    /// Kills the script; the server answers again.
    async fn stop(mut self) {
        let killed: redis::RedisResult<()> = redis::cmd("SCRIPT")
            .arg("KILL")
            .query_async(&mut self.admin)
            .await;
        killed.unwrap_or_else(|e| panic!("SCRIPT KILL: {e}"));
        // The script stops at its next look at the kill flag: until then
        // the server still answers BUSY.
        let deadline = Instant::now() + PATIENCE;
        loop {
            match redis::cmd("PING")
                .query_async::<String>(&mut self.admin)
                .await
            {
                Ok(_) => return,
                Err(e) if e.code() == Some("BUSY") => {
                    assert!(Instant::now() < deadline, "the script outlived SCRIPT KILL");
                }
                Err(e) => panic!("PING: {e}"),
            }
            sleep(Duration::from_millis(1)).await;
        }
    }
}

// A release that fails must not leave its watchdog renewing.
#[tokio::test(flavor = "multi_thread")]
async fn a_release_that_fails_stops_the_renewals_and_the_lock_expires() {
    // Renewals every second: the server is busy for a few ms between two.
    let lease = Duration::from_secs(3);
    let Some(node) = lock_node().await else {
        return;
    };
    let mut inspector = admin(&node).await;
    let mut setup = setup(&node, "client-A", lease);
    let mut renewals = Renewals::watch(&mut setup);
    let holder = connect(setup).await;
    let held = holder
        .try_lock(PATIENCE)
        .await
        .unwrap()
        .expect("a free lock");

    // Right after a renewal, a second before the next one,
    // the release meets a busy server and fails: it never ran.
    assert!(renewals.reach(1, lease).await, "the watchdog never renewed");
    let busy = Busy::start(&node).await;
    let released = holder.release(&held).await;
    busy.stop().await;
    assert!(
        released.is_err(),
        "the release must fail on the busy server: {released:?}"
    );
    assert_eq!(
        renewals.failed(),
        0,
        "a renewal met the busy server too, and stopped the watchdog by itself: this run shows nothing"
    );
    assert_eq!(
        owners(&mut inspector).await,
        std::slice::from_ref(&held.value),
        "the failed release deleted nothing"
    );

    // The caller believes the lock given back. Nothing may renew it now:
    // it expires a lease after the last renewal at the latest.
    let renewed = renewals.renewed();
    assert!(
        gone_within(&mut inspector, lease * 3).await,
        "client-A's lock still lives three leases after a release that failed ({} renewals since)",
        renewals.renewed() - renewed
    );
    assert_eq!(renewals.renewed(), renewed, "renewed after the release");
}

/// Pauses a client's task right after its first request joined the line
/// (the enqueue script answered "wait"), until the test lets it go on.
struct PausedAfterEnqueue {
    reached: mpsc::UnboundedReceiver<()>,
    go: std::sync::mpsc::Sender<()>,
}

impl PausedAfterEnqueue {
    fn hook(setup: &mut ClientSetup) -> Self {
        let enqueue = redis::Script::new(ENQUEUE_SCRIPT).get_hash().to_owned();
        let (reached_tx, reached) = mpsc::unbounded_channel();
        let (go, go_rx) = std::sync::mpsc::channel::<()>();
        let go_rx = Mutex::new(go_rx);
        let fired = AtomicBool::new(false);
        setup.replies = Some(Arc::new(move |seen: SeenReply<'_>| {
            if runs(seen.command, &enqueue)
                && matches!(seen.reply, Ok(Value::Int(1)))
                && !fired.swap(true, Ordering::SeqCst)
            {
                let _ = reached_tx.send(());
                // The reply log is called in the client's task, before the
                // reply is handed back: the task waits here, in place, and
                // the runtime's other tasks run on meanwhile. A test that
                // panics drops `go`, which lets it go on too.
                tokio::task::block_in_place(|| {
                    let _ = go_rx
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .recv();
                });
            }
        }));
        Self { reached, go }
    }

    async fn reached(&mut self) {
        timeout(PATIENCE, self.reached.recv())
            .await
            .expect("the client never joined the line")
            .expect("the hook is gone");
    }

    fn go_on(&self) {
        let _ = self.go.send(());
    }
}

/// Makes the server refuse every new connection (those open stay), or, with
/// `false`, take them again.
async fn refuse_new_connections(admin: &mut Connection, refuse: bool) {
    let limit = if refuse {
        let info: String = redis::cmd("INFO")
            .arg("clients")
            .query_async(admin)
            .await
            .unwrap();
        info.lines()
            .find_map(|line| line.strip_prefix("connected_clients:"))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .expect("INFO clients names connected_clients")
    } else {
        10_000
    };
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxclients")
        .arg(limit)
        .query_async(admin)
        .await
        .unwrap();
}

// A wait that fails after the lock was handed to it must give the
// lock on, not leave it to a caller told that it failed.
#[tokio::test(flavor = "multi_thread")]
async fn a_wait_that_fails_after_the_lock_was_handed_to_it_gives_the_lock_on_at_once() {
    // Redisson's default watchdog: a hand-over lives 5 s, a whole lease
    // 30 s, so "a waiter timeout" and "a lease" cannot be mistaken.
    let lease = Duration::from_secs(30);
    let Some(node) = lock_node().await else {
        return;
    };
    let mut inspector = admin(&node).await;
    let holder = connect(setup(&node, "client-A", lease)).await;
    let mut setup_b = setup(&node, "client-B", lease);
    let mut paused = PausedAfterEnqueue::hook(&mut setup_b);
    let failing = connect(setup_b).await;
    let next = connect(setup(&node, "client-C", lease)).await;
    let waiter_timeout = next.waiter_timeout();
    let held = holder
        .try_lock(PATIENCE)
        .await
        .unwrap()
        .expect("a free lock");

    // client-B joins the line and stops before it subscribes (its first
    // wait opens its subscriber connection next).
    let failing_wait = {
        let failing = Arc::clone(&failing);
        tokio::spawn(async move { failing.try_lock(PATIENCE).await })
    };
    paused.reached().await;
    // client-C joins behind it, subscribes, and looks once (its deadline).
    let next_wait = {
        let next = Arc::clone(&next);
        tokio::spawn(async move { next.try_lock(PATIENCE * 6).await })
    };
    deadlines_until(&mut inspector, "client-C's first look", |d| d.len() == 1).await;
    let line: Vec<String> = redis::cmd("LRANGE")
        .arg(queue_name(KEY))
        .arg(0)
        .arg(-1)
        .query_async(&mut inspector)
        .await
        .unwrap();
    assert_eq!(line.len(), 2, "client-B, then client-C, in line: {line:?}");

    // client-A's release hands the lock to client-B, the head.
    assert_eq!(holder.release(&held).await.unwrap(), Release::Deleted);
    assert_eq!(owners(&mut inspector).await, [owner_of(&line[0])]);
    // client-B's subscriber connection is refused: its wait fails after
    // the lock became its own.
    refuse_new_connections(&mut inspector, true).await;
    let failed_at = Instant::now();
    paused.go_on();
    let failed = failing_wait.await.unwrap();
    refuse_new_connections(&mut inspector, false).await;
    assert!(
        failed.is_err(),
        "client-B's wait must fail, its subscriber connection refused: {failed:?}"
    );

    // The lock handed to client-B is given on to client-C at once, not
    // left to a caller that holds nothing for a whole lease.
    let taken = timeout(waiter_timeout, next_wait).await;
    let left = pttl(&mut inspector).await;
    let taken = taken
        .unwrap_or_else(|_| {
            panic!(
                "client-C waited a waiter timeout ({waiter_timeout:?}) for a lock that client-B's \
                 failed wait left behind ({left} ms left on it)"
            )
        })
        .unwrap()
        .unwrap()
        .expect("client-C's turn came");
    println!(
        "client-C took the lock {} ms after client-B's wait failed",
        failed_at.elapsed().as_millis()
    );
    assert_eq!(
        owners(&mut inspector).await,
        std::slice::from_ref(&taken.value)
    );
    assert_eq!(next.release(&taken).await.unwrap(), Release::Deleted);
}

// A reentrant acquire must not rely on a watchdog that stopped.
#[tokio::test(flavor = "multi_thread")]
async fn a_reentrant_acquire_after_a_failed_renewal_is_renewed_again() {
    let lease = Duration::from_secs(3);
    let Some(node) = lock_node().await else {
        return;
    };
    let mut inspector = admin(&node).await;
    let mut setup = setup(&node, "client-A", lease);
    let mut renewals = Renewals::watch(&mut setup);
    let holder = connect(setup).await;
    let first = holder
        .try_lock(PATIENCE)
        .await
        .unwrap()
        .expect("a free lock");
    let mut lost = first.lost.clone().expect("a lost signal");

    // Right after a renewal, the server turns busy until the next renewal
    // has failed: one error, and the watchdog stops (and says so).
    assert!(renewals.reach(1, lease).await, "the watchdog never renewed");
    let busy = Busy::start(&node).await;
    timeout(PATIENCE, lost.lost())
        .await
        .expect("the next renewal met the busy server, and the lost signal fired");
    busy.stop().await;
    // The lock is still client-A's: the last renewal left it two thirds
    // of a lease at least.
    assert_eq!(
        owners(&mut inspector).await,
        std::slice::from_ref(&first.value)
    );

    // client-A takes it again: the reentrant acquire resets the lease...
    let again = holder
        .try_lock(Duration::ZERO)
        .await
        .unwrap()
        .expect("reentered");
    assert_eq!(again.value, first.value);
    // ...and something must renew it before that lease runs out.
    let before = renewals.renewed();
    assert!(
        renewals.reach(before + 1, lease).await,
        "nothing renewed the lock after the reentrant acquire: the watchdog had stopped ({} ms left)",
        pttl(&mut inspector).await
    );
    assert!(
        !again
            .lost
            .as_ref()
            .is_some_and(lockcore::LostSignal::is_lost),
        "the reentrant hold is renewed: its lost signal must not have fired"
    );
    assert_eq!(
        owners(&mut inspector).await,
        std::slice::from_ref(&first.value)
    );
    assert_eq!(holder.release(&again).await.unwrap(), Release::StillHeld(1));
    assert_eq!(holder.release(&first).await.unwrap(), Release::Deleted);
}

// A waiter gone from the line past its deadline is dropped before the
// lock reaches it.
#[tokio::test(flavor = "multi_thread")]
async fn a_waiter_gone_past_its_deadline_is_dropped_before_the_lock_reaches_it() {
    // A waiter timeout of 1 s, looks every third of it.
    let lease = Duration::from_secs(6);
    let Some(node) = lock_node().await else {
        return;
    };
    let mut inspector = admin(&node).await;
    let holder = connect(setup(&node, "client-A", lease)).await;
    let gone = connect(setup(&node, "client-B", lease)).await;
    let next = connect(setup(&node, "client-C", lease)).await;
    let waiter_timeout = i64::try_from(next.waiter_timeout().as_millis()).unwrap();
    let held = holder
        .try_lock(PATIENCE)
        .await
        .unwrap()
        .expect("a free lock");

    // client-B asks, looks once (its deadline is written), and from then
    // on is never run again until the end: to the server, a waiter that
    // stopped, frozen or dead.
    let mut gone_wait = Box::pin(gone.try_lock(PATIENCE * 3));
    tokio::select! {
        held = &mut gone_wait => panic!("client-B got the lock while client-A held it: {held:?}"),
        () = deadlines_until(&mut inspector, "client-B's first look", |d| d.len() == 1) => {}
    }
    let (gone_request, gone_deadline) = deadlines(&mut inspector).await.remove(0);
    let next_wait = {
        let next = Arc::clone(&next);
        tokio::spawn(async move { next.try_lock(PATIENCE * 3).await })
    };
    // client-C, behind it, looks every third of a waiter timeout. Wait for
    // a look of client-C's after client-B's deadline passed (by the
    // server's clock: client-C's own deadline is then more than a waiter
    // timeout past client-B's).
    deadlines_until(
        &mut inspector,
        "a look of client-C's after client-B's deadline",
        |d| {
            d.iter().any(|(request, at)| {
                *request != gone_request && *at > gone_deadline + waiter_timeout
            })
        },
    )
    .await;

    // client-A releases: the lock must go to client-C, not to client-B,
    // whose place in line ran out a while ago.
    assert_eq!(holder.release(&held).await.unwrap(), Release::Deleted);
    let now_held_by = owners(&mut inspector).await;
    assert_ne!(
        now_held_by,
        [owner_of(&gone_request)],
        "the release handed the lock to client-B, gone past its deadline: client-C waits a waiter \
         timeout for nothing"
    );
    let taken = timeout(PATIENCE, next_wait)
        .await
        .expect("client-C's turn came")
        .unwrap()
        .unwrap()
        .expect("client-C took the lock");
    assert_eq!(now_held_by, std::slice::from_ref(&taken.value));

    // client-B runs again: it was not in line any more, so it joins the
    // tail and gets its turn after client-C.
    assert_eq!(next.release(&taken).await.unwrap(), Release::Deleted);
    let late = timeout(PATIENCE, gone_wait)
        .await
        .expect("client-B's turn came")
        .unwrap()
        .expect("client-B took the lock");
    assert_eq!(gone.release(&late).await.unwrap(), Release::Deleted);
}
