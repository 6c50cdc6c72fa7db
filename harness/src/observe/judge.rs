//! The judge: reads what a run recorded and says which observers fired.
//!
//! Scenarios cause things and record facts (who acquired, who asked for the
//! lock and how long, which fault was aimed at whom); the servers record
//! what they did to their keys. Only this file turns records into findings:
//!
//! - OVERSOLD: more orders in the database than there was stock;
//! - OVERLAP: two clients' critical sections overlapped (the ledger);
//! - FOREIGN-DELETE: a client's command deleted a key another client had
//!   written (the servers' own record, [`KeyRecord`]);
//! - DEADLOCK: a client asked for the lock for its whole patience window,
//!   nobody acquired meanwhile, and the lock key existed all along;
//! - SELF-BLOCKED: a holder asked for the lock it held and was granted it
//!   only after its own key had expired;
//! - REFUSED: the lock answered "not acquired" to a client while a fault was
//!   aimed at it, and nobody was granted an unsafe lock (no overlap). A
//!   client library that gives up on a late reply is not the lock refusing:
//!   the lock did grant, so an error does not count.
//! - DUPLICATE: one request id on two orders or more in the database: a
//!   request the gateway retried was charged again. A lock cannot see this
//!   (both charges may be perfectly serialised); only the orders' request
//!   ids show it. A second application the resource refused is not one: it
//!   is told, from the database's duplicates list, as a line of its own.

use super::{Finding, KeyRecord, Ledger, Verdict};
use crate::error::Result;

