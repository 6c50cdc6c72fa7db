//! A workload client: one lock instance, one database connection, and a
//! history entry for everything it does. On a row that is a command
//! (`--holder-cmd`, a library's adapter) the lock and the database
//! connection are a holder process's ([`RemoteLock`]): the client sends it
//! requests and records as for a stage.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use lockcore::{
    Acquired, ClientSetup, DistributedLock, FaultPoints, LockConfig, LockError, Point, StageEntry,
};

use crate::error::{HarnessError, Result};
use crate::fault::FaultPlan;
use crate::guard::LockGuard;
use crate::history::{History, Op};
use crate::holder::handle::HolderProcess;
use crate::holder::launcher::Launcher;
use crate::holder::protocol::HolderSpec;
use crate::holder::remote::RemoteLock;
use crate::observe::Timeline;
use crate::workload::{Database, Fencing, OpenSale, RequestIds, Sale};

// A client's releases answer with it. It is defined with the guard, below
// the client, because a guard's releases answer with it too.
pub use crate::guard::Released;

/// Everything needed to make clients of one stage in one scenario.
#[derive(Debug, Clone)]
pub struct ClientFactory {
    /// The stage under test.
    pub stage: StageEntry,
    /// Where the lock lives: one URL, or one per Redlock node.
    pub lock_urls: Vec<String>,
    /// Where the stock lives.
    pub db_url: String,
    /// TTL and friends.
    pub config: LockConfig,
    /// The run's one record, shared by all its clients.
    pub history: History,
    /// How stage 8's resource checks tokens (the fixed resource unless a
    /// story wants to show the write-only one).
    pub fencing: Fencing,
    /// Whether the resource de-duplicates purchases by request id.
    pub request_ids: RequestIds,
    /// `Some` on a row that is a command: every client is a holder process
    /// running it, driven over the protocol ([`RemoteLock`]).
    pub holder_command: Option<Launcher>,
}

impl ClientFactory {
    /// What a holder process called `name` of these clients needs.
    pub fn holder_spec(&self, name: &str) -> HolderSpec {
        self.holder_spec_at(name, self.lock_urls.clone())
    }

    /// Like [`ClientFactory::holder_spec`], with the lock at `lock_urls`.
    pub fn holder_spec_at(&self, name: &str, lock_urls: Vec<String>) -> HolderSpec {
        let config = &self.config;
        HolderSpec {
            stage: self.stage.description.name.to_owned(),
            name: name.to_owned(),
            lock_urls,
            db_url: self.db_url.clone(),
            key: config.key.clone(),
            ttl: config.ttl,
            retry_interval: config.retry_interval,
            watchdog_timeout: config.watchdog_timeout,
            drift_factor: config.drift_factor,
            fencing: self.fencing.label().to_owned(),
            request_ids: self.request_ids == RequestIds::Checked,
        }
    }

    /// Starts one of these clients as a holder process called `name`, which
    /// a story can kill, freeze or stall.
    pub async fn spawn_holder(&self, launcher: &Launcher, name: &str) -> Result<HolderProcess> {
        HolderProcess::spawn(
            launcher,
            &self.holder_spec(name),
            self.history.clone(),
            self.fencing,
        )
        .await
    }

    /// Connects a client called `name` (`client-A`…).
    pub async fn client(&self, name: &str) -> Result<Client> {
        self.client_at(name, self.lock_urls.clone()).await
    }

    /// Connects a client called `name` to other lock nodes than the
    /// scenario's own (after a failover, new clients find the new master).
    /// A Sentinel URL is asked for the master now, so that every stage
    /// (stage 6's pub/sub connection too) talks to the same server.
    pub async fn client_at(&self, name: &str, lock_urls: Vec<String>) -> Result<Client> {
        let mut resolved = Vec::with_capacity(lock_urls.len());
        for url in &lock_urls {
            resolved.push(lockcore::resolve(url).await?);
        }
        let lock_urls = resolved;
        let plan = FaultPlan::new(name, Timeline::of(&self.history));
        let faults = FaultPoints::with_hook(plan.clone());
        if let Some(launcher) = &self.holder_command {
            let spec = self.holder_spec_at(name, lock_urls);
            let (remote, took) =
                RemoteLock::spawn(launcher, &spec, self.stage.description, faults.clone()).await?;
            let remote = Arc::new(remote);
            self.history
                .narrate(name, crate::holder::started_line(remote.pid(), took));
            return Ok(Client {
                name: name.to_owned(),
                lock: remote.clone(),
                business: Business::Remote(remote),
                history: self.history.clone(),
                faults,
                plan,
                purchases: AtomicU32::new(0),
            });
        }
        let setup = ClientSetup {
            urls: lock_urls,
            name: name.to_owned(),
            config: self.config.clone(),
            faults: faults.clone(),
            replies: Some(self.history.reply_log()),
        };
        let db = Database::connect(&setup, &self.db_url)
            .await?
            .with_fencing(self.fencing)
            .with_request_ids(self.request_ids);
        let lock = Arc::from((self.stage.connect)(setup).await?);
        Ok(Client {
            name: name.to_owned(),
            lock,
            business: Business::Local(Box::new(db)),
            history: self.history.clone(),
            faults,
            plan,
            purchases: AtomicU32::new(0),
        })
    }
}

