//! What a command reports when it fails: what it was doing, and why (the library's
//! error and every error beneath it), on one line.

/// A command's failure.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// An argument that parsed but cannot be used, found before any work.
    #[error("{0}")]
    Usage(String),
    /// The library failed while the command was `doing` something.
    #[error("{doing}")]
    Raypick {
        /// What the command was doing, e.g. "cannot load mesh".
        doing: String,
        /// Why.
        #[source]
        source: raypick::Error,
    },
    /// The operating system refused a read or write.
    #[error("{doing}")]
    Io {
        /// What the command was doing.
        doing: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The library failed; its error says what.
    #[error(transparent)]
    Library(#[from] raypick::Error),
    /// The command found something wrong in what the library returned.
    #[error("{0}")]
    Failed(String),
    /// No GPU backend could be opened where one was asked for.
    #[error("cannot open the GPU backend")]
    NoGpu(#[source] raypick::Error),
}

impl From<String> for CliError {
    fn from(message: String) -> Self {
        CliError::Usage(message)
    }
}

impl From<&str> for CliError {
    fn from(message: &str) -> Self {
        CliError::Usage(message.to_string())
    }
}

/// Adds what the command was doing to a library or I/O failure.
pub trait Doing<T> {
    /// The failure as a [`CliError`] saying `doing` first.
    fn doing(self, doing: impl Into<String>) -> Result<T, CliError>;
}

impl<T> Doing<T> for raypick::Result<T> {
    fn doing(self, doing: impl Into<String>) -> Result<T, CliError> {
        self.map_err(|source| CliError::Raypick {
            doing: doing.into(),
            source,
        })
    }
}

impl<T> Doing<T> for std::io::Result<T> {
    fn doing(self, doing: impl Into<String>) -> Result<T, CliError> {
        self.map_err(|source| CliError::Io {
            doing: doing.into(),
            source,
        })
    }
}

impl<T> Doing<T> for Result<T, CliError> {
    fn doing(self, doing: impl Into<String>) -> Result<T, CliError> {
        self.map_err(|error| match error {
            CliError::Library(source) => CliError::Raypick {
                doing: doing.into(),
                source,
            },
            other => other,
        })
    }
}

impl CliError {
    /// The message and its sources, `: `-separated, on one line (multi-line driver
    /// messages joined); a GPU failure ends with how to get a GPU adapter.
    pub fn one_line(&self) -> String {
        let line = match self {
            CliError::Usage(message) | CliError::Failed(message) => message.clone(),
            CliError::Library(source) => source.with_sources(),
            CliError::Raypick { doing, source } => format!("{doing}: {}", source.with_sources()),
            CliError::Io { doing, source } => format!("{doing}: {source}"),
            CliError::NoGpu(source) => format!(
                "{self}: {}; {}",
                source.with_sources(),
                crate::bench::no_gpu_hint()
            ),
        };
        one_line(&line)
    }
}

/// `message` on one line: its non-empty lines trimmed and joined by spaces.
pub fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_what_failed_then_each_cause() {
        let missing = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let error = CliError::Raypick {
            doing: "cannot load mesh".into(),
            source: raypick::Error::File {
                path: "a.obj".into(),
                source: missing,
            },
        };
        assert_eq!(error.one_line(), "cannot load mesh: a.obj: no such file");
    }

    #[test]
    fn driver_messages_over_several_lines_become_one() {
        let error = CliError::Usage("first\n   second\n\nthird".into());
        assert_eq!(error.one_line(), "first second third");
    }
}
