//! Comma-separated tables with a fixed number of columns.
//!
//! Blank lines and lines starting with `#` are skipped. The first remaining line is a
//! header when none of its cells is a number. Cells may be surrounded by spaces.

use std::io::BufRead;
use std::path::Path;
use std::str::FromStr;

use super::errors::{file_error, format_error};
use crate::error::Result;

/// One data line of a table: its cells and where it is.
pub(crate) struct Row<'a, const N: usize> {
    path: &'a Path,
    line: usize,
    cells: [&'a str; N],
}

impl<const N: usize> Row<'_, N> {
    /// Parses cell `column` (0-based); `what` describes the expected value for the
    /// error message ("a number").
    pub fn parse<T: FromStr>(&self, column: usize, what: &str) -> Result<T> {
        let cell = self.cells.get(column).copied().unwrap_or_default();
        cell.parse().map_err(|_| {
            format_error(
                self.path,
                format!(
                    "line {}, column {}: expected {what}, found '{cell}'",
                    self.line,
                    column + 1
                ),
            )
        })
    }
}

/// Reads the table in `reader` (`path` names it in errors), calling `each` for every
/// data line in order.
pub(crate) fn read_table<const N: usize>(
    path: &Path,
    mut reader: impl BufRead,
    mut each: impl FnMut(Row<'_, N>) -> Result<()>,
) -> Result<()> {
    let mut bytes = Vec::new();
    let mut line = 0usize;
    let mut seen_content = false;
    loop {
        bytes.clear();
        let read = reader.read_until(b'\n', &mut bytes);
        if read.map_err(|e| file_error(path, e))? == 0 {
            return Ok(());
        }
        line += 1;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| format_error(path, format!("line {line}: not valid UTF-8 text")))?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(text).trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let first = !seen_content;
        seen_content = true;
        let mut cells = [""; N];
        let mut count = 0usize;
        for cell in text.split(',') {
            if let Some(slot) = cells.get_mut(count) {
                *slot = cell.trim();
            }
            count += 1;
        }
        let is_header = first
            && text
                .split(',')
                .all(|cell| cell.trim().parse::<f64>().is_err());
        if count != N {
            let kind = if is_header { "header has" } else { "found" };
            return Err(format_error(
                path,
                format!("line {line}: expected {N} comma-separated columns, {kind} {count}"),
            ));
        }
        if is_header {
            continue;
        }
        each(Row { path, line, cells })?;
    }
}
