//! `lockstages interview [<n>] [--no-input]`: an interview question answered
//! by live runs. The reader predicts first (on a terminal), the runs happen
//! on real Redis servers, and the verdicts are set beside the prediction,
//! followed by the short answer and the chapter to read next.

use std::collections::BTreeSet;
use std::io::{IsTerminal, Write as _};

use harness::Outcome;
use harness::check::Verdict;
use harness::server::Backend;
use indicatif::{ProgressBar, ProgressStyle};

use crate::Failure;
use crate::interview::prediction::{self, Mark};
use crate::interview::screen::{self, Style};
use crate::interview::{self, Probe, QUESTIONS, Question};
use crate::rows;

/// Where paragraphs wrap.
const WIDTH: usize = 78;

/// What the command was asked to do.
#[derive(Debug)]
pub struct Options {
    /// The question's number, as typed.
    pub number: Option<String>,
    /// Run straight through: ask nothing.
    pub no_input: bool,
    /// Print the book's chapter instead.
    pub markdown: bool,
}

/// Lists the questions, or walks through one.
pub async fn run(options: Options) -> Result<(), Failure> {
    if options.markdown {
        print!("{}", interview::markdown::chapter());
        return Ok(());
    }
    let style = Style::detect();
    let interactive = !options.no_input && std::io::stdin().is_terminal();
    let number = match options.number {
        Some(typed) => number(&typed)?,
        None => {
            list(style);
            if !interactive {
                return Ok(());
            }
            match pick().await? {
                Some(n) => n,
                None => return Ok(()),
            }
        }
    };
    let question = interview::question(number).ok_or_else(|| out_of_range(&number.to_string()))?;
    walk(number, question, interactive, style).await
}

/// The question number in `typed`, or a clear error naming the range.
fn number(typed: &str) -> Result<usize, Failure> {
    let typed = typed.trim();
    typed
        .parse::<usize>()
        .ok()
        .filter(|n| interview::question(*n).is_some())
        .ok_or_else(|| out_of_range(typed))
}

fn out_of_range(typed: &str) -> Failure {
    Failure::bad_input(format!(
        "unknown question `{typed}`; the questions are 1 to {} (`lockstages interview` lists them)",
        QUESTIONS.len()
    ))
}

fn list(style: Style) {
    println!(
        "{}",
        style.bold("Interview questions, each answered by a live run:")
    );
    for (i, q) in QUESTIONS.iter().enumerate() {
        println!("  {:>2}. {}", i + 1, q.ask);
    }
    println!(
        "\nOne of them: cargo run --release -- interview <n>   (add --no-input to run straight through)"
    );
}

/// Asks for a question number until a valid one or an empty line comes.
async fn pick() -> Result<Option<usize>, Failure> {
    loop {
        let Some(line) = ask(&format!(
            "\nWhich question (1-{}, Enter to leave)? ",
            QUESTIONS.len()
        ))
        .await
        else {
            return Ok(None);
        };
        if line.trim().is_empty() {
            return Ok(None);
        }
        match number(&line) {
            Ok(n) => return Ok(Some(n)),
            Err(failure) => println!("{}", failure.message),
        }
    }
}

/// Prints `prompt` and reads one line; `None` at the end of input. The
/// read blocks a thread of its own, so Ctrl-C still reaches the runtime.
async fn ask(prompt: &str) -> Option<String> {
    print!("{prompt}");
    let _ = std::io::stdout().flush();
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        match std::io::stdin().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line),
        }
    })
    .await
    .ok()
    .flatten()
}

/// What became of one run.
enum Ran {
    Done(Box<Outcome>),
    /// The scenario comes with another part of the course, not yet here.
    Missing,
}

/// One question: the prediction, the runs, the verdicts beside the
/// prediction, the answer.
async fn walk(number: usize, q: &Question, interactive: bool, style: Style) -> Result<(), Failure> {
    let heading = format!("Question {number} of {}: {}", QUESTIONS.len(), q.ask);
    println!("{}\n", style.bold(&heading));
    let prompt = format!("Predict first. {}", q.predict);
    print!("{}", screen::wrap(&prompt, WIDTH, ""));
    for (key, run) in q.choices() {
        println!("  {key:>2}  {}", run.label());
    }
    let predicted = if interactive {
        predict(&q.choice_keys()).await
    } else {
        let note = "(no prediction asked: running straight through)";
        println!("{}", style.dim(note));
        None
    };
    let ran = run_all(q.runs).await?;
    println!();
    print_first_timeline(q, &ran, style);
    print_verdicts(q, &ran, predicted.as_ref(), style);
    print_answer(q, style);
    Ok(())
}

/// The timeline of the first run that happened, its key lines marked.
fn print_first_timeline(q: &Question, ran: &[Ran], style: Style) {
    let first = q.runs.iter().zip(ran).find_map(|(probe, ran)| match ran {
        Ran::Done(outcome) => Some((probe, outcome)),
        Ran::Missing => None,
    });
    let Some((probe, outcome)) = first else {
        return;
    };
    let title = harness::scenario::find(probe.scenario).map_or("", |s| s.title);
    let heading = format!(
        "The run: {} x {}: {title}",
        probe.stage_name(),
        probe.label().split_once(' ').map_or("", |(_, rest)| rest)
    );
    println!("{}", style.bold(&heading));
    let timeline = outcome.timeline.render();
    print!("{}", screen::mark_timeline(&timeline, q.marks, style));
    println!();
}

