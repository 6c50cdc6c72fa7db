//! A relay in front of each cluster member, for a network fault to one
//! client and no other: every connection through the relays closed, and
//! new ones refused, until the test lets them through again. The client
//! under test is given the relays' addresses instead of the members'.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// One relay per member, on free loopback ports. Stops, and closes every
/// connection, when dropped.
pub struct Relays {
    addrs: Vec<SocketAddr>,
    refusing: Arc<AtomicBool>,
    /// Bumped to close every open connection.
    cut: watch::Sender<u32>,
    acceptors: Vec<JoinHandle<()>>,
}

impl Relays {
    /// Relays in front of `members` (`http://host:port`).
    pub async fn start(members: &[String]) -> Relays {
        let refusing = Arc::new(AtomicBool::new(false));
        let cut = watch::channel(0).0;
        let mut addrs = Vec::new();
        let mut acceptors = Vec::new();
        for url in members {
            let member: SocketAddr = url.strip_prefix("http://").unwrap().parse().unwrap();
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            addrs.push(listener.local_addr().unwrap());
            let (refusing, cut) = (Arc::clone(&refusing), cut.clone());
            acceptors.push(tokio::spawn(async move {
                let mut connections: Vec<JoinHandle<()>> = Vec::new();
                while let Ok((client, _)) = listener.accept().await {
                    connections.retain(|c| !c.is_finished());
                    if refusing.load(Ordering::SeqCst) {
                        continue; // dropped: closed at once
                    }
                    connections.push(tokio::spawn(relay(client, member, cut.subscribe())));
                }
            }));
        }
        Relays {
            addrs,
            refusing,
            cut,
            acceptors,
        }
    }

    /// The URLs a client uses to reach the cluster through the relays.
    pub fn urls(&self) -> Vec<String> {
        self.addrs.iter().map(|a| format!("http://{a}")).collect()
    }

    /// Closes every connection through the relays and refuses new ones.
    pub fn refuse(&self) {
        self.refusing.store(true, Ordering::SeqCst);
        self.cut.send_modify(|n| *n += 1);
    }

    /// Lets connections through again.
    pub fn allow(&self) {
        self.refusing.store(false, Ordering::SeqCst);
    }
}

impl Drop for Relays {
    fn drop(&mut self) {
        self.refuse();
        for acceptor in &self.acceptors {
            acceptor.abort();
        }
    }
}

async fn relay(mut client: TcpStream, member: SocketAddr, mut cut: watch::Receiver<u32>) {
    let Ok(mut server) = TcpStream::connect(member).await else {
        return;
    };
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
        _ = cut.changed() => {}
    }
}
