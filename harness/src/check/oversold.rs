//! OVERSOLD: more orders than items that left the stock.
//!
//! Every sale writes the stock one lower than it read, and records one
//! order. If sales took turns, the stock went down by exactly the number of
//! orders. More orders than items that left the stock means two sales
//! started from the same reading: one of them overwrote the other (a lost
//! update). No sale writes the stock below zero, so more orders than there
//! was stock, the small stock of a scripted story sold twice, is always
//! one; with the explorer's large stock, the lost update shows alone.
//!
//! The numbers come from the history's final read (taken once every client
//! has stopped, so sales whose reply was lost are counted too); the
//! evidence is the first two sales that started from the same reading.

use super::{Finding, Violation};
use crate::history::{Entry, Op, Phase, What, operations, setup};

/// The oversell `entries` end with, if they do.
pub fn check(entries: &[Entry]) -> Vec<Violation> {
    let (_, initial, _) = setup(entries);
    let Some((at, orders, left)) = entries.iter().find_map(|e| match e.what {
        What::Final {
            orders, stock_left, ..
        } => Some((e.index, orders, stock_left)),
        _ => None,
    }) else {
        return Vec::new();
    };
    let gone = initial - left;
    if orders <= gone {
        return Vec::new();
    }
    let mut evidence = vec![at];
    let mut processes = Vec::new();
    let sales: Vec<_> = operations(entries)
        .into_iter()
        .filter(|o| o.op == Op::Sell && o.phase() == Some(Phase::Ok))
        .filter(|o| o.result().result.as_deref() == Some("sold"))
        .collect();
    'pairs: for (i, first) in sales.iter().enumerate() {
        for second in &sales[i + 1..] {
            if first.result().number == second.result().number {
                for sale in [first, second] {
                    evidence.push(sale.invoke.index);
                    evidence.extend(sale.done.as_ref().map(|d| d.index));
                    processes.push(sale.process.clone());
                }
                break 'pairs;
            }
        }
    }
    let text = if orders > initial {
        format!("{orders} orders for {initial} items")
    } else {
        format!(
            "{orders} orders, but the stock only went from {initial} to {left}: {} sale(s) \
             overwrote another",
            orders - gone
        )
    };
    vec![Violation {
        finding: Finding::Oversold,
        text,
        processes,
        evidence,
    }]
}

#[cfg(test)]
mod tests {
    use super::super::tests::{Script, word};
    use super::*;
    use crate::history::Detail;

    fn sale(s: &mut Script, ms: u64, who: &str, from: i64) {
        let read = Detail {
            number: Some(from),
            ..Detail::default()
        };
        s.op(ms, who, Op::Sell, Phase::Invoke, read);
        let mut sold = word("sold");
        sold.number = Some(from);
        s.op(ms + 1, who, Op::Sell, Phase::Ok, sold);
    }

    fn finish(s: &mut Script, orders: i64, stock_left: i64) {
        s.push(
            1000,
            "harness",
            What::Final {
                orders,
                stock_left,
                placed: Vec::new(),
                refused: Vec::new(),
            },
        );
    }

    #[test]
    fn sales_that_took_turns_add_up() {
        let mut s = Script::new(10);
        sale(&mut s, 10, "client-A", 10);
        sale(&mut s, 20, "client-B", 9);
        finish(&mut s, 2, 8);
        assert_eq!(check(&s.history().entries()), []);
    }

    #[test]
    fn more_orders_than_stock_is_told_as_such() {
        let mut s = Script::new(1);
        sale(&mut s, 10, "client-A", 1);
        sale(&mut s, 20, "client-B", 1);
        finish(&mut s, 2, 0);
        assert_eq!(
            check(&s.history().entries())[0].text,
            "2 orders for 1 items"
        );
    }

    #[test]
    fn two_sales_from_one_reading_are_a_lost_update() {
        let mut s = Script::new(10);
        sale(&mut s, 10, "client-A", 10);
        sale(&mut s, 20, "client-B", 10);
        finish(&mut s, 2, 9);
        let found = check(&s.history().entries());
        assert_eq!(found[0].processes, ["client-A", "client-B"]);
        assert!(found[0].text.contains("1 sale(s) overwrote another"));
    }
}
