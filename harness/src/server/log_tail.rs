//! The end of a server's log: what an error quotes when a server (a
//! `redis-server`, an ensemble member, a container) would not start or
//! would not lead.

/// The last `lines` lines of `text`.
pub(super) fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
