//! The book's sentences about the matrix, held against
//! `book/src/generated/matrix.json`. The rule and the claims' syntax are
//! documented at the top of `tests/book.rs`; this is their implementation,
//! shared by both editions.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// An edition's language: what its sentences end with and how they name
/// stages, stories and verdicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    English,
    Chinese,
}

/// One cell of the matrix: its verdict (`ok`, `n/a`, `OVERSOLD OVERLAP`).
#[derive(Debug, Clone)]
pub struct Cell {
    pub result: String,
}

/// `book/src/generated/matrix.json`: its stages (columns) and scenarios
/// (rows) in order, and its cells.
#[derive(Debug, Clone)]
pub struct Matrix {
    pub stages: Vec<String>,
    pub scenarios: Vec<String>,
    pub cells: HashMap<(String, String), Cell>,
}

impl Matrix {
    /// The book's matrix: the stages' columns, then the library rows'
    /// (`generated/libraries/matrix.json`, the library chapter's table).
    pub fn of_the_book() -> Matrix {
        let mut matrix = Matrix {
            stages: Vec::new(),
            scenarios: Vec::new(),
            cells: HashMap::new(),
        };
        for file in ["generated/matrix.json", "generated/libraries/matrix.json"] {
            matrix.read(&super::book_src("book/src").join(file));
        }
        matrix
    }

    fn read(&mut self, path: &Path) {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let json: serde_json::Value = serde_json::from_str(&text).expect("matrix.json parses");
        for cell in json["cells"].as_array().expect("matrix.json has cells") {
            let field = |name: &str| cell[name].as_str().unwrap_or_default().to_owned();
            let (stage, scenario) = (field("stage"), field("scenario"));
            if !self.stages.contains(&stage) {
                self.stages.push(stage.clone());
            }
            if !self.scenarios.contains(&scenario) {
                self.scenarios.push(scenario.clone());
            }
            self.cells.insert(
                (stage, scenario),
                Cell {
                    result: field("result"),
                },
            );
        }
    }

    fn cell(&self, stage: &str, scenario: &str) -> Option<&Cell> {
        self.cells.get(&(stage.to_owned(), scenario.to_owned()))
    }

    /// `stage2..stage7` (inclusive, in column order), `stage9,stage10`.
    fn stages_named(&self, spec: &str) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        for item in spec.split(',') {
            if let Some((from, to)) = item.split_once("..") {
                let at = |s: &str| {
                    self.stages
                        .iter()
                        .position(|x| x == s)
                        .ok_or_else(|| format!("no stage `{s}` in the matrix"))
                };
                let (a, b) = (at(from)?, at(to)?);
                if a > b {
                    return Err(format!("`{item}` runs backwards"));
                }
                out.extend(self.stages[a..=b].iter().cloned());
            } else if self.stages.iter().any(|s| s == item) {
                out.push(item.to_owned());
            } else {
                return Err(format!("no stage `{item}` in the matrix"));
            }
        }
        Ok(out)
    }
}

/// A finding other than a refusal.
fn broken(result: &str) -> bool {
    result
        .split_whitespace()
        .any(|label| label != "ok" && label != "n/a" && label != "REFUSED")
}

fn labels(result: &str) -> BTreeSet<&str> {
    result.split_whitespace().collect()
}

/// Whether `result` is what `want` says: `ok`, `n/a`, `broken`, `+LABEL`
/// (has it), or the exact labels.
fn verdict_matches(result: &str, want: &str) -> bool {
    match want {
        "broken" => broken(result),
        _ if want.starts_with('+') => want
            .split_whitespace()
            .all(|w| labels(result).contains(w.trim_start_matches('+'))),
        _ => labels(result) == labels(want),
    }
}

