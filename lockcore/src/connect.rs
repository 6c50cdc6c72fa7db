//! Opening a named connection, whose replies a test may watch.
//!
//! Every client names itself with `CLIENT SETNAME`, so that `MONITOR`,
//! `CLIENT LIST` and the harness's timelines say *who* sent a command.
//! `MONITOR` shows what the server received but not what it answered; a
//! connection made with a [`ReplyLog`] reports each answer too, so a
//! timeline can print `SET lock:stock 9a2e… NX PX 300 -> OK`.
//!
//! A URL may also name a master through its Sentinels:
//! `redis+sentinel://host1:26379,host2:26379/mymaster`. The client asks the
//! Sentinels which server is the master *now* (redis-rs's Sentinel
//! support), and connects there, as Redisson and Jedis clients do. A client
//! made after a failover finds the new master; a connection made before it
//! stays with the server it was made to.
//!
//! A URL may name a Redis Cluster by some of its nodes:
//! `redis+cluster://host1:7000,host2:7001`. The connection is redis-rs's
//! cluster client: it asks the cluster which master serves each slot, sends
//! every command to the master of its key's slot, follows `MOVED` and `ASK`
//! redirections, and asks again after a failover, as Redisson, Jedis and
//! Lettuce clients of a cluster do. A stage's code does not change: a
//! single-key command (or a script whose keys share one slot) is routed by
//! its key.

use std::sync::Arc;
use std::time::SystemTime;

use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::{
    AsyncConnectionConfig, Cmd, IntoConnectionInfo, Pipeline, ProtocolVersion, PushInfo, PushKind,
    RedisFuture, RedisResult, Value,
};

use crate::LockError;

/// One answer from Redis, as the client received it.
#[derive(Debug)]
pub struct SeenReply<'a> {
    /// The connection's name.
    pub client: &'a str,
    /// The URL it is connected to.
    pub url: &'a str,
    /// The command that was answered.
    pub command: &'a Cmd,
    /// When the command was sent (the server ran it after this).
    pub sent: SystemTime,
    /// The answer, or why there was none.
    pub reply: Result<&'a Value, &'a redis::RedisError>,
}

/// Called with every answer a connection receives.
pub type ReplyLog = Arc<dyn Fn(SeenReply<'_>) + Send + Sync>;

/// The connection every stage talks through: one TCP connection that many
/// tasks may share (redis-rs pipelines their commands over it). Clones share
/// the connection.
#[derive(Clone)]
pub struct Connection {
    inner: Inner,
    client: Arc<str>,
    url: Arc<str>,
    replies: Option<ReplyLog>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("client", &self.client)
            .field("url", &self.url)
            .finish()
    }
}

/// One server, or a cluster's masters behind one handle.
#[derive(Clone)]
enum Inner {
    Single(MultiplexedConnection),
    Cluster(ClusterConnection<NamedNode>),
}

/// One node connection of a cluster client, named like every other
/// connection of the client. redis-rs's cluster client opens a connection
/// to a node whenever it first needs one (a replica promoted after a
/// failover, say), and has no option to name them; what it does pass to
/// each new connection is the cluster's username. With no password it is
/// never sent to a server, so it carries the client's name here: taken out
/// before connecting, and sent as `CLIENT SETNAME` once connected.
#[derive(Clone)]
struct NamedNode(MultiplexedConnection);

impl redis::cluster_async::Connect for NamedNode {
    fn connect_with_config<'a, T>(info: T, config: AsyncConnectionConfig) -> RedisFuture<'a, Self>
    where
        T: IntoConnectionInfo + Send + 'a,
    {
        Box::pin(async move {
            let info = info.into_connection_info()?;
            let settings = info.redis_settings();
            let name = settings.username().map(str::to_owned);
            let unnamed = redis::RedisConnectionInfo::default().set_protocol(settings.protocol());
            let client = redis::Client::open(info.set_redis_settings(unnamed))?;
            let mut conn = client
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            if let Some(name) = name {
                redis::cmd("CLIENT")
                    .arg("SETNAME")
                    .arg(name)
                    .query_async::<()>(&mut conn)
                    .await?;
            }
            Ok(Self(conn))
        })
    }
}

