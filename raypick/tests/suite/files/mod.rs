//! Files: ray and hit files, mesh files (`docs/contracts.md` §2), and the atomic
//! writes both use. Round trips through every format, `.npy` files built byte by
//! byte (an independent writer), real and malformed files.

mod meshes;
mod rays_and_hits;

use std::fs;
use std::path::{Path, PathBuf};

use raypick::Error;
use tempfile::TempDir;

// ---------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------

pub(super) fn temp_dir() -> TempDir {
    tempfile::tempdir().expect("create a temporary directory")
}

pub(super) fn write_file(dir: &TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    fs::write(&path, bytes).expect("write test file");
    path
}

pub(super) fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("list directory")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// The error message, checked to name the file.
pub(super) fn message_naming(error: &Error, path: &Path) -> String {
    let message = error.with_sources();
    assert!(
        message.contains(&path.display().to_string()),
        "error does not name {}: {message}",
        path.display()
    );
    message
}

pub(super) fn expect_format_error(
    result: raypick::Result<impl std::fmt::Debug>,
    path: &Path,
) -> String {
    match result {
        Err(error @ Error::Format { .. }) => message_naming(&error, path),
        other => panic!(
            "expected a format error for {}, got {other:?}",
            path.display()
        ),
    }
}

// ---------------------------------------------------------------------------------
// Ray files
// ---------------------------------------------------------------------------------
