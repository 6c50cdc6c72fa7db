//! The book takes its code from the crates by anchor. mdBook silently
//! includes nothing for an anchor that does not exist, so this checks every
//! `{{#include file:anchor}}` in the book against the file it names.

use std::path::Path;

#[test]
fn every_include_in_the_book_names_an_existing_file_and_anchor() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("book/src");
    let mut checked = 0;
    let mut broken = Vec::new();
    for entry in std::fs::read_dir(&src).expect("book/src exists") {
        let page = entry.expect("readable").path();
        if page.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&page).expect("readable page");
        for include in text.split("{{#include ").skip(1) {
            let target = include.split("}}").next().unwrap_or_default().trim();
            let (file, anchor) = match target.rsplit_once(':') {
                Some((file, anchor)) if !anchor.chars().all(|c| c.is_ascii_digit()) => {
                    (file, Some(anchor))
                }
                _ => (target, None),
            };
            checked += 1;
            let name = page.file_name().unwrap_or_default().to_string_lossy();
            match std::fs::read_to_string(src.join(file)) {
                Err(_) => broken.push(format!("{name}: {file} does not exist")),
                Ok(code) => {
                    if let Some(anchor) = anchor
                        && !code.contains(&format!("ANCHOR: {anchor}"))
                    {
                        broken.push(format!("{name}: {file} has no anchor `{anchor}`"));
                    }
                }
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} includes found: is the book there?"
    );
    assert!(broken.is_empty(), "broken includes:\n{}", broken.join("\n"));
}
