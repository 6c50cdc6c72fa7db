//! The Chinese edition (`book/zh/`) is a second mdBook over the same code
//! and the same recorded runs: only the prose is translated. These tests
//! keep the two editions in step: the same chapters in the same order, the
//! same included files and anchors in each chapter, every verdict label of
//! the CLI explained in the glossary, and the same interview questions with
//! the same commands.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::common;

const EN: &str = "book/src";
const ZH: &str = "book/zh/src";

/// Chapters only the Chinese edition has: the glossary of the CLI's English labels.
const ZH_ONLY: &[&str] = &["glossary.md"];

/// Included files whose text is English prose, translated in the Chinese
/// chapter instead of included: the interview questions (their commands are
/// compared by `the_chinese_interview_asks_the_same_questions_with_the_same_commands`).
const TRANSLATED: &[&str] = &["generated/interview.md"];

#[test]
fn both_editions_have_the_same_chapters_in_the_same_order() {
    let en = common::summary_chapters(&common::book_src(EN));
    let zh: Vec<String> = common::summary_chapters(&common::book_src(ZH))
        .into_iter()
        .filter(|chapter| !ZH_ONLY.contains(&chapter.as_str()))
        .collect();
    let only_en: Vec<&String> = en.iter().filter(|c| !zh.contains(c)).collect();
    let only_zh: Vec<&String> = zh.iter().filter(|c| !en.contains(c)).collect();
    assert!(
        only_en.is_empty() && only_zh.is_empty(),
        "chapters in one edition only:\n  English only (translate into book/zh/src): {only_en:?}\n  \
         Chinese only (add to book/src or drop): {only_zh:?}"
    );
    assert_eq!(
        en, zh,
        "the two SUMMARY.md files list the chapters in different orders"
    );
}

#[test]
fn every_chapter_in_each_summary_is_a_file() {
    // mdBook creates an empty page for a missing file instead of failing.
    for edition in [EN, ZH] {
        let src = common::book_src(edition);
        for chapter in common::summary_chapters(&src) {
            assert!(
                src.join(&chapter).is_file(),
                "{edition}/{chapter} does not exist"
            );
        }
    }
}

#[test]
fn every_include_in_the_chinese_book_names_an_existing_file_and_anchor() {
    let (checked, broken) = common::broken_includes(&common::book_src(ZH));
    assert!(
        checked > 20,
        "only {checked} includes found: is book/zh there?"
    );
    assert!(broken.is_empty(), "broken includes:\n{}", broken.join("\n"));
}

/// A page's includes as (file, anchor), the file resolved from the page's folder.
fn included(src: &Path, chapter: &str) -> BTreeSet<(PathBuf, Option<String>)> {
    let text = std::fs::read_to_string(src.join(chapter)).unwrap_or_default();
    common::includes(&text)
        .into_iter()
        .filter(|include| !TRANSLATED.contains(&include.file.as_str()))
        .map(|include| {
            // A generated file with a Chinese twin (`x.zh.md`) counts as `x.md`.
            let file = src.join(include.file.replace(".zh.md", ".md"));
            (file.canonicalize().unwrap_or(file), include.anchor)
        })
        .collect()
}

