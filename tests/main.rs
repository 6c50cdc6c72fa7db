//! The tests, one test binary: `cargo test` runs a package's test binaries
//! one after another and the tests inside one binary side by side, and
//! these mostly wait on real servers (TTLs, elections, failovers), so one
//! binary lets the waits overlap. Each file is one story or one subject;
//! `cargo test -p lockstages <file>::` runs one file's tests. A new file is
//! listed here (the package turns off `autotests`).

mod book;
mod book_zh;
mod cli;
mod common;
mod explore;
mod holder_cmd;
mod interview;
mod interview_commands;
mod matrix;
mod readers_server;
