//! A run as a Mermaid `sequenceDiagram`, drawn from its timeline.
//!
//! The text timeline says everything, one line at a time; the diagram shows
//! the shape of the story at a glance: one lifeline per client, per Redis
//! node and for the harness; each command an arrow to its node, labelled
//! with its reply (`→ nil`); the commands a script ran one note on its node;
//! pauses, kills, expiries and verdicts as notes; and
//! each client's critical section as an activation bar, so two bars side by
//! side are two clients inside at once. A client retrying the same command
//! is one arrow in a `loop` box that says how many times.
//!
//! It reads only what the timeline recorded (commands with their paired
//! replies, the history's narration), so it draws what happened, not what a
//! scenario meant to happen. Which lines are verdicts it is told by its
//! caller, as the words that open them: what was seen knows no verdict, and
//! the words are the judge's.

use std::fmt::Write as _;
use std::time::SystemTime;

use super::timeline::{Repeated, Timeline};
use crate::history::Event;

/// The history's words that open and close a critical section (a test
/// below holds them to what the history writes).
const ENTERS: &str = "acquired the lock";
const LEAVES: [&str; 3] = ["leaves the critical section", "KILLED", "died at"];

/// The Mermaid source of `timeline`'s sequence diagram. A line of the
/// harness that opens with one of `verdict_words` and a colon (`verdict: …`,
/// `OVERSOLD: …`) is a verdict, drawn across every lifeline.
pub fn sequence_diagram(timeline: &Timeline, verdict_words: &[&str]) -> String {
    Diagram::new(timeline, verdict_words).draw()
}

/// Who appears in the diagram. Each gets the alias `P<position>`, so no
/// name can clash with a Mermaid keyword.
struct Lifelines {
    clients: Vec<String>,
    nodes: Vec<String>,
}

impl Lifelines {
    fn of(runs: &[Repeated]) -> Self {
        let mut clients: Vec<String> = Vec::new();
        let mut nodes: Vec<String> = Vec::new();
        // Nodes in the order clients first use them, then those only the
        // harness touched; the stock's database (`db`), which is no part of
        // the lock, last.
        for clients_only in [true, false] {
            for e in runs.iter().map(|r| &r.event) {
                if let Some(node) = &e.node
                    && (is_client(&e.actor) || !clients_only)
                    && !nodes.contains(node)
                {
                    nodes.push(node.clone());
                }
                if is_client(&e.actor) && !clients.contains(&e.actor) {
                    clients.push(e.actor.clone());
                }
            }
        }
        if let Some(db) = nodes.iter().position(|n| n == "db") {
            let db = nodes.remove(db);
            nodes.push(db);
        }
        Self { clients, nodes }
    }

    /// The first client on the left, the nodes (in a box), the other
    /// clients, the harness on the right: with two clients, each one's
    /// arrows go to the nodes between them without crossing the other.
    fn order(&self) -> Vec<(&str, bool)> {
        let mut order: Vec<(&str, bool)> = Vec::new();
        order.extend(self.clients.iter().take(1).map(|c| (c.as_str(), false)));
        order.extend(self.nodes.iter().map(|n| (n.as_str(), true)));
        order.extend(self.clients.iter().skip(1).map(|c| (c.as_str(), false)));
        order.push(("harness", false));
        order
    }

    fn alias(&self, name: &str, is_node: bool) -> String {
        let index = self
            .order()
            .iter()
            .position(|(n, node)| *n == name && *node == is_node)
            .unwrap_or_default();
        format!("P{index}")
    }
}

fn is_client(actor: &str) -> bool {
    actor != "harness" && actor != "redis"
}

struct Diagram {
    runs: Vec<Repeated>,
    lifelines: Lifelines,
    timeline: Timeline,
    out: String,
    /// Clients whose critical section is open, with how many times they
    /// entered (a reentrant lock enters twice).
    inside: Vec<(String, usize)>,
    /// The commands a script ran, not yet written: (node, commands), one
    /// note for the whole script.
    lua: Option<(String, Vec<String>)>,
    /// How a verdict line opens: each verdict word and its colon.
    verdict_openings: Vec<String>,
}

impl Diagram {
    fn new(timeline: &Timeline, verdict_words: &[&str]) -> Self {
        let runs = fold_interleaved_retries(timeline.folded());
        let lifelines = Lifelines::of(&runs);
        Self {
            runs,
            lifelines,
            timeline: timeline.clone(),
            out: String::new(),
            inside: Vec::new(),
            lua: None,
            verdict_openings: verdict_words
                .iter()
                .map(|word| format!("{word}:"))
                .collect(),
        }
    }

