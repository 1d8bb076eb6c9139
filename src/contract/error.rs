//! Why a contract could not be read, and reading a contract file.

use std::path::{Path, PathBuf};

/// Why a contract could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    #[error("could not read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a valid contract: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
    #[error("{}:{line}:{column}: the contract is not UTF-8 text (byte {byte:#04x})", path.display())]
    NotUtf8 {
        path: PathBuf,
        line: usize,
        column: usize,
        byte: u8,
    },
    #[error("{}:{line}:{column}: `timeout = 0`: a timeout must be at least one second, as with --command-timeout", path.display())]
    ZeroTimeout {
        path: PathBuf,
        line: usize,
        column: usize,
    },
    #[error("could not save the contract snapshot to {}", path.display())]
    Snapshot {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ContractError {
    pub fn hint(&self) -> Option<String> {
        match self {
            ContractError::Invalid { .. } => Some(
                "see CONTRACT FILES in 'man git-ralph-start' for the keys and their types".into(),
            ),
            ContractError::NotUtf8 { .. } => Some(
                "save the file as UTF-8 (for example `iconv -f LATIN1 -t UTF-8`), or fix the bytes on that line".into(),
            ),
            ContractError::ZeroTimeout { .. } => Some(
                "give the number of seconds it may run, or remove the key to use --command-timeout (ralph.commandTimeout)".into(),
            ),
            _ => None,
        }
    }
}

/// The text of a contract file, or `None` when there is no such file.
pub(super) fn read_file(path: &Path) -> Result<Option<String>, ContractError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ContractError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    String::from_utf8(bytes).map(Some).map_err(|err| {
        let (line, column, byte) = first_bad_byte(&err);
        ContractError::NotUtf8 {
            path: path.to_owned(),
            line,
            column,
            byte,
        }
    })
}

/// Where text stops being UTF-8: the 1-based line and column (in
/// characters) of the first bad byte, and the byte.
pub(crate) fn first_bad_byte(err: &std::string::FromUtf8Error) -> (usize, usize, u8) {
    let bytes = err.as_bytes();
    let at = err.utf8_error().valid_up_to();
    let line_start = bytes[..at]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |newline| newline + 1);
    (
        1 + bytes[..at].iter().filter(|b| **b == b'\n').count(),
        1 + String::from_utf8_lossy(&bytes[line_start..at])
            .chars()
            .count(),
        bytes[at],
    )
}
