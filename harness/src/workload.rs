//! The stock-deduction workload from the articles, on its own Redis node.
//!
//! Read the stock, think for a while (the business), and if there is any
//! left write back one less and record an order. Two clients that do this
//! at once read the same stock and sell one item twice: more orders than
//! items that left the stock is *oversold* ([`crate::check::oversold`]),
//! the failure every stage is judged by.
//!
//! The data lives on a "database" node that no fault touches, so what a
//! scenario breaks is the lock, never the data store.
//!
//! Two protections live in the resource itself, not in the lock: stage 8's
//! fencing tokens ([`Fencing`]) and request ids ([`RequestIds`]), the
//! idempotent business the articles end on: each purchase carries a unique
//! id, the resource charges an id once, and a second application of the same
//! id changes nothing but is recorded, so an observer can see it was refused.

use lockcore::{ClientSetup, Connection, LockConfig, LockError};

use crate::error::Result;

/// Where the stock and the orders live.
pub const STOCK_KEY: &str = "stock";
/// One list entry per sale: the seller's name.
pub const ORDERS_KEY: &str = "orders";
/// Stage 8: the highest fencing token the resource has seen.
pub const FENCE_KEY: &str = "stock:fence";
/// Request ids: the set of ids the resource has charged.
pub const REQUESTS_KEY: &str = "orders:requests";
/// Request ids: one list entry per refused second application of an id
/// (the order it would have recorded).
pub const DUPLICATES_KEY: &str = "orders:duplicates";

/// Whether the resource de-duplicates purchases by their request id.
///
/// A purchase that carries a request id records it in its order
/// (`client-B request-1`) either way, so the judge can count how often each
/// request was charged. Only a checking resource refuses the second
/// charge. Purchases carry ids when the story gives them one (the retried
/// request of `duplicate-request`) and, with the check on, always: every
/// other purchase then gets an id of its own (`client-A#1`), so that two
/// *different* requests are never mistaken for one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum RequestIds {
    /// Ids are recorded in the orders but not checked: the resource this
    /// project had, and the matrix's default, so its cells show what a
    /// lock alone does to a retried request.
    #[default]
    Ignored,
    /// An id already charged is refused: nothing is written but an entry
    /// in the duplicates list (`--request-ids`).
    Checked,
}

/// When a purchase's transaction commits, against the release of the lock.
///
/// A purchase that writes in a transaction (`MULTI` … `EXEC` here, a
/// database transaction in the seeds' Spring services) is not done when its
/// commands are sent: nobody else sees its writes until it commits. A lock
/// released before that lets the next holder read what was there before.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ReleaseOrder {
    /// The bug: the lock is released inside the transaction, which commits
    /// afterwards (a method that locks and unlocks, called inside a
    /// `@Transactional` one). The `release-before-commit` story's default.
    #[default]
    BeforeCommit,
    /// The fix: commit, then release (`--release-after-commit`).
    AfterCommit,
}

impl ReleaseOrder {
    /// `before-commit` or `after-commit`.
    pub fn label(self) -> &'static str {
        match self {
            ReleaseOrder::BeforeCommit => "before-commit",
            ReleaseOrder::AfterCommit => "after-commit",
        }
    }
}

/// How stage 8's protected resource checks fencing tokens. Stages without
/// tokens are not affected: their reads and writes are plain.
///
/// A purchase is a read-modify-write: the decision to sell is taken on the
/// stock *read*, and only carried out by the write. A resource that checks
/// the token on the write alone cannot tell that a write was decided on a
/// read older than another holder's: if the stale holder's write lands
/// first, both writes are accepted (`stale-write-first` shows it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Fencing {
    /// The token is checked when the stock is written, not when it is read:
    /// the resource this project first had, kept as the lesson.
    WriteOnly,
    /// Every access carries the token: a read registers it as the highest
    /// seen, and a write with a token lower than the highest seen, by read
    /// or write, is refused. The matrix uses this one.
    #[default]
    ReadsAndWrites,
    /// No check at all: tokens are ignored, reads and writes are plain, as
    /// with a resource that knows nothing of fencing. What a paused holder
    /// of stage 9 or 10 does to such a resource is the lesson.
    Unchecked,
}