/// Where a client's reads and sales go.
enum Business {
    /// Its own connection to the database (boxed: the other is a pointer).
    Local(Box<Database>),
    /// Its holder process, which has the connection.
    Remote(Arc<RemoteLock>),
}

/// One client of the workload.
pub struct Client {
    name: String,
    lock: Arc<dyn DistributedLock>,
    business: Business,
    history: History,
    faults: FaultPoints,
    plan: Arc<FaultPlan>,
    /// Purchases so far: numbers the request ids of a checking resource.
    purchases: AtomicU32,
}

impl Client {
    /// `client-A`…
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the test plans this client's faults.
    pub fn faults(&self) -> &FaultPlan {
        &self.plan
    }

    /// Tries once to take the lock.
    pub async fn try_acquire(&self) -> Result<Option<Acquired>> {
        self.history
            .invoke(&self.name, Op::Acquire, Default::default());
        let result = self.lock.try_acquire().await;
        self.note_acquire(result)
    }

    /// Takes the lock, waiting at most `wait`.
    pub async fn acquire(&self, wait: Duration) -> Result<Option<Acquired>> {
        self.history
            .invoke(&self.name, Op::Acquire, Default::default());
        let result = self.lock.acquire(wait).await;
        self.note_acquire(result)
    }

    /// Takes a lock the story knows is free, waiting at most `wait`; that
    /// it cannot is an error (the story cannot be told), not a verdict.
    pub async fn acquire_free(&self, wait: Duration) -> Result<Acquired> {
        self.acquire(wait).await?.ok_or_else(|| {
            HarnessError::StoryNotTold(format!("{} could not take a free lock", self.name))
        })
    }

    fn note_acquire(
        &self,
        result: Result<Option<Acquired>, LockError>,
    ) -> Result<Option<Acquired>> {
        match self.note_crash(result)? {
            Some(held) => {
                self.history.acquired(&self.name, &held);
                Ok(Some(held))
            }
            None => {
                self.history.not_acquired(&self.name);
                Ok(None)
            }
        }
    }

    /// Takes the lock, waiting at most `wait`, as a guard that gives it
    /// back on every path ([`LockGuard`]).
    pub async fn acquire_guarded(&self, wait: Duration) -> Result<Option<LockGuard>> {
        Ok(self
            .acquire(wait)
            .await?
            .map(|held| LockGuard::new(self.lock.clone(), held, &self.name, self.history.clone())))
    }

    /// Gives the lock back. A refusal (not the owner) is a result here,
    /// [`Released::NotOwner`], not an error.
    pub async fn release(&self, held: &Acquired) -> Result<Released> {
        self.note_crash(self.faults.reached(Point::BeforeRelease).await)?;
        self.history.release_sent(&self.name);
        self.send_release(held).await
    }

    /// Like [`Client::release`], but the critical section ends before
    /// `BeforeRelease` is reached: a pause there delays a release whose
    /// business is over, instead of keeping the client inside.
    pub async fn leave_then_release(&self, held: &Acquired) -> Result<Released> {
        self.history.release_sent(&self.name);
        self.note_crash(self.faults.reached(Point::BeforeRelease).await)?;
        self.send_release(held).await
    }

    async fn send_release(&self, held: &Acquired) -> Result<Released> {
        match self.lock.release(held).await {
            Ok(outcome) => {
                self.history.released(&self.name, outcome);
                Ok(Released::Answered(outcome))
            }
            Err(LockError::NotOwner) => {
                self.history
                    .release_failed(&self.name, &LockError::NotOwner);
                Ok(Released::NotOwner)
            }
            Err(other) => Err(self.note_crash::<()>(Err(other)).unwrap_err()),
        }
    }

    /// Reads the stock (the start of the critical section's business),
    /// showing the resource the lock's fencing token, if it has one.
    pub async fn read_stock(&self, held: &Acquired) -> Result<i64> {
        match &self.business {
            Business::Local(db) => db.read_stock(held.fencing_token).await,
            Business::Remote(remote) => remote.read().await,
        }
    }

