//! STALE-WRITE: the protected resource took a write whose fencing
//! token was lower than one it had already seen.
//!
//! What the resource has seen is what the history shows reaching it: the
//! tokens of accepted sales, and of reads that carried one (a resource that
//! fences reads). A sale invoked after such an entry completed, with a
//! lower token, and accepted, is a stale write. A write-only resource never
//! sees the readers' tokens, so this checker cannot blame it for the
//! stale-write-first order; the oversold checker does.

use super::{Finding, Violation};
use crate::history::{Entry, Op, Phase, operations};

/// The first stale write the resource accepted, if any.
pub fn check(entries: &[Entry]) -> Vec<Violation> {
    let all = operations(entries);
    let seen: Vec<_> = all
        .iter()
        .filter(|o| o.phase() == Some(Phase::Ok))
        .filter(|o| match o.op {
            Op::Sell => o.result().result.as_deref() == Some("sold"),
            Op::Read => true,
            _ => false,
        })
        .filter_map(|o| Some((o.invoke.detail_token()?, o)))
        .collect();
    for write in all
        .iter()
        .filter(|o| o.op == Op::Sell && o.phase() == Some(Phase::Ok))
        .filter(|o| o.result().result.as_deref() == Some("sold"))
    {
        let Some(token) = write.invoke.detail_token() else {
            continue;
        };
        let newer = seen.iter().find(|(seen_token, seen)| {
            *seen_token > token
                && seen
                    .done
                    .as_ref()
                    .is_some_and(|done| done.at < write.invoke.at)
        });
        if let Some((newer_token, newer)) = newer {
            let mut evidence = vec![newer.invoke.index, write.invoke.index];
            evidence.extend(newer.done.as_ref().map(|d| d.index));
            evidence.extend(write.done.as_ref().map(|d| d.index));
            return vec![Violation {
                finding: Finding::StaleWrite,
                text: format!(
                    "{}'s write with token {token} was accepted after the resource had seen \
                     token {newer_token} from {}",
                    write.process, newer.process
                ),
                processes: vec![newer.process.clone(), write.process.clone()],
                evidence,
            }];
        }
    }
    Vec::new()
}

impl Entry {
    /// The fencing token an operation entry carried.
    fn detail_token(&self) -> Option<u64> {
        self.op().and_then(|(_, _, detail)| detail.token)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{Script, word};
    use super::*;
    use crate::history::Detail;

    fn sale(s: &mut Script, ms: u64, who: &str, token: u64, result: &str) {
        let shown = Detail {
            token: Some(token),
            ..Detail::default()
        };
        s.op(ms, who, Op::Sell, Phase::Invoke, shown);
        let phase = if result == "sold" {
            Phase::Ok
        } else {
            Phase::Fail
        };
        s.op(ms + 1, who, Op::Sell, phase, word(result));
    }

    #[test]
    fn a_lower_token_refused_is_fine() {
        let mut s = Script::new(10);
        sale(&mut s, 10, "client-B", 2, "sold");
        sale(&mut s, 20, "client-A", 1, "rejected");
        assert_eq!(check(&s.history().entries()), []);
    }

    #[test]
    fn a_lower_token_accepted_after_a_higher_one_is_a_stale_write() {
        let mut s = Script::new(10);
        sale(&mut s, 10, "client-B", 2, "sold");
        sale(&mut s, 20, "client-A", 1, "sold");
        let found = check(&s.history().entries());
        assert_eq!(found[0].processes, ["client-B", "client-A"]);
    }
}
