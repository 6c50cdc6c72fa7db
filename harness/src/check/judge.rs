//! A scripted story's verdict: the checkers' findings over its history,
//! the same functions the explorer calls, composed. What each word means
//! is said once, in its checker; what is a story's own is here: which
//! findings it reports (every word of the matrix, each occurrence, where
//! the explorer keeps the first of five) and how they read, one line each,
//! with a line for each retry the resource refused.

use super::{
    Finding, Verdict, Violation, duplicate, foreign_delete, liveness, mutual_exclusion, order,
    oversold,
};
use crate::history::{History, What};

/// The verdict, and one line per finding saying what was seen.
pub fn judge(history: &History) -> (Verdict, Vec<String>) {
    let entries = history.entries();
    let found: Vec<Violation> = [
        oversold::check(&entries),
        duplicate::check(&entries),
        mutual_exclusion::check(&entries),
        foreign_delete::check(history),
        liveness::deadlocks(history),
        liveness::self_blocked(history),
        liveness::refused(&entries),
        order::check(&entries),
    ]
    .concat();
    let mut verdict = Verdict::ok();
    let mut said = Vec::new();
    for violation in &found {
        verdict.insert(violation.finding);
        let text = match (violation.finding, &violation.processes[..]) {
            (Finding::Overlap, [first, second]) => {
                format!("{second} entered while {first} was inside")
            }
            _ => violation.text.clone(),
        };
        said.push(format!("{}: {text}", violation.finding.label()));
    }
    let refused = entries.iter().find_map(|e| match &e.what {
        What::Final { refused, .. } => Some(refused.as_slice()),
        _ => None,
    });
    for (request, sellers) in duplicate::charges_by_request(refused.unwrap_or_default()) {
        said.push(format!(
            "the resource refused {request} again ({}): charged once, the retry recorded as a \
             duplicate",
            sellers.join(", ")
        ));
    }
    (verdict, said)
}

#[cfg(test)]
mod tests {
    use lockcore::{Acquired, Release};

    use super::*;

    #[test]
    fn a_story_reads_each_finding_as_a_line_of_its_own() {
        let history = History::new();
        history.push("harness", crate::check::tests::setup(1));
        let held = Acquired::with_value("1");
        for client in ["client-A", "client-B", "client-C"] {
            history.acquired(client, &held);
        }
        history.release_sent("client-A");
        history.released("client-A", Release::Deleted);
        history.push(
            "harness",
            What::Final {
                orders: 2,
                stock_left: 0,
                placed: vec!["client-A request-1".into(), "client-B request-1".into()],
                refused: vec!["client-C request-1".into()],
            },
        );
        let (verdict, said) = judge(&history);
        assert_eq!(verdict.to_string(), "OVERSOLD OVERLAP DUPLICATE");
        assert_eq!(
            said,
            [
                "OVERSOLD: 2 orders for 1 items",
                "DUPLICATE: request-1 was charged 2 times (client-A, client-B)",
                "OVERLAP: client-B entered while client-A was inside",
                "OVERLAP: client-C entered while client-A was inside",
                "OVERLAP: client-C entered while client-B was inside",
                "the resource refused request-1 again (client-C): charged once, the retry \
                 recorded as a duplicate",
            ]
        );
    }
}