/// Everything a run recorded that the judge reads.
#[derive(Debug)]
pub struct Evidence<'a> {
    /// The clients' record.
    pub ledger: &'a Ledger,
    /// The servers' record of their keys.
    pub keys: &'a KeyRecord,
    /// The lock's key.
    pub lock_key: &'a str,
    /// Stock at the start.
    pub initial_stock: i64,
    /// Every order in the database: the seller, and after a space the
    /// purchase's request id when it carried one (`client-B request-1`).
    pub placed: &'a [String],
    /// The second applications of a request id that the resource refused,
    /// as the orders they would have been.
    pub refused: &'a [String],
}

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
/// ledger suspects a foreign delete that the servers' record does not show,
/// the record wins and a line says so.
pub fn judge(evidence: &Evidence<'_>) -> Result<(Verdict, Vec<String>)> {
    let mut verdict = Verdict::ok();
    let mut said = Vec::new();
    let mut find = |finding: Finding, line: String| {
        verdict.insert(finding);
        said.push(line);
    };

    let orders = i64::try_from(evidence.placed.len()).unwrap_or(i64::MAX);
    if orders > evidence.initial_stock {
        find(
            Finding::Oversold,
            format!(
                "OVERSOLD: {} orders for {} items",
                orders, evidence.initial_stock
            ),
        );
    }
    for (request, sellers) in charges_by_request(evidence.placed) {
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
    for (request, sellers) in charges_by_request(evidence.refused) {
        retries_refused.push(format!(
            "the resource refused {request} again ({}): charged once, the retry recorded \
             as a duplicate",
            sellers.join(", ")
        ));
    }
    let overlaps = evidence.ledger.overlaps();
    for overlap in &overlaps {
        find(
            Finding::Overlap,
            format!(
                "OVERLAP: {} entered while {} was inside",
                overlap.second, overlap.first
            ),
        );
    }

    let foreign: Vec<_> = evidence
        .keys
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
    for seen in evidence.ledger.foreign_deletes() {
        let confirmed = foreign.iter().any(|c| {
            c.by.as_deref() == Some(seen.by.as_str())
                && c.owner_before.as_deref() == Some(seen.victim.as_str())
        });
        // The ledger's rule (someone acquired before the release was sent)
        // also fires when a release and the next acquisition are merely in
        // flight together, as random schedules make them; the servers'
        // record decides, and the timeline says the two differed.
        if !confirmed {
            unconfirmed.push(format!(
                "not counted: the ledger suspected {}'s release of deleting {}'s lock; \
                 the servers' record shows no such DEL",
                seen.by, seen.victim
            ));
        }
    }

    for ask in evidence.ledger.asks() {
        let waited = ask.waited.as_millis();
        if !ask.granted
            && !ask.anyone_acquired
            && evidence
                .keys
                .existed_throughout(evidence.lock_key, ask.from, ask.to)
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
            && ask.already_held_since.is_some()
            && let Some(expiry) = evidence
                .keys
                .expired_then_retaken(evidence.lock_key, &ask.client)
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
        for client in evidence.ledger.refused_during_their_fault() {
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
    Ok((verdict, said))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use lockcore::Acquired;

    use super::*;
    use crate::observe::{NodeKeys, Timeline};

    const KEY: &str = "lock:stock";
    const PATIENCE: Duration = Duration::from_millis(900);

    fn verdict(ledger: &Ledger, keys: &KeyRecord) -> Verdict {
        judge(&Evidence {
            ledger,
            keys,
            lock_key: KEY,
            initial_stock: 1,
            placed: &[],
            refused: &[],
        })
        .unwrap()
        .0
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

    fn setup() -> (Ledger, KeyRecord, NodeKeys) {
        let record = KeyRecord::default();
        let keys = NodeKeys::new("lock", record.clone());
        (Ledger::new(Timeline::new()), record, keys)
    }

    #[test]
    fn a_wait_in_vain_while_the_key_stays_is_a_deadlock() {
        let (ledger, record, mut keys) = setup();
        written(&mut keys, "client-A");
        ledger.acquired("client-A", &Acquired::with_value("a"));
        ledger.asking("client-B", PATIENCE);
        ledger.not_acquired("client-B");
        assert_eq!(verdict(&ledger, &record), Verdict::of(&[Finding::Deadlock]));
    }

    #[test]
    fn a_wait_in_vain_after_the_key_went_away_is_no_deadlock() {
        let (ledger, record, mut keys) = setup();
        written(&mut keys, "client-A");
        ledger.acquired("client-A", &Acquired::with_value("a"));
        ledger.asking("client-B", PATIENCE);
        std::thread::sleep(Duration::from_millis(2));
        expired(&mut keys);
        ledger.not_acquired("client-B");
        assert_eq!(verdict(&ledger, &record), Verdict::ok());
    }

    #[test]
    fn the_holder_granted_again_after_its_key_expired_is_self_blocked() {
        let (ledger, record, mut keys) = setup();
        written(&mut keys, "client-A");
        ledger.acquired("client-A", &Acquired::with_value("a"));
        ledger.asking("client-A", PATIENCE);
        expired(&mut keys);
        written(&mut keys, "client-A");
        ledger.acquired("client-A", &Acquired::with_value("a2"));
        assert_eq!(
            verdict(&ledger, &record),
            Verdict::of(&[Finding::SelfBlocked])
        );
    }

    #[test]
    fn the_holder_granted_again_while_its_key_stayed_reentered() {
        let (ledger, record, mut keys) = setup();
        written(&mut keys, "client-A");
        ledger.acquired("client-A", &Acquired::with_value("a"));
        ledger.asking("client-A", PATIENCE);
        // HINCRBY by the same owner: no change of owner, nothing recorded.
        keys.notified(KEY, "hincrby", SystemTime::now());
        keys.command("client-A", SystemTime::now());
        ledger.acquired("client-A", &Acquired::with_value("a"));
        assert_eq!(verdict(&ledger, &record), Verdict::ok());
    }

    fn orders_verdict(placed: &[&str], refused: &[&str]) -> (Verdict, Vec<String>) {
        let (ledger, record, _) = setup();
        let placed: Vec<String> = placed.iter().map(|s| (*s).to_owned()).collect();
        let refused: Vec<String> = refused.iter().map(|s| (*s).to_owned()).collect();
        judge(&Evidence {
            ledger: &ledger,
            keys: &record,
            lock_key: KEY,
            initial_stock: 10,
            placed: &placed,
            refused: &refused,
        })
        .unwrap()
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
        let (ledger, record, _) = setup();
        ledger.not_acquired("client-A");
        assert_eq!(verdict(&ledger, &record), Verdict::ok());
        ledger.fault_began("client-A", "replies delayed");
        ledger.not_acquired("client-A");
        ledger.fault_ended("client-A");
        assert_eq!(verdict(&ledger, &record), Verdict::of(&[Finding::Refused]));
    }
}
