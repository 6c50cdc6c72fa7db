//! DUPLICATE: one request id on two orders or more: a request the gateway
//! retried was charged again.
//!
//! A lock cannot see this (both charges may be perfectly serialised); only
//! the orders' request ids show it, read from the history's final read. A
//! second application the resource refused is not one: it is not an order.

use super::{Finding, Violation};
use crate::history::{Entry, What};

/// Every request id charged more than once.
pub fn check(entries: &[Entry]) -> Vec<Violation> {
    let Some((at, placed)) = entries.iter().find_map(|e| match &e.what {
        What::Final { placed, .. } => Some((e.index, placed)),
        _ => None,
    }) else {
        return Vec::new();
    };
    charges_by_request(placed)
        .into_iter()
        .filter(|(_, sellers)| sellers.len() > 1)
        .map(|(request, sellers)| Violation {
            finding: Finding::Duplicate,
            text: format!(
                "{request} was charged {} times ({})",
                sellers.len(),
                sellers.join(", ")
            ),
            processes: sellers.into_iter().map(str::to_owned).collect(),
            evidence: vec![at],
        })
        .collect()
}

/// The request ids in `orders` (entries `seller request`), each with the
/// sellers that charged it, in order of first charge.
pub(super) fn charges_by_request(orders: &[String]) -> Vec<(&str, Vec<&str>)> {
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

#[cfg(test)]
mod tests {
    use super::super::tests::Script;
    use super::*;

    fn found(placed: &[&str]) -> Vec<Violation> {
        let mut s = Script::new(10);
        s.push(
            1000,
            "harness",
            What::Final {
                orders: placed.len() as i64,
                stock_left: 0,
                placed: placed.iter().map(|p| (*p).to_owned()).collect(),
                refused: Vec::new(),
            },
        );
        check(&s.0)
    }

    #[test]
    fn one_request_id_on_two_orders_is_a_duplicate() {
        let found = found(&["client-A request-1", "client-B request-1"]);
        assert_eq!(
            found[0].text,
            "request-1 was charged 2 times (client-A, client-B)"
        );
    }

    #[test]
    fn different_ids_and_orders_without_ids_are_not() {
        let placed = [
            "client-A",
            "client-A",
            "client-A request-1",
            "client-B request-2",
        ];
        assert_eq!(found(&placed), []);
    }
}