/// Each run's verdict, whether it is a "yes", and the prediction beside it.
fn print_verdicts(q: &Question, ran: &[Ran], predicted: Option<&BTreeSet<String>>, style: Style) {
    let heading = format!("Verdicts (yes: {}):", q.watch.describe());
    println!("{}", style.bold(&heading));
    let keys = q.choice_keys();
    let mut observed_yes = BTreeSet::new();
    let (mut right, mut judged) = (0, 0);
    // The labels' column: 38 wide, or the longest label's width.
    let label_width = q
        .runs
        .iter()
        .map(|p| p.label().len())
        .max()
        .unwrap_or(0)
        .max(38);
    for i in q.shown_order() {
        let (key, probe, ran) = (&keys[i], q.runs[i], &ran[i]);
        let (verdict, observed) = match ran {
            Ran::Done(outcome) => {
                let yes = q.watch.holds(&outcome.verdict);
                if yes {
                    observed_yes.insert(key.clone());
                }
                (outcome.verdict.to_string(), Some(yes))
            }
            Ran::Missing => ("not in this build yet: skipped".to_owned(), None),
        };
        let answer = match observed {
            Some(true) => "yes",
            Some(false) => "no",
            None => "-",
        };
        let mark = prediction::mark(predicted, key, observed);
        if mark != Mark::Unjudged {
            judged += 1;
        }
        let remark = match mark {
            Mark::Right => {
                right += 1;
                style.good("you were right")
            }
            Mark::Wrong => style.alert("you said otherwise"),
            Mark::Unjudged => String::new(),
        };
        println!(
            "  {key:>2}  {:<label_width$} {} {answer:<4} {remark}",
            probe.label(),
            paint_verdict(&verdict, ran, style),
        );
    }
    if ran.iter().any(|r| matches!(r, Ran::Done(_))) {
        println!("\n  The runs say:  {}", prediction::list(&observed_yes));
    } else {
        println!("\n  No run could happen in this build.");
    }
    if let Some(predicted) = predicted {
        println!("  You predicted: {}", prediction::list(predicted));
        println!("  You were right about {right} of {judged} runs.");
    }
}

/// The short answer, the Java equivalents, what to look for, the commands,
/// the sources and the chapter to read next.
fn print_answer(q: &Question, style: Style) {
    println!("\n{}", style.bold("Answer"));
    print!("{}", screen::wrap(q.answer, WIDTH, "  "));
    if let Some(java) = q.java {
        println!("\n{}", style.bold("Java and Rust"));
        print!("{}", screen::wrap(java, WIDTH, "  "));
    }
    println!("\n{}", style.bold("Look for"));
    print!("{}", screen::wrap(q.look_for, WIDTH, "  "));
    println!("\n{}", style.bold("Run it yourself"));
    for probe in q.runs {
        println!("  {}", probe.command());
    }
    for test in q.tests {
        println!("  {}", test.command());
    }
    if !q.sources.is_empty() {
        println!("\n{}", style.bold("Sources"));
        for (title, url) in q.sources {
            println!("  {title}: {url}");
        }
    }
    let (title, file) = q.read_next;
    println!("\nRead next: {title} (book/src/{file})");
}

/// Reads the reader's prediction, asking again after a bad answer; `None`
/// when the input ends.
async fn predict(keys: &[String]) -> Option<BTreeSet<String>> {
    loop {
        let example = keys.first().map_or("", String::as_str);
        let line = ask(&format!(
            "Your prediction (for example `{example}`, Enter for none): "
        ))
        .await?;
        match prediction::parse(&line, keys) {
            Ok(chosen) => return Some(chosen),
            Err(message) => println!("{message}"),
        }
    }
}

fn paint_verdict(verdict: &str, ran: &Ran, style: Style) -> String {
    let padded = format!("{verdict:<24}");
    match ran {
        Ran::Done(outcome) if outcome.verdict == Verdict::ok() => style.good(&padded),
        Ran::Done(_) => style.alert(&padded),
        Ran::Missing => style.dim(&padded),
    }
}

/// Runs every probe in turn (their timings assume the machine is theirs),
/// with a progress line on a terminal.
async fn run_all(probes: &[Probe]) -> Result<Vec<Ran>, Failure> {
    let progress = ProgressBar::new(probes.len() as u64);
    progress.set_style(
        ProgressStyle::with_template("{spinner} run {pos}/{len}  {elapsed}  {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    progress.enable_steady_tick(std::time::Duration::from_millis(120));
    let mut ran = Vec::with_capacity(probes.len());
    for probe in probes {
        progress.set_message(probe.label());
        ran.push(run_one(probe).await?);
        progress.inc(1);
    }
    progress.finish_and_clear();
    Ok(ran)
}

async fn run_one(probe: &Probe) -> Result<Ran, Failure> {
    let Some(scenario) = harness::scenario::find(probe.scenario) else {
        if probe.is_pending() {
            return Ok(Ran::Missing);
        }
        return Err(Failure::failed(format!(
            "no scenario `{}` in this build",
            probe.scenario
        )));
    };
    let row = rows::find(&probe.stage_name())
        .ok_or_else(|| Failure::failed(format!("no {} in this build", probe.stage_name())))?;
    let env = row
        .env(Backend::from_env()?, probe.fencing)?
        .with_request_ids(probe.request_ids)
        .with_release_order(probe.release_order);
    let outcome = scenario
        .play(row.entry, env)
        .await
        .map_err(|e| Failure::failed(format!("{} could not run: {e}", probe.label())))?;
    Ok(Ran::Done(Box::new(outcome)))
}