impl ConnectionLike for NamedNode {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        self.0.req_packed_command(cmd)
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        self.0.req_packed_commands(pipeline, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.0.get_db()
    }
}

/// The scheme of a URL that names a master through its Sentinels.
pub const SENTINEL_SCHEME: &str = "redis+sentinel://";

/// `redis+sentinel://a,b,c/service`: the master called `service`, as the
/// Sentinels at `sentinels` (each `host:port`) know it.
pub fn sentinel_url(sentinels: &[String], service: &str) -> String {
    format!("{SENTINEL_SCHEME}{}/{service}", sentinels.join(","))
}

/// The scheme of a URL that names a Redis Cluster by some of its nodes.
pub const CLUSTER_SCHEME: &str = "redis+cluster://";

/// `redis+cluster://a,b,c`: the cluster these nodes (each `host:port`)
/// belong to.
pub fn cluster_url(nodes: &[String]) -> String {
    format!("{CLUSTER_SCHEME}{}", nodes.join(","))
}

/// The nodes a cluster URL names, as `redis://host:port` URLs; `None` for
/// any other URL.
pub fn cluster_nodes(url: &str) -> Option<Vec<String>> {
    let rest = url.strip_prefix(CLUSTER_SCHEME)?;
    Some(
        rest.trim_end_matches('/')
            .split(',')
            .filter(|h| !h.is_empty())
            .map(|h| format!("redis://{h}"))
            .collect(),
    )
}

/// How long a client waits for one reply that the server does not hold on
/// purpose: redis-rs's default for its single connections.
const RESPONSE_TIMEOUT: Duration = Duration::from_millis(500);

/// The same for a cluster connection, whose one command may first have to
/// find the slot's new master: notice the old one gone, ask the others for
/// the slots, and send again. On a loaded two-core machine (load average
/// 11, a matrix running) that took over 500 ms in three cells of six whole
/// matrices ("redis: timed out" on a release after a failover); three
/// times that is the margin.
const CLUSTER_RESPONSE_TIMEOUT: Duration = Duration::from_millis(1500);

/// How often a cluster client sends a command again after an error that a
/// new look at the cluster may cure (a node gone, `CLUSTERDOWN`,
/// `TRYAGAIN`), and how long it waits between tries. redis-rs's defaults
/// (16 tries, over a second between the first ones) are made for a data
/// centre; these keep a failed command's error within about a second.
const CLUSTER_RETRIES: u32 = 4;
const CLUSTER_RETRY_WAIT_MS: (u64, u64) = (20, 200);

// ANCHOR: resolve
/// The plain `redis://host:port` of the server `url` names: for a Sentinel
/// URL, the master the Sentinels name now; any other URL as it is.
pub async fn resolve(url: &str) -> Result<String, LockError> {
    let Some(rest) = url.strip_prefix(SENTINEL_SCHEME) else {
        return Ok(url.to_owned());
    };
    let invalid = |why: &'static str| {
        LockError::Redis(redis::RedisError::from((
            redis::ErrorKind::InvalidClientConfig,
            why,
            format!("{url} (expected {SENTINEL_SCHEME}host:port,host:port/master-name)"),
        )))
    };
    let (hosts, service) = rest
        .split_once('/')
        .ok_or_else(|| invalid("a Sentinel URL names its master after a /"))?;
    if hosts.is_empty() || service.is_empty() {
        return Err(invalid("a Sentinel URL needs Sentinels and a master name"));
    }
    let sentinels: Vec<String> = hosts.split(',').map(|h| format!("redis://{h}")).collect();
    let mut sentinel = redis::sentinel::Sentinel::build(sentinels)?;
    let master = sentinel.async_master_for(service, None).await?;
    Ok(format!("redis://{}", master.get_connection_info().addr()))
}
// ANCHOR_END: resolve

/// Opens a connection to `url` and names it `name`.
pub async fn connect(url: &str, name: &str) -> Result<Connection, LockError> {
    connect_with_log(url, name, None).await
}

/// Opens a connection to `url`, names it `name`, and reports every answer
/// it receives to `replies`.
pub async fn connect_with_log(
    url: &str,
    name: &str,
    replies: Option<ReplyLog>,
) -> Result<Connection, LockError> {
    open(url, name, replies, Duration::ZERO).await
}