    /// The database connection of a client in this process; a holder
    /// process's client has none (the story is n/a for it).
    fn db(&self) -> Result<&Database> {
        match &self.business {
            Business::Local(db) => Ok(db),
            Business::Remote(_) => Err(HarnessError::NotApplicable(
                crate::holder::remote::NOT_OVER_THE_PROTOCOL,
            )),
        }
    }

    /// Finishes a purchase started with [`Client::read_stock`]. Against a
    /// resource that checks request ids, the purchase carries one of its
    /// own (`client-A#1`): a new request, never a retry.
    pub async fn sell(&self, read: i64, held: &Acquired) -> Result<Sale> {
        if let Business::Remote(_) = &self.business {
            // The holder numbers its own request ids, as this side would.
            return self.sell_request(read, held, None).await;
        }
        let own = self.db()?.checks_request_ids().then(|| {
            let n = self.purchases.fetch_add(1, Ordering::Relaxed) + 1;
            format!("{}#{n}", self.name)
        });
        self.sell_request(read, held, own.as_deref()).await
    }

    /// Finishes a purchase that carries `request` as its request id (or
    /// none), as the resource's [`RequestIds`] mode treats it.
    pub async fn sell_request(
        &self,
        read: i64,
        held: &Acquired,
        request: Option<&str>,
    ) -> Result<Sale> {
        if let (Business::Remote(remote), None) = (&self.business, request) {
            let sale = remote.sell(read).await?;
            self.history.narrate(&self.name, sale.to_string());
            return Ok(sale);
        }
        let sale = self
            .db()?
            .sell_request(read, held.fencing_token, request)
            .await?;
        let text = match request {
            Some(request) => format!("{sale}, for {request}"),
            None => sale.to_string(),
        };
        self.history.narrate(&self.name, text);
        Ok(sale)
    }

    /// Starts a purchase's transaction on the stock `read` (see
    /// [`Database::open_sale`]): its writes are sent and queued, and wait
    /// for [`Client::commit`].
    pub async fn open_sale(&self, read: i64, held: &Acquired) -> Result<OpenSale> {
        let open = self.db()?.open_sale(read, held.fencing_token).await?;
        if read > 0 {
            self.history.narrate(
                &self.name,
                format!(
                    "MULTI: writes stock {} and its order, queued; nobody sees them before EXEC",
                    read - 1
                ),
            );
        }
        Ok(open)
    }

    /// Commits a transaction opened with [`Client::open_sale`].
    pub async fn commit(&self, open: OpenSale) -> Result<Sale> {
        let sale = open.commit().await?;
        self.history
            .narrate(&self.name, format!("EXEC (the commit): {sale}"));
        Ok(sale)
    }

    /// One purchase inside the lock: read, reach the workload's fault point,
    /// think for `business`, write.
    pub async fn buy_one(&self, held: &Acquired, business: Duration) -> Result<Sale> {
        let read = self.read_stock(held).await?;
        self.note_crash(self.faults.reached(Point::InCriticalSection).await)?;
        tokio::time::sleep(business).await;
        self.sell(read, held).await
    }

    /// Like [`Client::buy_one`], for a purchase that carries `request` as
    /// its request id: the one a gateway sends again when it retries.
    pub async fn buy_request(
        &self,
        held: &Acquired,
        business: Duration,
        request: &str,
    ) -> Result<Sale> {
        let read = self.read_stock(held).await?;
        self.note_crash(self.faults.reached(Point::InCriticalSection).await)?;
        tokio::time::sleep(business).await;
        self.sell_request(read, held, Some(request)).await
    }

    /// Buys until the stock runs out: acquire (waiting at most `wait`),
    /// buy one, release, again. Returns how many it sold.
    pub async fn shop_until_sold_out(&self, wait: Duration, business: Duration) -> Result<u32> {
        let mut sold = 0;
        while let Some(held) = self.acquire(wait).await? {
            let sale = self.buy_one(&held, business).await?;
            self.release(&held).await?.answered()?;
            match sale {
                Sale::Sold(_) => sold += 1,
                Sale::SoldOut | Sale::Rejected { .. } | Sale::Duplicate => break,
            }
        }
        Ok(sold)
    }

    /// Marks a crash in the history on its way out.
    fn note_crash<T>(&self, result: Result<T, LockError>) -> Result<T> {
        result.map_err(|e| {
            if let LockError::Crashed(point) = e {
                // A holder process dies for real: it sends nothing more.
                if let Business::Remote(remote) = &self.business {
                    remote.kill();
                }
                self.history.died(&self.name, &format!("died at {point}"));
            }
            match e {
                LockError::Holder(why) => HarnessError::Holder(why),
                LockError::NotApplicable(reason) => HarnessError::NotApplicable(reason),
                e => HarnessError::Lock(e),
            }
        })
    }
}
