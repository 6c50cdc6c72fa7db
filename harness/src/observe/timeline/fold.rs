//! Folding a timeline so that a reader can take it in: what repeats is said
//! once, with how many times and until when.
//!
//! Two kinds of repetition fill a run's record:
//!
//! - the same line back to back (a client spinning on `SETNX` while nobody
//!   else speaks): one line, `(x48 until T+…)`;
//! - a client's refused attempt, again and again, while others speak in
//!   between: a waiting stage 8 client sends its script and the script's
//!   `SET … NX` shows under it; a Redlock client asks five masters in
//!   whatever order they answer. Every attempt carries a fresh random value,
//!   so no two lines are equal, but they have the same *shape*: the same
//!   command to the same node with the same answer, ids aside.
//!
//! A client's line whose shape it has already shown, since it last said
//! something itself (acquired, paused, sold), is a repeat. Its first attempt
//! is shown whole; the repeats that follow become one line, `the same
//! commands again, 705 lines   (x47 until T+780ms)`, counted by the
//! attempt's first line, and they keep one attempt to draw as a diagram's
//! `loop`. The full record stays in the run (`run <stage> <scenario>`
//! prints it folded the same way; the `.events.tsv` beside each book
//! timeline has every line).
//!
//! Two more fill a long run, and fold after those:
//!
//! - a client's round, again and again: a holder that sells, releases and
//!   takes the lock again says the same eight or nine lines each time, only
//!   the stock and the ids changing. Its first round is shown whole; the
//!   rounds that follow it, exactly like it but for their numbers, become
//!   one line, `the same 9 lines again, new values aside: 72 lines   (x8
//!   until T+196ms)`, and the round that differs (the stock reaching 0) is
//!   shown whole again. A number 0 is kept apart from the others (a refused
//!   `SETNX` answers 0, the last sale leaves 0), so a round that ends
//!   differently is never folded into the others;
//! - (for the printed timeline only) one command sent to several nodes: a
//!   Redlock client asks every master the same thing, and each answer is a
//!   line. The same line from the same client to another node joins the
//!   first one's line, `[node1,node3,node2] SET … -> OK`, unless anything
//!   happened on that node in between (an expiry, another client's command)
//!   or the client said something itself: the order the servers saw is
//!   kept. The diagram keeps one arrow per node.

use std::collections::{HashMap, HashSet};

use super::{Event, Repeated};

/// `events` folded: runs of the same line, then each client's repeated
/// attempts.
pub(super) fn fold(events: impl IntoIterator<Item = Event>) -> Vec<Repeated> {
    rounds(attempts(back_to_back(events)))
}

/// `events` folded for reading as text: as [`fold`], and one command sent
/// to several nodes said once, with the nodes that answered the same.
pub(super) fn fold_for_reading(events: impl IntoIterator<Item = Event>) -> Vec<Repeated> {
    rounds(across_nodes(attempts(back_to_back(events))))
}

/// Each run of the same event, back to back, as one.
fn back_to_back(events: impl IntoIterator<Item = Event>) -> Vec<Repeated> {
    let mut folded: Vec<Repeated> = Vec::new();
    for event in events {
        match folded.last_mut() {
            Some(run) if run.again.is_empty() && run.event.same_as(&event) => {
                run.count += 1;
                run.last = event.at;
            }
            _ => folded.push(Repeated {
                last: event.at,
                count: 1,
                again: Vec::new(),
                event,
            }),
        }
    }
    folded
}

/// Whether `actor` is a client (not the harness, not a server's news).
fn is_client(actor: &str) -> bool {
    actor != "harness" && actor != "redis"
}

/// What stays the same from one attempt to the next: the node and the text
/// with ids (`9a2e41c0…`) and a count answered (a `PTTL` of 287) left out.
/// Answers 0 and 1 (refused, granted; nothing deleted, deleted) and the
/// negative ones (`PTTL` -1: no expiry) are the story, and stay.
fn shape(e: &Event) -> String {
    let (text, reply) = match e.text.rsplit_once(" -> ") {
        Some((text, reply)) if reply.parse::<u64>().is_ok_and(|n| n >= 2) => (text, "<n>"),
        Some((text, reply)) => (text, reply),
        None => (e.text.as_str(), ""),
    };
    let words: Vec<&str> = text
        .split(' ')
        .map(|w| {
            let id = w
                .strip_suffix('…')
                .is_some_and(|hex| !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()));
            if id { "<id>" } else { w }
        })
        .collect();
    format!(
        "{}|{}|{}|{reply}",
        e.actor,
        e.node.as_deref().unwrap_or("-"),
        words.join(" ")
    )
}