/// Checks one claim against the matrix (and, for `run` and `test`, the
/// generated timelines and the stages' test files); `Err` says why not.
pub fn check_claim(claim: &str, matrix: &Matrix) -> Result<(), String> {
    let words: Vec<&str> = claim.split_whitespace().collect();
    match words.as_slice() {
        [] => Err("an empty claim".to_owned()),
        ["last", stage] => match matrix.stages.iter().rfind(|s| s.starts_with("stage")) {
            Some(last) if last == stage => Ok(()),
            last => Err(format!("the matrix's last column is {last:?}, not {stage}")),
        },
        ["rows", a, "=", b] => {
            let differ: Vec<&String> = matrix
                .stages
                .iter()
                .filter(|stage| {
                    matrix.cell(stage, a).map(|c| &c.result)
                        != matrix.cell(stage, b).map(|c| &c.result)
                })
                .collect();
            match (
                matrix.scenarios.iter().any(|s| s == a),
                matrix.scenarios.iter().any(|s| s == b),
            ) {
                (true, true) if differ.is_empty() => Ok(()),
                (true, true) => Err(format!("{a} and {b} differ on {differ:?}")),
                _ => Err(format!("no story `{a}` or `{b}` in the matrix")),
            }
        }
        [a, "=", b] => {
            let (a, b) = (
                matrix.stages_named(a)?.remove(0),
                matrix.stages_named(b)?.remove(0),
            );
            let differ: Vec<String> = matrix
                .scenarios
                .iter()
                .filter(|s| {
                    matrix.cell(&a, s).map(|c| &c.result) != matrix.cell(&b, s).map(|c| &c.result)
                })
                .cloned()
                .collect();
            if differ.is_empty() {
                Ok(())
            } else {
                Err(format!("{a} and {b} differ on {}", differ.join(", ")))
            }
        }
        ["test", stage, file] => {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"));
            let found = std::fs::read_dir(root)
                .map_err(|e| e.to_string())?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .any(|dir| {
                    std::fs::read_to_string(dir.join("Cargo.toml"))
                        .is_ok_and(|t| t.contains(&format!("name = \"{stage}\"")))
                        && dir.join("tests").join(format!("{file}.rs")).is_file()
                });
            if found {
                Ok(())
            } else {
                Err(format!("{stage} has no test file tests/{file}.rs"))
            }
        }
        ["run", stage, scenario, rest @ ..] => {
            let mut base = format!("{stage}-{scenario}");
            let mut verdict = Vec::new();
            let mut rest = rest.iter();
            while let Some(word) = rest.next() {
                match *word {
                    "--fencing" => {
                        let label = rest.next().ok_or("--fencing needs a value")?;
                        base.push('-');
                        base.push_str(label);
                    }
                    "--request-ids" => base.push_str("-request-ids"),
                    "--release-after-commit" => base.push_str("-release-after-commit"),
                    w => verdict.push(w),
                }
            }
            let path = super::book_src("book/src")
                .join("generated")
                .join(format!("{base}.timeline.md"));
            let text = std::fs::read_to_string(&path)
                .map_err(|_| format!("the book shows no run {base} (no {})", path.display()))?;
            let got = text
                .lines()
                .rev()
                .find_map(|l| l.split_once("verdict: ").map(|(_, v)| v))
                .ok_or_else(|| format!("{} has no verdict line", path.display()))?;
            let got = got.trim_end_matches("</span>").trim();
            let want = verdict.join(" ");
            if verdict_matches(got, &want) {
                Ok(())
            } else {
                Err(format!("the run {base} gave {got}, not {want}"))
            }
        }
        [stages, scenarios, verdict @ ..] if !verdict.is_empty() => {
            let want = verdict.join(" ");
            let mut wrong = Vec::new();
            for stage in matrix.stages_named(stages)? {
                for scenario in scenarios.split(',') {
                    if !matrix.scenarios.iter().any(|s| s == scenario) {
                        return Err(format!("no story `{scenario}` in the matrix"));
                    }
                    let got = matrix
                        .cell(&stage, scenario)
                        .map_or("(no cell)", |c| c.result.as_str());
                    if !verdict_matches(got, &want) {
                        wrong.push(format!("{stage} × {scenario} is {got}"));
                    }
                }
            }
            if wrong.is_empty() {
                Ok(())
            } else {
                Err(format!("not {want}: {}", wrong.join("; ")))
            }
        }
        _ => Err("not a claim this check reads".to_owned()),
    }
}

/// One sentence of a page (a table row is one), where it starts, and the
/// claims next to it.
#[derive(Debug, Clone)]
pub struct Sentence {
    pub line: usize,
    pub text: String,
    pub claims: Vec<String>,
    pub table_row: bool,
}

const OPEN: &str = "<!-- claim:";

/// The claims in `text` and the text without them.
fn take_claims(text: &str) -> (String, Vec<String>) {
    let mut claims = Vec::new();
    let mut rest = String::new();
    let mut s = text;
    while let Some(at) = s.find(OPEN) {
        rest.push_str(&s[..at]);
        let after = &s[at + OPEN.len()..];
        let Some(end) = after.find("-->") else {
            rest.push_str(&s[at..]);
            s = "";
            break;
        };
        claims.extend(
            after[..end]
                .split(';')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned),
        );
        s = &after[end + 3..];
    }
    rest.push_str(s);
    (rest, claims)
}

