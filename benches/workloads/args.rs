//! The bench's command line: `--placement none|split|shared`, `--quick`,
//! `--only w1,w2,w3,long`, `--lock stage6,rslock`, `--write-book`,
//! `--write-book-stores`, `--write-book-fair`, `--from FILE`. Bad input
//! exits with status 2 and the valid choices.

use std::fmt;
use std::path::PathBuf;

/// Where the Redis servers and the clients run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Wherever the scheduler puts them (it moves them between CPUs).
    None,
    /// Servers on CPU 0, the bench's clients on CPU 1.
    Split,
    /// Servers and clients together on CPU 0.
    Shared,
}

impl Placement {
    const CHOICES: &str = "none, split, shared";

    /// The placement a reader types (`--placement split`).
    pub fn word(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Split => "split",
            Self::Shared => "shared",
        }
    }

    pub(crate) fn from_word(word: &str) -> Result<Self, String> {
        match word {
            "none" => Ok(Self::None),
            "split" => Ok(Self::Split),
            "shared" => Ok(Self::Shared),
            _ => Err(format!(
                "--placement {word:?} is not a placement; choose one of: {}",
                Self::CHOICES
            )),
        }
    }

    /// The CPUs for the servers and for the clients, `None` when unpinned.
    pub fn cpus(self) -> Option<(usize, usize)> {
        match self {
            Self::None => None,
            Self::Split => Some((0, 1)),
            Self::Shared => Some((0, 0)),
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.cpus() {
            None => write!(f, "none (unpinned)"),
            Some((servers, clients)) if servers == clients => {
                write!(f, "shared (servers and clients on CPU {servers})")
            }
            Some((servers, clients)) => {
                write!(
                    f,
                    "split (servers on CPU {servers}, clients on CPU {clients})"
                )
            }
        }
    }
}

/// The workloads, in the order they run (`ping` always runs: every ratio
/// needs it).
pub const WORKLOADS: [&str; 4] = ["w1", "w2", "w3", "long"];

/// What the command line asked for.
#[derive(Debug, Clone)]
pub struct Args {
    /// The workloads to run besides `ping` (all by default).
    pub only: Vec<String>,
    /// The locks to measure (all by default): `stage3`, `rslock`…
    pub locks: Vec<String>,
    /// Where servers and clients run.
    pub placement: Placement,
    /// Small sizes, to check in CI that the bench builds and runs.
    pub quick: bool,
    /// Also write the book's generated table.
    pub write_book: bool,
    /// Also write the book's table of the consensus stores beside Redis
    /// (the "Beyond Redis" chapter's).
    pub write_book_stores: bool,
    /// Also write stage 6's tables of the fair lock's `w2` (the marked
    /// region of each stage 6 page that has one).
    pub write_book_fair: bool,
    /// Measure nothing: render the figures saved in this file (the JSON
    /// every run writes, or one the book keeps beside its tables).
    pub from: Option<PathBuf>,
}

const USAGE: &str = "usage: cargo bench --bench workloads -- [--placement none|split|shared] [--quick] [--only w1,w2,w3,long] [--lock stage6,rslock] [--write-book] [--write-book-stores] [--write-book-fair]\n       cargo bench --bench workloads -- --from FILE [--write-book] [--write-book-stores] [--write-book-fair]";

impl Args {
    /// Parses the process's arguments, or exits with status 2 saying why.
    pub fn from_env() -> Self {
        match Self::parse(std::env::args().skip(1)) {
            Ok(args) => args,
            Err(message) => {
                eprintln!("{message}\n{USAGE}");
                std::process::exit(2);
            }
        }
    }

    fn parse(mut words: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut args = Self {
            only: Vec::new(),
            locks: Vec::new(),
            placement: Placement::None,
            quick: false,
            write_book: false,
            write_book_stores: false,
            write_book_fair: false,
            from: None,
        };
        // Options that shape a measurement, refused with `--from`.
        let mut measuring = Vec::new();
        while let Some(word) = words.next() {
            if ["--quick", "--only", "--lock"].contains(&word.as_str())
                || word.starts_with("--placement")
            {
                measuring.push(word.clone());
            }
            match word.as_str() {
                // `cargo bench` passes `--bench` to every bench binary.
                "--bench" => {}
                "--quick" => args.quick = true,
                "--write-book" => args.write_book = true,
                "--write-book-stores" => args.write_book_stores = true,
                "--write-book-fair" => args.write_book_fair = true,
                "--from" => match words.next() {
                    Some(file) => args.from = Some(PathBuf::from(file)),
                    None => return Err("--from needs a file of saved figures".into()),
                },
                "--only" => {
                    for workload in words.next().unwrap_or_default().split(',') {
                        if !WORKLOADS.contains(&workload) {
                            return Err(format!(
                                "--only {workload:?} is not a workload; choose from: {}",
                                WORKLOADS.join(", ")
                            ));
                        }
                        args.only.push(workload.to_owned());
                    }
                }
                "--lock" => {
                    let names = words.next().unwrap_or_default();
                    args.locks.extend(names.split(',').map(str::to_owned));
                }
                "--placement" => {
                    args.placement = Placement::from_word(&words.next().unwrap_or_default())?;
                }
                other => match other.strip_prefix("--placement=") {
                    Some(value) => args.placement = Placement::from_word(value)?,
                    None => return Err(format!("unknown argument {other:?}")),
                },
            }
        }
        if args.from.is_some()
            && let Some(option) = measuring.first()
        {
            return Err(format!(
                "{option} shapes a measurement; --from measures nothing, it renders the saved figures"
            ));
        }
        Ok(args)
    }

    /// Refuses a `--lock` that is none of `known`.
    pub fn check_locks(&self, known: &[&str]) {
        if let Some(unknown) = self.locks.iter().find(|l| !known.contains(&l.as_str())) {
            eprintln!(
                "--lock {unknown:?} is not a lock here; choose from: {}\n{USAGE}",
                known.join(", ")
            );
            std::process::exit(2);
        }
    }

    /// Whether `lock` is to be measured.
    pub fn measures(&self, lock: &str) -> bool {
        self.locks.is_empty() || self.locks.iter().any(|l| l == lock)
    }

    /// Whether `workload` is to run.
    pub fn runs(&self, workload: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|w| w == workload)
    }
}
