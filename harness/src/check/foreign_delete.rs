//! FOREIGN-DELETE: a client's command deleted a key that another client
//! had written since, as the servers' own record shows it, not as the
//! clients believed it.
//!
//! Each node's watcher ties every keyspace event to the command (and the
//! client) that caused it ([`History::keys`]): who wrote a key last, who
//! deleted it. A delete by one named client of a key another named client
//! wrote is a foreign delete, whatever command did it: a plain `DEL`, or a
//! script's (a script that compares before deleting, stages 5 to 8, never
//! deletes a stranger's key, so it never shows here). It reaches a key
//! wherever the client's command went: to the node a cluster promoted, too.

use std::time::Duration;

use super::{Finding, Violation};
use crate::history::{Change, History, Op, Phase, What};

/// How far a server's clock and the history's may disagree: both are the
/// same machine's, read a few microseconds apart.
const SLACK: Duration = Duration::from_millis(2);

/// Every foreign delete the servers recorded: a delete by a named client
/// of a key another named client wrote last.
pub fn check(history: &History) -> Vec<Violation> {
    let entries = history.entries();
    let origin = history.wall(Duration::ZERO);
    history
        .keys()
        .changes()
        .into_iter()
        .filter(|change| {
            change.change == Change::Deleted
                && matches!((&change.by, &change.owner_before), (Some(by), Some(owner))
                    if by != owner && is_client(by) && is_client(owner))
        })
        .map(|change| {
            let by = change.by.unwrap_or_default();
            let owner = change.owner_before.unwrap_or_default();
            let at = change.at.duration_since(origin).unwrap_or_default();
            // The evidence around the delete: the owner's grant and the
            // deleter's release before it, the command as the node's
            // `MONITOR` printed it (an explorer's history holds it), and
            // the release's answer.
            let before = |process: &str, op: Op, phase: Phase| {
                entries
                    .iter()
                    .rfind(|e| e.at <= at + SLACK && e.process == process && e.is(op, phase))
            };
            let deleted = entries.iter().find(|e| {
                e.process == by
                    && e.at + SLACK >= at
                    && matches!(&e.what, What::Server { node, .. } if *node == change.node)
            });
            let answered = entries
                .iter()
                .find(|e| e.at + SLACK >= at && e.process == by && e.is(Op::Release, Phase::Ok));
            let evidence = [
                before(&owner, Op::Acquire, Phase::Ok),
                before(&by, Op::Release, Phase::Invoke),
                deleted,
                answered,
            ]
            .into_iter()
            .flatten()
            .map(|e| e.index)
            .collect();
            Violation {
                finding: Finding::ForeignDelete,
                text: format!(
                    "on {}, {by}'s DEL removed {} while it held {owner}'s value",
                    change.node, change.key
                ),
                processes: vec![by, owner],
                evidence,
            }
        })
        .collect()
}

/// A named client of the workload: not a bare address (a connection that
/// never named itself), not the harness.
fn is_client(name: &str) -> bool {
    !name.starts_with("harness") && !name.contains(':')
}

#[cfg(test)]
mod tests {
    use super::super::tests::{Script, word};
    use super::*;
    use crate::observe::NodeKeys;

    /// A takes the lock at 10, its key expires, B takes it at 350, and A's
    /// release at 400 deletes the key or not, as the node's record shows.
    fn story(deletes: bool) -> Vec<Violation> {
        let mut s = Script::new(10);
        s.step(10, "client-A", Op::Acquire, Phase::Invoke);
        s.step(11, "client-A", Op::Acquire, Phase::Ok);
        s.step(350, "client-B", Op::Acquire, Phase::Invoke);
        s.step(351, "client-B", Op::Acquire, Phase::Ok);
        s.step(399, "client-A", Op::Release, Phase::Invoke);
        s.op(401, "client-A", Op::Release, Phase::Ok, word("deleted"));
        let history = s.history();
        let mut keys = NodeKeys::new("lock", history.keys());
        let at = |ms| history.wall(Duration::from_millis(ms));
        keys.notified("lock:stock", "set", at(10));
        keys.command("client-A", at(10));
        keys.notified("lock:stock", "expired", at(310));
        keys.notified("lock:stock", "set", at(350));
        keys.command("client-B", at(350));
        if deletes {
            keys.notified("lock:stock", "del", at(400));
        }
        keys.command("client-A", at(400));
        check(&history)
    }

    #[test]
    fn a_delete_of_a_key_someone_else_wrote_since_is_foreign() {
        let found = story(true);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].processes, ["client-A", "client-B"]);
        assert_eq!(found[0].evidence, [4, 5, 6]);
        assert_eq!(
            found[0].text,
            "on lock, client-A's DEL removed lock:stock while it held client-B's value"
        );
    }

    #[test]
    fn a_release_that_deleted_nothing_is_not() {
        assert_eq!(story(false), []);
    }
}
