//! The names git-ralph gives its own files in `<git-dir>/ralph/`, beside
//! the directories of the runs, in one list: a change is a directory of
//! that same folder, so a change named like one of them would make its run
//! the lock, the history of earlier runs or the prompt template. No new
//! run may take one of these names.

/// The lock of the running loop (see [`super::lock_path`]).
pub const LOCK: &str = "lock";
/// The runs begun again, moved aside.
pub const HISTORY: &str = "history";
/// The user's own prompt template.
pub const PROMPT_TEMPLATE: &str = "prompt.md";
/// The records of `git ralph plan`.
pub const PLANS: &str = "plans";
/// The token of `git ralph serve`.
pub const SERVE_TOKEN: &str = "serve-token";

/// Every name a change may not take: the files above and those of the
/// checkpoint engine ([`crate::git::OWN_FILES`]).
pub fn reserved() -> impl Iterator<Item = &'static str> {
    [LOCK, HISTORY, PROMPT_TEMPLATE, PLANS, SERVE_TOKEN]
        .into_iter()
        .chain(crate::git::OWN_FILES)
}

/// The file of `<git-dir>/ralph/` that a run named `change` would be,
/// if any. Compared without case, since on a file system that ignores case
/// `Lock` is the lock.
pub fn reserved_name(change: &str) -> Option<&'static str> {
    reserved().find(|name| name.eq_ignore_ascii_case(change))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_own_file_is_reserved_whatever_its_case() {
        for name in [
            "lock",
            "history",
            "prompt.md",
            "plans",
            "serve-token",
            "dir-cache",
            "index-tree",
            "shared-indexes",
            "cookies",
            "LOCK",
            "Prompt.MD",
        ] {
            assert!(reserved_name(name).is_some(), "{name}");
        }
        for name in ["greet", "locks", "history-2", "prompt"] {
            assert_eq!(reserved_name(name), None, "{name}");
        }
    }
}