impl Fencing {
    /// Every mode, for parsing.
    pub const ALL: [Fencing; 3] = [
        Fencing::WriteOnly,
        Fencing::ReadsAndWrites,
        Fencing::Unchecked,
    ];

    /// `write-only`, `reads-and-writes` or `none`.
    pub fn label(self) -> &'static str {
        match self {
            Fencing::WriteOnly => "write-only",
            Fencing::ReadsAndWrites => "reads-and-writes",
            Fencing::Unchecked => "none",
        }
    }

    /// The mode called `label`, if there is one.
    pub fn from_label(label: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.label() == label)
    }
}

/// The fenced read: the stock, and the reader's token registered as the
/// highest seen (never lowered). From now on, a write decided by any older
/// holder is refused, whoever writes first.
const FENCED_READ: &str = include_str!("workload/fenced_read.lua");

/// The fenced sale: accepted only if the writer's token is not lower than
/// the highest one seen, checked and written in one script so no other
/// access slips between the check and the write.
const FENCED_SALE: &str = include_str!("workload/fenced_sale.lua");

/// The idempotent sale: the request id first, then the stale-token check of
/// [`FENCED_SALE`] when a token is shown (ARGV[3] is empty otherwise).
/// `SADD` answers 0 for an id already in the set: the request was charged
/// before, so the stock and the orders stay as they are and the attempt is
/// recorded in the duplicates list instead, whatever token it shows. A
/// retry of a charged request is told "charged", never "refused", which
/// would say it was not. A new id with a stale token is refused, and taken
/// out of the set again: the request was not charged, and a retry of it
/// under the newer holder must be. One script, so no second application of
/// the same id can slip between the check and the charge.
const IDEMPOTENT_SALE: &str = include_str!("workload/idempotent_sale.lua");

/// What an attempt to sell one item did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sale {
    /// One item sold; the stock went from this number to one less.
    Sold(i64),
    /// The stock read was zero: nothing to sell.
    SoldOut,
    /// The protected resource refused a write with a stale fencing token.
    Rejected {
        /// The writer's token.
        token: u64,
    },
    /// The resource had charged this purchase's request id before: nothing
    /// written, the attempt recorded as a duplicate.
    Duplicate,
}

impl std::fmt::Display for Sale {
    /// How the timeline tells it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sale::Sold(from) => write!(f, "sold one: stock {from} -> {}", from - 1),
            Sale::SoldOut => f.write_str("stock is 0: nothing to sell"),
            Sale::Rejected { token } => {
                write!(f, "write REJECTED by the resource: token {token} is stale")
            }
            Sale::Duplicate => {
                f.write_str("DUPLICATE REFUSED by the resource: this request id was charged before")
            }
        }
    }
}

/// A purchase's transaction, opened and not yet committed
/// ([`Database::open_sale`]).
pub struct OpenSale {
    /// The transaction's own connection; `None` when the stock read was
    /// zero and there was nothing to write.
    conn: Option<Connection>,
    read: i64,
    token: Option<u64>,
}

impl OpenSale {
    /// `EXEC`: the writes happen now, all of them, or (a fenced write
    /// refused by the resource) none.
    pub async fn commit(self) -> Result<Sale> {
        let Some(mut conn) = self.conn else {
            return Ok(Sale::SoldOut);
        };
        let answers: Vec<redis::Value> = redis::cmd("EXEC").query_async(&mut conn).await?;
        match self.token {
            None => Ok(Sale::Sold(self.read)),
            Some(token) => match answers.first() {
                Some(redis::Value::Int(1)) => Ok(Sale::Sold(self.read)),
                Some(redis::Value::Int(0)) => Ok(Sale::Rejected { token }),
                other => Err(crate::error::HarnessError::Bug(format!(
                    "the fenced sale's transaction answered {other:?}"
                ))),
            },
        }
    }
}

