//! Each stage chapter's "what the matrix says": which scenarios the stage
//! fixes, which it makes better, which it breaks that the stage before did
//! not, and everything it still breaks, in both editions, written from the
//! expected matrix (`src/matrix/expected.rs`) and never by hand. A chapter
//! that claimed a stage fixes something its matrix row contradicts would
//! have to contradict the list printed beside it.

use std::fmt::Write as _;

use harness::check::{Finding, Verdict};

use crate::matrix::{Expected, expected};

/// The stages that have a chapter.
pub const STAGES: [&str; 8] = [
    "stage1", "stage2", "stage3", "stage4", "stage5", "stage6", "stage7", "stage8",
];

/// The two editions' words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edition {
    /// `book/src`.
    English,
    /// `book/zh/src`.
    Chinese,
}

impl Edition {
    /// The file's name for `stage` in `book/src/generated`.
    pub fn file(self, stage: &str) -> String {
        match self {
            Edition::English => format!("{stage}-verdicts.md"),
            Edition::Chinese => format!("{stage}-verdicts.zh.md"),
        }
    }
}

/// A scenario's verdict on one stage, when it runs there.
fn verdict(stage: &str, scenario: &str) -> Option<Verdict> {
    match expected(stage, scenario)? {
        Expected::Verdict(v) => Some(v),
        Expected::NotApplicable => None,
    }
}

fn labels(v: &Verdict) -> String {
    let labels: Vec<&str> = v.findings().map(Finding::label).collect();
    labels.join(" ")
}

