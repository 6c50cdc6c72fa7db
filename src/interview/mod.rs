//! The interview questions: one list that the terminal walkthrough
//! (`lockstages interview`) asks and the book's interview chapter prints.
//!
//! Each question names the real runs that answer it. The reader predicts
//! what the runs will show (by typing stage numbers, or letters when one
//! stage runs several stories), the runs happen on real Redis servers, and
//! the verdicts the observers reach are set beside the prediction. The
//! chapter is generated from the same list (`interview --markdown`), so the
//! book and the terminal cannot tell different stories.
//!
//! - [`questions`]: the data, in the order the chapter asks them;
//! - [`prediction`]: what the reader typed, and how it compares with the runs;
//! - [`markdown`]: the chapter;
//! - [`screen`]: colours (only on a terminal, never under `NO_COLOR`), the
//!   timeline with the lines that matter marked, wrapped paragraphs.

pub mod markdown;
pub mod prediction;
mod questions;
pub mod screen;

use harness::check::{Finding, Verdict};
use harness::workload::{Fencing, ReleaseOrder, RequestIds};

pub use questions::QUESTIONS;

/// Scenarios that other branches are adding. A question may name them
/// before they land: the walkthrough and the book's command test skip such
/// a run, saying why, until `lockstages list` shows the scenario.
pub const PENDING_SCENARIOS: [&str; 4] = [
    "stale-write-first",
    "business-error",
    "sentinel-failover",
    "split-brain",
];

/// Runs against stage 8's write-only resource, which the matrix leaves out:
/// the stale holder that writes first passes the check, and both orders
/// are recorded (`stage8/tests/stale_writer.rs` shows the same).
const WRITE_ONLY: [(u8, &str, &[Finding]); 1] = [(
    8,
    "stale-write-first",
    &[Finding::Oversold, Finding::Overlap],
)];

/// Runs with the resource checking request ids (`--request-ids`), which
/// the matrix leaves out: the retried request is charged once, and two
/// different requests after a GC pause still oversell
/// (`stage5/tests/idempotency.rs`, `stage8/tests/idempotency.rs`).
const WITH_REQUEST_IDS: [(u8, &str, &[Finding]); 3] = [
    (5, "duplicate-request", &[]),
    (8, "duplicate-request", &[]),
    (5, "gc-pause", &[Finding::Oversold, Finding::Overlap]),
];

/// Runs against a resource that checks no token (`--fencing none`), which
/// the matrix leaves out: a paused holder of stage 9 or 10 whose session or
/// lease expired writes anyway, and sells the item twice
/// (`stage9/tests/paused_holder.rs` and `stage10/tests/paused_holder.rs`
/// show the same).
const UNCHECKED: [(u8, &str, &[Finding]); 2] = [
    (9, "gc-pause", &[Finding::Oversold, Finding::Overlap]),
    (10, "gc-pause", &[Finding::Oversold, Finding::Overlap]),
];

/// One interview question and everything that answers it.
#[derive(Debug)]
pub struct Question {
    /// The question, as an interviewer asks it.
    pub ask: &'static str,
    /// The short answer: a few paragraphs, separated by blank lines.
    pub answer: &'static str,
    /// Where the seeds show Java (Redisson, Spring's `RedisTemplate`): the
    /// Java call and its Rust equivalent in this workspace.
    pub java: Option<&'static str>,
    /// What the reader predicts before the runs, answered by choosing runs.
    pub predict: &'static str,
    /// What a run must show to count as a "yes" to [`Question::predict`].
    pub watch: Watch,
    /// The live runs; the first one's timeline is printed.
    pub runs: &'static [Probe],
    /// Timeline lines containing one of these are the ones that matter.
    pub marks: &'static [&'static str],
    /// Test targets that show the same thing in more detail.
    pub tests: &'static [TestTarget],
    /// What to look for in the output.
    pub look_for: &'static str,
    /// Primary sources: (title, address).
    pub sources: &'static [(&'static str, &'static str)],
    /// The chapter to read next: (title, file in `book/src`).
    pub read_next: (&'static str, &'static str),
}

/// One real run: a scenario against a stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// 0 (no lock) to 10.
    pub stage: u8,
    /// A variant of that stage (`fair`: `stage6-fair`), or none.
    pub variant: Option<&'static str>,
    /// A lock library's row (`redis-py`) instead of a stage, or none.
    pub library: Option<&'static str>,
    /// A scenario name, as `lockstages list` shows it.
    pub scenario: &'static str,
    /// How stage 8's resource checks tokens: the matrix's default, or the
    /// write-only resource a question needs to show why it is not enough.
    pub fencing: Fencing,
    /// Whether the resource charges a request id once (`--request-ids`).
    pub request_ids: RequestIds,
    /// When `release-before-commit`'s purchase releases the lock: before
    /// its commit (the story's bug, the matrix's run) or after
    /// (`--release-after-commit`).
    pub release_order: ReleaseOrder,
    /// The verdict the question's answer says this run shows (`ok`, or the
    /// findings' labels). A test holds it against [`Probe::expected`], so a
    /// change to the expected matrix points at the answers to read again.
    pub says: &'static str,
}

