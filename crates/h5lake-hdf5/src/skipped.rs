//! What a conversion left out, said object by object, so that every tool
//! on top (the CLI's exit status, `diff`, `ls`) can name it rather than
//! pass over it.

use std::fmt;

/// One object, attribute, link or property a conversion could not carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// Path of the object in the source.
    pub path: String,
    /// The part of the object left out (`attribute "units"`, `fill value`);
    /// `None` when the whole object was.
    pub part: Option<String>,
    pub reason: String,
}

impl Skipped {
    pub(crate) fn object(path: &str, reason: impl Into<String>) -> Self {
        Skipped {
            path: path.to_string(),
            part: None,
            reason: reason.into(),
        }
    }

    pub(crate) fn part(path: &str, part: impl Into<String>, reason: impl Into<String>) -> Self {
        Skipped {
            path: path.to_string(),
            part: Some(part.into()),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.part {
            None => write!(f, "{}: {}", self.path, self.reason),
            Some(part) => write!(f, "{}: {}: {}", self.path, part, self.reason),
        }
    }
}
