//! Change names become a branch (`ralph/<change>`), a ref namespace
//! (`refs/ralph/<change>/…`) and a directory (`<git-dir>/ralph/<change>/`).
//! One validated type guards all three, so no other module ever joins an
//! unchecked user string into a ref or a path.

use std::fmt;

/// A change name that is safe as a single branch-name component and as a
/// single path component.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChangeName(String);

/// Why a change name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("the change name is empty")]
    Empty,
    #[error("change name '{name}' {problem}")]
    Invalid { name: String, problem: &'static str },
}

impl NameError {
    /// What the user can do about it.
    pub fn hint(&self) -> String {
        "use letters, digits, '-', '_' and '.', e.g. 'add-greeting'".into()
    }
}

impl ChangeName {
    /// Validate `name` with git's `check-ref-format` rules for one component,
    /// plus the rules that keep it a single, non-hidden path component.
    pub fn parse(name: &str) -> Result<Self, NameError> {
        let invalid = |problem| {
            Err(NameError::Invalid {
                name: name.escape_debug().to_string(),
                problem,
            })
        };
        if name.is_empty() {
            return Err(NameError::Empty);
        }
        if name.len() > 200 {
            return invalid("is longer than 200 bytes");
        }
        if name.starts_with('-') {
            return invalid("starts with '-', which would read as an option");
        }
        if name.starts_with('.') {
            return invalid("starts with '.'");
        }
        if name.ends_with('.') {
            return invalid("ends with '.'");
        }
        if name.ends_with(".lock") {
            return invalid("ends with '.lock', which git reserves for lock files");
        }
        if name.contains("..") {
            return invalid("contains '..'");
        }
        if name.contains("@{") {
            return invalid("contains '@{'");
        }
        if name == "@" {
            return invalid("is '@', which git reads as HEAD");
        }
        if name.contains('/') {
            return invalid("contains '/': it must be a single name, not a path");
        }
        if name.chars().any(|c| c.is_whitespace()) {
            return invalid("contains whitespace");
        }
        if name.chars().any(|c| c.is_control()) {
            return invalid("contains a control character");
        }
        if name.chars().any(|c| "~^:?*[\\".contains(c)) {
            return invalid("contains one of the characters ~ ^ : ? * [ \\");
        }
        Ok(ChangeName(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `refs/heads/ralph/<change>`
    pub fn branch_ref(&self) -> String {
        format!("refs/heads/ralph/{}", self.0)
    }

    /// `ralph/<change>`, as users type it.
    pub fn branch_short(&self) -> String {
        format!("ralph/{}", self.0)
    }

    /// `refs/ralph/<change>`: where attempts and kept tips live.
    pub fn ref_namespace(&self) -> String {
        format!("refs/ralph/{}", self.0)
    }
}

impl fmt::Display for ChangeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Validate a story id for use as one ref component (`…/attempts/<story>/<n>`).
/// Story ids come from files the agent edits, so they are untrusted too.
pub fn ref_component(value: &str) -> Option<&str> {
    ChangeName::parse(value).ok().map(|_| value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_names() {
        for ok in ["add-greeting", "v1.2", "a_b", "x", "ünïcode-ok", "1"] {
            assert!(ChangeName::parse(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn rejects_every_unsafe_form() {
        for bad in [
            "",
            "..",
            "a..b",
            "-rf",
            "a b",
            "tab\there",
            "nl\n",
            "bell\u{7}",
            "a~1",
            "a^",
            "a:b",
            "a?",
            "a*",
            "a[",
            "a\\b",
            "a@{1}",
            "x.lock",
            "../etc",
            "a/b",
            ".hidden",
            "trailing.",
            "@",
        ] {
            assert!(ChangeName::parse(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn names_refs_and_branches() {
        let name = ChangeName::parse("add-greeting").unwrap();
        assert_eq!(name.branch_ref(), "refs/heads/ralph/add-greeting");
        assert_eq!(name.ref_namespace(), "refs/ralph/add-greeting");
    }
}
