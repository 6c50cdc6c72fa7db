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

use std::collections::{HashMap, HashSet};

use super::{Event, Repeated};

/// `events` folded: runs of the same line, then each client's repeated
/// attempts.
pub(super) fn fold(events: impl IntoIterator<Item = Event>) -> Vec<Repeated> {
    attempts(back_to_back(events))
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
