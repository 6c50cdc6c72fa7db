//! A relay in front of each ensemble member, for the faults a network or an
//! operator makes to one client and no other: a connection that breaks
//! while a request is on its way, and a session ended from outside.
//!
//! The client under test is given the relays' addresses instead of the
//! members'; every byte still goes to a real member and back. The relay
//! reads ZooKeeper's framing (a 4-byte length before every packet; the
//! first packet each way is the session handshake, every later request
//! starts with its xid and its type), which is all it needs to know:
//!
//! - [`Relays::break_on`]: the next request of a given type is not passed
//!   on, and the connection carrying it is closed, as a broken link would.
//!   The client hears "connection lost" for it and reconnects (through a
//!   relay again), its session intact.
//! - [`Relays::end_session`]: the relay saw the session id and password the
//!   ensemble handed the client, and closes that session with them from a
//!   connection of its own, the way Curator's test tools expire a session
//!   (the client kept out meanwhile). The ensemble deletes the session's
//!   ephemeral nodes at once; when the client reconnects, it is told that
//!   its session is gone.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

/// ZooKeeper's type number for a delete request.
pub const DELETE: i32 = 2;
/// ... and for closing a session.
const CLOSE_SESSION: i32 = -11;

/// A session as the ensemble handed it out.
#[derive(Debug, Clone)]
struct Credentials {
    id: i64,
    password: Vec<u8>,
    timeout_ms: i32,
}

struct Shared {
    /// New connections are closed at once while this is set.
    refusing: AtomicBool,
    /// Bumped to close every open connection.
    cut: watch::Sender<u32>,
    /// Breaks the connection carrying the next request of this type.
    trap: Mutex<Option<(i32, oneshot::Sender<()>)>>,
    /// The last live session the ensemble handed a client.
    session: watch::Sender<Option<Credentials>>,
    /// How many times the ensemble answered a reconnecting client that its
    /// session was gone.
    told_gone: watch::Sender<u32>,
}

impl Shared {
    /// Whether a request of type `kind` springs the trap (it then fires).
    fn springs(&self, kind: i32) -> bool {
        let mut trap = self.trap.lock().unwrap();
        if trap.as_ref().is_some_and(|(armed, _)| *armed == kind) {
            if let Some((_, fired)) = trap.take() {
                let _ = fired.send(());
            }
            return true;
        }
        false
    }

    /// Reads the ensemble's half of a handshake: the session it granted,
    /// or session id 0, "that session is gone" (then `false`).
    fn handshake(&self, frame: &[u8]) -> bool {
        let body = &frame[4..];
        let id = i64::from_be_bytes(body[8..16].try_into().unwrap());
        if id == 0 {
            return false;
        }
        let timeout_ms = i32::from_be_bytes(body[4..8].try_into().unwrap());
        let len = usize::try_from(i32::from_be_bytes(body[16..20].try_into().unwrap())).unwrap();
        let password = body[20..20 + len].to_vec();
        self.session.send_replace(Some(Credentials {
            id,
            password,
            timeout_ms,
        }));
        true
    }
}

/// One relay per ensemble member, on free loopback ports. Stops, and
/// closes every connection, when dropped.
pub struct Relays {
    members: Vec<SocketAddr>,
    addrs: Vec<SocketAddr>,
    shared: Arc<Shared>,
    acceptors: Vec<JoinHandle<()>>,
}

impl Relays {
    /// Relays in front of `members` (`zk://host:port`, as the ensemble
    /// names them).
    pub async fn start(members: &[String]) -> Relays {
        let shared = Arc::new(Shared {
            refusing: AtomicBool::new(false),
            cut: watch::channel(0).0,
            trap: Mutex::new(None),
            session: watch::channel(None).0,
            told_gone: watch::channel(0).0,
        });
        let members: Vec<SocketAddr> = members
            .iter()
            .map(|url| url.strip_prefix("zk://").unwrap().parse().unwrap())
            .collect();
        let mut addrs = Vec::new();
        let mut acceptors = Vec::new();
        for &member in &members {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            addrs.push(listener.local_addr().unwrap());
            let shared = Arc::clone(&shared);
            acceptors.push(tokio::spawn(async move {
                let mut connections = Vec::new();
                while let Ok((client, _)) = listener.accept().await {
                    connections.retain(|c: &AbortOnDrop| !c.0.is_finished());
                    if shared.refusing.load(Ordering::SeqCst) {
                        continue; // dropped: closed at once
                    }
                    let shared = Arc::clone(&shared);
                    connections.push(AbortOnDrop(tokio::spawn(relay(client, member, shared))));
                }
            }));
        }
        Relays {
            members,
            addrs,
            shared,
            acceptors,
        }
    }

    /// The URLs a client uses to reach the ensemble through the relays.
    pub fn urls(&self) -> Vec<String> {
        self.addrs.iter().map(|a| format!("zk://{a}")).collect()
    }

    /// Breaks the connection that carries the next request of type `kind`
    /// (the request goes no further). The receiver fires when it did.
    pub fn break_on(&self, kind: i32) -> oneshot::Receiver<()> {
        let (fired, told) = oneshot::channel();
        *self.shared.trap.lock().unwrap() = Some((kind, fired));
        told
    }

    /// Resolves the next time the ensemble tells a reconnecting client
    /// that its session is gone and the client, having read that, hangs
    /// up. Ask before causing it.
    pub fn next_told_gone(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut told = self.shared.told_gone.subscribe();
        let seen = *told.borrow_and_update();
        async move {
            let _ = told.wait_for(|n| *n > seen).await;
        }
    }