/// What a client has shown since it last spoke.
#[derive(Default)]
struct Client {
    seen: HashSet<String>,
    /// Its last line shown, by index in the output.
    last_shown: Option<usize>,
    /// The fold its repeats are going into, by index in the output.
    streak: Option<usize>,
}

fn attempts(runs: Vec<Repeated>) -> Vec<Repeated> {
    let mut out: Vec<Repeated> = Vec::new();
    let mut clients: HashMap<String, Client> = HashMap::new();
    for run in runs {
        if !is_client(&run.event.actor) {
            out.push(run);
            continue;
        }
        let client = clients.entry(run.event.actor.clone()).or_default();
        // A client's own word (acquired, paused, sold) starts a new story.
        if run.event.node.is_none() {
            *client = Client::default();
            out.push(run);
            continue;
        }
        let shape = shape(&run.event);
        if client.seen.insert(shape.clone()) {
            client.streak = None;
            out.push(run);
            client.last_shown = Some(out.len() - 1);
            continue;
        }
        if let Some(i) = client.streak {
            let fold = &mut out[i];
            fold.last = run.last;
            fold.again.extend(std::iter::repeat_n(run.event, run.count));
            continue;
        }
        // The same line as the client's last, with only others in between:
        // one more time round.
        if let Some(j) = client.last_shown
            && out[j].again.is_empty()
            && self::shape(&out[j].event) == shape
        {
            out[j].count += run.count;
            out[j].last = run.last;
            continue;
        }
        out.push(Repeated {
            event: Event {
                at: run.event.at,
                actor: run.event.actor.clone(),
                node: None,
                text: String::new(),
            },
            count: 0,
            last: run.last,
            again: std::iter::repeat_n(run.event, run.count).collect(),
        });
        client.streak = Some(out.len() - 1);
    }
    let mut said = Vec::with_capacity(out.len());
    for mut fold in out {
        if fold.again.is_empty() {
            said.push(fold);
            continue;
        }
        let lines = fold.again.len();
        let first = shape(&fold.again[0]);
        let attempts = fold.again.iter().filter(|e| shape(e) == first).count();
        // A line or two that happen to look like earlier ones are no
        // retry loop: they stay as they are.
        if attempts < 2 {
            said.extend(fold.again.into_iter().map(|event| Repeated {
                last: event.at,
                count: 1,
                again: Vec::new(),
                event,
            }));
            continue;
        }
        let second = fold.again[1..]
            .iter()
            .position(|e| shape(e) == first)
            .map_or(lines, |p| p + 1);
        fold.again.truncate(second);
        fold.count = attempts;
        fold.event.text = if second == 1 {
            "the same command again".to_owned()
        } else {
            format!("the same commands again, {lines} lines")
        };
        said.push(fold);
    }
    said
}

/// The nodes of a line that [`across_nodes`] joined: `node1,node3`.
const NODE_LIST: char = ',';

/// Whether `run` happened on `node`: a command or a server's news there,
/// a joined line that names it, or the harness's word about it
/// (`[node4] KILLED`).
fn touches(run: &Repeated, node: &str) -> bool {
    let on = |e: &Event| {
        e.node
            .as_deref()
            .is_some_and(|n| n.split(NODE_LIST).any(|n| n == node))
            || e.text
                .strip_prefix('[')
                .and_then(|rest| rest.split_once(']'))
                .is_some_and(|(n, _)| n == node)
    };
    on(&run.event) || run.again.iter().any(on)
}