/// The page's prose as units: a paragraph, a list item, a heading or a
/// table row, each with the line it starts on. Code blocks and whole-line
/// includes are left out (generated files are correct by construction).
fn units(text: &str) -> Vec<(usize, String, bool)> {
    let mut units = Vec::new();
    let mut current: Option<(usize, String)> = None;
    let mut in_code = false;
    let flush = |current: &mut Option<(usize, String)>, units: &mut Vec<(usize, String, bool)>| {
        if let Some((line, text)) = current.take() {
            units.push((line, text, false));
        }
    };
    for (number, line) in text.lines().enumerate() {
        let number = number + 1;
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_code = !in_code;
            flush(&mut current, &mut units);
            continue;
        }
        if in_code {
            continue;
        }
        let block_html = trimmed.starts_with("<div") || trimmed.starts_with("</div");
        if trimmed.is_empty() || trimmed.starts_with("{{#include") || block_html {
            flush(&mut current, &mut units);
            continue;
        }
        if trimmed.starts_with('|') {
            flush(&mut current, &mut units);
            let separator = trimmed.chars().all(|c| "|-: ".contains(c));
            if !separator {
                units.push((number, trimmed.to_owned(), true));
            }
            continue;
        }
        let item = trimmed.starts_with("- ")
            || trimmed.starts_with("* ")
            || trimmed.starts_with('#')
            || trimmed
                .split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        if item {
            flush(&mut current, &mut units);
        }
        match &mut current {
            Some((_, text)) => {
                text.push(' ');
                text.push_str(trimmed);
            }
            None => current = Some((number, trimmed.to_owned())),
        }
    }
    flush(&mut current, &mut units);
    units
}

/// Splits a unit into sentences; a claim comment right after a sentence's
/// end belongs to that sentence.
fn split_sentences(unit: &str, lang: Lang) -> Vec<String> {
    let chars: Vec<char> = unit.chars().collect();
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        current.push(c);
        let ends = match lang {
            Lang::English => {
                matches!(c, '.' | '!' | '?')
                    && chars.get(i + 1).is_some_and(|n| n.is_whitespace())
                    && chars.get(i + 2).is_some_and(|n| !n.is_lowercase())
            }
            Lang::Chinese => {
                matches!(c, '。' | '！' | '？')
                    || (matches!(c, '.' | '!' | '?')
                        && chars.get(i + 1).is_some_and(|n| n.is_whitespace()))
            }
        };
        if ends {
            out.push(std::mem::take(&mut current));
        }
        i += 1;
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    // A sentence that starts with a claim gives it to the one before.
    let mut merged: Vec<String> = Vec::new();
    for sentence in out {
        // `**…DEADLOCK。**<!-- claim -->`: the bold's end comes first.
        let trimmed = sentence.trim_start().trim_start_matches('*').trim_start();
        if trimmed.starts_with(OPEN)
            && let Some(last) = merged.last_mut()
        {
            let end = trimmed.find("-->").map_or(trimmed.len(), |e| e + 3);
            last.push(' ');
            last.push_str(&trimmed[..end]);
            let rest = trimmed[end..].trim();
            if !rest.is_empty() {
                merged.push(rest.to_owned());
            }
            continue;
        }
        merged.push(sentence.trim().to_owned());
    }
    merged
}

/// Every sentence of a page.
pub fn sentences(text: &str, lang: Lang) -> Vec<Sentence> {
    let mut out = Vec::new();
    for (line, unit, table_row) in units(text) {
        let pieces = if table_row {
            vec![unit]
        } else {
            split_sentences(&unit, lang)
        };
        for piece in pieces {
            let (text, claims) = take_claims(&piece);
            out.push(Sentence {
                line,
                text,
                claims,
                table_row,
            });
        }
    }
    out
}

