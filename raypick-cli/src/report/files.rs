//! `raypick bench --report DIR`: `DIR/bench.json` and `DIR/bench.svg`.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::machine::MachineFacts;
use super::svg::bench_chart;
use crate::bench::BenchReport;
use raypick::gpu::{AdapterReport, list_adapters};
use raypick::{Error, Result};

/// Everything `bench.json` holds: the measurements and what they were measured on.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BenchRecord {
    /// raypick's version.
    pub raypick_version: String,
    /// The command line that ran the bench, program name first.
    pub command_line: Vec<String>,
    /// When the record was written, in seconds since the Unix epoch.
    pub unix_time_s: u64,
    /// The CPU.
    pub machine: MachineFacts,
    /// Every GPU adapter found (name, API, device type, driver, limits).
    pub adapters: Vec<AdapterReport>,
    /// The measurements, speed ratios and parity of the run.
    pub bench: BenchReport,
}

impl BenchRecord {
    /// A record of `report`, run by `command_line`, on this machine now.
    pub fn new(report: &BenchReport, command_line: Vec<String>) -> Self {
        Self {
            raypick_version: env!("CARGO_PKG_VERSION").to_string(),
            command_line,
            unix_time_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            machine: MachineFacts::collect(),
            adapters: list_adapters(),
            bench: report.clone(),
        }
    }
}

/// Writes `dir/bench.json` (the [`BenchRecord`], pretty-printed) and
/// `dir/bench.svg` (the [`bench_chart`]), each atomically; creates `dir` (and its
/// parents) if missing. Returns the two paths.
///
/// Errors are [`Error::File`] naming the directory or file that could not be
/// created or written; a failed write leaves no partial file.
pub fn write_bench_report(dir: &Path, record: &BenchRecord) -> Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(dir).map_err(|source| Error::File {
        path: dir.to_path_buf(),
        source,
    })?;
    let json_path = dir.join("bench.json");
    let svg_path = dir.join("bench.svg");
    let json = serde_json::to_string_pretty(record).map_err(|e| Error::File {
        path: json_path.clone(),
        source: std::io::Error::other(e),
    })?;
    raypick::io::write_atomic(&json_path, |w| writeln!(w, "{json}"))?;
    let svg = bench_chart(&record.bench);
    raypick::io::write_atomic(&svg_path, |w| w.write_all(svg.as_bytes()))?;
    Ok((json_path, svg_path))
}
