//! Each stage's "what the matrix says": which scenarios the stage fixes,
//! which it makes better, which it breaks that the stage it builds on did
//! not, everything it still breaks and what does not apply, in both
//! editions, written from the matrix's record (`generated/matrix.json`)
//! and never by hand. A chapter that claimed a stage fixes something its
//! column contradicts would have to contradict the list printed beside it.

use std::fmt::Write as _;

use super::matrix_json::{Matrix, broken, labels};
use super::stage_words::words_for;

/// The stages whose chapter (or section) includes their list, and where:
/// (stage, chapter file).
pub const CHAPTERS: [(&str, &str); 11] = [
    ("stage1", "stage1.md"),
    ("stage2", "stage2.md"),
    ("stage3", "stage3.md"),
    ("stage4", "stage4.md"),
    ("stage5", "stage5.md"),
    ("stage6", "stage6.md"),
    ("stage6-fair", "stage6.md"),
    ("stage7", "stage7.md"),
    ("stage8", "stage8.md"),
    ("stage9", "beyond-redis.md"),
    ("stage10", "beyond-redis.md"),
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
        self.named(&format!("{stage}-verdicts"))
    }

    /// `base.md` or `base.zh.md`.
    pub fn named(self, base: &str) -> String {
        match self {
            Edition::English => format!("{base}.md"),
            Edition::Chinese => format!("{base}.zh.md"),
        }
    }
}

/// What `stage`'s column says against the column it builds on.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Row {
    /// Broken on the stage before, ok here.
    pub fixed: Vec<String>,
    /// Broken before and still broken, with fewer findings: (scenario, before, now).
    pub better: Vec<(String, String, String)>,
    /// Ok on the stage before, broken here: (scenario, findings).
    pub worse: Vec<(String, String)>,
    /// Every scenario with a finding here: (scenario, findings).
    pub breaks: Vec<(String, String)>,
    /// Scenarios where the lock says no instead of granting an unsafe lock.
    pub refuses: Vec<String>,
    /// Scenarios that do not apply to the stage.
    pub not_applicable: Vec<String>,
}

/// The stage `stage` is read against (its entry in `stage_words.rs`):
/// the one before it, except that Redlock (7) and fencing (8) are each
/// built on stage 5's single-node lock, the fair lock on stage 6, and the
/// consensus stores on stage 8's token checked at the resource (stage 10 on
/// stage 9, its counterpart on etcd).
pub fn baseline(stage: &str) -> Result<Option<&'static str>, String> {
    Ok(words_for(stage)?.baseline)
}

/// `stage`'s column against the column it builds on.
pub fn row(matrix: &Matrix, stage: &str) -> Result<Row, String> {
    let before = baseline(stage)?;
    let mut row = Row::default();
    for scenario in &matrix.scenarios {
        let Some(now) = matrix.verdict(stage, scenario) else {
            if matrix.cell(stage, scenario).is_some() {
                row.not_applicable.push(scenario.clone());
            }
            continue;
        };
        let was = before.and_then(|b| matrix.verdict(b, scenario));
        if broken(now) {
            row.breaks.push((scenario.clone(), labels(now)));
        } else if !now.is_ok() {
            row.refuses.push(scenario.clone());
        }
        match was {
            Some(was) if broken(was) && !broken(now) => row.fixed.push(scenario.clone()),
            Some(was)
                if broken(was)
                    && broken(now)
                    && now.findings().all(|f| was.has(f))
                    && now != was =>
            {
                row.better
                    .push((scenario.clone(), labels(was), labels(now)))
            }
            Some(was) if !broken(was) && broken(now) => {
                row.worse.push((scenario.clone(), labels(now)))
            }
            _ => {}
        }
    }
    Ok(row)
}

/// How a list of scenario names reads: `` `a`, `b` `` (`、` in Chinese).
pub fn names(list: &[String], edition: Edition, none: &str) -> String {
    if list.is_empty() {
        return none.to_owned();
    }
    let separator = match edition {
        Edition::English => ", ",
        Edition::Chinese => "、",
    };
    list.iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(separator)
}

