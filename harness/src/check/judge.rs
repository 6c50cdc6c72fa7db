//! A scripted story's verdict: reads its history and says which findings
//! it shows.
//!
//! Scenarios cause things and the history records them (who acquired, who
//! asked for the lock and how long, which fault was aimed at whom); the
//! servers record what they did to their keys. The matrix's words:
//!
//! - OVERSOLD: more orders in the database than there was stock;
//! - OVERLAP: two clients' critical sections overlapped ([`sections`]);
//! - FOREIGN-DELETE: a client's command deleted a key another client had
//!   written (the servers' own record, [`crate::observe::KeyRecord`]);
//! - DEADLOCK: a client asked for the lock for its whole patience window,
//!   nobody acquired meanwhile, and the lock key existed all along;
//! - SELF-BLOCKED: a holder asked for the lock it held and was granted it
//!   only after its own key had expired;
//! - REFUSED: the lock answered "not acquired" to a client while a fault was
//!   aimed at it, and nobody was granted an unsafe lock (no overlap). A
//!   client library that gives up on a late reply is not the lock refusing:
//!   the lock did grant, so an error does not count.
//! - OUT-OF-ORDER: the lock went to a client while another that had lined
//!   up before it still waited ([`super::order`]); judged only where a
//!   story lined its waiters up;
//! - DUPLICATE: one request id on two orders or more in the database: a
//!   request the gateway retried was charged again. A lock cannot see this
//!   (both charges may be perfectly serialised); only the orders' request
//!   ids show it. A second application the resource refused is not one: it
//!   is told, from the database's duplicates list, as a line of its own.

use std::time::{Duration, SystemTime};

use super::{Finding, Verdict, sections};
use crate::history::{Entry, History, Op, Phase, What, setup};

/// The request ids in `orders` (entries `seller request`), each with the
/// sellers that charged it, in order of first charge.
fn charges_by_request(orders: &[String]) -> Vec<(&str, Vec<&str>)> {
    let mut charges: Vec<(&str, Vec<&str>)> = Vec::new();
    for order in orders {
        let Some((seller, request)) = order.split_once(' ') else {
            continue;
        };
        match charges.iter_mut().find(|(r, _)| *r == request) {
            Some((_, sellers)) => sellers.push(seller),
            None => charges.push((request, vec![seller])),
        }
    }
    charges
}

/// The verdict, and one line per finding saying what was seen. Where the
/// clients' side suggests a foreign delete that the servers' record does
/// not show, the record wins and a line says so.
pub fn judge(history: &History) -> (Verdict, Vec<String>) {
    let entries = history.entries();
    let (_, initial_stock, _) = setup(&entries);
    let lock_key = entries
        .iter()
        .find_map(|e| match &e.what {
            What::Setup { lock_key, .. } => Some(lock_key.as_str()),
            _ => None,
        })
        .unwrap_or_default();
    let (placed, refused) = entries
        .iter()
        .find_map(|e| match &e.what {
            What::Final {
                placed, refused, ..
            } => Some((placed.as_slice(), refused.as_slice())),
            _ => None,
        })
        .unwrap_or_default();
    let keys = history.keys();
    let mut verdict = Verdict::ok();
    let mut said = Vec::new();
    let mut find = |finding: Finding, line: String| {
        verdict.insert(finding);
        said.push(line);
    };

    let orders = i64::try_from(placed.len()).unwrap_or(i64::MAX);
    if orders > initial_stock {
        find(
            Finding::Oversold,
            format!("OVERSOLD: {} orders for {} items", orders, initial_stock),
        );
    }
    for (request, sellers) in charges_by_request(placed) {
        if sellers.len() > 1 {
            find(
                Finding::Duplicate,
                format!(
                    "DUPLICATE: {request} was charged {} times ({})",
                    sellers.len(),
                    sellers.join(", ")
                ),
            );
        }
    }
    let mut retries_refused = Vec::new();
    for (request, sellers) in charges_by_request(refused) {
        retries_refused.push(format!(
            "the resource refused {request} again ({}): charged once, the retry recorded \
             as a duplicate",
            sellers.join(", ")
        ));
    }
    for passed in super::order::passed_over(&entries) {
        find(
            Finding::OutOfOrder,
            format!(
                "OUT-OF-ORDER: {} got the lock while {} waited in line before it",
                passed.served,
                passed.waiting.join(", ")
            ),
        );
    }
    let overlaps = overlaps(&entries);
    for (first, second) in &overlaps {
        find(
            Finding::Overlap,
            format!("OVERLAP: {second} entered while {first} was inside"),
        );
    }

    let foreign: Vec<_> = keys
        .changes()
        .into_iter()
        .filter(|c| c.is_foreign_delete())
        .collect();
    for change in &foreign {
        find(
            Finding::ForeignDelete,
            format!(
                "FOREIGN-DELETE: on {}, {}'s DEL removed {} while it held {}'s value",
                change.node,
                change.by.as_deref().unwrap_or("?"),
                change.key,
                change.owner_before.as_deref().unwrap_or("?"),
            ),
        );
    }
    let mut unconfirmed = Vec::new();
    for (by, victim) in suspected_foreign_deletes(&entries) {
        let confirmed = foreign.iter().any(|c| {
            c.by.as_deref() == Some(by.as_str())
                && c.owner_before.as_deref() == Some(victim.as_str())
        });
        // The clients' side (someone acquired before the release was sent)
        // also fires when a release and the next acquisition are merely in
        // flight together, as random schedules make them; the servers'
        // record decides, and the timeline says the two differed.
        if !confirmed {
            unconfirmed.push(format!(
                "not counted: the clients' record suspected {by}'s release of deleting \
                 {victim}'s lock; the servers' record shows no such DEL"
            ));
        }
    }

    for ask in asks(history, &entries) {
        let waited = ask.waited.as_millis();
        if !ask.granted
            && !ask.anyone_acquired
            && keys.existed_throughout(lock_key, ask.from, ask.to)
        {
            find(
                Finding::Deadlock,
                format!(
                    "DEADLOCK: {} asked for {waited}ms; the lock key existed all along and \
                     nobody acquired",
                    ask.client
                ),
            );
        }
        if ask.granted
            && ask.held_already
            && let Some(expiry) = keys.expired_then_retaken(lock_key, &ask.client)
        {
            find(
                Finding::SelfBlocked,
                format!(
                    "SELF-BLOCKED: {} asked again for the lock it held, waited {waited}ms, \
                     and got it only after its own key expired on {}",
                    ask.client, expiry.node
                ),
            );
        }
    }

    if overlaps.is_empty() {
        for client in refused_during_their_fault(&entries) {
            find(
                Finding::Refused,
                format!(
                    "REFUSED: the lock told {client} \"not acquired\" during the fault aimed at \
                     it, and granted nobody an unsafe lock"
                ),
            );
        }
    }
    said.extend(unconfirmed);
    said.extend(retries_refused);
    (verdict, said)
}

