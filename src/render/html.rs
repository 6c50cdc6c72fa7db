//! The pieces every page shares.

use std::fmt::Write as _;

/// The book's stylesheet: timelines and code wrap under their start,
/// diagrams stay readable.
const BOOK_CSS: &str = include_str!("../../book/theme/lockstages.css");

/// The book's script that sizes diagrams (readable text, scrolling or
/// folded when they cannot fit), folds timelines taller than three screens
/// and indents wrapped code lines, so pages read as the book does.
const BOOK_JS: &str = include_str!("../../book/lockstages.js");

/// The Mermaid build the book uses, so pages draw diagrams as the book does.
pub const MERMAID_JS: &str = include_str!("../../book/mermaid.min.js");

/// The file name Mermaid is written under beside pages that share it.
pub const MERMAID_FILE: &str = "mermaid.min.js";

/// The look of a page outside the book.
const PAGE_CSS: &str = "
body { font-family: sans-serif; max-width: 1200px; margin: 0 auto; padding: 0 16px; color: #222; }
pre { background: #f6f7f6; padding: 8px 12px; }
table.matrix { border-collapse: collapse; table-layout: fixed; width: 100%; font-size: 13px; }
table.matrix th, table.matrix td { border: 1px solid #ccc; padding: 4px; overflow-wrap: anywhere; }
table.matrix th.scenario { width: 16%; text-align: left; }
table.matrix td a { display: block; color: inherit; text-decoration: none; }
td.ok { background: #d9f2d9; }
td.failure { background: #f7c9c5; }
td.refused { background: #cfe0f7; }
td.na { background: #eee; color: #777; }
td.error { background: #444; color: #fff; }
td.mismatch { outline: 3px solid #e08000; outline-offset: -3px; }
.verdict { font-weight: bold; }
";

/// How a page gets Mermaid's script.
#[derive(Debug, Clone, Copy)]
pub enum Mermaid {
    /// In the page itself: one file that opens anywhere.
    Inline,
    /// From [`MERMAID_FILE`] in the same folder.
    Beside,
}

/// Escapes text for HTML.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// A whole page.
pub fn page(title: &str, body: &str, mermaid: Mermaid) -> String {
    let script = match mermaid {
        Mermaid::Inline => format!(
            "<script>{}</script>",
            MERMAID_JS.replace("</script", "<\\/script")
        ),
        Mermaid::Beside => format!("<script src=\"{MERMAID_FILE}\"></script>"),
    };
    let book_js = BOOK_JS.replace("</script", "<\\/script");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{PAGE_CSS}{BOOK_CSS}</style>\n</head>\n<body>\n{body}\n\
         {script}\n<script>{book_js}</script>\n\
         <script>mermaid.initialize({{ startOnLoad: false, sequence: {{ useMaxWidth: true }} }});\n\
         document.addEventListener('DOMContentLoaded', () =>\n\
         mermaid.run({{ querySelector: '.mermaid' }}).then(() => lockstagesDiagrams.layOut()));</script>\n\
         </body>\n</html>\n",
        escape(title)
    )
}

/// A timeline as a block whose lines wrap under their text (the book's
/// stylesheet indents them): nothing is cut at the column's edge.
pub fn timeline(text: &str) -> String {
    let mut out = String::from("<pre class=\"timeline\">");
    for line in text.lines() {
        let _ = writeln!(out, "<span class=\"line\">{}</span>", escape(line));
    }
    out.push_str("</pre>\n");
    out
}

/// A Mermaid diagram for a page (Mermaid reads the element's text).
pub fn diagram(source: &str) -> String {
    format!("<pre class=\"mermaid\">\n{}</pre>\n", escape(source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeline_keeps_every_line_and_escapes_it() {
        let html = timeline("T+1ms  a  SET k <v>\nT+2ms  b  GET k -> 1\n");
        assert_eq!(html.matches("<span class=\"line\">").count(), 2, "{html}");
        assert!(
            html.contains("SET k &lt;v&gt;") && html.contains("-&gt; 1"),
            "{html}"
        );
    }

    #[test]
    fn an_inline_page_carries_mermaid_and_the_book_stylesheet() {
        let page = page("t", "<p>x</p>", Mermaid::Inline);
        assert!(page.contains("pre.timeline") && page.contains("mermaid.initialize"));
        assert!(page.contains("lockstagesDiagrams.layOut()") && page.contains("hangCodeLines"));
        assert!(page.len() > MERMAID_JS.len());
    }
}