/// The same line from the same client to several nodes, said once.
fn across_nodes(runs: Vec<Repeated>) -> Vec<Repeated> {
    let mut out: Vec<Repeated> = Vec::new();
    // Each client's lines that others may still join, by index in `out`.
    let mut open: HashMap<String, Vec<usize>> = HashMap::new();
    for run in runs {
        let actor = run.event.actor.clone();
        let single_node = run
            .event
            .node
            .as_deref()
            .filter(|n| !n.contains(NODE_LIST))
            .map(str::to_owned);
        let plain = run.again.is_empty() && is_client(&actor);
        let (Some(node), true) = (single_node, plain) else {
            // A client's own word, or a fold: what it says next starts anew.
            if is_client(&actor) {
                open.remove(&actor);
            }
            out.push(run);
            continue;
        };
        let joins = open.get(&actor).and_then(|lines| {
            lines.iter().copied().find(|&i| {
                let first = &out[i];
                first.event.text == run.event.text
                    && first.count == run.count
                    && !touches(first, &node)
                    && !out[i + 1..].iter().any(|r| touches(r, &node))
            })
        });
        match joins {
            Some(i) => {
                let first = &mut out[i];
                if let Some(nodes) = &mut first.event.node {
                    nodes.push(NODE_LIST);
                    nodes.push_str(&node);
                }
                first.last = first.last.max(run.last);
            }
            None => {
                out.push(run);
                open.entry(actor).or_default().push(out.len() - 1);
            }
        }
    }
    out
}

/// What a line of a round keeps from one round to the next: who, where
/// (the nodes of a joined line in any order), what, with ids (`9a2e41c0…`,
/// wherever they stand) and numbers left out but a 0 kept (refused,
/// nothing left), and how many times.
fn round_shape(run: &Repeated) -> String {
    let e = &run.event;
    let mut nodes: Vec<&str> = e.node.as_deref().unwrap_or("-").split(NODE_LIST).collect();
    nodes.sort_unstable();
    let mut text = String::with_capacity(e.text.len());
    // A run of hex digits and letters, not yet written: an id if `…`
    // follows it, else its digits are numbers.
    let mut pending = String::new();
    let flush = |pending: &mut String, text: &mut String, id: bool| {
        if id && pending.len() >= 4 {
            text.push_str("<id>");
        } else {
            let mut digits = String::new();
            for c in pending.chars().chain(std::iter::once(' ')) {
                if c.is_ascii_digit() {
                    digits.push(c);
                    continue;
                }
                if !digits.is_empty() {
                    text.push_str(if digits == "0" { "0" } else { "#" });
                    digits.clear();
                }
                if c != ' ' {
                    text.push(c);
                }
            }
        }
        pending.clear();
    };
    for c in e.text.chars() {
        if c.is_ascii_hexdigit() {
            pending.push(c);
            continue;
        }
        flush(&mut pending, &mut text, c == '…');
        text.push(c);
    }
    flush(&mut pending, &mut text, false);
    format!(
        "{}|{}|{text}|{}|{}",
        e.actor,
        nodes.join(","),
        run.count,
        run.again.len()
    )
}

/// The longest round [`rounds`] looks for, in lines.
const LONGEST_ROUND: usize = 40;

/// A client's round of lines said again and again, back to back, new
/// values aside: the first round whole, the others as one line.
fn rounds(runs: Vec<Repeated>) -> Vec<Repeated> {
    let shapes: Vec<String> = runs.iter().map(round_shape).collect();
    let mut out: Vec<Repeated> = Vec::new();
    let mut i = 0;
    while i < runs.len() {
        if let Some((length, again)) = round_at(&runs, &shapes, i) {
            out.extend(runs[i..i + length].iter().cloned());
            let repeats = &runs[i + length..i + length * (again + 1)];
            let first = &repeats[0];
            let events = repeats[..length]
                .iter()
                .flat_map(|r| {
                    if r.again.is_empty() {
                        vec![r.event.clone()]
                    } else {
                        r.again.clone()
                    }
                })
                .collect();
            out.push(Repeated {
                event: Event {
                    at: first.event.at,
                    actor: first.event.actor.clone(),
                    node: None,
                    text: format!(
                        "the same {length} lines again, new values aside: {} lines",
                        length * again
                    ),
                },
                count: again,
                last: repeats.iter().map(|r| r.last).max().unwrap_or(first.last),
                again: events,
            });
            i += length * (again + 1);
        } else {
            out.push(runs[i].clone());
            i += 1;
        }
    }
    out
}

