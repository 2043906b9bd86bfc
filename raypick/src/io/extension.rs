//! Choosing a file format from the file extension (case-insensitive).

use std::path::Path;

use crate::error::{Error, Result};

/// How the records of a ray or hit file are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// Raw little-endian records (`.rays`, `.hits`).
    Binary,
    /// NumPy `.npy`.
    Npy,
    /// Comma-separated text.
    Csv,
}

/// The extension of `path`, lower-cased, without the dot.
pub(crate) fn lowercase_extension(path: &Path) -> Option<String> {
    path.extension()
        .map(|ext| ext.to_string_lossy().to_ascii_lowercase())
}

/// A readable description of the extension of `path` for error messages.
pub(crate) fn describe_extension(path: &Path) -> String {
    match path.extension() {
        Some(ext) => format!("extension '.{}'", ext.to_string_lossy()),
        None => "no extension".to_owned(),
    }
}

/// The encoding of a file of `kind` (`"ray"` or `"hit"`), whose binary form uses the
/// extension `binary_extension`.
pub(crate) fn encoding_of(path: &Path, kind: &str, binary_extension: &str) -> Result<Encoding> {
    match lowercase_extension(path).as_deref() {
        Some(ext) if ext == binary_extension => Ok(Encoding::Binary),
        Some("npy") => Ok(Encoding::Npy),
        Some("csv") => Ok(Encoding::Csv),
        _ => Err(Error::UnknownFormat {
            path: path.to_path_buf(),
            message: format!(
                "unknown {kind} file format ({}); supported: .{binary_extension}, .npy, .csv",
                describe_extension(path),
            ),
        }),
    }
}