    /// Closes the session the ensemble last handed a client through the
    /// relays, with its own id and password, from a connection of the
    /// relay's own. Panics if the ensemble says it was not alive, or
    /// refuses to close it.
    pub async fn end_session(&self) {
        let session = self
            .shared
            .session
            .borrow()
            .clone()
            .expect("no session went through the relays");
        // The client is kept out meanwhile: reconnecting, it would take its
        // session back from the connection that is closing it.
        self.shared.refusing.store(true, Ordering::SeqCst);
        self.shared.cut.send_modify(|n| *n += 1);
        let mut alive_at_first = None;
        loop {
            let mut member = TcpStream::connect(self.members[0]).await.unwrap();
            let mut hello = Vec::new();
            hello.extend(0i32.to_be_bytes()); // protocol version
            hello.extend(0i64.to_be_bytes()); // last zxid seen
            hello.extend(session.timeout_ms.to_be_bytes());
            hello.extend(session.id.to_be_bytes());
            hello.extend(i32::try_from(session.password.len()).unwrap().to_be_bytes());
            hello.extend(&session.password);
            hello.push(0); // not read-only
            send(&mut member, &hello).await;
            let answer = receive(&mut member)
                .await
                .expect("the member hung up on the handshake");
            // Our session's id: it is alive; 0: it is gone.
            let alive = i64::from_be_bytes(answer[8..16].try_into().unwrap()) == session.id;
            alive_at_first.get_or_insert(alive);
            if !alive {
                break;
            }
            let mut close = Vec::new();
            close.extend(1i32.to_be_bytes()); // xid
            close.extend(CLOSE_SESSION.to_be_bytes());
            send(&mut member, &close).await;
            // The answer, or the member hanging up (it closes a closed
            // session's connections as it applies the close, at times before
            // the answer goes out): the next handshake tells which.
            if let Ok(reply) = receive(&mut member).await {
                // Reply header: xid, zxid, error code.
                let error = i32::from_be_bytes(reply[12..16].try_into().unwrap());
                assert_eq!(error, 0, "the ensemble refused to close the session");
            }
        }
        assert_eq!(
            alive_at_first,
            Some(true),
            "the session should have been alive"
        );
        self.shared.refusing.store(false, Ordering::SeqCst);
    }
}

impl Drop for Relays {
    fn drop(&mut self) {
        for acceptor in &self.acceptors {
            acceptor.abort();
        }
    }
}

/// A connection's task, stopped (its sockets closed) with its relay.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Passes one client connection to `member` and back, packet by packet
/// towards the member (so a trapped request can be held back whole).
async fn relay(client: TcpStream, member: SocketAddr, shared: Arc<Shared>) {
    let mut cut = shared.cut.subscribe();
    let Ok(server) = TcpStream::connect(member).await else {
        return;
    };
    let (mut from_client, mut to_client) = client.into_split();
    let (mut from_server, mut to_server) = server.into_split();
    let requests = async {
        let (mut pending, mut first) = (Vec::new(), true);
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match from_client.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            pending.extend_from_slice(&buf[..n]);
            while let Some(frame) = take_frame(&mut pending) {
                // Every packet after the handshake: length, xid, type.
                if !first && shared.springs(i32::from_be_bytes(frame[8..12].try_into().unwrap())) {
                    return; // the link breaks with the request on it
                }
                first = false;
                if to_server.write_all(&frame).await.is_err() {
                    return;
                }
            }
        }
    };
    let gone = AtomicBool::new(false);
    let replies = async {
        let (mut pending, mut first) = (Vec::new(), true);
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match from_server.read(&mut buf).await {
                // The ensemble hangs up after "that session is gone"; the
                // client's own hang-up, once it has read that, ends this.
                Ok(0) | Err(_) if gone.load(Ordering::SeqCst) => std::future::pending().await,
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if first {
                pending.extend_from_slice(&buf[..n]);
                if let Some(frame) = take_frame(&mut pending) {
                    first = false;
                    let rest = std::mem::take(&mut pending);
                    if to_client.write_all(&frame).await.is_err()
                        || to_client.write_all(&rest).await.is_err()
                    {
                        return;
                    }
                    gone.store(!shared.handshake(&frame), Ordering::SeqCst);
                }
            } else if to_client.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    tokio::select! {
        () = requests => {}
        () = replies => {}
        _ = cut.changed() => return,
    }
    if gone.load(Ordering::SeqCst) {
        // Told, and it hung up: the client has taken it in.
        shared.told_gone.send_modify(|n| *n += 1);
    }
}

/// The first whole packet in `pending`, length prefix included.
fn take_frame(pending: &mut Vec<u8>) -> Option<Vec<u8>> {
    let len = usize::try_from(i32::from_be_bytes(pending.get(..4)?.try_into().ok()?)).ok()?;
    (pending.len() >= 4 + len).then(|| pending.drain(..4 + len).collect())
}

async fn send(stream: &mut TcpStream, body: &[u8]) {
    let len = i32::try_from(body.len()).unwrap();
    stream.write_all(&len.to_be_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
}

async fn receive(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).await?;
    let mut body = vec![0u8; usize::try_from(i32::from_be_bytes(len)).unwrap()];
    stream.read_exact(&mut body).await?;
    Ok(body)
}