fn is(entry: &Entry, op: Op, phase: Phase) -> bool {
    matches!(entry.op(), Some((o, p, _)) if o == op && p == phase)
}

/// Pairs of clients whose critical sections overlapped ([`sections`]), the
/// one that entered first first, each pair once.
fn overlaps(entries: &[Entry]) -> Vec<(String, String)> {
    let all = sections(entries);
    let mut pairs = Vec::new();
    for (i, first) in all.iter().enumerate() {
        for second in &all[i + 1..] {
            let still_inside = first.closed.is_none_or(|(_, end)| end > second.start);
            let pair = (first.process.clone(), second.process.clone());
            if first.process != second.process && still_inside && !pairs.contains(&pair) {
                pairs.push(pair);
            }
        }
    }
    pairs
}

/// Releases that, by the clients' side alone, deleted a lock taken by
/// someone else (who released, whose lock): a client's key is provably
/// gone once another client acquires after it (`SET NX` only succeeds on
/// an absent key); if its release still deleted a key, that key was
/// someone else's. Only the servers' record confirms it.
fn suspected_foreign_deletes(entries: &[Entry]) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let deleted = matches!(entry.op(), Some((Op::Release, Phase::Ok, d))
            if d.result.as_deref() == Some("deleted"));
        if !deleted {
            continue;
        }
        let by = &entry.process;
        let before = &entries[..i];
        let Some(sent) = before
            .iter()
            .rposition(|e| &e.process == by && is(e, Op::Release, Phase::Invoke))
        else {
            continue;
        };
        let Some(taken) = before[..sent]
            .iter()
            .rposition(|e| &e.process == by && is(e, Op::Acquire, Phase::Ok))
        else {
            continue;
        };
        if let Some(victim) = before[taken + 1..sent]
            .iter()
            .rev()
            .find(|e| &e.process != by && is(e, Op::Acquire, Phase::Ok))
        {
            found.push((by.clone(), victim.process.clone()));
        }
    }
    found
}

/// A window in which a client asked for the lock ([`What::Ask`]), and how
/// it ended.
struct Ask {
    client: String,
    from: SystemTime,
    /// When the answer came (now, if none came).
    to: SystemTime,
    waited: Duration,
    granted: bool,
    /// Whether anyone at all acquired while it asked (itself included).
    anyone_acquired: bool,
    /// Whether it already held the lock as it asked (it acquired and had
    /// neither released nor died).
    held_already: bool,
}

