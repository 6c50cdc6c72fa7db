//! Opening a named connection.
//!
//! Every client names itself with `CLIENT SETNAME`, so that `MONITOR`,
//! `CLIENT LIST` and the harness's timelines say *who* sent a command.

use crate::LockError;

/// The connection every stage talks through: one TCP connection that many
/// tasks may share (redis-rs pipelines their commands over it).
pub type Connection = redis::aio::MultiplexedConnection;

/// Opens a connection to `url` and names it `name`.
pub async fn connect(url: &str, name: &str) -> Result<Connection, LockError> {
    let client = redis::Client::open(url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(name)
        .query_async::<()>(&mut conn)
        .await?;
    Ok(conn)
}
