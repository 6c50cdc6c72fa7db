//! Mutual exclusion: no two clients inside their critical sections at once.
//!
//! A section runs from the acquire's `ok` to the release's invocation (or
//! the client's death); both ends are what the client itself saw, so a
//! section is never longer than the time the client believed it held the
//! lock. Two sections of different clients that overlap are two holders.

use super::{Finding, Violation, end_of, sections};
use crate::history::Entry;

// ANCHOR: check
/// The first overlap in `entries`, if any.
pub fn check(entries: &[Entry]) -> Option<Violation> {
    let end = end_of(entries);
    let all = sections(entries);
    for (i, first) in all.iter().enumerate() {
        let first_end = first.end_or(end);
        let Some(second) = all[i + 1..]
            .iter()
            .find(|s| s.process != first.process && s.start < first_end)
        else {
            continue;
        };
        let mut evidence = vec![first.opened, second.opened];
        evidence.extend(first.closed.map(|(index, _)| index));
        evidence.extend(second.closed.map(|(index, _)| index));
        return Some(Violation {
            finding: Finding::Overlap,
            text: format!(
                "{} was told it holds the lock at T+{}ms while {} (told so at T+{}ms) had not \
                 left its critical section",
                second.process,
                second.start.as_millis(),
                first.process,
                first.start.as_millis()
            ),
            processes: vec![first.process.clone(), second.process.clone()],
            evidence,
        });
    }
    None
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
        assert_eq!(check(&s.history().entries()), None);
    }

    #[test]
    fn a_second_holder_inside_the_first_ones_section_is_found() {
        let mut s = Script::new(10);
        s.section("client-A", 10, 500);
        s.section("client-B", 400, 450);
        let found = check(&s.history().entries()).expect("an overlap");
        assert_eq!(found.processes, ["client-A", "client-B"]);
    }
}
