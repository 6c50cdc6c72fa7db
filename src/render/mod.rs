//! What a browser opens: HTML pages made from real runs.
//!
//! - [`html`]: the pieces every page shares (escaping, the page shell with
//!   the book's stylesheet and Mermaid, a timeline that wraps);
//! - [`story`]: one run: its sequence diagram, its timeline, its verdict
//!   (`run --html`, and each cell of `matrix --html`);
//! - [`matrix`]: the matrix as a page whose cells open their story;
//! - [`terminal`]: colour for the tables printed on a terminal.
//!
//! Pages open from the file system with no network: the stylesheet is
//! inlined, and Mermaid's script is either inlined or a file beside them.

pub mod html;
pub mod matrix;
pub mod story;
pub mod terminal;
