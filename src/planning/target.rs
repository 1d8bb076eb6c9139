//! What a plan writes, and so the only paths its agent may change: an
//! OpenSpec change's folder (`openspec/changes/<change>/`), or the one file
//! named by `--prd` or `--tasks`. The plan is read back with the reader
//! `git ralph start` will use on it ([`stories::detect`]), so that what is
//! accepted is what will run.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::git::ChangeName;
use crate::stories::{self, SourceKind, StoriesError, StorySource, openspec};

/// The format a plan is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// An OpenSpec change: proposal, tasks and spec deltas.
    #[serde(rename = "openspec")]
    OpenSpec,
    /// A prd.json of user stories.
    Prd,
    /// A markdown checklist.
    Checklist,
}

/// Where a plan goes.
#[derive(Debug, Clone)]
pub struct Target {
    pub format: Format,
    change: ChangeName,
    /// Repository-relative, `/`-separated: the change's folder, or the file.
    path: String,
    /// The file as the user typed it (`--prd`, `--tasks`), for the command
    /// that runs the plan.
    typed: Option<PathBuf>,
}

impl Target {
    /// The OpenSpec change `change`.
    pub fn openspec(change: &ChangeName) -> Target {
        Target {
            format: Format::OpenSpec,
            change: change.clone(),
            path: format!("{}/{change}", openspec::CHANGES_DIR),
            typed: None,
        }
    }

    /// The file `typed` (relative to `cwd`, or absolute), inside the
    /// worktree at `workdir`, in `format`.
    pub fn file(
        change: &ChangeName,
        format: Format,
        workdir: &Path,
        cwd: &Path,
        typed: &Path,
    ) -> Result<Target, StoriesError> {
        let relative = stories::repo_relative_path(workdir, &cwd.join(typed))?;
        if relative.as_os_str().is_empty() {
            return Err(StoriesError::FileNotFound {
                path: typed.to_owned(),
            });
        }
        Ok(Target {
            format,
            change: change.clone(),
            path: stories::slash_path(&relative),
            typed: Some(typed.to_owned()),
        })
    }

    pub fn change(&self) -> &ChangeName {
        &self.change
    }

    /// The folder with a trailing `/`, or the file: as people are shown it.
    pub fn shown(&self) -> String {
        match self.format {
            Format::OpenSpec => format!("{}/", self.path),
            Format::Prd | Format::Checklist => self.path.clone(),
        }
    }

    /// Whether anything of it exists in the worktree at `workdir`.
    pub fn exists(&self, workdir: &Path) -> bool {
        let path = workdir.join(&self.path);
        match self.format {
            Format::OpenSpec => path.is_dir(),
            Format::Prd | Format::Checklist => path.exists(),
        }
    }

    /// Whether the agent may change `path` (repository-relative,
    /// `/`-separated).
    pub fn allows(&self, path: &str) -> bool {
        match self.format {
            Format::OpenSpec => path
                .strip_prefix(self.path.as_str())
                .is_some_and(|rest| rest.starts_with('/')),
            Format::Prd | Format::Checklist => path == self.path,
        }
    }

    /// The file the stories are read from: `tasks.md`, or the file.
    pub fn tracking_file(&self) -> String {
        match self.format {
            Format::OpenSpec => format!("{}/{}", self.path, openspec::TASKS_FILE),
            Format::Prd | Format::Checklist => self.path.clone(),
        }
    }

    /// The reader `git ralph start` will use on the plan.
    pub fn source(&self, workdir: &Path) -> Result<Box<dyn StorySource>, StoriesError> {
        let file = Path::new(&self.path);
        match self.format {
            Format::OpenSpec => stories::detect(
                workdir,
                self.change.as_str(),
                Some(SourceKind::OpenSpec),
                None,
                None,
            ),
            Format::Prd => stories::detect(
                workdir,
                self.change.as_str(),
                Some(SourceKind::Prd),
                Some(file),
                None,
            ),
            Format::Checklist => stories::detect(
                workdir,
                self.change.as_str(),
                Some(SourceKind::Markdown),
                None,
                Some(file),
            ),
        }
    }

    /// The files of the plan as they are in the worktree at `workdir`,
    /// repository-relative, with their bytes: what `--refine` starts from.
    pub fn files(&self, workdir: &Path) -> std::io::Result<Vec<(String, Vec<u8>)>> {
        let mut files = Vec::new();
        let root = workdir.join(&self.path);
        if root.is_file() {
            files.push((self.path.clone(), std::fs::read(&root)?));
            return Ok(files);
        }
        let mut dirs = vec![root];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir)? {
                let entry = entry?;
                let kind = entry.file_type()?;
                if kind.is_dir() {
                    dirs.push(entry.path());
                } else if kind.is_file() {
                    let relative = entry.path();
                    let relative = relative.strip_prefix(workdir).unwrap_or(&relative);
                    files.push((stories::slash_path(relative), std::fs::read(entry.path())?));
                }
            }
        }
        files.sort();
        Ok(files)
    }

    /// The arguments of `git ralph start` that run the plan, after the
    /// change's name.
    pub fn start_args(&self) -> Vec<String> {
        let typed = || {
            self.typed
                .as_deref()
                .map_or_else(|| self.path.clone(), |p| p.display().to_string())
        };
        match self.format {
            Format::OpenSpec => Vec::new(),
            Format::Prd => vec!["--prd".to_owned(), typed()],
            Format::Checklist => vec!["--tasks".to_owned(), typed()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_openspec_change_allows_its_folder_alone() {
        let change = ChangeName::parse("add-x").expect("a name");
        let target = Target::openspec(&change);
        assert!(target.allows("openspec/changes/add-x/tasks.md"));
        assert!(target.allows("openspec/changes/add-x/specs/x/spec.md"));
        assert!(!target.allows("openspec/changes/add-x"));
        assert!(!target.allows("openspec/changes/add-xy/tasks.md"));
        assert!(!target.allows("src/lib.rs"));
        assert_eq!(target.shown(), "openspec/changes/add-x/");
    }

    #[test]
    fn a_file_allows_itself_alone() {
        let change = ChangeName::parse("x").expect("a name");
        let dir = tempfile::tempdir().expect("a dir");
        let target = Target::file(
            &change,
            Format::Checklist,
            dir.path(),
            &dir.path().join("docs"),
            Path::new("../PLAN.md"),
        )
        .expect("inside");
        assert!(target.allows("PLAN.md"));
        assert!(!target.allows("docs/PLAN.md"));
        assert_eq!(target.start_args(), ["--tasks", "../PLAN.md"]);
        let outside = Target::file(
            &change,
            Format::Prd,
            dir.path(),
            dir.path(),
            Path::new("../prd.json"),
        );
        assert!(outside.is_err());
    }
}
