//! Mutual exclusion (OVERLAP): no two clients inside their critical
//! sections at once.
//!
//! A section runs from the acquire's `ok` to the release's invocation (or
//! the client's death); both ends are what the client itself saw, so a
//! section is never longer than the time the client believed it held the
//! lock. Two sections of different clients that overlap are two holders.

use super::{Finding, Violation, end_of, sections};
use crate::history::Entry;

// ANCHOR: check
/// Every overlap in `entries`: each pair of clients once, the one that
/// entered first first.
pub fn check(entries: &[Entry]) -> Vec<Violation> {
    let end = end_of(entries);
    let all = sections(entries);
    let mut found: Vec<Violation> = Vec::new();
    for (i, first) in all.iter().enumerate() {
        let first_end = first.end_or(end);
        for second in all[i + 1..]
            .iter()
            .filter(|s| s.process != first.process && s.start < first_end)
        {
            let processes = vec![first.process.clone(), second.process.clone()];
            if found.iter().any(|v| v.processes == processes) {
                continue;
            }
            let mut evidence = vec![first.opened, second.opened];
            evidence.extend(first.closed.map(|(index, _)| index));
            evidence.extend(second.closed.map(|(index, _)| index));
            found.push(Violation {
                finding: Finding::Overlap,
                text: format!(
                    "{} was told it holds the lock at T+{}ms while {} (told so at T+{}ms) had \
                     not left its critical section",
                    second.process,
                    second.start.as_millis(),
                    first.process,
                    first.start.as_millis()
                ),
                processes,
                evidence,
            });
        }
    }
    found
}
// ANCHOR_END: check

#[cfg(test)]
mod tests {
    use super::super::tests::Script;
    use super::*;

    #[test]
    fn taking_turns_is_fine() {
        let mut s = Script::new(10);
        s.section("client-A", 10, 50);
        s.section("client-B", 60, 90);
        s.section("client-A", 100, 150);
        assert_eq!(check(&s.history().entries()), []);
    }

    #[test]
    fn each_second_holder_inside_a_first_ones_section_is_found_once() {
        let mut s = Script::new(10);
        s.section("client-A", 10, 500);
        s.section("client-B", 400, 450);
        s.section("client-B", 460, 470);
        let found = check(&s.history().entries());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].processes, ["client-A", "client-B"]);
    }
}