/// The generated block for `stage`, in `edition`'s words.
pub fn render(matrix: &Matrix, stage: &str, edition: Edition) -> Result<String, String> {
    let row = row(matrix, stage)?;
    let number = words_for(stage)?.short;
    let before = baseline(stage)?
        .map(|b| words_for(b).map(|w| w.short))
        .transpose()?
        .unwrap_or("0");
    let (fixed, better, worse, breaks, refuses, na, none, colon, head, foot) = match edition {
        Edition::English => (
            format!("Fixed here (broken on stage {before}, ok on stage {number})"),
            "Better, not fixed".to_owned(),
            format!("Broken here, ok on stage {before}"),
            format!("Still broken on stage {number}"),
            "Says no instead of granting an unsafe lock (REFUSED)".to_owned(),
            "Does not apply here (n/a; the matrix gives each reason)".to_owned(),
            "nothing",
            ":",
            format!(
                "Stage {number}'s column of the matrix, against stage {before}'s \
                 (generated from `book/src/generated/matrix.json`; each name is a scenario, \
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
            "在这里不适用的（n/a，原因见矩阵）".to_owned(),
            "无",
            "：",
            format!(
                "矩阵中阶段 {number} 这一列与阶段 {before} 的对比（由 `book/src/generated/matrix.json` \
                 生成；每个名字是一个场景，用 `cargo run --release -- run"
            ),
            "可以重跑）：",
        ),
    };
    let separator = match edition {
        Edition::English => ", ",
        Edition::Chinese => "、",
    };
    let mut out = String::from(
        "<!-- Generated by `cargo run --release -- book-assets` from matrix.json; do not edit. -->\n",
    );
    let _ = writeln!(out, "{head} {stage} <scenario>` {foot}\n");
    let _ = writeln!(
        out,
        "- **{fixed}{colon}** {}",
        names(&row.fixed, edition, none)
    );
    if !row.better.is_empty() {
        let items: Vec<String> = row
            .better
            .iter()
            .map(|(s, was, now)| format!("`{s}` ({was} → {now})"))
            .collect();
        let _ = writeln!(out, "- **{better}{colon}** {}", items.join(separator));
    }
    if !row.worse.is_empty() {
        let items: Vec<String> = row
            .worse
            .iter()
            .map(|(s, now)| format!("`{s}` ({now})"))
            .collect();
        let _ = writeln!(out, "- **{worse}{colon}** {}", items.join(separator));
    }
    let items: Vec<String> = row
        .breaks
        .iter()
        .map(|(s, now)| format!("`{s}` ({now})"))
        .collect();
    let broken = if items.is_empty() {
        none.to_owned()
    } else {
        items.join(separator)
    };
    let _ = writeln!(out, "- **{breaks}{colon}** {broken}");
    if !row.refuses.is_empty() {
        let _ = writeln!(
            out,
            "- **{refuses}{colon}** {}",
            names(&row.refuses, edition, none)
        );
    }
    if !row.not_applicable.is_empty() {
        let _ = writeln!(
            out,
            "- **{na}{colon}** {}",
            names(&row.not_applicable, edition, none)
        );
    }
    Ok(out)
}

/// Every generated list: (file name, text).
pub fn all(matrix: &Matrix) -> Result<Vec<(String, String)>, String> {
    let mut files = Vec::new();
    for (stage, _) in CHAPTERS {
        for edition in [Edition::English, Edition::Chinese] {
            files.push((edition.file(stage), render(matrix, stage, edition)?));
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(stage: &str) -> Row {
        super::row(&Matrix::of_the_book(), stage).expect("a row")
    }

    #[test]
    fn stage_6_fixes_slow_business_and_still_oversells_on_a_pause() {
        let row = row("stage6");
        assert!(row.fixed.iter().any(|s| s == "slow-business"), "{row:?}");
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
        assert!(row.refuses.iter().any(|s| s == "network-delay"), "{row:?}");
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
    fn the_fair_lock_and_the_consensus_stores_are_read_against_the_stage_they_build_on() {
        // Against stage 6, the fair variant fixes the order and nothing else.
        let fair = row("stage6-fair");
        assert_eq!(fair.fixed, ["arrival-order"], "{fair:?}");
        assert!(fair.worse.is_empty(), "{fair:?}");
        let zookeeper = row("stage9");
        assert!(
            zookeeper.fixed.iter().any(|s| s == "reentrant"),
            "{zookeeper:?}"
        );
        assert!(
            zookeeper.not_applicable.iter().any(|s| s == "failover"),
            "{zookeeper:?}"
        );
    }

    #[test]
    fn both_editions_list_the_same_scenarios() {
        let matrix = Matrix::of_the_book();
        for (stage, _) in CHAPTERS {
            let en = render(&matrix, stage, Edition::English).expect("English");
            let zh = render(&matrix, stage, Edition::Chinese).expect("Chinese");
            let names = |t: &str| -> Vec<String> {
                t.split('`')
                    .skip(1)
                    .step_by(2)
                    .filter(|w| matrix.scenarios.iter().any(|s| s == w))
                    .map(str::to_owned)
                    .collect()
            };
            assert_eq!(names(&en), names(&zh), "{stage}");
        }
    }
}