fn asks(history: &History, entries: &[Entry]) -> Vec<Ask> {
    let answers = |e: &Entry, client: &str| {
        e.process == client && (is(e, Op::Acquire, Phase::Ok) || is(e, Op::Acquire, Phase::Fail))
    };
    let mut found = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        if !matches!(entry.what, What::Ask { .. }) {
            continue;
        }
        let client = &entry.process;
        let answer_at = entries[i + 1..]
            .iter()
            .position(|e| answers(e, client))
            .map(|p| p + i + 1);
        let answer = answer_at.map(|j| &entries[j]);
        let inside = &entries[i + 1..answer_at.map_or(entries.len(), |j| j + 1)];
        let held_already = entries[..i]
            .iter()
            .rev()
            .filter(|e| &e.process == client)
            .find(|e| {
                is(e, Op::Acquire, Phase::Ok)
                    || is(e, Op::Release, Phase::Invoke)
                    || e.what == What::Died
            })
            .is_some_and(|e| is(e, Op::Acquire, Phase::Ok));
        let end = answer.map_or_else(|| history.now(), |a| a.at);
        found.push(Ask {
            client: client.clone(),
            from: history.wall(entry.at),
            to: history.wall(end),
            waited: end.saturating_sub(entry.at),
            granted: answer.is_some_and(|a| is(a, Op::Acquire, Phase::Ok)),
            anyone_acquired: inside.iter().any(|e| is(e, Op::Acquire, Phase::Ok)),
            held_already,
        });
    }
    found
}