    fn draw(mut self) -> String {
        // Long notes and messages wrap instead of widening the diagram.
        self.out
            .push_str("---\nconfig:\n  sequence:\n    wrap: true\n---\nsequenceDiagram\n");
        let order: Vec<(String, bool)> = self
            .lifelines
            .order()
            .into_iter()
            .map(|(n, node)| (n.to_owned(), node))
            .collect();
        let mut in_box = false;
        for (index, (name, is_node)) in order.iter().enumerate() {
            if *is_node && !in_box {
                self.out.push_str("    box rgba(128,128,128,0.12) Redis\n");
                in_box = true;
            }
            if !*is_node && in_box {
                self.out.push_str("    end\n");
                in_box = false;
            }
            let label = if *is_node {
                format!("[{name}]")
            } else {
                name.clone()
            };
            let _ = writeln!(self.out, "    participant P{index} as {}", escape(&label));
        }
        if in_box {
            self.out.push_str("    end\n");
        }
        let runs = std::mem::take(&mut self.runs);
        for run in &runs {
            self.step(run);
        }
        self.flush_lua();
        for (client, depth) in std::mem::take(&mut self.inside) {
            let alias = self.lifelines.alias(&client, false);
            for _ in 0..depth {
                let _ = writeln!(self.out, "    deactivate {alias}");
            }
        }
        self.out
    }

    fn at(&self, at: SystemTime) -> String {
        format!("T+{}ms", self.timeline.offset(at).as_millis())
    }

    /// One timeline line (or a run of it) as diagram statements.
    fn step(&mut self, run: &Repeated) {
        let e = &run.event;
        let is_lua = e.node.is_some() && e.actor != "redis" && e.text.starts_with(' ');
        if !is_lua {
            self.flush_lua();
        }
        if !run.again.is_empty() {
            self.again(run);
            return;
        }
        match (&e.node, e.actor.as_str()) {
            // Redis's own news: a key expired.
            (Some(node), "redis") => {
                let over = self.lifelines.alias(node, true);
                self.add_note(over, format!("{} {}", self.at(e.at), e.text));
            }
            // A command a Lua script ran: said on its node, with the rest
            // of the script's commands.
            (Some(node), _) if e.text.starts_with(' ') => {
                let over = self.lifelines.alias(node, true);
                let command = e.text.trim().trim_start_matches("lua> ").to_owned();
                match &mut self.lua {
                    Some((node, commands)) if *node == over => commands.push(command),
                    _ => {
                        self.flush_lua();
                        self.lua = Some((over, vec![command]));
                    }
                }
            }
            (Some(node), actor) => {
                let node = node.clone();
                let actor = actor.to_owned();
                self.command(run, &actor, &node);
            }
            (None, "harness") => self.harness(e),
            (None, _) => self.client(e),
        }
    }

    /// A command and its reply; a run of them inside a `loop` box.
    fn command(&mut self, run: &Repeated, actor: &str, node: &str) {
        let from = self.lifelines.alias(actor, false);
        let to = self.lifelines.alias(node, true);
        let (command, reply) = match run.event.text.rsplit_once(" -> ") {
            Some((command, reply)) => (command, Some(reply)),
            None => (run.event.text.as_str(), None),
        };
        let repeated = run.count > 1;
        if repeated {
            let _ = writeln!(
                self.out,
                "    loop {} times, until {}",
                run.count,
                self.at(run.last)
            );
        }
        // One arrow, its reply on it: a reply arrow back for every command
        // would double the diagram's height and say nothing more.
        let label = match reply {
            Some(reply) => format!("{command} → {reply}"),
            None => command.to_owned(),
        };
        let _ = writeln!(self.out, "    {from}->>{to}: {}", escape(&label));
        if repeated {
            self.out.push_str("    end\n");
        }
    }

    /// A client's attempt made again and again: one attempt's arrows in a
    /// `loop` box that says how many times and until when.
    fn again(&mut self, run: &Repeated) {
        let _ = writeln!(
            self.out,
            "    loop {} times, until {}",
            run.count,
            self.at(run.last)
        );
        for e in &run.again {
            let single = Repeated {
                event: e.clone(),
                count: 1,
                last: e.at,
                again: Vec::new(),
            };
            self.step(&single);
        }
        self.flush_lua();
        self.out.push_str("    end\n");
    }

    /// Writes the script's commands waiting in [`Diagram::lua`], as one note.
    fn flush_lua(&mut self) {
        if let Some((over, commands)) = self.lua.take() {
            self.add_note(over, format!("lua> {}", commands.join(" · ")));
        }
    }