/// `cargo test -p <package> <file>::`: one file's tests in a package's test
/// binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestTarget {
    /// `stage6`.
    pub package: &'static str,
    /// `gc_pause`: the file `tests/gc_pause.rs`.
    pub target: &'static str,
}

/// What makes a run a "yes" for the question's prediction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watch {
    /// This observer fired.
    Fires(Finding),
    /// No observer fired at all.
    Clean,
}

impl Watch {
    /// Whether a run with this verdict is a "yes".
    pub fn holds(self, verdict: &Verdict) -> bool {
        match self {
            Watch::Fires(finding) => verdict.has(finding),
            Watch::Clean => verdict.is_ok(),
        }
    }

    /// What a "yes" means, for the screen and the chapter.
    pub fn describe(self) -> String {
        match self {
            Watch::Fires(finding) => format!("{} fired", finding.label()),
            Watch::Clean => "the verdict is ok".to_owned(),
        }
    }
}

impl Probe {
    /// `stage6`, `stage6-fair`, or a library's row (`redis-py`).
    pub fn stage_name(&self) -> String {
        match (self.library, self.variant) {
            (Some(library), _) => library.to_owned(),
            (None, Some(variant)) => format!("stage{}-{variant}", self.stage),
            (None, None) => format!("stage{}", self.stage),
        }
    }

    /// `stage8 stale-write-first`, with `--fencing write-only` when the
    /// run uses the write-only resource.
    pub fn label(&self) -> String {
        let label = self.fencing_label();
        let label = match self.request_ids {
            RequestIds::Ignored => label,
            RequestIds::Checked => format!("{label} --request-ids"),
        };
        match self.release_order {
            ReleaseOrder::BeforeCommit => label,
            ReleaseOrder::AfterCommit => format!("{label} --release-after-commit"),
        }
    }

    fn fencing_label(&self) -> String {
        match self.fencing {
            Fencing::ReadsAndWrites => format!("{} {}", self.stage_name(), self.scenario),
            other => format!(
                "{} {} --fencing {}",
                self.stage_name(),
                self.scenario,
                other.label()
            ),
        }
    }

    /// The command that shows this run.
    pub fn command(&self) -> String {
        format!("cargo run --release -- run {}", self.label())
    }

    /// The verdict the observers must reach on this run: the expected
    /// matrix's cell, or for the write-only resource and the unchecked one
    /// (which the matrix does not run) what the stages' tests show.
    pub fn expected(&self) -> Option<Verdict> {
        use crate::matrix::{Expected, expected};
        if self.release_order == ReleaseOrder::AfterCommit {
            // The fix: whatever the lock, the next holder reads the
            // committed stock (`harness/src/scenario/release_before_commit.rs`).
            return (self.scenario == "release-before-commit").then(|| Verdict::of(&[]));
        }
        if self.request_ids == RequestIds::Checked {
            return WITH_REQUEST_IDS
                .iter()
                .find(|(stage, scenario, _)| *stage == self.stage && *scenario == self.scenario)
                .map(|(_, _, findings)| Verdict::of(findings));
        }
        match self.fencing {
            Fencing::ReadsAndWrites => match expected(&self.stage_name(), self.scenario)? {
                Expected::Verdict(verdict) => Some(verdict),
                Expected::NotApplicable | Expected::Unrecorded | Expected::Race(_) => None,
            },
            Fencing::Unchecked => self.beside_the_matrix(&UNCHECKED),
            Fencing::WriteOnly => self.beside_the_matrix(&WRITE_ONLY),
        }
    }

    /// This run's verdict in a list of runs the matrix does not make.
    fn beside_the_matrix(&self, runs: &[(u8, &str, &[Finding])]) -> Option<Verdict> {
        runs.iter()
            .find(|(stage, scenario, _)| *stage == self.stage && *scenario == self.scenario)
            .map(|(_, _, findings)| Verdict::of(findings))
    }

    /// Whether the scenario is one another branch is still adding.
    pub fn is_pending(&self) -> bool {
        harness::scenario::find(self.scenario).is_none()
            && PENDING_SCENARIOS.contains(&self.scenario)
    }
}

impl TestTarget {
    /// The command that runs it.
    pub fn command(&self) -> String {
        format!("cargo test -p {} {}::", self.package, self.target)
    }
}

impl Question {
    /// How the reader names each run when predicting: its stage number when
    /// every run is on a different stage, otherwise (a library's run among
    /// them too) a letter.
    pub fn choice_keys(&self) -> Vec<String> {
        let mut stages: Vec<u8> = self.runs.iter().map(|r| r.stage).collect();
        stages.sort_unstable();
        stages.dedup();
        let on_stages = self.runs.iter().all(|r| r.library.is_none());
        if on_stages && stages.len() == self.runs.len() {
            self.runs.iter().map(|r| r.stage.to_string()).collect()
        } else {
            (b'a'..)
                .take(self.runs.len())
                .map(|c| char::from(c).to_string())
                .collect()
        }
    }

