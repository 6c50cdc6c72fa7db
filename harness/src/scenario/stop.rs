//! Stopping a client at a fault point, and knowing it is there.
//!
//! Stories that need two clients inside at once (a slow business, a stale
//! write, a release held on its way) stop the first one at a point of its
//! own code ([`Point`]) and go on with the second; the first goes on when
//! its gate opens. The story waits on the gate, never on a clock: the
//! client is stopped exactly where the story says, however loaded the
//! machine.

use std::future::Future;
use std::pin::Pin;

use lockcore::Point;

use crate::client::Client;
use crate::error::{HarnessError, Result};
use crate::fault::Gate;

/// A client's work, boxed so that it can be kept while it waits.
type Work<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// Work of one client, stopped at a fault point: opening `gate` lets it
/// go on, and `work` is then awaited for its result.
pub(super) struct Stopped<'a, T> {
    /// Where the client waits.
    pub gate: Gate,
    /// The rest of its work.
    pub work: Work<'a, T>,
}

/// Runs `work` (of `client`) until the client reaches `point`, and leaves
/// it waiting there. A client that finishes without reaching the point
/// means the story went wrong: an error says so.
pub(super) async fn stop_at<'a, T>(
    client: &Client,
    point: Point,
    work: impl Future<Output = Result<T>> + Send + 'a,
) -> Result<Stopped<'a, T>> {
    // Set before the work is first polled: the work is lazy.
    let gate = client.faults().pause_at(point);
    let mut work: Work<'a, T> = Box::pin(work);
    tokio::select! {
        () = gate.arrived() => Ok(Stopped { gate, work }),
        done = work.as_mut() => {
            done?;
            Err(HarnessError::StoryNotTold(format!(
                "{} finished without reaching {point}",
                client.name()
            )))
        }
    }
}