    /// The harness's narration: on the node it names, across every
    /// lifeline for a verdict, else on the harness's own lifeline.
    fn harness(&mut self, e: &Event) {
        let node = e
            .text
            .strip_prefix('[')
            .and_then(|rest| rest.split_once("] "))
            .filter(|(node, _)| self.lifelines.nodes.iter().any(|n| n == node));
        let at = self.at(e.at);
        if let Some((node, rest)) = node {
            let over = self.lifelines.alias(node, true);
            self.add_note(over, format!("{at} {rest}"));
        } else if self.is_verdict(&e.text) {
            let last = self.lifelines.order().len() - 1;
            self.add_note(format!("P0,P{last}"), format!("{at} {}", e.text));
        } else {
            let over = self.lifelines.alias("harness", false);
            self.add_note(over, format!("{at} {}", e.text));
        }
    }

    /// A verdict line of the harness: `verdict: …` or `OVERSOLD: …`.
    fn is_verdict(&self, text: &str) -> bool {
        self.verdict_openings
            .iter()
            .any(|opening| text.starts_with(opening.as_str()))
    }

    /// A client's own narration; it opens or closes its critical section.
    fn client(&mut self, e: &Event) {
        let alias = self.lifelines.alias(&e.actor, false);
        self.add_note(alias.clone(), format!("{} {}", self.at(e.at), e.text));
        if e.text.starts_with(ENTERS) {
            let _ = writeln!(self.out, "    activate {alias}");
            match self.inside.iter_mut().find(|(c, _)| *c == e.actor) {
                Some((_, depth)) => *depth += 1,
                None => self.inside.push((e.actor.clone(), 1)),
            }
        } else if LEAVES.iter().any(|l| e.text.starts_with(l))
            && let Some(position) = self.inside.iter().position(|(c, _)| *c == e.actor)
        {
            let _ = writeln!(self.out, "    deactivate {alias}");
            self.inside[position].1 -= 1;
            if self.inside[position].1 == 0 {
                self.inside.remove(position);
            }
        }
    }

    /// A note, one per event: Mermaid cannot wrap a note of several lines.
    fn add_note(&mut self, over: String, line: String) {
        let _ = writeln!(self.out, "    Note over {over}: {}", escape(&line));
    }
}

/// Several clients retrying at once interleave, so the timeline's folding
/// (the same line back to back) leaves one line per attempt. Here a command
/// that its client sends again, having done nothing else in between, joins
/// its first attempt's count, whatever the other clients did meanwhile: each
/// client's own story stays in its order, and its `loop` box says until when
/// it went on.
fn fold_interleaved_retries(runs: Vec<Repeated>) -> Vec<Repeated> {
    let is_command = |e: &Event| e.node.is_some() && e.actor != "redis" && !e.text.starts_with(' ');
    let mut out: Vec<Repeated> = Vec::new();
    for run in runs {
        let previous = out
            .iter_mut()
            .rev()
            .find(|r| r.event.actor == run.event.actor);
        match previous {
            Some(previous) if is_command(&run.event) && previous.event.same_as(&run.event) => {
                previous.count += run.count;
                previous.last = run.last;
            }
            _ => out.push(run),
        }
    }
    out
}