/// What `stage`'s row says against the row before it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Row {
    /// Broken on the stage before, ok here.
    pub fixed: Vec<&'static str>,
    /// Broken before and still broken, with fewer findings: (scenario, before, now).
    pub better: Vec<(&'static str, String, String)>,
    /// Ok on the stage before, broken here: (scenario, findings).
    pub worse: Vec<(&'static str, String)>,
    /// Every scenario with a finding here: (scenario, findings).
    pub breaks: Vec<(&'static str, String)>,
    /// Scenarios where the lock says no instead of granting an unsafe lock.
    pub refuses: Vec<&'static str>,
}

/// The stage `stage` is read against: the one before it, except that
/// Redlock (7) and fencing (8) are each built on stage 5's single-node lock
/// (a unique value, a scripted release), not on the stage numbered before.
pub fn baseline(stage: &str) -> String {
    let number: u8 = stage.trim_start_matches("stage").parse().unwrap_or(0);
    match number {
        7 | 8 => "stage5".to_owned(),
        n => format!("stage{}", n.saturating_sub(1)),
    }
}

/// A verdict that is a failure: a finding other than a refusal.
fn broken(v: &Verdict) -> bool {
    v.findings().any(|f| f != Finding::Refused)
}

/// `stage`'s row against the stage before it (stage 0, the control, for
/// stage 1).
pub fn row(stage: &str) -> Row {
    let before = baseline(stage);
    let mut row = Row::default();
    for scenario in harness::SCENARIOS.iter().map(|s| s.name) {
        let Some(now) = verdict(stage, scenario) else {
            continue;
        };
        let was = verdict(&before, scenario);
        if broken(&now) {
            row.breaks.push((scenario, labels(&now)));
        } else if !now.is_ok() {
            row.refuses.push(scenario);
        }
        match was {
            Some(was) if broken(&was) && !broken(&now) => row.fixed.push(scenario),
            Some(was)
                if broken(&was)
                    && broken(&now)
                    && now.findings().all(|f| was.has(f))
                    && now != was =>
            {
                row.better.push((scenario, labels(&was), labels(&now)))
            }
            Some(was) if !broken(&was) && broken(&now) => row.worse.push((scenario, labels(&now))),
            _ => {}
        }
    }
    row
}

/// The generated block for `stage`, in `edition`'s words.
pub fn render(stage: &str, edition: Edition) -> String {
    let row = row(stage);
    let number = stage.trim_start_matches("stage");
    let before = baseline(stage);
    let before = before.trim_start_matches("stage");
    let (fixed, better, worse, breaks, refuses, none, colon, head, foot) = match edition {
        Edition::English => (
            format!("Fixed here (broken on stage {before}, ok on stage {number})"),
            "Better, not fixed".to_owned(),
            format!("Broken here, ok on stage {before}"),
            format!("Still broken on stage {number}"),
            "Says no instead of granting an unsafe lock (REFUSED)".to_owned(),
            "nothing",
            ":",
            format!(
                "Stage {number}'s column of the expected matrix, against stage {before}'s \
                 (generated from `src/matrix/expected.rs`; each name is a scenario, \
                 `cargo run --release -- run"
            ),
            "shows one):",
        ),
        Edition::Chinese => (
            format!("本阶段修好的（阶段 {before} 出错，阶段 {number} 正常）"),
            "有所改善、仍未修好的".to_owned(),
            format!("阶段 {before} 正常、本阶段反而出错的"),
            format!("阶段 {number} 仍然出错的"),
            "拒绝加锁而不是发出不安全的锁（REFUSED）".to_owned(),
            "无",
            "：",
            format!(
                "期望矩阵中阶段 {number} 这一列与阶段 {before} 的对比（由 `src/matrix/expected.rs` \
                 生成；每个名字是一个场景，用 `cargo run --release -- run"
            ),
            "可以重跑）：",
        ),
    };
    let mut out = String::from(
        "<!-- Generated by `cargo run --release -- book-assets` from src/matrix/expected.rs; do not edit. -->\n",
    );
    let _ = writeln!(out, "{head} {stage} <scenario>` {foot}\n");
    let names = |list: &[&str]| -> String {
        if list.is_empty() {
            none.to_owned()
        } else {
            list.iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let _ = writeln!(out, "- **{fixed}{colon}** {}", names(&row.fixed));
    if !row.better.is_empty() {
        let items: Vec<String> = row
            .better
            .iter()
            .map(|(s, was, now)| format!("`{s}` ({was} → {now})"))
            .collect();
        let _ = writeln!(out, "- **{better}{colon}** {}", items.join(", "));
    }
    if !row.worse.is_empty() {
        let items: Vec<String> = row
            .worse
            .iter()
            .map(|(s, now)| format!("`{s}` ({now})"))
            .collect();
        let _ = writeln!(out, "- **{worse}{colon}** {}", items.join(", "));
    }
    let items: Vec<String> = row
        .breaks
        .iter()
        .map(|(s, now)| format!("`{s}` ({now})"))
        .collect();
    let broken = if items.is_empty() {
        none.to_owned()
    } else {
        items.join(", ")
    };
    let _ = writeln!(out, "- **{breaks}{colon}** {broken}");
    if !row.refuses.is_empty() {
        let _ = writeln!(out, "- **{refuses}{colon}** {}", names(&row.refuses));
    }
    out
}

/// Every generated file: (file name, text).
pub fn all() -> Vec<(String, String)> {
    let mut files = Vec::new();
    for stage in STAGES {
        for edition in [Edition::English, Edition::Chinese] {
            files.push((edition.file(stage), render(stage, edition)));
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_6_fixes_slow_business_and_still_oversells_on_a_pause() {
        let row = row("stage6");
        assert!(row.fixed.contains(&"slow-business"), "{row:?}");
        assert!(
            row.breaks
                .iter()
                .any(|(s, f)| *s == "gc-pause" && f.contains("OVERSOLD")),
            "{row:?}"
        );
        assert!(
            row.worse.iter().any(|(s, _)| *s == "business-error"),
            "{row:?}"
        );
    }

    #[test]
    fn a_refusal_is_no_breakage() {
        let row = row("stage7");
        assert!(row.refuses.contains(&"network-delay"), "{row:?}");
        assert!(
            row.breaks.iter().all(|(s, _)| *s != "network-delay"),
            "{row:?}"
        );
    }

    #[test]
    fn stage_8_makes_slow_business_better_without_fixing_it() {
        let row = row("stage8");
        assert!(
            row.better
                .iter()
                .any(|(s, _, now)| *s == "slow-business" && now == "OVERLAP"),
            "{row:?}"
        );
        assert!(
            row.breaks
                .iter()
                .any(|(s, f)| *s == "failover" && f.contains("OVERSOLD")),
            "{row:?}"
        );
    }

    #[test]
    fn both_editions_list_the_same_scenarios() {
        for stage in STAGES {
            let en = render(stage, Edition::English);
            let zh = render(stage, Edition::Chinese);
            let names = |t: &str| -> Vec<String> {
                t.split('`')
                    .skip(1)
                    .step_by(2)
                    .filter(|w| harness::SCENARIOS.iter().any(|s| s.name == *w))
                    .map(str::to_owned)
                    .collect()
            };
            assert_eq!(names(&en), names(&zh), "{stage}");
        }
    }
}
