//! The verdicts of earlier `--verify` runs, per CLI and version, so that a
//! plain `git ralph agents` can say whether the installed version has been
//! verified on this machine. It lives in the user's cache directory
//! (`$XDG_CACHE_HOME/git-ralph/verified.json`, else `~/.cache/…`) and is
//! only a record: losing it costs a re-run, nothing else.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{Report, Verdict};
use crate::state::write_atomically;

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("neither XDG_CACHE_HOME nor HOME is set, so there is nowhere to keep verdicts")]
    NoCacheDir,
    #[error("could not write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// One CLI version's last verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// `verified`, `format_not_understood` or `cannot_point`.
    pub verdict: String,
    /// When it was reached, in seconds since the epoch.
    pub at: u64,
}

/// Verdicts by preset name, then by version.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Cache {
    #[serde(default)]
    agents: BTreeMap<String, BTreeMap<String, Entry>>,
}

impl Cache {
    /// The cache file's path.
    pub fn path() -> Result<PathBuf, CacheError> {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|dir| !dir.is_empty())
                    .map(|home| PathBuf::from(home).join(".cache"))
            })
            .ok_or(CacheError::NoCacheDir)?;
        Ok(base.join("git-ralph").join("verified.json"))
    }

    /// The cache as stored; missing or unreadable means empty.
    pub fn load() -> Cache {
        Cache::path()
            .ok()
            .and_then(|path| std::fs::read(path).ok())
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// The verdict recorded for `name` at `version`.
    pub fn get(&self, name: &str, version: &str) -> Option<&Entry> {
        self.agents.get(name)?.get(version)
    }

    /// Records `report`, when it has a version and reached the CLI.
    pub fn record(&mut self, report: &Report, at: u64) {
        let Some(version) = &report.version else {
            return;
        };
        if matches!(report.verdict, Verdict::NotInstalled) {
            return;
        }
        self.agents
            .entry(report.name.to_owned())
            .or_default()
            .insert(
                version.clone(),
                Entry {
                    verdict: report.verdict.word().to_owned(),
                    at,
                },
            );
    }

    pub fn save(&self) -> Result<PathBuf, CacheError> {
        let path = Cache::path()?;
        let bytes = serde_json::to_vec_pretty(self).unwrap_or_default();
        write_atomically(&path, &bytes).map_err(|source| CacheError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(verdict: Verdict, version: Option<&str>) -> Report {
        Report {
            name: "codex",
            title: "OpenAI Codex CLI",
            program: "codex",
            version: version.map(str::to_owned),
            verdict,
            scenarios: Vec::new(),
            seconds: 1.0,
        }
    }

    #[test]
    fn verdicts_are_kept_per_version_and_survive_a_round_trip() {
        let mut cache = Cache::default();
        cache.record(&report(Verdict::Verified, Some("0.169.0")), 7);
        cache.record(
            &report(
                Verdict::CannotPoint {
                    reason: "no".into(),
                },
                Some("0.170.0"),
            ),
            8,
        );
        cache.record(&report(Verdict::Verified, None), 9);
        cache.record(&report(Verdict::NotInstalled, Some("1.0")), 9);
        let json = serde_json::to_string(&cache).expect("serialisable");
        let back: Cache = serde_json::from_str(&json).expect("parsable");
        assert_eq!(
            back.get("codex", "0.169.0").map(|e| e.verdict.as_str()),
            Some("verified")
        );
        assert_eq!(
            back.get("codex", "0.170.0").map(|e| e.verdict.as_str()),
            Some("cannot_point")
        );
        assert_eq!(back.get("codex", "1.0"), None);
        assert_eq!(back.get("claude", "0.169.0"), None);
    }
}
