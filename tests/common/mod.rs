//! What the book tests share: reading a book's pages, its includes and its
//! table of contents. Used by `tests/book.rs` (the English edition) and
//! `tests/book_zh.rs` (the Chinese edition); each test binary uses only part
//! of it.
#![allow(dead_code)]

pub mod claims;

use std::path::{Path, PathBuf};

/// The source folder of an edition: `book/src` or `book/zh/src`.
pub fn book_src(edition: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(edition)
}

/// The Markdown pages of a book's source folder (not its subfolders), by name.
pub fn pages(src: &Path) -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(src)
        .expect("the book's source folder exists")
        .map(|entry| entry.expect("readable").path())
        .filter(|page| page.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    pages
}

/// One `{{#include file[:anchor]}}` of a page, the file as the page names it.
pub struct Include {
    pub file: String,
    pub anchor: Option<String>,
    /// A line range (`file:10`, `file:10:`, `file:10:20`): the first line
    /// and the last, if it names one.
    pub lines: Option<(usize, Option<usize>)>,
}

/// Every include of a page's text, in order. A numeric suffix (`file:10`,
/// `file:10:`, `file:10:20`) is a line range, not an anchor.
pub fn includes(text: &str) -> Vec<Include> {
    text.split("{{#include ")
        .skip(1)
        .map(|include| {
            let target = include.split("}}").next().unwrap_or_default().trim();
            let Some((file, rest)) = target.split_once(':') else {
                return Include {
                    file: target.to_owned(),
                    anchor: None,
                    lines: None,
                };
            };
            if rest.chars().all(|c| c.is_ascii_digit() || c == ':') {
                let mut bounds = rest.split(':').map(|n| n.parse::<usize>().ok());
                let first = bounds.next().flatten().unwrap_or(1);
                let last = bounds.next().flatten();
                Include {
                    file: file.to_owned(),
                    anchor: None,
                    lines: Some((first, last)),
                }
            } else {
                Include {
                    file: file.to_owned(),
                    anchor: Some(rest.to_owned()),
                    lines: None,
                }
            }
        })
        .collect()
}

/// Checks every include of every page of `src` against the file it names
/// (relative to the page) and the anchor it asks for. mdBook silently
/// includes nothing for a missing anchor. Returns how many includes were
/// checked and what is broken, one line each.
pub fn broken_includes(src: &Path) -> (usize, Vec<String>) {
    let mut checked = 0;
    let mut broken = Vec::new();
    for page in pages(src) {
        let text = std::fs::read_to_string(&page).expect("readable page");
        let name = page.file_name().unwrap_or_default().to_string_lossy();
        for Include {
            file,
            anchor,
            lines,
        } in includes(&text)
        {
            checked += 1;
            match std::fs::read_to_string(src.join(&file)) {
                Err(_) => broken.push(format!("{name}: {file} does not exist")),
                Ok(code) => {
                    if let Some(anchor) = anchor
                        && !code.contains(&format!("ANCHOR: {anchor}"))
                    {
                        broken.push(format!("{name}: {file} has no anchor `{anchor}`"));
                    }
                    let count = code.lines().count();
                    if let Some((first, last)) = lines
                        && (first == 0
                            || first > count
                            || last.is_some_and(|last| last < first || last > count))
                    {
                        broken.push(format!(
                            "{name}: {file} has {count} lines, not the range {first}:{}",
                            last.map(|l| l.to_string()).unwrap_or_default()
                        ));
                    }
                }
            }
        }
    }
    (checked, broken)
}

/// The chapter files a book's `SUMMARY.md` links, in order.
pub fn summary_chapters(src: &Path) -> Vec<String> {
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).expect("SUMMARY.md exists");
    summary
        .split("](")
        .skip(1)
        .filter_map(|link| link.split(')').next())
        .map(str::to_owned)
        .collect()
}
