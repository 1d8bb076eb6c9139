//! What the user wants built, in their words: a line on the command line,
//! a longer brief in a file (`--from`), or a GitHub issue's title and body
//! (`--issue`, through `gh`). Read once, before anything is written.

use std::path::Path;
use std::time::Duration;

use super::error::PlanError;
use crate::stories::github;

/// What to build, and where the words came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Brief {
    pub text: String,
    /// `the command line`, a file's path, `GitHub issue #12`.
    pub from: String,
}

/// Where the brief is to be read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BriefSource {
    Text(String),
    File(std::path::PathBuf),
    Issue(u64),
}

impl Brief {
    /// Read the brief from `source`; `workdir` is where `gh` runs.
    pub fn read(
        source: &BriefSource,
        workdir: &Path,
        timeout: Duration,
    ) -> Result<Brief, PlanError> {
        let brief = match source {
            BriefSource::Text(text) => Brief {
                text: text.trim().to_owned(),
                from: "the command line".to_owned(),
            },
            BriefSource::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| PlanError::Brief {
                    path: path.clone(),
                    source,
                })?;
                Brief {
                    text: crate::stories::unix_lines(text.trim()).into_owned(),
                    from: path.display().to_string(),
                }
            }
            BriefSource::Issue(number) => {
                let (title, body) =
                    github::view(workdir, *number, timeout).map_err(|source| PlanError::Issue {
                        number: *number,
                        source,
                    })?;
                let body = crate::stories::unix_lines(body.trim()).into_owned();
                Brief {
                    text: format!("# {}\n\n{body}", title.trim()).trim().to_owned(),
                    from: format!("GitHub issue #{number}"),
                }
            }
        };
        if brief.text.is_empty() {
            return Err(match source {
                BriefSource::File(path) => PlanError::EmptyBrief { path: path.clone() },
                _ => PlanError::NoBrief,
            });
        }
        Ok(brief)
    }
}
