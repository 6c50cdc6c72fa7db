//! Oversold, or a lost update: the orders against the stock.
//!
//! Every sale writes the stock one lower than it read, and records one
//! order. If sales took turns, the stock went down by exactly the number of
//! orders. More orders than items that left the stock means two sales
//! started from the same reading: one of them overwrote the other. With a
//! small stock that is selling items that do not exist.
//!
//! The numbers come from the history's final read (taken once every client
//! has stopped, so sales whose reply was lost are counted too); the
//! evidence is the first two sales that started from the same reading.

use super::{Finding, Violation};
use crate::history::{Entry, Op, Phase, What, operations, setup};

/// Whether `entries` end with more orders than items sold.
pub fn check(entries: &[Entry]) -> Option<Violation> {
    let (_, initial, _) = setup(entries);
    let (at, orders, left) = entries.iter().find_map(|e| match e.what {
        What::Final {
            orders, stock_left, ..
        } => Some((e.index, orders, stock_left)),
        _ => None,
    })?;
    let gone = initial - left;
    if orders <= gone {
        return None;
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
    Some(Violation {
        finding: Finding::Oversold,
        text: format!(
            "{orders} orders, but the stock only went from {initial} to {left}: {} sale(s) \
             overwrote another{}",
            orders - gone,
            if orders > initial {
                " and more was sold than there was"
            } else {
                ""
            }
        ),
        processes,
        evidence,
    })
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
        assert_eq!(check(&s.history().entries()), None);
    }

    #[test]
    fn two_sales_from_one_reading_are_a_lost_update() {
        let mut s = Script::new(10);
        sale(&mut s, 10, "client-A", 10);
        sale(&mut s, 20, "client-B", 10);
        finish(&mut s, 2, 9);
        let found = check(&s.history().entries()).expect("oversold");
        assert_eq!(found.processes, ["client-A", "client-B"]);
    }
}
