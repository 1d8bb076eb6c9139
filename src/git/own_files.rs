//! The files this module keeps in `<git-dir>/ralph/`, named in one place so
//! that the state layout can refuse them as change names and the
//! operations that write them name the same paths.

/// Which directories held only tracked files (`dir-cache`), which tree the
/// index describes (`index-tree`), the shared indexes a loop made
/// (`shared-indexes`), and the watch's cookies (`cookies`).
pub const DIR_CACHE: &str = "dir-cache";
pub const INDEX_TREE: &str = "index-tree";
pub const SHARED_INDEXES: &str = "shared-indexes";
pub const COOKIES: &str = "cookies";
/// Every one of them: names no change may take.
pub const OWN_FILES: [&str; 4] = [DIR_CACHE, INDEX_TREE, SHARED_INDEXES, COOKIES];