/// [`connect_with_log`], for a connection that sends commands the server
/// holds on purpose (`WAIT`, `BLPOP`) for up to `longest_block`: it waits
/// that much longer for each reply. Without it, a `WAIT 1 200` would leave
/// redis-rs's 500 ms reply timeout a margin of less than 2x, and a server
/// that wakes ten times a second, on a loaded machine, can use it up.
pub async fn connect_blocking(
    url: &str,
    name: &str,
    replies: Option<ReplyLog>,
    longest_block: Duration,
) -> Result<Connection, LockError> {
    open(url, name, replies, longest_block).await
}

async fn open(
    url: &str,
    name: &str,
    replies: Option<ReplyLog>,
    longest_block: Duration,
) -> Result<Connection, LockError> {
    let response_timeout = RESPONSE_TIMEOUT + longest_block;
    if let Some(nodes) = cluster_nodes(url) {
        let response_timeout = CLUSTER_RESPONSE_TIMEOUT + longest_block;
        let (min_wait, max_wait) = CLUSTER_RETRY_WAIT_MS;
        let client = redis::cluster::ClusterClient::builder(nodes)
            // Not a user: the name each node connection gives itself (see
            // `NamedNode`).
            .username(name)
            .response_timeout(response_timeout)
            .retries(CLUSTER_RETRIES)
            .min_retry_wait(min_wait)
            .max_retry_wait(max_wait)
            .build()?;
        let inner = client.get_async_generic_connection::<NamedNode>().await?;
        return Ok(Connection {
            inner: Inner::Cluster(inner),
            client: name.into(),
            url: url.into(),
            replies,
        });
    }
    let url = resolve(url).await?;
    let url = url.as_str();
    let client = redis::Client::open(url)?;
    let config = AsyncConnectionConfig::new().set_response_timeout(Some(response_timeout));
    let inner = client
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    named(Inner::Single(inner), url, name, replies).await
}

impl Connection {
    /// A second connection to the same server, under the same name and
    /// reporting to the same log. A transaction (`MULTI` … `EXEC`) needs
    /// one of its own: on a shared connection, every command another task
    /// sends in between would be queued into it.
    pub async fn another(&self) -> Result<Connection, LockError> {
        open(
            &self.url,
            &self.client,
            self.replies.clone(),
            Duration::ZERO,
        )
        .await
    }
}

/// Names a fresh connection with `CLIENT SETNAME`.
async fn named(
    inner: Inner,
    url: &str,
    name: &str,
    replies: Option<ReplyLog>,
) -> Result<Connection, LockError> {
    let mut conn = Connection {
        inner,
        client: name.into(),
        url: url.into(),
        replies: None,
    };
    redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(name)
        .query_async::<()>(&mut conn)
        .await?;
    conn.replies = replies;
    Ok(conn)
}

/// What a subscriber connection hears: a message published on a channel
/// it subscribed to, or the news that the connection was lost (after which
/// it hears nothing more).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// A message: its channel and its payload.
    Message {
        /// The channel it was published on.
        channel: String,
        /// What was published.
        payload: String,
    },
    /// The connection closed: subscriptions on it are gone.
    Disconnected,
}

/// Opens a connection to `url` that can [`Connection::subscribe`], names it
/// `name`, reports its answers to `replies`, and calls `heard` with every
/// message and with the loss of the connection. `heard` runs on the
/// connection's reader: it must return at once, never block.
///
/// The connection speaks RESP3, in which published messages arrive on the
/// same connection as ordinary replies, so it is named, logged and faulted
/// like every other connection of the client.
///
/// On a cluster, the connection is to the first of its nodes that
/// answers: a message published on any node of a cluster reaches the
/// subscribers of every node.
pub async fn connect_subscriber(
    url: &str,
    name: &str,
    replies: Option<ReplyLog>,
    heard: impl Fn(Heard) + Send + Sync + 'static,
) -> Result<Connection, LockError> {
    let url = match cluster_nodes(url) {
        Some(nodes) => first_answering(&nodes).await?,
        None => url.to_owned(),
    };
    let url = url.as_str();
    let info = url.into_connection_info()?;
    let resp3 = info
        .redis_settings()
        .clone()
        .set_protocol(ProtocolVersion::RESP3);
    let client = redis::Client::open(info.set_redis_settings(resp3))?;
    let config = AsyncConnectionConfig::new().set_push_sender(move |push: PushInfo| {
        match push.kind {
            PushKind::Message => {
                let text = |v: Option<&Value>| {
                    v.and_then(|v| redis::from_redis_value_ref::<String>(v).ok())
                        .unwrap_or_default()
                };
                heard(Heard::Message {
                    channel: text(push.data.first()),
                    payload: text(push.data.get(1)),
                });
            }
            PushKind::Disconnection => heard(Heard::Disconnected),
            _ => {} // subscription confirmations, and kinds we never ask for
        }
        Ok::<(), std::convert::Infallible>(())
    });
    let inner = client
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    named(Inner::Single(inner), url, name, replies).await
}