/// The database node, as seen by one client.
#[derive(Clone)]
pub struct Database {
    conn: Connection,
    client: String,
    fencing: Fencing,
    request_ids: RequestIds,
    keys: Keys,
}

/// The workload's keys. They sit beside the lock's: with the lock at
/// `<prefix>lock:stock` (a run on a reader's own server has a prefix of its
/// own), the stock is at `<prefix>stock`, and so on.
#[derive(Debug, Clone)]
struct Keys {
    stock: String,
    orders: String,
    fence: String,
    requests: String,
    duplicates: String,
}

impl Keys {
    fn beside(lock_key: &str) -> Self {
        let default = LockConfig::default().key;
        let prefix = lock_key.strip_suffix(default.as_str()).unwrap_or("");
        Self {
            stock: format!("{prefix}{STOCK_KEY}"),
            orders: format!("{prefix}{ORDERS_KEY}"),
            fence: format!("{prefix}{FENCE_KEY}"),
            requests: format!("{prefix}{REQUESTS_KEY}"),
            duplicates: format!("{prefix}{DUPLICATES_KEY}"),
        }
    }
}

impl Database {
    /// Connects the client `setup` describes to the database at `url`.
    pub async fn connect(setup: &ClientSetup, url: &str) -> Result<Self> {
        Ok(Self {
            conn: setup.connect(url).await?,
            client: setup.name.clone(),
            fencing: Fencing::default(),
            request_ids: RequestIds::default(),
            keys: Keys::beside(&setup.config.key),
        })
    }

    /// The same database, checking fencing tokens as `fencing` says.
    #[must_use]
    pub fn with_fencing(mut self, fencing: Fencing) -> Self {
        self.fencing = fencing;
        self
    }

    /// The same database, de-duplicating request ids as `request_ids` says.
    #[must_use]
    pub fn with_request_ids(mut self, request_ids: RequestIds) -> Self {
        self.request_ids = request_ids;
        self
    }

    /// Whether this resource refuses a request id charged before.
    pub fn checks_request_ids(&self) -> bool {
        self.request_ids == RequestIds::Checked
    }