    /// The runs' indices in the order they are shown: by stage number or
    /// letter. They run in the list's order, the first one (whose timeline
    /// is printed) first.
    pub fn shown_order(&self) -> Vec<usize> {
        let keys = self.choice_keys();
        let mut order: Vec<usize> = (0..self.runs.len()).collect();
        order.sort_by(|a, b| keys[*a].cmp(&keys[*b]));
        order
    }

    /// The choices in the shown order: each run with the key that names it.
    pub fn choices(&self) -> Vec<(String, Probe)> {
        let keys = self.choice_keys();
        self.shown_order()
            .into_iter()
            .map(|i| (keys[i].clone(), self.runs[i]))
            .collect()
    }
}

/// Question `number` (1-based), or `None`.
pub fn question(number: usize) -> Option<&'static Question> {
    number.checked_sub(1).and_then(|i| QUESTIONS.get(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn there_are_at_least_25_questions() {
        assert!(QUESTIONS.len() >= 25, "{} questions", QUESTIONS.len());
    }

    #[test]
    fn every_run_names_a_stage_and_a_scenario_that_applies_to_it() {
        for (i, q) in QUESTIONS.iter().enumerate() {
            assert!(!q.runs.is_empty(), "question {} has no run", i + 1);
            for run in q.runs {
                let stage = crate::rows::find(&run.stage_name())
                    .unwrap_or_else(|| panic!("question {}: no {}", i + 1, run.stage_name()))
                    .entry;
                match harness::scenario::find(run.scenario) {
                    Some(scenario) => assert_eq!(
                        (scenario.not_applicable)(&stage.description),
                        None,
                        "question {}: {} x {} is n/a",
                        i + 1,
                        run.stage_name(),
                        run.scenario
                    ),
                    None => assert!(
                        run.is_pending(),
                        "question {}: no scenario `{}`",
                        i + 1,
                        run.scenario
                    ),
                }
            }
        }
    }

    /// The answers are checked against their runs: every run's stated
    /// verdict is the one the expected matrix (itself held against real
    /// runs by `tests/matrix.rs`) gives that cell, and the correct option
    /// of every prediction (the runs whose stated verdict is a "yes") is
    /// what the answer relies on. When the matrix changes, this names the
    /// questions whose answers must be read again.
    #[test]
    fn every_run_shows_the_verdict_its_answer_states() {
        for (i, q) in QUESTIONS.iter().enumerate() {
            for run in q.runs {
                let expected = run.expected().unwrap_or_else(|| {
                    panic!("question {}: no expectation for {}", i + 1, run.label())
                });
                assert_eq!(
                    run.says,
                    expected.to_string(),
                    "question {}: the answer says `{}` shows {}, the matrix says {expected}",
                    i + 1,
                    run.label(),
                    run.says,
                );
            }
        }
    }

    /// Question 35's answer is that a write-only check oversells: a run
    /// against that resource must be among its runs and must oversell.
    #[test]
    fn question_35_runs_the_write_only_resource() {
        let q = question(35).expect("question 35");
        let write_only: Vec<&Probe> = q
            .runs
            .iter()
            .filter(|r| r.fencing == Fencing::WriteOnly)
            .collect();
        assert_eq!(write_only.len(), 1, "{:?}", q.runs);
        assert!(
            write_only[0]
                .expected()
                .is_some_and(|v| v.has(Finding::Oversold))
        );
        assert!(
            write_only[0]
                .command()
                .ends_with("stale-write-first --fencing write-only")
        );
    }

    #[test]
    fn every_question_reads_next_an_existing_chapter() {
        let book = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("book/src");
        for q in QUESTIONS {
            assert!(book.join(q.read_next.1).exists(), "{}", q.read_next.1);
        }
    }

    #[test]
    fn choices_are_stage_numbers_unless_a_stage_runs_twice() {
        let q = Question {
            ask: "",
            answer: "",
            java: None,
            predict: "",
            watch: Watch::Clean,
            runs: {
                const RUNS: &[Probe] = &[
                    questions::on(7, "clock-jump", "OVERSOLD OVERLAP"),
                    questions::on(7, "network-delay", "REFUSED"),
                ];
                RUNS
            },
            marks: &[],
            tests: &[],
            look_for: "",
            sources: &[],
            read_next: ("", ""),
        };
        assert_eq!(q.choice_keys(), ["a", "b"]);
        let q = Question {
            runs: {
                const RUNS: &[Probe] = &[
                    questions::on(3, "gc-pause", "OVERSOLD OVERLAP"),
                    questions::on(8, "gc-pause", "OVERLAP"),
                ];
                RUNS
            },
            ..q
        };
        assert_eq!(q.choice_keys(), ["3", "8"]);
        let q = Question {
            runs: {
                const RUNS: &[Probe] = &[
                    questions::on(6, "gc-pause", "OVERSOLD OVERLAP"),
                    questions::on(3, "gc-pause", "OVERSOLD OVERLAP"),
                ];
                RUNS
            },
            ..q
        };
        assert_eq!(
            q.shown_order(),
            [1, 0],
            "shown by stage, run in the list's order"
        );
    }
}
