//! git-ralph
