//! The expected rows of the library rows (`src/libraries/`), beside the
//! stages' (`expected.rs`), in the same columns: each written after running
//! the library and reading its code; each cell that is not ok is explained
//! in the library's file.

/// One row per library: its name and its 28 cells, as in `expected.rs`.
#[rustfmt::skip]
pub const ROWS: &[(&str, [&str; 28])] = &[];
