//! Errors of statistics and queries.

/// What went wrong parsing, checking or evaluating an expression, or
/// reading a statistics record.
#[derive(thiserror::Error, Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum QueryError {
    /// The text is not an expression: `pos` is the character (0-based)
    /// where reading it stopped making sense.
    #[error("syntax error at position {pos}: {msg}")]
    Syntax { pos: usize, msg: String },
    /// The expression names something the dataset does not have, or
    /// combines values of the wrong kinds.
    #[error("{msg} (at position {pos})")]
    Invalid { pos: usize, msg: String },
    /// A dataset whose type statistics and queries do not cover.
    #[error("{0}")]
    Unsupported(String),
    /// A statistics record that cannot be read.
    #[error("corrupt statistics: {0}")]
    Corrupt(String),
}

pub type Result<T> = std::result::Result<T, QueryError>;
