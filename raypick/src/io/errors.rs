//! Small constructors for the errors of this module; every one names the file.

use std::io;
use std::path::Path;

use crate::error::Error;

/// The file could not be opened, read or written.
pub(crate) fn file_error(path: &Path, source: io::Error) -> Error {
    Error::File {
        path: path.to_path_buf(),
        source,
    }
}

/// The file was read but its content is not valid for its format.
pub(crate) fn format_error(path: &Path, message: impl Into<String>) -> Error {
    Error::Format {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Reserves room for `count` more items read from `path`, failing with an error
/// instead of aborting when the memory is not there.
pub(crate) fn reserve_or_fail<T>(vec: &mut Vec<T>, count: usize, path: &Path) -> Result<(), Error> {
    vec.try_reserve_exact(count)
        .map_err(|_| format_error(path, format!("not enough memory to hold {count} records")))
}