/// The stages a sentence names by number or name (`stage 6`, `stages 2 to
/// 5, 7 and 8`, `stage6-fair`, `阶段 9 和 10`, the fair variant, ZooKeeper,
/// etcd).
pub fn stages_named(sentence: &str, lang: Lang) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let lower = sentence.to_lowercase();
    // `stage9`, `stage6-fair`.
    for (at, _) in lower.match_indices("stage") {
        let rest = &lower[at + 5..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() {
            let fair = rest[digits.len()..].starts_with("-fair");
            found.insert(format!("stage{digits}{}", if fair { "-fair" } else { "" }));
        }
    }
    // `stage 6`, `stages 2–5, 7 and 8`, `阶段 9 和 10`.
    let (words, joiners): (&[&str], &[&str]) = match lang {
        Lang::English => (
            &["stages ", "stage "],
            &["–", "-", ",", " and ", " or ", " to "],
        ),
        Lang::Chinese => (
            &["阶段 ", "阶段"],
            &["–", "-", "、", "和", "或", "到", "至", ",", "，", " "],
        ),
    };
    for word in words {
        for (at, _) in lower.match_indices(word) {
            let mut rest = &lower[at + word.len()..];
            let mut previous: Option<u32> = None;
            let mut range = false;
            loop {
                rest = rest.trim_start_matches(' ');
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                let Ok(n) = digits.parse::<u32>() else { break };
                rest = &rest[digits.len()..];
                match previous {
                    Some(p) if range => {
                        for k in p..=n {
                            found.insert(format!("stage{k}"));
                        }
                    }
                    _ => {
                        found.insert(format!("stage{n}"));
                    }
                }
                previous = Some(n);
                let trimmed = rest.trim_start_matches(' ');
                let Some(joiner) = joiners
                    .iter()
                    .find(|j| trimmed.starts_with(**j) || rest.starts_with(**j))
                else {
                    break;
                };
                range = ["–", "-", " to ", "到", "至"].contains(joiner);
                rest = rest
                    .strip_prefix(joiner)
                    .or_else(|| trimmed.strip_prefix(joiner))
                    .unwrap_or(rest);
                if !rest.trim_start().starts_with(|c: char| c.is_ascii_digit()) {
                    break;
                }
            }
        }
    }
    let fair = match lang {
        Lang::English => ["fair variant", "fair lock", "6-fair"]
            .iter()
            .any(|w| lower.contains(w)),
        Lang::Chinese => ["公平锁", "6-fair"].iter().any(|w| lower.contains(w)),
    };
    if fair {
        found.insert("stage6-fair".to_owned());
    }
    if sentence.contains("ZooKeeper") {
        found.insert("stage9".to_owned());
    }
    if lower.contains("etcd") {
        found.insert("stage10".to_owned());
    }
    found
}

/// Words that speak of many stages at once: "every lock before this one",
/// "the TTL stages", "只有阶段".
fn quantifies_stages(sentence: &str, lang: Lang) -> bool {
    let lower = sentence.to_lowercase();
    match lang {
        Lang::English => {
            let phrases = [
                "before this one",
                "redis stages",
                "ttl stages",
                "polling stages",
                "single-node stage",
                "every stage",
                "each stage",
                "all stages",
                "no stage",
                "only stage",
                "other stage",
                "other redis stage",
                "earlier stage",
                "first stage",
                "every lock",
                "every redis stage",
                "both",
            ];
            phrases.iter().any(|p| lower.contains(p))
        }
        Lang::Chinese => {
            let phrases = [
                "前面的每一把",
                "只有阶段",
                "第一个",
                "别的 Redis 阶段",
                "其他 Redis 阶段",
                "其他阶段",
                "每个阶段",
                "每一个阶段",
                "所有阶段",
                "单节点阶段",
                "带 TTL 的阶段",
                "轮询的阶段",
                "两者",
            ];
            phrases.iter().any(|p| sentence.contains(p))
        }
    }
}

/// "the last stage" counts the matrix's columns.
fn names_the_last_stage(sentence: &str, lang: Lang) -> bool {
    match lang {
        Lang::English => {
            let lower = sentence.to_lowercase();
            lower.contains("last stage") || lower.contains("final stage")
        }
        Lang::Chinese => sentence.contains("最后一个阶段") || sentence.contains("最后一阶段"),
    }
}

/// Whether a sentence names a story (a scenario of the matrix, or the fault
/// it makes) or a verdict (a label of the legend, or the word for one).
pub fn names_story_or_verdict(sentence: &str, lang: Lang, matrix: &Matrix) -> bool {
    names_story_or_label(sentence, lang, matrix) || says_ok(sentence)
}

/// Whether a sentence names a story or a verdict other than a bare `ok`
/// (a bench table's "4000 ok" is a counter, not a cell).
fn names_story_or_label(sentence: &str, lang: Lang, matrix: &Matrix) -> bool {
    if matrix
        .scenarios
        .iter()
        .any(|s| sentence.contains(s.as_str()))
    {
        return true;
    }
    const LABELS: [&str; 8] = [
        "OVERSOLD",
        "OVERLAP",
        "FOREIGN-DELETE",
        "DEADLOCK",
        "SELF-BLOCKED",
        "REFUSED",
        "DUPLICATE",
        "n/a",
    ];
    if LABELS.iter().any(|l| sentence.contains(l)) || sentence.contains("`ok`") {
        return true;
    }
    let lower = sentence.to_lowercase();
    let words: &[&str] = match lang {
        Lang::English => &[
            "reenter",
            "re-enter",
            "reentran",
            "outliv",
            "paused",
            "frozen",
            "failover",
            "fails over",
            "restart",
            "clock jump",
            "dead waiter",
            "oversel",
            "oversold",
            "surviv",
            "cannot corrupt",
            "second holder",
            "two holders",
            "not apply",
            " fixes ",
            " fixed ",
            "deadlock",
        ],
        Lang::Chinese => &[
            "重入",
            "被暂停",
            "冻住",
            "主从切换",
            "故障转移",
            "重启",
            "时钟跳变",
            "活得更久",
            "超卖",
            "修好",
            "扛住",
            "死锁",
            "两个持锁者",
            "第二个持锁者",
            "不适用",
            "解决了",
            "死掉的等待者",
        ],
    };
    words.iter().any(|w| lower.contains(w))
}

