//! Matching a path against a glob the way git matches pathspecs, for the
//! parts of the product that take globs from the user.

use gix::bstr::ByteSlice;

/// Does the glob `pattern` match `path` as git matches pathspecs (`*` does
/// not cross `/`)?
pub fn glob_matches(pattern: &str, path: &str) -> bool {
    gix::glob::wildmatch(
        pattern.as_bytes().as_bstr(),
        path.as_bytes().as_bstr(),
        gix::glob::wildmatch::Mode::NO_MATCH_SLASH_LITERAL,
    )
}