/// The round that starts at `i`, if one does: its length in lines and how
/// many times it comes again (twice at least, else folding saves little).
/// Of the rounds that cover most lines, the shortest.
fn round_at(runs: &[Repeated], shapes: &[String], i: usize) -> Option<(usize, usize)> {
    let actor = &runs[i].event.actor;
    if !is_client(actor) {
        return None;
    }
    let own = runs[i..]
        .iter()
        .take_while(|r| r.event.actor == *actor)
        .count();
    let mut best: Option<(usize, usize)> = None;
    for length in 2..=LONGEST_ROUND.min(own / 3) {
        let round = &shapes[i..i + length];
        let again = (1..)
            .take_while(|k| {
                let start = i + k * length;
                start + length <= i + own && shapes[start..start + length] == *round
            })
            .count();
        let better = best.is_none_or(|(l, a)| length * again > l * a);
        if again >= 2 && better {
            best = Some((length, again));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;

    fn event(ms: u64, actor: &str, node: Option<&str>, text: &str) -> Event {
        Event {
            at: SystemTime::UNIX_EPOCH + Duration::from_millis(ms),
            actor: actor.to_owned(),
            node: node.map(str::to_owned),
            text: text.to_owned(),
        }
    }

    /// A stage 8 waiter: a script and the `SET` it ran, each time with a
    /// new value, while the holder speaks in between.
    #[test]
    fn a_clients_refused_attempts_fold_into_one_line_counted_by_attempt() {
        let mut events = vec![event(0, "client-A", None, "acquired the lock")];
        for i in 0..40u64 {
            let id = format!("{:08x}…", i * 7919);
            events.push(event(
                10 + i * 6,
                "client-B",
                Some("lock"),
                &format!("EVALSHA 144a48ca… 2 lock {id} 300 -> nil"),
            ));
            events.push(event(
                10 + i * 6,
                "client-B",
                Some("lock"),
                &format!("  lua> SET lock {id} NX PX 300"),
            ));
            if i % 10 == 0 {
                events.push(event(
                    11 + i * 6,
                    "client-A",
                    Some("db"),
                    &format!("GET stock -> {i}"),
                ));
            }
        }
        events.push(event(
            400,
            "client-B",
            Some("lock"),
            "EVALSHA 144a48ca… 2 lock 0badf00d… 300 -> 1",
        ));
        let folded = fold(events);
        let b: Vec<&Repeated> = folded
            .iter()
            .filter(|r| r.event.actor == "client-B")
            .collect();
        assert_eq!(b.len(), 4, "{folded:#?}");
        assert_eq!(b[2].event.text, "the same commands again, 78 lines");
        assert_eq!(b[2].count, 39, "one attempt is two lines");
        assert_eq!(b[2].again.len(), 2, "one attempt kept to draw");
        assert!(b[3].event.text.ends_with("-> 1"), "the success is shown");
    }

    #[test]
    fn a_single_line_retried_between_others_lines_joins_its_first_count() {
        let mut events = Vec::new();
        for i in 0..5u64 {
            events.push(event(
                i * 100,
                "client-B",
                Some("lock"),
                "SETNX lock 1 -> 0",
            ));
            events.push(event(
                i * 100 + 1,
                "client-C",
                Some("lock"),
                "SETNX lock 1 -> 0",
            ));
        }
        let folded = fold(events);
        assert_eq!(folded.len(), 2, "{folded:#?}");
        assert!(folded.iter().all(|r| r.count == 5 && r.again.is_empty()));
    }

    #[test]
    fn a_granted_attempt_is_never_folded_into_refused_ones() {
        let events = vec![
            event(0, "client-B", Some("lock"), "SETNX lock 1 -> 0"),
            event(100, "client-B", Some("lock"), "SETNX lock 1 -> 0"),
            event(200, "client-B", Some("lock"), "SETNX lock 1 -> 1"),
        ];
        let folded = fold(events);
        assert_eq!(folded.len(), 2, "{folded:#?}");
        assert_eq!((folded[0].count, folded[1].count), (2, 1));
    }

    /// Stage 1's holder selling ten items in a row: nine lines a round,
    /// only the stock changing, and the last sale (stock 0) told whole.
    #[test]
    fn a_holders_rounds_fold_into_one_line_and_the_round_that_differs_stays() {
        let mut events = Vec::new();
        let mut ms = 0;
        let mut line = |events: &mut Vec<Event>, node: Option<&str>, text: String| {
            ms += 1;
            events.push(event(ms, "client-A", node, &text));
        };
        for stock in (1..=10u64).rev() {
            line(&mut events, Some("lock"), "SETNX lock:stock 1 -> 1".into());
            line(&mut events, None, "acquired the lock (value 1)".into());
            line(&mut events, Some("db"), format!("GET stock -> {stock}"));
            line(
                &mut events,
                Some("db"),
                format!("SET stock {} -> OK", stock - 1),
            );
            line(
                &mut events,
                None,
                format!("sold one: stock {stock} -> {}", stock - 1),
            );
            line(&mut events, Some("lock"), "DEL lock:stock -> 1".into());
        }
        let folded = fold(events);
        let rounds: Vec<&Repeated> = folded
            .iter()
            .filter(|r| r.event.text.starts_with("the same"))
            .collect();
        assert_eq!(rounds.len(), 1, "{folded:#?}");
        assert_eq!(
            rounds[0].event.text,
            "the same 6 lines again, new values aside: 48 lines"
        );
        assert_eq!(rounds[0].count, 8, "stock 9 to 2: eight more rounds");
        assert_eq!(rounds[0].again.len(), 6, "one round kept to draw");
        assert_eq!(folded.len(), 6 + 1 + 6, "{folded:#?}");
        assert_eq!(folded[0].event.text, "SETNX lock:stock 1 -> 1");
        assert!(
            folded
                .iter()
                .any(|r| r.event.text == "sold one: stock 1 -> 0"),
            "the last sale, which leaves 0, is told whole: {folded:#?}"
        );
    }

    /// A Redlock release: the same script to three nodes, each answer a
    /// line, read as one line per command.
    #[test]
    fn the_same_command_to_several_nodes_is_one_line_naming_them() {
        let mut events = Vec::new();
        for (ms, node, text) in [
            (0, "node1", "EVALSHA f4f23e4b… 1 lock:stock adf75204… -> 1"),
            (0, "node3", "EVALSHA f4f23e4b… 1 lock:stock adf75204… -> 1"),
            (1, "node1", "  lua> DEL lock:stock"),
            (1, "node3", "  lua> DEL lock:stock"),
            (2, "node2", "EVALSHA f4f23e4b… 1 lock:stock adf75204… -> 0"),
        ] {
            events.push(event(ms, "client-A", Some(node), text));
        }
        events.push(event(3, "client-A", None, "release deleted the lock key"));
        let folded = fold_for_reading(events.clone());
        let lines: Vec<(Option<&str>, &str)> = folded
            .iter()
            .map(|r| (r.event.node.as_deref(), r.event.text.as_str()))
            .collect();
        assert_eq!(
            lines,
            [
                (
                    Some("node1,node3"),
                    "EVALSHA f4f23e4b… 1 lock:stock adf75204… -> 1"
                ),
                (Some("node1,node3"), "  lua> DEL lock:stock"),
                (
                    Some("node2"),
                    "EVALSHA f4f23e4b… 1 lock:stock adf75204… -> 0"
                ),
                (None, "release deleted the lock key"),
            ],
            "a different answer stays a line of its own"
        );
        assert_eq!(fold(events).len(), 6, "the diagram keeps every arrow");
    }

    /// What happened on a node in between keeps the order the server saw:
    /// client-B's `SET` on node2 after node2's expiry is not moved before it.
    #[test]
    fn a_line_does_not_join_across_news_from_its_node() {
        let events = vec![
            event(
                0,
                "client-B",
                Some("node1"),
                "SET lock:stock 63b4… NX PX 300 -> OK",
            ),
            event(
                1,
                "redis",
                Some("node2"),
                "expired lock:stock (TTL ran out)",
            ),
            event(
                2,
                "client-B",
                Some("node2"),
                "SET lock:stock 63b4… NX PX 300 -> OK",
            ),
            event(
                3,
                "client-B",
                Some("node3"),
                "SET lock:stock 63b4… NX PX 300 -> OK",
            ),
        ];
        let folded = fold_for_reading(events);
        let nodes: Vec<&str> = folded
            .iter()
            .map(|r| r.event.node.as_deref().unwrap_or("-"))
            .collect();
        assert_eq!(nodes, ["node1,node3", "node2", "node2"], "{folded:#?}");
    }

    #[test]
    fn what_a_client_says_starts_its_story_again() {
        let events = vec![
            event(0, "client-A", Some("db"), "GET stock -> 2"),
            event(1, "client-A", None, "sold one: stock 2 -> 1"),
            event(2, "client-A", Some("db"), "GET stock -> 1"),
        ];
        assert_eq!(fold(events).len(), 3);
    }
}
