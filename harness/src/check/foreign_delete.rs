//! Foreign delete: a release removed a lock that another client had taken.
//!
//! Judged from the servers' own record (`MONITOR` of the lock nodes), not
//! from what the clients believed. A plain `DEL` deletes whatever is under
//! the key; a script that compares before deleting (stages 5 to 8) cannot
//! delete a stranger's lock, so only plain `DEL`s are suspects.
//!
//! The proof: client X's release came back "deleted", and the `DEL` the
//! server ran for it came after another client Y's lock command succeeded
//! on the same node, which in turn came after X's own. Y's `SET NX` (or
//! `SETNX`) succeeded only because X's key was gone by then, and X took no
//! lock since; so the key X's `DEL` removed was not X's.
//!
//! A lock command "succeeded" when the client's acquire came back `ok`: its
//! last command on the node during that acquire is the one that took it.

use std::time::Duration;

use super::{Finding, Violation};
use crate::history::{Entry, Op, Operation, Phase, What, operations, setup};

/// How far a server's clock and the history's may disagree: both are the
/// same machine's, read a few microseconds apart.
const SLACK: Duration = Duration::from_millis(2);

/// The first foreign delete in `entries`, if any.
pub fn check(entries: &[Entry]) -> Option<Violation> {
    let (_, _, lock_nodes) = setup(entries);
    let commands: Vec<(&Entry, &str, &str)> = entries
        .iter()
        .filter_map(|e| match &e.what {
            What::Server { node, command } if lock_nodes.contains(node) => {
                Some((e, node.as_str(), command.as_str()))
            }
            _ => None,
        })
        .collect();
    let all = operations(entries);
    let acquired: Vec<&Operation> = all
        .iter()
        .filter(|o| o.op == Op::Acquire && o.phase() == Some(Phase::Ok))
        .collect();
    // The server command that took the lock for `acquire`, on `node`.
    let taken_on = |acquire: &Operation, node: &str| -> Option<&Entry> {
        let done = acquire.done.as_ref()?;
        commands
            .iter()
            .filter(|(e, n, _)| {
                *n == node
                    && e.process == acquire.process
                    && e.at + SLACK >= acquire.invoke.at
                    && e.at <= done.at + SLACK
            })
            .map(|(e, _, _)| *e)
            .next_back()
    };
    for release in all.iter().filter(|o| {
        o.op == Op::Release
            && o.phase() == Some(Phase::Ok)
            && o.result().result.as_deref() == Some("deleted")
    }) {
        let Some(done) = release.done.as_ref() else {
            continue;
        };
        let Some((del, node, _)) = commands.iter().rev().find(|(e, _, command)| {
            e.process == release.process
                && is_plain_del(command)
                && e.at + SLACK >= release.invoke.at
                && e.at <= done.at + SLACK
        }) else {
            continue;
        };
        let Some(own) = acquired
            .iter()
            .rev()
            .find(|a| a.process == release.process && a.invoke.at < release.invoke.at)
        else {
            continue;
        };
        let Some(own_set) = taken_on(own, node) else {
            continue;
        };
        let victim = acquired
            .iter()
            .filter(|a| a.process != release.process)
            .filter_map(|a| Some((a, taken_on(a, node)?)))
            .rfind(|(_, set)| set.at > own_set.at && set.at < del.at);
        if let Some((victim, set)) = victim {
            return Some(Violation {
                finding: Finding::ForeignDelete,
                text: format!(
                    "{}'s DEL on [{node}] at T+{}ms removed the lock {} took at T+{}ms (its own \
                     was taken at T+{}ms, and was gone when {}'s SET NX succeeded)",
                    release.process,
                    del.at.as_millis(),
                    victim.process,
                    set.at.as_millis(),
                    own_set.at.as_millis(),
                    victim.process
                ),
                processes: vec![release.process.clone(), victim.process.clone()],
                evidence: vec![own_set.index, set.index, del.index, done.index],
            });
        }
    }
    None
}

/// `DEL key`, sent by the client itself (not from inside a script).
fn is_plain_del(command: &str) -> bool {
    command
        .split_whitespace()
        .next()
        .is_some_and(|word| word.eq_ignore_ascii_case("DEL"))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{Script, word};
    use super::*;
    use crate::history::Detail;

    /// A takes the lock at 10; B's at `b_at`; A's DEL at 400.
    fn story(b_at: u64, release_command: &str) -> Option<Violation> {
        let mut s = Script::new(10);
        s.step(10, "client-A", Op::Acquire, Phase::Invoke);
        s.server(10, "client-A", "SET lock:stock 1 NX PX 300");
        s.step(11, "client-A", Op::Acquire, Phase::Ok);
        s.step(b_at, "client-B", Op::Acquire, Phase::Invoke);
        s.server(b_at, "client-B", "SET lock:stock 1 NX PX 300");
        s.op(
            b_at + 1,
            "client-B",
            Op::Acquire,
            Phase::Ok,
            Detail::default(),
        );
        s.step(399, "client-A", Op::Release, Phase::Invoke);
        s.server(400, "client-A", release_command);
        s.op(401, "client-A", Op::Release, Phase::Ok, word("deleted"));
        check(&s.history().entries())
    }

    #[test]
    fn a_del_after_someone_else_took_the_lock_is_foreign() {
        let found = story(350, "DEL lock:stock").expect("a foreign delete");
        assert_eq!(found.processes, ["client-A", "client-B"]);
    }

    #[test]
    fn a_del_before_anyone_else_took_the_lock_is_not() {
        assert_eq!(story(450, "DEL lock:stock"), None);
    }

    #[test]
    fn a_compare_and_delete_script_is_never_foreign() {
        assert_eq!(story(350, "EVALSHA 4a1b… 1 lock:stock"), None);
    }
}