/// Text Mermaid shows as written: `;` and `#` would end or start
/// something, `<` and `>` would be read as HTML.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '#' => out.push_str("#35;"),
            ';' => out.push_str("#59;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '&' => out.push_str("#amp;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;
    use lockcore::{Acquired, Release};

    /// The judge's words that the tests' timelines use.
    const VERDICT_WORDS: [&str; 2] = ["verdict", "FOREIGN-DELETE"];

    fn draw(timeline: &Timeline) -> String {
        sequence_diagram(timeline, &VERDICT_WORDS)
    }

    fn command(timeline: &Timeline, client: &str, text: &str) {
        timeline
            .history()
            .record_at(SystemTime::now(), client, Some("lock"), text);
    }

    /// The GET/DEL race, narrated by a real history.
    fn race() -> String {
        let history = History::new();
        let timeline = Timeline::of(&history);
        let held = Acquired::with_value;
        timeline.record("harness", "stage4 (process backend): TTL 300ms, stock 2");
        command(&timeline, "client-A", "SET lock:stock a NX PX 300 -> OK");
        history.acquired("client-A", &held("a"));
        history.release_sent("client-A");
        command(&timeline, "client-A", "GET lock:stock -> a");
        timeline.record("client-A", "paused at between-get-and-del");
        for _ in 0..43 {
            command(&timeline, "client-B", "SET lock:stock b NX PX 300 -> nil");
        }
        timeline.history().record_at(
            SystemTime::now(),
            "redis",
            Some("lock"),
            "expired lock:stock (TTL ran out)",
        );
        command(&timeline, "client-B", "SET lock:stock b NX PX 300 -> OK");
        history.acquired("client-B", &held("b"));
        command(&timeline, "client-A", "DEL lock:stock -> 1");
        history.released("client-A", Release::Deleted);
        timeline.record("harness", "verdict: FOREIGN-DELETE");
        draw(&timeline)
    }

    #[test]
    fn every_client_every_node_and_the_harness_have_a_lifeline() {
        let diagram = race();
        assert!(diagram.contains("\nsequenceDiagram\n"), "{diagram}");
        for participant in [
            "participant P0 as client-A",
            "participant P1 as [lock]",
            "participant P2 as client-B",
            "participant P3 as harness",
        ] {
            assert!(diagram.contains(participant), "{participant}:\n{diagram}");
        }
    }

    #[test]
    fn commands_go_to_their_node_labelled_with_their_reply() {
        let diagram = race();
        assert!(
            diagram.contains("P0->>P1: GET lock:stock → a\n"),
            "{diagram}"
        );
        assert!(
            diagram.contains("P0->>P1: DEL lock:stock → 1\n"),
            "{diagram}"
        );
    }

    #[test]
    fn retries_fold_into_one_arrow_in_a_counted_loop() {
        let diagram = race();
        assert_eq!(diagram.matches("loop 43 times").count(), 1, "{diagram}");
        assert_eq!(
            diagram
                .matches("P2->>P1: SET lock:stock b NX PX 300")
                .count(),
            2,
            "the 43 refusals and the success:\n{diagram}"
        );
    }

    /// Arrows to a node (replies are `-->>`).
    fn requests(diagram: &str) -> usize {
        diagram
            .lines()
            .filter(|l| l.contains("->>") && !l.contains("-->>"))
            .count()
    }

    #[test]
    fn interleaved_retries_of_several_clients_fold_per_client() {
        let timeline = Timeline::new();
        for _ in 0..5 {
            command(&timeline, "client-B", "SET lock:stock b NX PX 300 -> nil");
            command(&timeline, "client-C", "SET lock:stock c NX PX 300 -> nil");
        }
        command(&timeline, "client-B", "SET lock:stock b NX PX 300 -> OK");
        let diagram = draw(&timeline);
        assert_eq!(diagram.matches("loop 5 times").count(), 2, "{diagram}");
        assert_eq!(requests(&diagram), 3, "{diagram}");
        let last = diagram.rfind("SET lock:stock b").unwrap_or_default();
        assert!(
            diagram[last..].contains("OK"),
            "B's success stays last:\n{diagram}"
        );
    }

    #[test]
    fn a_client_that_sent_something_else_in_between_is_not_folded() {
        let timeline = Timeline::new();
        for _ in 0..2 {
            command(&timeline, "client-A", "GET lock:stock -> a");
            command(&timeline, "client-A", "PTTL lock:stock -> 100");
        }
        let diagram = draw(&timeline);
        assert!(!diagram.contains("loop"), "{diagram}");
        assert_eq!(requests(&diagram), 4, "{diagram}");
    }

    #[test]
    fn critical_sections_are_activations_that_balance() {
        let diagram = race();
        // A enters and leaves; B enters and is still inside at the end.
        assert_eq!(diagram.matches("    activate P0").count(), 1, "{diagram}");
        assert_eq!(diagram.matches("deactivate P0").count(), 1, "{diagram}");
        assert_eq!(diagram.matches("    activate P2").count(), 1, "{diagram}");
        assert!(diagram.trim_end().ends_with("deactivate P2"), "{diagram}");
    }

    #[test]
    fn expiries_pauses_and_verdicts_are_notes() {
        let diagram = race();
        assert!(diagram.contains("Note over P1: T+"), "{diagram}");
        assert!(diagram.contains("expired lock:stock"), "{diagram}");
        assert!(
            diagram.contains("paused at between-get-and-del"),
            "{diagram}"
        );
        assert!(
            diagram.contains("Note over P0,P3: T+") && diagram.contains("verdict: FOREIGN-DELETE"),
            "{diagram}"
        );
    }

    #[test]
    fn the_commands_a_script_ran_are_one_note_on_its_node() {
        let timeline = Timeline::new();
        command(&timeline, "client-A", "EVALSHA f4f2… 1 lock:stock a -> 1");
        command(&timeline, "client-A", "  lua> GET lock:stock");
        command(&timeline, "client-A", "  lua> DEL lock:stock");
        let diagram = draw(&timeline);
        assert!(
            diagram.contains("Note over P1: lua#gt; GET lock:stock · DEL lock:stock\n"),
            "{diagram}"
        );
    }

    #[test]
    fn text_that_mermaid_would_read_as_syntax_is_escaped() {
        assert_eq!(escape("a;b #1 <x> & y"), "a#59;b #35;1 #lt;x#gt; #amp; y");
    }
}
