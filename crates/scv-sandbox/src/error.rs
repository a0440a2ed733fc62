//! Why a sandbox could not be built.

/// A sandbox that cannot be built is never skipped: the command does not
/// run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Landlock: {0}")]
    Landlock(#[from] landlock::RulesetError),
    #[error("seccomp: {0}")]
    Seccomp(#[from] seccompiler::Error),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the sandbox policy is malformed: {0}")]
    Policy(#[from] serde_json::Error),
}

impl From<seccompiler::BackendError> for Error {
    fn from(err: seccompiler::BackendError) -> Self {
        Error::Seccomp(err.into())
    }
}

impl Error {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}
