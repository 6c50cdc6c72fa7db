//! Two interleavings of stage 6's own bookkeeping, each forced to happen
//! every time, and what the client must still do then.
//!
//! 1. The owner takes the lock again between the release's answer and the
//!    release's local bookkeeping. The server holds a fresh hash; the fresh
//!    hold must be renewed by a watchdog of its own, and its lost signal must
//!    fire when the lock goes. (The release's answer is held by its reply
//!    log, which blocks the releasing task until the test lets it go.)
//! 2. The subscriber connection is lost and the new `SUBSCRIBE` fails (the
//!    server refuses it). The waiter that tried gets the error; the next
//!    wait must subscribe again, not sleep on the dead connection until the
//!    holder's lease runs out.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use harness::server::{Backend, Node};
use lockcore::{ClientSetup, DistributedLock, LockConfig, LockError, Release, ReplyLog};
use redis::Value;
use stage6::RLock;
use tokio::sync::watch;
use tokio::time::timeout;

/// How long anything here may take before the test says it never came.
const PATIENCE: Duration = Duration::from_secs(20);

async fn lock_node() -> Node {
    let backend = Backend::from_env().unwrap_or_else(|e| panic!("{e}"));
    Node::start(&backend, "lock", &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn evalsha(script: &str) -> String {
    format!("EVALSHA {}", redis::Script::new(script).get_hash())
}

/// The words of a command, as a line.
fn words(command: &redis::Cmd) -> String {
    command
        .args_iter()
        .filter_map(|arg| match arg {
            redis::Arg::Simple(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

async fn admin(node: &Node, command: &mut redis::Cmd) -> Value {
    let mut conn = lockcore::connect(&node.url(), "inspector").await.unwrap();
    command.query_async(&mut conn).await.unwrap()
}

/// What client-A's reply log tells the test: the release's answer arrived
/// (and is held until `open`), and how many renewals answered "renewed".
struct Watched {
    log: ReplyLog,
    armed: Arc<AtomicBool>,
    answered: watch::Receiver<bool>,
    open: mpsc::Sender<()>,
    renewals: watch::Receiver<usize>,
}

fn watched() -> Watched {
    let armed = Arc::new(AtomicBool::new(false));
    let (answered_tx, answered) = watch::channel(false);
    let (open, opened) = mpsc::channel::<()>();
    let opened = Mutex::new(opened);
    let (renewals_tx, renewals) = watch::channel(0);
    let release = evalsha(stage6::RELEASE_SCRIPT);
    let renew = evalsha(stage6::RENEW_SCRIPT);
    let gate = Arc::clone(&armed);
    let log: ReplyLog = Arc::new(move |seen| {
        let command = words(seen.command);
        if command.starts_with(&renew) && matches!(seen.reply, Ok(Value::Int(1))) {
            renewals_tx.send_modify(|n| *n += 1);
        }
        // The script's own answer, an integer: not a NOSCRIPT error, which
        // comes back as a value too, before the script has run.
        if command.starts_with(&release)
            && matches!(seen.reply, Ok(Value::Int(_)))
            && gate.swap(false, Ordering::SeqCst)
        {
            answered_tx.send_replace(true);
            // Hold the releasing task here, its answer in hand and its
            // bookkeeping not done. `block_in_place` hands this worker's
            // other tasks to another thread meanwhile.
            tokio::task::block_in_place(|| {
                let _ = opened.lock().unwrap().recv();
            });
        }
    });
    Watched {
        log,
        armed,
        answered,
        open,
        renewals,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn taken_again_while_the_release_is_on_its_way_the_fresh_hold_is_renewed_and_watched() {
    let node = lock_node().await;
    let watchdog = Duration::from_millis(600);
    let mut w = watched();
    let mut setup = ClientSetup::new(vec![node.url()], "client-A", LockConfig::with_ttl(watchdog));
    setup.replies = Some(w.log.clone());
    let lock = Arc::new(RLock::connect(setup).await.unwrap());

    // This test's own future is the owner throughout.
    let held = lock.lock().await.unwrap();
    w.armed.store(true, Ordering::SeqCst);
    let release = {
        let (lock, held) = (Arc::clone(&lock), held.clone());
        tokio::spawn(async move { lock.release(&held).await })
    };
    timeout(PATIENCE, w.answered.wait_for(|&answered| answered))
        .await
        .expect("the release was never answered")
        .unwrap();

    // The server deleted the hash; the owner takes the lock again, fresh.
    let again = lock
        .try_lock(Duration::ZERO, None)
        .await
        .unwrap()
        .expect("the release had deleted the lock");
    assert_eq!(again.value, held.value, "the same owner");
    // Now the release's bookkeeping runs.
    w.open.send(()).unwrap();
    assert_eq!(release.await.unwrap().unwrap(), Release::Deleted);

    // The fresh hold is renewed after the release is done with it...
    let renewed_before = *w.renewals.borrow();
    timeout(PATIENCE, w.renewals.wait_for(|&n| n > renewed_before))
        .await
        .expect("the fresh hold is never renewed: its watchdog was stopped")
        .unwrap();
    assert!(lock.is_held_by_current_task().await.unwrap());
    // ...and its lost signal fires when the lock is taken from it.
    let other = RLock::connect(ClientSetup::new(
        vec![node.url()],
        "client-B",
        LockConfig::with_ttl(watchdog),
    ))
    .await
    .unwrap();
    assert!(other.force_unlock().await.unwrap());
    let mut lost = again.lost.expect("a watchdog hold carries a lost signal");
    timeout(PATIENCE, lost.lost())
        .await
        .expect("the fresh hold's lost signal never fired");
}

/// The id of the subscribed connection named `name` (`CLIENT LIST`: a
/// `sub` count above zero).
async fn subscriber_id(node: &Node, name: &str) -> u64 {
    let list = admin(node, redis::cmd("CLIENT").arg("LIST")).await;
    let list: String = redis::from_redis_value(list).unwrap();
    let field = |line: &str, key: &str| {
        line.split(' ')
            .find_map(|field| field.strip_prefix(key)?.strip_prefix('='))
            .and_then(|value| value.parse::<u64>().ok())
    };
    list.lines()
        .filter(|line| line.split(' ').any(|f| f == format!("name={name}")))
        .find(|line| field(line, "sub").unwrap_or(0) > 0)
        .and_then(|line| field(line, "id"))
        .expect("a subscribed connection")
}

/// client-B's refused acquire attempts (the script answers the holder's
/// PTTL, an integer), counted by its reply log.
fn refusals() -> (ReplyLog, watch::Receiver<usize>) {
    let (tx, rx) = watch::channel(0);
    let acquire = evalsha(stage6::ACQUIRE_SCRIPT);
    let log: ReplyLog = Arc::new(move |seen| {
        if words(seen.command).starts_with(&acquire) && matches!(seen.reply, Ok(Value::Int(_))) {
            tx.send_modify(|n| *n += 1);
        }
    });
    (log, rx)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_resubscribe_leaves_no_dead_connection_for_the_next_wait() {
    let node = lock_node().await;
    // A lease far longer than the test's patience: only an unlock message
    // can wake a waiter in time.
    let lease = Duration::from_secs(60);
    let config = LockConfig {
        watchdog_timeout: lease,
        ..LockConfig::with_ttl(lease)
    };
    let holder = RLock::connect(ClientSetup::new(
        vec![node.url()],
        "client-A",
        config.clone(),
    ))
    .await
    .unwrap();
    let (log, mut refused) = refusals();
    let mut setup = ClientSetup::new(vec![node.url()], "client-B", config);
    setup.replies = Some(log);
    let waiter = Arc::new(RLock::connect(setup).await.unwrap());
    holder.lock().await.unwrap();

    let wait = |waiter: &Arc<RLock>| {
        let waiter = Arc::clone(waiter);
        tokio::spawn(async move { waiter.try_lock(PATIENCE, None).await.map(|h| h.is_some()) })
    };
    let first = wait(&waiter);
    // It tried, subscribed, tried again: now it sleeps on the channel.
    timeout(PATIENCE, refused.wait_for(|&n| n >= 2))
        .await
        .expect("the first waiter never waited")
        .unwrap();

    // The server now refuses SUBSCRIBE, and drops the subscriber connection.
    admin(
        &node,
        redis::cmd("ACL")
            .arg("SETUSER")
            .arg("default")
            .arg("-subscribe"),
    )
    .await;
    let killed = admin(
        &node,
        redis::cmd("CLIENT")
            .arg("KILL")
            .arg("ID")
            .arg(subscriber_id(&node, "client-B").await),
    )
    .await;
    assert_eq!(killed, Value::Int(1));
    let failed = first.await.unwrap();
    assert!(
        matches!(&failed, Err(LockError::Redis(e)) if e.to_string().contains("no permissions")),
        "the waiter that could not listen again is told why: {failed:?}"
    );
    admin(
        &node,
        redis::cmd("ACL")
            .arg("SETUSER")
            .arg("default")
            .arg("+subscribe"),
    )
    .await;

    // The next wait must listen for real.
    let tried = *refused.borrow();
    let second = wait(&waiter);
    timeout(PATIENCE, refused.wait_for(|&n| n >= tried + 2))
        .await
        .expect("the second waiter never waited")
        .unwrap();
    // It tried, listened and tried again: the server has a live
    // subscription to the lock's channel for it.
    let numsub = admin(
        &node,
        redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg(stage6::channel_name("lock:stock")),
    )
    .await;
    let (_, subscribers): (String, u32) = redis::from_redis_value(numsub).unwrap();
    assert_eq!(
        subscribers, 1,
        "the second waiter listens on a live connection"
    );
    holder.unlock().await.unwrap();
    assert!(
        second.await.unwrap().unwrap(),
        "the unlock message reached the second waiter (a dead subscription would \
         have left it asleep past its wait)"
    );
}
