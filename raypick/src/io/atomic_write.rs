//! All-or-nothing file writes: write a temporary file next to the target, then
//! rename it into place.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::errors::file_error;
use crate::error::Result;

/// Writes the file at `path` all at once: `write` fills a temporary file in the same
/// directory, which is flushed, synced and then renamed over `path`.
///
/// Readers of `path` see either the old file (or none) or the complete new one, never
/// a partial file. If anything fails (including a panic inside `write`) the temporary
/// file is removed and `path` is left untouched. Errors are [`crate::Error::File`]
/// naming `path`.
pub fn write_atomic<F>(path: impl AsRef<Path>, write: F) -> Result<()>
where
    F: FnOnce(&mut BufWriter<File>) -> io::Result<()>,
{
    let path = path.as_ref();
    let fail = |source| file_error(path, source);
    let (temp_path, file) = create_temp_file(path).map_err(fail)?;
    let temp = TempFile(Some(temp_path));

    let mut writer = BufWriter::new(file);
    write(&mut writer).map_err(fail)?;
    let file = writer.into_inner().map_err(|e| fail(e.into_error()))?;
    file.sync_all().map_err(fail)?;
    drop(file);
    temp.rename_to(path).map_err(fail)
}

/// A temporary file that is deleted when dropped, unless it was renamed into place.
struct TempFile(Option<PathBuf>);

impl TempFile {
    fn rename_to(mut self, target: &Path) -> io::Result<()> {
        if let Some(temp) = &self.0 {
            fs::rename(temp, target)?;
            self.0 = None;
        }
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(temp) = self.0.take() {
            let _ = fs::remove_file(temp);
        }
    }
}

/// Creates a new, uniquely named hidden file in the directory of `target`.
fn create_temp_file(target: &Path) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = target.file_name().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "the path does not name a file")
    })?;
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut attempts = 0;
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let mut temp_name = std::ffi::OsString::from(".");
        temp_name.push(name);
        temp_name.push(format!(".{}-{n}.tmp", std::process::id()));
        let temp_path = dir.join(temp_name);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp_path)
        {
            Ok(file) => return Ok((temp_path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < 100 => {
                attempts += 1;
            }
            Err(e) => return Err(e),
        }
    }
}