/// The first of `nodes` that a connection can be made to.
async fn first_answering(nodes: &[String]) -> Result<String, LockError> {
    let mut last_error = None;
    for node in nodes {
        match redis::Client::open(node.as_str())?
            .get_multiplexed_async_connection()
            .await
        {
            Ok(_) => return Ok(node.clone()),
            Err(e) => last_error = Some(e),
        }
    }
    Err(match last_error {
        Some(e) => e.into(),
        None => LockError::Config("a cluster URL names no node".into()),
    })
}

impl crate::ClientSetup {
    /// Opens this client's subscriber connection to `url`, set up as every
    /// other: named, and watched when a test asked to. See
    /// [`connect_subscriber`].
    pub async fn subscriber(
        &self,
        url: &str,
        heard: impl Fn(Heard) + Send + Sync + 'static,
    ) -> Result<Connection, LockError> {
        connect_subscriber(url, &self.name, self.replies.clone(), heard).await
    }
}

impl Connection {
    /// Subscribes to `channel`, on a connection made by
    /// [`connect_subscriber`]: its messages go to that connection's `heard`.
    pub async fn subscribe(&mut self, channel: &str) -> Result<(), LockError> {
        let sent = SystemTime::now();
        let Inner::Single(inner) = &mut self.inner else {
            return Err(LockError::Config(
                "a cluster connection does not subscribe; use connect_subscriber".into(),
            ));
        };
        let result = inner.subscribe(channel).await;
        let mut command = redis::cmd("SUBSCRIBE");
        command.arg(channel);
        self.report(&command, sent, result.as_ref().map(|()| &Value::Okay));
        Ok(result?)
    }

    fn report(&self, command: &Cmd, sent: SystemTime, reply: Result<&Value, &redis::RedisError>) {
        if let Some(log) = &self.replies {
            log(SeenReply {
                client: &self.client,
                url: &self.url,
                command,
                sent,
                reply,
            });
        }
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let sent = SystemTime::now();
            let result = match &mut self.inner {
                Inner::Single(inner) => inner.req_packed_command(cmd).await,
                Inner::Cluster(inner) => inner.req_packed_command(cmd).await,
            };
            self.report(cmd, sent, result.as_ref());
            result
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let sent = SystemTime::now();
            let result = match &mut self.inner {
                Inner::Single(inner) => inner.req_packed_commands(pipeline, offset, count).await,
                Inner::Cluster(inner) => inner.req_packed_commands(pipeline, offset, count).await,
            };
            report_pipeline(self, pipeline, offset, sent, &result);
            result
        })
    }

    fn get_db(&self) -> i64 {
        match &self.inner {
            Inner::Single(inner) => inner.get_db(),
            Inner::Cluster(inner) => inner.get_db(),
        }
    }
}

/// Pairs a plain pipeline's answers with its commands (a transaction's
/// answers, offset past `MULTI`, are not reported).
fn report_pipeline(
    conn: &Connection,
    pipeline: &Pipeline,
    offset: usize,
    sent: SystemTime,
    result: &RedisResult<Vec<Value>>,
) {
    if offset != 0 {
        return;
    }
    match result {
        Ok(values) => {
            for (command, value) in pipeline.cmd_iter().zip(values) {
                conn.report(command, sent, Ok(value));
            }
        }
        Err(e) => {
            for command in pipeline.cmd_iter() {
                conn.report(command, sent, Err(e));
            }
        }
    }
}