#[test]
fn each_chinese_chapter_includes_the_same_code_and_runs_as_its_english_one() {
    let (en, zh) = (common::book_src(EN), common::book_src(ZH));
    let mut differ = Vec::new();
    for chapter in common::summary_chapters(&en) {
        let (in_en, in_zh) = (included(&en, &chapter), included(&zh, &chapter));
        for (file, anchor) in in_en.difference(&in_zh) {
            differ.push(format!(
                "{chapter}: only English includes {} {anchor:?}",
                file.display()
            ));
        }
        for (file, anchor) in in_zh.difference(&in_en) {
            differ.push(format!(
                "{chapter}: only Chinese includes {} {anchor:?}",
                file.display()
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// The labels of the matrix legend, as the CLI prints them
/// (`- OVERSOLD        more orders than stock...`).
fn legend_labels() -> Vec<String> {
    let matrix = std::fs::read_to_string(common::book_src(EN).join("generated/matrix.md"))
        .expect("the generated matrix");
    let (_, legend) = matrix
        .split_once("\nLegend:\n")
        .expect("the matrix has a legend");
    legend
        .lines()
        .take_while(|line| !line.starts_with("Why"))
        .filter_map(|line| line.strip_prefix("- "))
        .filter_map(|entry| entry.split_whitespace().next())
        .filter(|label| !label.ends_with(':'))
        .map(str::to_owned)
        .collect()
}

/// The scenario names, the matrix's column headers.
fn scenario_names() -> Vec<String> {
    let matrix = std::fs::read_to_string(common::book_src(EN).join("generated/matrix.md"))
        .expect("the generated matrix");
    // A row per scenario: its name is the first cell of each row.
    matrix
        .lines()
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .filter_map(|line| line.split('|').nth(1))
        .map(|cell| cell.trim().to_owned())
        .collect()
}

#[test]
fn the_glossary_explains_every_label_and_scenario_the_matrix_prints() {
    let glossary = std::fs::read_to_string(common::book_src(ZH).join("glossary.md"))
        .expect("book/zh/src/glossary.md");
    let labels = legend_labels();
    let scenarios = scenario_names();
    assert!(labels.len() >= 6, "legend labels: {labels:?}");
    assert!(scenarios.len() >= 10, "scenarios: {scenarios:?}");
    let missing: Vec<&String> = labels
        .iter()
        .chain(&scenarios)
        .filter(|term| !glossary.contains(&format!("| `{term}` |")))
        .collect();
    assert!(missing.is_empty(), "glossary.md has no row for {missing:?}");
}

/// One interview question as both pages show it: its number, the runs to
/// choose among (the prediction's choices) and its shell block (the runs
/// with their verdicts, and the tests). Only these are compared: they are
/// commands and names, the same in both languages.
#[derive(Debug, PartialEq)]
struct Question {
    number: String,
    choices: String,
    commands: String,
}

/// The choices line reads `Choose among A, B.` in English and `可选：A、B。`
/// in Chinese; both become `A, B`.
fn questions(text: &str, choose: &str, separator: &str, end: &str) -> Vec<Question> {
    text.split("\n## ")
        .skip(1)
        .filter_map(|section| {
            let (number, _) = section.split_once(". ")?;
            number.chars().all(|c| c.is_ascii_digit()).then_some(())?;
            let choices = section.split(choose).nth(1)?.split(end).next()?;
            let commands = section.split("```sh\n").nth(1)?.split("```").next()?;
            Some(Question {
                number: number.to_owned(),
                choices: choices.replace(separator, ", "),
                commands: commands.to_owned(),
            })
        })
        .collect()
}

fn english_questions() -> Vec<Question> {
    let en = std::fs::read_to_string(common::book_src(EN).join("generated/interview.md"))
        .expect("the generated English questions");
    questions(&format!("\n{en}"), "Choose among ", ", ", ".\n")
}

fn chinese_questions(zh: &str) -> Vec<Question> {
    questions(zh, "可选：", "、", "。\n")
}

/// With `LOCKSTAGES_SYNC_ZH_INTERVIEW=1`, copies the English page's choices
/// and commands into the Chinese one, question by question (they are not
/// prose: the runs, their expected verdicts, the tests), before comparing.
/// A new question still has to be translated by hand.
fn sync_commands(zh: &str, en: &[Question]) -> String {
    let mut out = String::new();
    for (i, section) in zh.split("\n## ").enumerate() {
        if i > 0 {
            out.push_str("\n## ");
        }
        let theirs = chinese_questions(&format!("\n## {section}"));
        let Some(ours) = theirs.first() else {
            out.push_str(section);
            continue;
        };
        let Some(en) = en.iter().find(|q| q.number == ours.number) else {
            out.push_str(section);
            continue;
        };
        let section = section
            .replacen(
                &format!("```sh\n{}```", ours.commands),
                &format!("```sh\n{}```", en.commands),
                1,
            )
            .replacen(
                &format!("可选：{}。", ours.choices.replace(", ", "、")),
                &format!("可选：{}。", en.choices.replace(", ", "、")),
                1,
            );
        out.push_str(&section);
    }
    out
}

#[test]
fn the_chinese_interview_asks_the_same_questions_with_the_same_commands() {
    let path = common::book_src(ZH).join("interview.md");
    let en = english_questions();
    let mut zh = std::fs::read_to_string(&path).expect("book/zh/src/interview.md");
    if std::env::var_os("LOCKSTAGES_SYNC_ZH_INTERVIEW").is_some() {
        zh = sync_commands(&zh, &en);
        std::fs::write(&path, &zh).expect("book/zh/src/interview.md written");
    }
    let zh = chinese_questions(&zh);
    assert!(en.len() >= 30, "only {} English questions found", en.len());
    assert_eq!(
        en.len(),
        zh.len(),
        "the English interview has {} questions, the Chinese one {}: translate the new ones \
         into book/zh/src/interview.md",
        en.len(),
        zh.len()
    );
    for (en, zh) in en.iter().zip(&zh) {
        assert_eq!(
            en, zh,
            "question {}: the choices or commands differ from the English page; copy them with\n  \
             LOCKSTAGES_SYNC_ZH_INTERVIEW=1 cargo test book_zh::",
            en.number
        );
    }
}

/// Chinese has no spaces between words, and mdBook joins the lines of a
/// paragraph with one: a paragraph wrapped in the source shows a stray space
/// mid-sentence. Every Chinese paragraph (and list item) is one line.
#[test]
fn chinese_paragraphs_are_one_line_each() {
    let structural = |line: &str| {
        let s = line.trim_start();
        s.is_empty()
            || ["#", "|", "{{", "<", ">", "```", "- ", "* ", "+ "]
                .iter()
                .any(|p| s.starts_with(p))
            || s.split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    };
    let mut wrapped = Vec::new();
    for page in common::pages(&common::book_src(ZH)) {
        let text = std::fs::read_to_string(&page).unwrap_or_default();
        let mut in_code = false;
        let mut previous_is_prose = false;
        for (number, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                in_code = !in_code;
                previous_is_prose = false;
                continue;
            }
            if in_code {
                continue;
            }
            let s = line.trim_start();
            if previous_is_prose && !structural(line) {
                wrapped.push(format!("{}:{}: {line}", page.display(), number + 1));
            }
            previous_is_prose = !line.trim().is_empty()
                && !["#", "|", "{{", "<", "```"]
                    .iter()
                    .any(|p| s.starts_with(p));
        }
    }
    assert!(
        wrapped.is_empty(),
        "a paragraph continues on the next source line:\n{}",
        wrapped.join("\n")
    );
}

/// Every claim in the Chinese edition is true, and every sentence that
/// needs one has one (the rule is at the top of `tests/book.rs`).
#[test]
fn every_chinese_sentence_about_the_matrix_carries_a_true_claim() {
    common::claims::assert_every_claim_true(&common::book_src(ZH), common::claims::Lang::Chinese);
}

/// The Chinese sentences issue 43 found contradicted by the matrix, as
/// they read on 5e8312c, each flagged by the rule.
#[test]
fn the_chinese_claim_check_catches_the_sentences_the_matrix_contradicted() {
    use common::claims::{Lang, Matrix, needs_a_claim, sentences};
    let matrix = Matrix::of_the_book();
    let old: [(&str, &str); 8] = [
        (
            "matrix.md",
            "能重入的只有阶段 6（以及和它共用同一个 hash 的公平锁变体）和阶段 9（像 Curator 那样在客户端里记录重入次数）。",
        ),
        (
            "introduction.md",
            "每一个阶段（stage），都会在真实的 `redis-server` 进程上（最后一个阶段是真实的 ZooKeeper 集群），有意地、稳定地复现上面这些故障：",
        ),
        (
            "choosing.md",
            "对保护正确性的锁来说，它不够：要加上围栏令牌，并把计数器放在主从切换没法让它倒退的地方（阶段 8 的计数器和锁在同一个 master 上，在 `failover`、`sentinel-failover` 和 `cluster-failover` 里都超卖），或者把锁放进共识系统（阶段 9 用 ZooKeeper，阶段 10 用 etcd），这几行场景对它们都不适用。",
        ),
        (
            "beyond-redis.md",
            "所以：如果主从切换后偶尔出现第二个持锁者还能靠数据兜住（栅栏令牌、唯一请求号、条件写入），用 Redis 锁（阶段 5 或 6）；如果即使存储自己的机器出故障也绝不能出现第二个持锁者，就用 ZooKeeper 或 etcd 锁，并且在资源端检查它的令牌，尤其是团队本来就在运维一个的时候（Kafka 和 Hadoop 的 ZooKeeper，Kubernetes 的 etcd）。",
        ),
        (
            "choosing.md",
            "- **阶段 8**（围栏令牌）是第一个被暂停或慢的持锁者无法破坏数据的阶段：*因为资源做了检查*，而不是因为锁守住了；而且前提是资源检查了决策所依赖的每一次访问：只在写时检查令牌的资源，在旧持锁者先写时仍然会超卖（`stale-write-first`）。",
        ),
        ("stage8.md", "前面的每一把锁，持锁者都可能比锁活得更久。"),
        (
            "introduction.md",
            "| 6-fair | 阶段 6 的 hash，再加 Redisson 的等待队列 | 把锁交给队首 | 等待者按到达顺序拿到锁（死掉的等待者让后面的人多等它那一份超时） |",
        ),
        (
            "choosing.md",
            "- **阶段 9**（ZooKeeper，Curator 的做法）把锁放在一个按多数派达成一致的集群上，令牌也从集群里取（锁节点的 `czxid`），所以单台服务器的主从切换或重启既忘不掉锁，也忘不掉令牌：那些 Redis 拓扑的场景对它不适用。",
        ),
    ];
    for (page, text) in old {
        let sentence = sentences(text, Lang::Chinese)
            .into_iter()
            .next()
            .expect("a sentence");
        assert!(
            needs_a_claim(page, &sentence, Lang::Chinese, &matrix),
            "{page}: not flagged: {text}"
        );
    }
}