/// Clients the lock told "not acquired" while a fault aimed at them was
/// on.
fn refused_during_their_fault(entries: &[Entry]) -> Vec<String> {
    let mut refused = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        if !is(entry, Op::Acquire, Phase::Fail) || refused.contains(&entry.process) {
            continue;
        }
        let fault_on = entries[..i]
            .iter()
            .rev()
            .find_map(|e| match &e.what {
                What::Nemesis { target, phase, .. }
                    if target.as_deref() == Some(entry.process.as_str()) =>
                {
                    Some(*phase == "start")
                }
                _ => None,
            })
            .unwrap_or(false);
        if fault_on {
            refused.push(entry.process.clone());
        }
    }
    refused
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use lockcore::{Acquired, Release};

    use super::*;
    use crate::history::fault_kind::Kind;
    use crate::observe::{NodeKeys, Timeline};

    const KEY: &str = "lock:stock";
    const PATIENCE: Duration = Duration::from_millis(900);

    /// A history set up as a run's is, with `stock` items.
    fn history(stock: i64) -> History {
        let history = History::new(Timeline::new());
        history.push("harness", crate::check::tests::setup(stock));
        history
    }

    fn verdict(history: &History) -> Verdict {
        judge(history).0
    }

    /// `by` writes the lock key now, as the node's record shows it.
    fn written(keys: &mut NodeKeys, by: &str) {
        keys.notified(KEY, "set", SystemTime::now());
        keys.command(by, SystemTime::now());
    }

    fn expired(keys: &mut NodeKeys) {
        keys.notified(KEY, "expired", SystemTime::now());
        keys.command("harness-monitor", SystemTime::now());
    }

    fn setup() -> (History, NodeKeys) {
        let history = history(1);
        let keys = NodeKeys::new("lock", history.keys());
        (history, keys)
    }

    #[test]
    fn a_release_after_someone_else_acquired_is_an_overlap_and_a_suspicion_the_servers_decide() {
        let (history, _) = setup();
        let held = Acquired::with_value("1");
        history.acquired("client-A", &held);
        history.acquired("client-B", &held);
        history.release_sent("client-A");
        history.released("client-A", Release::Deleted);
        let entries = history.entries();
        assert_eq!(
            suspected_foreign_deletes(&entries),
            [("client-A".to_owned(), "client-B".to_owned())]
        );
        assert_eq!(overlaps(&entries).len(), 1);
        // No DEL of B's key in the servers' record: not counted.
        let (verdict, said) = judge(&history);
        assert_eq!(verdict, Verdict::of(&[Finding::Overlap]));
        assert!(
            said.iter().any(|l| l.starts_with("not counted")),
            "{said:?}"
        );
    }

    #[test]
    fn taking_turns_is_neither_overlap_nor_foreign_delete() {
        let (history, _) = setup();
        let held = Acquired::with_value("1");
        for client in ["client-A", "client-B", "client-A"] {
            history.acquired(client, &held);
            history.release_sent(client);
            history.released(client, Release::Deleted);
        }
        let entries = history.entries();
        assert!(suspected_foreign_deletes(&entries).is_empty());
        assert!(overlaps(&entries).is_empty());
    }

    #[test]
    fn a_release_that_deleted_nothing_is_not_a_foreign_delete() {
        let (history, _) = setup();
        let held = Acquired::with_value("1");
        history.acquired("client-A", &held);
        history.acquired("client-B", &held);
        history.release_sent("client-A");
        history.released("client-A", Release::NothingDeleted);
        assert!(suspected_foreign_deletes(&history.entries()).is_empty());
    }

    #[test]
    fn an_unconfirmed_release_says_which_masters_were_out_of_reach() {
        let (history, _) = setup();
        history.acquired("client-A", &Acquired::with_value("1"));
        history.release_sent("client-A");
        history.released(
            "client-A",
            Release::Unconfirmed {
                deleted: 2,
                not_ours: 0,
                unreachable: 3,
            },
        );
        let said = history
            .timeline()
            .events()
            .iter()
            .map(|e| e.text.clone())
            .find(|text| text.starts_with("release"))
            .unwrap_or_default();
        assert!(
            said.contains("UNCONFIRMED") && said.contains("3 master(s) unreachable"),
            "{said}"
        );
        assert!(!said.contains("deleted nothing"), "{said}");
        assert!(suspected_foreign_deletes(&history.entries()).is_empty());
    }

    #[test]
    fn a_wait_in_vain_while_the_key_stays_is_a_deadlock() {
        let (history, mut keys) = setup();
        written(&mut keys, "client-A");
        history.acquired("client-A", &Acquired::with_value("a"));
        history.asking("client-B", PATIENCE);
        history.not_acquired("client-B");
        assert_eq!(verdict(&history), Verdict::of(&[Finding::Deadlock]));
    }

    #[test]
    fn a_wait_in_vain_after_the_key_went_away_is_no_deadlock() {
        let (history, mut keys) = setup();
        written(&mut keys, "client-A");
        history.acquired("client-A", &Acquired::with_value("a"));
        history.asking("client-B", PATIENCE);
        std::thread::sleep(Duration::from_millis(2));
        expired(&mut keys);
        history.not_acquired("client-B");
        assert_eq!(verdict(&history), Verdict::ok());
    }

    #[test]
    fn the_holder_granted_again_after_its_key_expired_is_self_blocked() {
        let (history, mut keys) = setup();
        written(&mut keys, "client-A");
        history.acquired("client-A", &Acquired::with_value("a"));
        history.asking("client-A", PATIENCE);
        expired(&mut keys);
        written(&mut keys, "client-A");
        history.acquired("client-A", &Acquired::with_value("a2"));
        assert_eq!(verdict(&history), Verdict::of(&[Finding::SelfBlocked]));
    }

    #[test]
    fn the_holder_granted_again_while_its_key_stayed_reentered() {
        let (history, mut keys) = setup();
        written(&mut keys, "client-A");
        history.acquired("client-A", &Acquired::with_value("a"));
        history.asking("client-A", PATIENCE);
        // HINCRBY by the same owner: no change of owner, nothing recorded.
        keys.notified(KEY, "hincrby", SystemTime::now());
        keys.command("client-A", SystemTime::now());
        history.acquired("client-A", &Acquired::with_value("a"));
        assert_eq!(verdict(&history), Verdict::ok());
    }

    fn orders_verdict(placed: &[&str], refused: &[&str]) -> (Verdict, Vec<String>) {
        let history = history(10);
        history.push(
            "harness",
            What::Final {
                orders: placed.len() as i64,
                stock_left: 0,
                placed: placed.iter().map(|s| (*s).to_owned()).collect(),
                refused: refused.iter().map(|s| (*s).to_owned()).collect(),
            },
        );
        judge(&history)
    }

    #[test]
    fn one_request_id_on_two_orders_is_a_duplicate() {
        let (verdict, said) = orders_verdict(&["client-A request-1", "client-B request-1"], &[]);
        assert_eq!(verdict, Verdict::of(&[Finding::Duplicate]));
        assert!(said[0].contains("request-1 was charged 2 times (client-A, client-B)"));
    }

    #[test]
    fn different_ids_orders_without_ids_and_a_refused_retry_are_no_duplicate() {
        let (verdict, said) = orders_verdict(
            &[
                "client-A",
                "client-A",
                "client-A request-1",
                "client-B request-2",
            ],
            &["client-B request-1"],
        );
        assert_eq!(verdict, Verdict::ok());
        assert!(said[0].contains("refused request-1 again (client-B)"));
    }

    #[test]
    fn a_no_during_the_clients_own_fault_is_a_refusal_and_one_outside_it_is_not() {
        let (history, _) = setup();
        history.not_acquired("client-A");
        assert_eq!(verdict(&history), Verdict::ok());
        history.fault_began("client-A", Kind::Delay, "replies delayed");
        history.not_acquired("client-A");
        history.fault_ended("client-A", Kind::Delay);
        assert_eq!(verdict(&history), Verdict::of(&[Finding::Refused]));
    }
}
