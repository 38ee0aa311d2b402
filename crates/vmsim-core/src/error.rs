//! Errors that reach the user: every one is a single line naming the problem.

use thiserror::Error;

/// An error from building or running a simulation.
///
/// Each variant prints as one line that names the offending input, so the
/// command line can show it verbatim and exit with code 2.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum Error {
    /// The scenario text is not valid TOML, or has an unknown key or a value of the wrong type.
    #[error("scenario: {0}")]
    Parse(String),
    /// A value is syntactically fine but impossible (a zero-CPU machine, a 3 KiB page, …).
    #[error("scenario: {0}")]
    Invalid(String),
    /// The host cannot hold the run: the memory it needs and what the host has.
    #[error("{0}")]
    Capacity(String),
    /// A cost profile that cannot be used (`cost profile NAME: …`, [`crate::costs`]).
    #[error("{0}")]
    Profile(String),
    /// A size or duration string could not be read.
    #[error("scenario: {key}: {msg}")]
    Unit {
        /// The key whose value was wrong.
        key: String,
        /// What was wrong with it.
        msg: String,
    },
}

/// Shorthand for results whose error is [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
