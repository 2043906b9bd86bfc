//! Reports for people: what the machine offers (`raypick info`), and the files of
//! `raypick bench --report DIR` (a JSON record and an SVG bar chart).
//!
//! - [`machine`]: CPU facts (threads, the SIMD level of the CPU kernels, model).
//! - [`info`]: [`InfoReport`], every GPU adapter with its limits, which one
//!   [`Backend::Auto`](raypick::Backend::Auto) uses, and the CPU facts.
//! - [`svg`]: [`bench_chart`], a bar chart of Mrays/s per backend, acceleration
//!   structure and ray set, as SVG text.
//! - `files`: [`write_bench_report`] writes `bench.json` and
//!   `bench.svg` atomically.

pub mod info;
pub mod machine;
pub mod svg;

mod files;

pub use files::{BenchRecord, write_bench_report};
pub use info::InfoReport;
