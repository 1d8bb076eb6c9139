//! The server's one secret: a random token, given once in the URL `serve`
//! prints and kept by the browser as a cookie. It is kept in
//! `<git-dir>/ralph/serve-token` (readable by its owner only), so that a
//! server started again answers the pages the last one served, and a page
//! left open follows the run on. `--new-token` replaces it, which shuts
//! every page opened with the old one out, on a server already running
//! too: a running server reads the file again whenever it changes (see
//! [`KeptToken`]).

use std::io::Read;
use std::path::{Path, PathBuf};

/// How many random bytes a token holds; it is written as twice as many
/// hex digits.
const TOKEN_BYTES: usize = 24;

#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)")
    }
}

/// Why the token could not be read or made.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("could not read random bytes from /dev/urandom")]
    Random(#[source] std::io::Error),
    #[error("could not write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Token {
    /// Where the token of the repository whose ralph directory is
    /// `ralph_dir` is kept.
    pub fn path(ralph_dir: &Path) -> PathBuf {
        ralph_dir.join(crate::state::layout::SERVE_TOKEN)
    }

    /// The token kept at `path`, or a new one written there when there is
    /// none, it cannot be read, or `renew` asks for one.
    pub fn kept_at(path: &Path, renew: bool) -> Result<Token, TokenError> {
        if !renew
            && let Ok(text) = std::fs::read_to_string(path)
            && let Some(token) = Token::parse(text.trim())
        {
            return Ok(token);
        }
        let token = Token::random()?;
        write_private(path, token.0.as_bytes()).map_err(|source| TokenError::Write {
            path: path.to_owned(),
            source,
        })?;
        Ok(token)
    }

    /// A new token from the system's random source.
    pub fn random() -> Result<Token, TokenError> {
        let mut bytes = [0u8; TOKEN_BYTES];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut urandom| urandom.read_exact(&mut bytes))
            .map_err(TokenError::Random)?;
        Ok(Token(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// A token as written: hex digits only, of the full length.
    fn parse(text: &str) -> Option<Token> {
        (text.len() == TOKEN_BYTES * 2 && text.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| Token(text.to_ascii_lowercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `given` is this token, compared in a time that does not
    /// depend on where they differ.
    pub fn matches(&self, given: &str) -> bool {
        let (ours, theirs) = (self.0.as_bytes(), given.as_bytes());
        if ours.len() != theirs.len() {
            return false;
        }
        ours.iter()
            .zip(theirs)
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
    }
}

/// The token a running server answers to: the one in its file, read again
/// whenever the file is replaced (`serve --new-token` from another
/// terminal), so that the old token is refused and the new one taken from
/// the next request on. A file that goes missing or holds no token leaves
/// the last one in force.
pub struct KeptToken {
    path: PathBuf,
    held: std::sync::Mutex<(Option<Stamp>, Token)>,
}

/// What tells one version of the file from the next: it is replaced by a
/// rename, so its inode changes even within the same second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    inode: u64,
    modified: Option<std::time::SystemTime>,
    len: u64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some(Stamp {
        inode: meta.ino(),
        modified: meta.modified().ok(),
        len: meta.len(),
    })
}

impl KeptToken {
    /// `token`, as just read from or written to `path`.
    pub fn new(path: PathBuf, token: Token) -> KeptToken {
        let seen = stamp(&path);
        KeptToken {
            path,
            held: std::sync::Mutex::new((seen, token)),
        }
    }

    /// The token in force now.
    pub fn current(&self) -> Token {
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let now = stamp(&self.path);
        if now.is_some() && now != held.0 {
            if let Some(token) = std::fs::read_to_string(&self.path)
                .ok()
                .and_then(|text| Token::parse(text.trim()))
            {
                held.1 = token;
            }
            held.0 = now;
        }
        held.1.clone()
    }
}

/// `bytes` written to `path` whole (a temporary file renamed into place),
/// readable and writable by the owner alone from the start.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::state::write_atomically_with_mode(path, bytes, 0o600)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_kept_token_is_reused_until_renewed_and_only_its_owner_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = Token::path(dir.path());
        let first = Token::kept_at(&path, false).unwrap();
        assert_eq!(first.as_str().len(), TOKEN_BYTES * 2);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = Token::kept_at(&path, false).unwrap();
        assert_eq!(again.as_str(), first.as_str());
        let renewed = Token::kept_at(&path, true).unwrap();
        assert_ne!(renewed.as_str(), first.as_str());

        std::fs::write(&path, "not a token").unwrap();
        let replaced = Token::kept_at(&path, false).unwrap();
        assert!(Token::parse(replaced.as_str()).is_some());
    }

    #[test]
    fn a_kept_token_follows_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = Token::path(dir.path());
        let first = Token::kept_at(&path, false).unwrap();
        let kept = KeptToken::new(path.clone(), first.clone());
        assert_eq!(kept.current().as_str(), first.as_str());
        let renewed = Token::kept_at(&path, true).unwrap();
        assert_eq!(kept.current().as_str(), renewed.as_str());
        std::fs::write(&path, "not a token").unwrap();
        assert_eq!(kept.current().as_str(), renewed.as_str());
        std::fs::remove_file(&path).unwrap();
        assert_eq!(kept.current().as_str(), renewed.as_str());
    }

    #[test]
    fn a_token_matches_itself_only() {
        let token = Token::random().unwrap();
        assert!(token.matches(token.as_str()));
        assert!(!token.matches(""));
        assert!(!token.matches(&token.as_str()[1..]));
        let mut other = token.as_str().to_owned();
        other.replace_range(0..1, if other.starts_with('0') { "1" } else { "0" });
        assert!(!token.matches(&other));
    }
}