    /// Starts over: `stock` items, no orders, no fencing token seen, no
    /// request charged.
    pub async fn reset(&self, stock: i64) -> Result<()> {
        let mut pipe = redis::pipe();
        pipe.cmd("SET").arg(&self.keys.stock).arg(stock).ignore();
        let del = pipe.cmd("DEL").arg(&self.keys.orders).arg(&self.keys.fence);
        // Only a resource that checks request ids writes these two.
        if self.checks_request_ids() {
            del.arg(&self.keys.requests).arg(&self.keys.duplicates);
        }
        del.ignore()
            .query_async::<()>(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// Reads the stock. With a fencing token and a resource that fences
    /// reads, the read registers the token (see [`Fencing`]); otherwise it
    /// is a plain `GET stock`.
    pub async fn read_stock(&self, token: Option<u64>) -> Result<i64> {
        let mut conn = self.conn.clone();
        match (token, self.fencing) {
            (Some(token), Fencing::ReadsAndWrites) => Ok(redis::Script::new(FENCED_READ)
                .key(&self.keys.stock)
                .key(&self.keys.fence)
                .arg(token)
                .invoke_async(&mut conn)
                .await
                .map_err(LockError::from)?),
            (None, _) | (Some(_), Fencing::WriteOnly | Fencing::Unchecked) => {
                let stock: Option<i64> = redis::cmd("GET")
                    .arg(&self.keys.stock)
                    .query_async(&mut conn)
                    .await?;
                Ok(stock.unwrap_or(0))
            }
        }
    }

    /// Writes back `read - 1` and records an order, if `read` was positive.
    /// With a fencing token, the write goes through the protected resource.
    pub async fn sell(&self, read: i64, token: Option<u64>) -> Result<Sale> {
        self.sell_request(read, token, None).await
    }

    /// Like [`Database::sell`], for a purchase that carries a request id:
    /// the order records it, and a resource that checks request ids charges
    /// it once ([`RequestIds`]).
    pub async fn sell_request(
        &self,
        read: i64,
        token: Option<u64>,
        request: Option<&str>,
    ) -> Result<Sale> {
        if read <= 0 {
            return Ok(Sale::SoldOut);
        }
        let mut conn = self.conn.clone();
        // An unchecking resource writes as if no token had been shown.
        let token = token.filter(|_| self.fencing != Fencing::Unchecked);
        let entry = match request {
            Some(request) => format!("{} {request}", self.client),
            None => self.client.clone(),
        };
        if let (Some(request), RequestIds::Checked) = (request, self.request_ids) {
            let answer: i64 = redis::Script::new(IDEMPOTENT_SALE)
                .key(&self.keys.stock)
                .key(&self.keys.orders)
                .key(&self.keys.fence)
                .key(&self.keys.requests)
                .key(&self.keys.duplicates)
                .arg(read - 1)
                .arg(&entry)
                .arg(token.map_or(String::new(), |t| t.to_string()))
                .arg(request)
                .invoke_async(&mut conn)
                .await
                .map_err(LockError::from)?;
            return Ok(match (answer, token) {
                (1, _) => Sale::Sold(read),
                (2, _) => Sale::Duplicate,
                (_, Some(token)) => Sale::Rejected { token },
                (other, None) => {
                    return Err(crate::error::HarnessError::Bug(format!(
                        "the idempotent sale answered {other} to a purchase without a token"
                    )));
                }
            });
        }
        match token {
            None => {
                redis::pipe()
                    .cmd("SET")
                    .arg(&self.keys.stock)
                    .arg(read - 1)
                    .ignore()
                    .cmd("RPUSH")
                    .arg(&self.keys.orders)
                    .arg(&entry)
                    .ignore()
                    .query_async::<()>(&mut conn)
                    .await?;
                Ok(Sale::Sold(read))
            }
            Some(token) => {
                let accepted: i64 = redis::Script::new(FENCED_SALE)
                    .key(&self.keys.stock)
                    .key(&self.keys.orders)
                    .key(&self.keys.fence)
                    .arg(read - 1)
                    .arg(&entry)
                    .arg(token)
                    .invoke_async(&mut conn)
                    .await
                    .map_err(LockError::from)?;
                Ok(if accepted == 1 {
                    Sale::Sold(read)
                } else {
                    Sale::Rejected { token }
                })
            }
        }
    }

    /// Opens a purchase's transaction on a connection of its own: `MULTI`,
    /// then the sale's writes, queued (through the protected resource when
    /// a token is shown), nothing of them visible until
    /// [`OpenSale::commit`]. Request ids are not checked in a transaction:
    /// the story that uses one shows the commit's order, not retries.
    pub async fn open_sale(&self, read: i64, token: Option<u64>) -> Result<OpenSale> {
        if read <= 0 {
            return Ok(OpenSale {
                conn: None,
                read,
                token: None,
            });
        }
        let token = token.filter(|_| self.fencing != Fencing::Unchecked);
        let mut conn = self.conn.another().await?;
        redis::cmd("MULTI").query_async::<()>(&mut conn).await?;
        match token {
            None => {
                redis::cmd("SET")
                    .arg(&self.keys.stock)
                    .arg(read - 1)
                    .query_async::<()>(&mut conn)
                    .await?;
                redis::cmd("RPUSH")
                    .arg(&self.keys.orders)
                    .arg(&self.client)
                    .query_async::<()>(&mut conn)
                    .await?;
            }
            // The script's text, not its digest: a script not loaded yet
            // would fail only at `EXEC`.
            Some(token) => {
                redis::cmd("EVAL")
                    .arg(FENCED_SALE)
                    .arg(3)
                    .arg(&self.keys.stock)
                    .arg(&self.keys.orders)
                    .arg(&self.keys.fence)
                    .arg(read - 1)
                    .arg(&self.client)
                    .arg(token)
                    .query_async::<()>(&mut conn)
                    .await?;
            }
        }
        Ok(OpenSale {
            conn: Some(conn),
            read,
            token,
        })
    }

    /// Every order recorded, in order: the seller's name, and after a space
    /// the purchase's request id when it carried one.
    pub async fn order_entries(&self) -> Result<Vec<String>> {
        self.whole_list(&self.keys.orders).await
    }

    /// Every second application of a request id that the resource refused,
    /// as the order it would have recorded.
    pub async fn refused_duplicates(&self) -> Result<Vec<String>> {
        self.whole_list(&self.keys.duplicates).await
    }

    async fn whole_list(&self, key: &str) -> Result<Vec<String>> {
        Ok(redis::cmd("LRANGE")
            .arg(key)
            .arg(0)
            .arg(-1)
            .query_async(&mut self.conn.clone())
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use lockcore::{ClientSetup, LockConfig};

    use super::{Database, Fencing, RequestIds, Sale};
    use crate::server::{Backend, Node};

    /// One client of the database at `node`, with both of the resource's
    /// checks on, its keys under a prefix of this test's own.
    async fn client(node: &Node, name: &str) -> Database {
        let config = LockConfig {
            key: format!("workload-test:{}", LockConfig::default().key),
            ..LockConfig::default()
        };
        let setup = ClientSetup::new(vec![node.url()], name, config);
        Database::connect(&setup, &node.url())
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .with_fencing(Fencing::ReadsAndWrites)
            .with_request_ids(RequestIds::Checked)
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_stale_retry_of_a_charged_request_answers_charged_and_a_new_one_stays_chargeable() {
        let backend = Backend::from_env().unwrap_or_else(|e| panic!("{e}"));
        let node = Node::start(&backend, "db", &[])
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let a = client(&node, "client-A").await;
        let b = client(&node, "client-B").await;
        a.reset(10).await.unwrap();

        // client-A, holding token 33, charges request-1.
        let read = a.read_stock(Some(33)).await.unwrap();
        assert_eq!(
            a.sell_request(read, Some(33), Some("request-1"))
                .await
                .unwrap(),
            Sale::Sold(10)
        );
        // A newer holder reads with token 34: from now on 33 is stale.
        let newer = b.read_stock(Some(34)).await.unwrap();
        assert_eq!(newer, 9);

        // client-A's retry of request-1, still with token 33: the request
        // was charged, and the answer must say so, not "refused".
        assert_eq!(
            a.sell_request(read, Some(33), Some("request-1"))
                .await
                .unwrap(),
            Sale::Duplicate,
            "a retry of a charged request was told it was refused"
        );
        assert_eq!(
            a.refused_duplicates().await.unwrap(),
            ["client-A request-1"]
        );

        // A request never charged, with the stale token: refused, and its
        // id is not remembered, so that the same request under the newer
        // holder's token is charged.
        assert_eq!(
            a.sell_request(read, Some(33), Some("request-2"))
                .await
                .unwrap(),
            Sale::Rejected { token: 33 }
        );
        assert_eq!(
            b.sell_request(newer, Some(34), Some("request-2"))
                .await
                .unwrap(),
            Sale::Sold(9),
            "a request refused for its stale token was remembered as charged"
        );
        assert_eq!(
            a.order_entries().await.unwrap(),
            ["client-A request-1", "client-B request-2"]
        );
    }
}
