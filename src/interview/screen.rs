//! How the walkthrough looks: colours only on a terminal and never under
//! `NO_COLOR` (<https://no-color.org>), the lines of a timeline that matter
//! marked with `>>` (and in colour), paragraphs wrapped to the screen.

use std::io::IsTerminal;

/// Whether to paint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    colour: bool,
}

impl Style {
    /// Colours when standard output is a terminal and `NO_COLOR` is unset
    /// or empty.
    pub fn detect() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self {
            colour: std::io::stdout().is_terminal() && !no_color,
        }
    }

    /// No colours at all.
    #[cfg(test)]
    pub fn plain() -> Self {
        Self { colour: false }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// A heading.
    pub fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }

    /// A line that matters, or a finding.
    pub fn alert(self, text: &str) -> String {
        self.paint("1;31", text)
    }

    /// A prediction that was right.
    pub fn good(self, text: &str) -> String {
        self.paint("32", text)
    }

    /// Something to read past.
    pub fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }
}

/// Timelines longer than this fold their long unmarked stretches.
const LONG_TIMELINE: usize = 60;
/// Unmarked lines kept on each side of a fold.
const KEEP: usize = 2;

/// The timeline, indented, with each line that contains one of `marks`
/// prefixed by `>>` (and painted). A long timeline (eight clients taking
/// turns) folds each stretch of unmarked lines to its first and last two,
/// saying how many lines it left out.
pub fn mark_timeline(timeline: &str, marks: &[&str], style: Style) -> String {
    let lines: Vec<&str> = timeline.lines().collect();
    let marked: Vec<bool> = lines
        .iter()
        .map(|line| marks.iter().any(|m| line.contains(m)))
        .collect();
    let fold = lines.len() > LONG_TIMELINE;
    let mut out = String::new();
    let mut i = 0;
    while i < lines.len() {
        if marked[i] {
            out.push_str(&style.alert(&format!(">> {}", lines[i])));
            out.push('\n');
            i += 1;
            continue;
        }
        let end = (i..lines.len()).find(|j| marked[*j]).unwrap_or(lines.len());
        let stretch = &lines[i..end];
        if fold && stretch.len() > 2 * KEEP + 1 {
            for line in &stretch[..KEEP] {
                out.push_str(&format!("   {line}\n"));
            }
            let left_out = stretch.len() - 2 * KEEP;
            out.push_str(&style.dim(&format!("   … {left_out} more lines …")));
            out.push('\n');
            for line in &stretch[stretch.len() - KEEP..] {
                out.push_str(&format!("   {line}\n"));
            }
        } else {
            for line in stretch {
                out.push_str(&format!("   {line}\n"));
            }
        }
        i = end;
    }
    out
}

/// `text`'s paragraphs (separated by blank lines) wrapped at `width`
/// columns, each line indented by `indent`.
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    for (i, paragraph) in text.split("\n\n").enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut line = String::new();
        for word in paragraph.split_whitespace() {
            if !line.is_empty() && indent.len() + line.len() + 1 + word.len() > width {
                out.push_str(indent);
                out.push_str(&line);
                out.push('\n');
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        if !line.is_empty() {
            out.push_str(indent);
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_style_adds_no_escape_codes() {
        let style = Style::plain();
        assert_eq!(style.alert("x"), "x");
        assert_eq!(style.bold("x"), "x");
    }

    #[test]
    fn only_the_lines_that_matter_are_marked() {
        let timeline = "T+1ms  client-A  acquired\nT+2ms  harness   TWO HOLDERS\n";
        let marked = mark_timeline(timeline, &["TWO HOLDERS"], Style::plain());
        assert_eq!(
            marked,
            "   T+1ms  client-A  acquired\n>> T+2ms  harness   TWO HOLDERS\n"
        );
    }

    #[test]
    fn a_long_timeline_folds_its_unmarked_stretches_and_keeps_every_marked_line() {
        let mut timeline = String::new();
        for i in 0..100 {
            let text = if i == 50 { "TWO HOLDERS" } else { "retry" };
            timeline.push_str(&format!("T+{i}ms {text}\n"));
        }
        let marked = mark_timeline(&timeline, &["TWO HOLDERS"], Style::plain());
        assert!(marked.contains(">> T+50ms TWO HOLDERS\n"), "{marked}");
        assert!(marked.contains("   … 46 more lines …\n"), "{marked}");
        assert!(marked.contains("   T+0ms retry\n") && marked.contains("   T+99ms retry\n"));
        assert_eq!(marked.lines().count(), 2 * (2 * KEEP + 1) + 1);
    }

    #[test]
    fn paragraphs_wrap_at_the_width_and_keep_their_breaks() {
        let wrapped = wrap("one two three four\n\nfive", 12, "  ");
        assert_eq!(wrapped, "  one two\n  three four\n\n  five\n");
    }
}
