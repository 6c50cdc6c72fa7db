//! A client listens to a lock's channel once, on one subscriber connection
//! shared by all its waiting tasks, and each unlock message wakes one of
//! them, as in Redisson. That connection is set up like every other one of
//! the client: named with `CLIENT SETNAME` (the name the harness's proxy
//! keys its faults on) and its replies logged; when it is lost, the waiters
//! listen again on a new one.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use harness::server::{Backend, Node};
use lockcore::{ClientSetup, LockConfig, ReplyLog, SeenReply};
use redis::Value;
use stage6::RLock;
use tokio::sync::watch;
use tokio::time::timeout;

/// Long, so that no waiter wakes because the holder's lease ran out: only
/// unlock messages (or a lost connection) wake them.
const LEASE: Duration = Duration::from_secs(30);
/// How long anything here may take before the test says it never came.
const PATIENCE: Duration = Duration::from_secs(20);
const WAITERS: usize = 3;

async fn lock_node() -> Node {
    let backend = Backend::from_env().unwrap_or_else(|e| panic!("{e}"));
    Node::start(&backend, "lock", &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn config() -> LockConfig {
    LockConfig {
        watchdog_timeout: LEASE,
        ..LockConfig::with_ttl(LEASE)
    }
}

/// What a client sent and was answered, as its connections report it.
#[derive(Clone, Default)]
struct Sent(Arc<Mutex<Vec<Answered>>>);

/// A command, as words, and its reply (or that it failed).
type Answered = (String, Result<Value, ()>);

impl Sent {
    /// A reply log, and a count of the acquire script's "someone else holds
    /// it" answers (its PTTL, an integer) to wait on.
    fn log(&self) -> (ReplyLog, watch::Receiver<usize>) {
        let (refused_tx, refused) = watch::channel(0);
        let sent = self.clone();
        let log: ReplyLog = Arc::new(move |seen: SeenReply<'_>| {
            let command = describe(seen.command);
            if command.starts_with(&acquire_sha()) && matches!(seen.reply, Ok(Value::Int(_))) {
                refused_tx.send_modify(|n| *n += 1);
            }
            let reply = seen.reply.cloned().map_err(|_| ());
            sent.0.lock().unwrap().push((command, reply));
        });
        (log, refused)
    }

    /// How many times the acquire script ran and answered.
    fn acquire_attempts(&self) -> usize {
        let sha = acquire_sha();
        let sent = self.0.lock().unwrap();
        sent.iter()
            .filter(|(command, reply)| command.starts_with(&sha) && reply.is_ok())
            .count()
    }

    /// How many SUBSCRIBEs were answered.
    fn subscribes(&self) -> usize {
        let sent = self.0.lock().unwrap();
        sent.iter()
            .filter(|(command, reply)| command.starts_with("SUBSCRIBE") && reply.is_ok())
            .count()
    }
}

fn acquire_sha() -> String {
    format!(
        "EVALSHA {}",
        redis::Script::new(stage6::ACQUIRE_SCRIPT).get_hash()
    )
}

fn describe(command: &redis::Cmd) -> String {
    command
        .args_iter()
        .filter_map(|arg| match arg {
            redis::Arg::Simple(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `CLIENT LIST` lines of the connections named `name`.
async fn client_list(node: &Node, name: &str) -> Vec<String> {
    let mut admin = lockcore::connect(&node.url(), "inspector").await.unwrap();
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(&mut admin)
        .await
        .unwrap();
    list.lines()
        .filter(|line| line.split(' ').any(|field| field == format!("name={name}")))
        .map(str::to_owned)
        .collect()
}

fn field<T: std::str::FromStr>(line: &str, name: &str) -> Option<T> {
    line.split(' ')
        .find_map(|field| field.strip_prefix(name)?.strip_prefix('='))
        .and_then(|value| value.parse().ok())
}

/// How many channels each connection named `name` is subscribed to.
async fn subscriptions_of(node: &Node, name: &str) -> Vec<u32> {
    let mut subs: Vec<u32> = client_list(node, name)
        .await
        .iter()
        .map(|line| field(line, "sub").unwrap_or(0))
        .collect();
    subs.sort_unstable();
    subs
}

/// The id of the subscribed connection named `name`.
async fn subscriber_id(node: &Node, name: &str) -> u64 {
    client_list(node, name)
        .await
        .iter()
        .find(|line| field::<u32>(line, "sub").unwrap_or(0) > 0)
        .and_then(|line| field(line, "id"))
        .expect("a subscribed connection")
}

/// client-A holding the lock on a node of its own, and client-B, whose
/// every command is counted, connected and about to wait.
struct Held {
    node: Node,
    holder: RLock,
    sent: Sent,
    refused: watch::Receiver<usize>,
    waiter: Arc<RLock>,
}

async fn held_by_a_while_b_connects() -> Held {
    let node = lock_node().await;
    let holder = RLock::connect(ClientSetup::new(vec![node.url()], "client-A", config()))
        .await
        .unwrap();
    let sent = Sent::default();
    let (log, refused) = sent.log();
    let mut setup = ClientSetup::new(vec![node.url()], "client-B", config());
    setup.replies = Some(log);
    let waiter = Arc::new(RLock::connect(setup).await.unwrap());
    holder.lock().await.unwrap();
    Held {
        node,
        holder,
        sent,
        refused,
        waiter,
    }
}

async fn wait_until(refused: &mut watch::Receiver<usize>, at_least: usize) {
    timeout(PATIENCE, refused.wait_for(|&n| n >= at_least))
        .await
        .expect("the waiters never all tried")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn three_waiting_tasks_share_one_subscription_and_each_unlock_wakes_one() {
    let Held {
        node,
        holder,
        sent,
        mut refused,
        waiter,
    } = held_by_a_while_b_connects().await;
    // Three tasks of client-B: three owners, all waiting for client-A.
    let tasks: Vec<_> = (0..WAITERS)
        .map(|_| {
            let waiter = Arc::clone(&waiter);
            tokio::spawn(async move {
                let held = waiter.try_lock(PATIENCE, None).await.unwrap();
                waiter.unlock().await.unwrap();
                held.is_some()
            })
        })
        .collect();
    // Each tries once, listens, and tries again before it sleeps.
    wait_until(&mut refused, 2 * WAITERS).await;

    let mut admin = lockcore::connect(&node.url(), "inspector").await.unwrap();
    let (_, subscribers): (String, u32) = redis::cmd("PUBSUB")
        .arg("NUMSUB")
        .arg(stage6::channel_name(&config().key))
        .query_async(&mut admin)
        .await
        .unwrap();
    assert_eq!(
        subscribers, 1,
        "one subscription for the client's three waiters"
    );
    assert_eq!(
        subscriptions_of(&node, "client-B").await,
        [0, 1],
        "client-B has two named connections: commands, and one subscribed to one channel"
    );

    holder.unlock().await.unwrap();
    for task in tasks {
        assert!(
            task.await.unwrap(),
            "every waiting task got the lock in turn"
        );
    }
    // Two tries each before sleeping, then one per unlock message: client-A's
    // release wakes one task, whose release wakes the next, and so on.
    // Waking every waiter on every message would make it 6 + 3 + 2 + 1.
    assert_eq!(sent.acquire_attempts(), 2 * WAITERS + WAITERS);
    assert_eq!(
        sent.subscribes(),
        1,
        "the client subscribed once, and logged it"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_waiter_whose_subscriber_connection_is_killed_listens_again() {
    let Held {
        node,
        holder,
        sent,
        mut refused,
        waiter,
    } = held_by_a_while_b_connects().await;
    let task = {
        let waiter = Arc::clone(&waiter);
        tokio::spawn(async move { waiter.try_lock(PATIENCE, None).await.unwrap().is_some() })
    };
    wait_until(&mut refused, 2).await;

    // The server drops client-B's subscriber connection (as a network fault
    // or a restart would). The waiter wakes, subscribes on a new connection
    // and tries again; client-A's release then reaches it there, or the lock
    // is already free when it tries.
    let mut admin = lockcore::connect(&node.url(), "inspector").await.unwrap();
    let killed: u32 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(subscriber_id(&node, "client-B").await)
        .query_async(&mut admin)
        .await
        .unwrap();
    assert_eq!(killed, 1);
    holder.unlock().await.unwrap();

    assert!(task.await.unwrap(), "client-B got the lock");
    assert_eq!(
        sent.subscribes(),
        2,
        "client-B subscribed again after its subscriber connection was lost"
    );
}