/// The word `ok` on its own (a verdict), not inside another word.
fn says_ok(sentence: &str) -> bool {
    sentence.match_indices("ok").any(|(at, _)| {
        let before = sentence[..at].chars().next_back();
        let after = sentence[at + 2..].chars().next();
        let apart =
            |c: Option<char>| c.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_' && c != '-');
        apart(before) && apart(after)
    })
}

/// The pages that read across the matrix: every stage and story named in
/// one of their sentences is a claim about a cell the page does not show.
pub const SUMMARY_PAGES: [&str; 4] = [
    "introduction.md",
    "choosing.md",
    "matrix.md",
    "beyond-redis.md",
];

/// Pages the rule leaves out, and why: the interview's answers are its
/// runs (`interview N --no-input` runs each question's cells against the
/// expected matrix, and `book_zh` holds the Chinese commands to the
/// English ones).
pub const LEFT_OUT: [&str; 1] = ["interview.md"];

/// Whether `sentence` on page `page` must carry a claim.
pub fn needs_a_claim(page: &str, sentence: &Sentence, lang: Lang, matrix: &Matrix) -> bool {
    let text = &sentence.text;
    if names_the_last_stage(text, lang) {
        return true;
    }
    let named = if sentence.table_row {
        names_story_or_label(text, lang, matrix)
    } else {
        names_story_or_verdict(text, lang, matrix)
    };
    if !named {
        return false;
    }
    let stages = stages_named(text, lang);
    // A table row whose first cell is a stage lists stages in bulk.
    let first_cell = text
        .trim_start_matches('|')
        .split('|')
        .next()
        .unwrap_or("")
        .trim();
    let stage_row = sentence.table_row
        && (first_cell.chars().all(|c| c.is_ascii_digit()) && !first_cell.is_empty()
            || first_cell.ends_with("-fair")
            || first_cell.starts_with("stage"));
    if SUMMARY_PAGES.contains(&page) {
        return !stages.is_empty() || stage_row || quantifies_stages(text, lang);
    }
    let implicit = match lang {
        Lang::English => text.to_lowercase().contains("before this one"),
        Lang::Chinese => text.contains("前面的每一把"),
    };
    stages.len() >= 2
        || stage_row
        || ((!stages.is_empty() || implicit) && quantifies_stages(text, lang))
}

/// Fails on any of [`problems`] in one edition's pages, each named, and on
/// an edition with too few claims to be checking anything.
pub fn assert_every_claim_true(src: &Path, lang: Lang) {
    let (checked, problems) = problems(src, lang);
    assert!(
        problems.is_empty(),
        "{} problem(s) with sentences about the matrix (see the top of tests/book.rs):\n{}",
        problems.len(),
        problems.join("\n")
    );
    assert!(checked > 20, "only {checked} claims found");
}

/// Every problem of one edition's pages: a sentence that needs a claim and
/// has none, and a claim the matrix (or the named run or test) denies.
pub fn problems(src: &Path, lang: Lang) -> (usize, Vec<String>) {
    let matrix = Matrix::of_the_book();
    let mut checked = 0;
    let mut problems = Vec::new();
    for page in super::pages(src) {
        let name = page
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if LEFT_OUT.contains(&name.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&page).unwrap_or_default();
        for sentence in sentences(&text, lang) {
            let at = format!("{}:{}", page.display(), sentence.line);
            for claim in &sentence.claims {
                checked += 1;
                if let Err(why) = check_claim(claim, &matrix) {
                    problems.push(format!("{at}: `{claim}` is false: {why}"));
                }
            }
            if sentence.claims.is_empty() && needs_a_claim(&name, &sentence, lang, &matrix) {
                problems.push(format!(
                    "{at}: names stages and a story or verdict, with no claim: {}",
                    sentence.text
                ));
            }
        }
    }
    (checked, problems)
}
