//! Stories from an OpenSpec change: `openspec/changes/<change>/tasks.md`.
//!
//! Each `## N. Title` group of the task list is one story. The agent gets the
//! change's proposal, design and delta specs as context, because OpenSpec puts
//! the "why" and the acceptance scenarios there rather than in the task list.
//! The `openspec` CLI is not needed: the task list is parsed natively (see
//! [`checklist`](super::checklist) for the one deliberate difference), and
//! [`openspec_cli`](super::openspec_cli) can cross-check when the CLI exists.

use std::io;
use std::path::{Path, PathBuf};

use super::{
    Checklist, ContextFile, SectionRules, SourceKind, StoriesError, Story, StorySet, StorySource,
    checklist, checklist_done_instruction, load_checklist, read_context_files, section_rules,
    validate_change_name,
};

/// Where OpenSpec keeps everything, relative to the repository root.
const OPENSPEC_DIR: &str = "openspec";
/// Where OpenSpec keeps its changes, relative to the repository root.
pub const CHANGES_DIR: &str = "openspec/changes";
/// The task list of a change.
pub const TASKS_FILE: &str = "tasks.md";
/// Finished changes are moved here by `openspec archive`; it is not a change.
const ARCHIVE_DIR: &str = "archive";

/// The repository-relative directory of `change`. The name must have passed
/// [`validate_change_name`].
pub(crate) fn change_dir(change: &str) -> PathBuf {
    Path::new(CHANGES_DIR).join(change)
}

/// The stories of one OpenSpec change.
#[derive(Debug, Clone)]
pub struct OpenSpecSource {
    workdir: PathBuf,
    change: String,
    tasks_file: PathBuf,
    rules: SectionRules,
}

impl OpenSpecSource {
    /// Binds to `change` in `workdir`, checking that its task list exists.
    pub fn new(workdir: &Path, change: &str) -> Result<Self, StoriesError> {
        validate_change_name(change)?;
        let dir = change_dir(change);
        if !workdir.join(&dir).is_dir() {
            return Err(change_not_found(workdir, change));
        }
        let tasks_file = dir.join(TASKS_FILE);
        if !workdir.join(&tasks_file).is_file() {
            return Err(StoriesError::TasksFileMissing {
                change: change.to_owned(),
                path: tasks_file,
            });
        }
        Ok(OpenSpecSource {
            workdir: workdir.to_path_buf(),
            change: change.to_owned(),
            tasks_file,
            rules: section_rules(workdir, Some(&workdir.join(&dir))),
        })
    }

    /// Uses `rules` to tell work from other sections.
    pub fn with_rules(mut self, rules: SectionRules) -> Self {
        self.rules = rules;
        self
    }

    pub fn change(&self) -> &str {
        &self.change
    }

    /// The stories together with the number of boxes skipped in code
    /// fences, the warnings and the unreadable lines.
    pub fn parse(&self) -> Result<Checklist, StoriesError> {
        self.read()
    }

    fn read(&self) -> Result<Checklist, StoriesError> {
        if !self.workdir.join(&self.tasks_file).is_file() {
            return Err(StoriesError::TasksFileMissing {
                change: self.change.clone(),
                path: self.tasks_file.clone(),
            });
        }
        load_checklist(&self.workdir, &self.tasks_file, &self.rules)
    }
}

impl StorySource for OpenSpecSource {
    fn kind(&self) -> SourceKind {
        SourceKind::OpenSpec
    }

    fn load(&self) -> Result<Vec<Story>, StoriesError> {
        self.read().map(|parsed| parsed.stories)
    }

    fn load_set(&self) -> Result<StorySet, StoriesError> {
        self.read().map(StorySet::from)
    }

    fn tracking_file(&self) -> &Path {
        &self.tasks_file
    }

    /// The proposal, the design, the delta specs, any other markdown the
    /// change holds (e.g. task details in a sub-folder), then the project's
    /// conventions (`openspec/project.md`, or `openspec/config.yaml` when
    /// there is none), within the context budget: the change's own files
    /// come first, so the project file is the first to be cut.
    fn context_files(&self) -> Result<Vec<ContextFile>, StoriesError> {
        let dir = change_dir(&self.change);
        let mut files = vec![dir.join("proposal.md"), dir.join("design.md")];
        let mut specs = Vec::new();
        collect_markdown(&self.workdir, &dir.join("specs"), &mut specs)?;
        specs.sort();
        files.extend(specs);
        let mut others = Vec::new();
        collect_markdown(&self.workdir, &dir, &mut others)?;
        others.retain(|path| !files.contains(path) && *path != self.tasks_file);
        others.sort();
        files.extend(others);
        let project = Path::new(OPENSPEC_DIR).join("project.md");
        if self.workdir.join(&project).is_file() {
            files.push(project);
        } else {
            files.push(Path::new(OPENSPEC_DIR).join("config.yaml"));
        }
        read_context_files(&self.workdir, &files)
    }

    fn done_instruction(&self, story: &Story) -> String {
        checklist_done_instruction(&self.tasks_file, story)
    }

    fn marked_done_in(&self, text: &str, story: &Story) -> Option<bool> {
        checklist::marked_done(text, &self.rules, &story.id)
    }

    fn fenced_checkboxes(&self) -> Result<usize, StoriesError> {
        self.read().map(|parsed| parsed.fenced_checkboxes)
    }
}

/// Collects the `.md` files under `relative` (OpenSpec's `specs/**/*.md`),
/// recursively, skipping hidden entries and symlinked directories so a link
/// loop cannot hang the run.
fn collect_markdown(
    workdir: &Path,
    relative: &Path,
    out: &mut Vec<PathBuf>,
) -> Result<(), StoriesError> {
    let absolute = workdir.join(relative);
    let entries = match std::fs::read_dir(&absolute) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(StoriesError::Io {
                path: absolute,
                source,
            });
        }
    };
    for entry in entries {
        let entry = entry.map_err(|source| StoriesError::Io {
            path: absolute.clone(),
            source,
        })?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let child = relative.join(&name);
        let file_type = entry.file_type().map_err(|source| StoriesError::Io {
            path: workdir.join(&child),
            source,
        })?;
        if file_type.is_dir() {
            collect_markdown(workdir, &child, out)?;
        } else if child.extension().is_some_and(|ext| ext == "md") && workdir.join(&child).is_file()
        {
            out.push(child);
        }
    }
    Ok(())
}

/// The changes under `openspec/changes/`, sorted, without the archive.
pub fn list_changes(workdir: &Path) -> Result<Vec<String>, StoriesError> {
    let dir = workdir.join(CHANGES_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(StoriesError::Io { path: dir, source }),
    };
    let mut changes = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| StoriesError::Io {
            path: dir.clone(),
            source,
        })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != ARCHIVE_DIR && !name.starts_with('.') && entry.path().is_dir() {
            changes.push(name);
        }
    }
    changes.sort();
    Ok(changes)
}

pub(crate) fn change_not_found(workdir: &Path, change: &str) -> StoriesError {
    StoriesError::ChangeNotFound {
        change: change.to_owned(),
        changes_dir: PathBuf::from(CHANGES_DIR),
        // The listing only feeds the hint; failing to read it must not hide
        // the real problem. A name `start` would refuse is no way on.
        existing: list_changes(workdir)
            .unwrap_or_default()
            .into_iter()
            .filter(|name| crate::git::ChangeName::parse(name).is_ok())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stories::tests::{openspec_fixture_repo, write};
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct CliInstructions {
        progress: CliProgress,
        tasks: Vec<CliTask>,
    }

    #[derive(Deserialize)]
    struct CliProgress {
        total: usize,
        complete: usize,
    }

    #[derive(Deserialize)]
    struct CliTask {
        description: String,
        done: bool,
    }

    fn cli_fixture(json: &str) -> CliInstructions {
        serde_json::from_str(json).expect("fixture JSON")
    }

    #[test]
    fn add_greeting_has_three_stories() {
        let repo = openspec_fixture_repo();
        let source = OpenSpecSource::new(repo.path(), "add-greeting").expect("source");
        let stories = source.load().expect("load");
        let outline: Vec<(&str, &str, Vec<bool>)> = stories
            .iter()
            .map(|s| {
                (
                    s.id.as_str(),
                    s.title.as_str(),
                    s.tasks.iter().map(|t| t.done).collect(),
                )
            })
            .collect();
        assert_eq!(
            outline,
            vec![
                ("1", "Greeting", vec![false, false, false]),
                ("2", "Farewell", vec![true, false]),
                ("3", "Docs", vec![true, false]),
            ]
        );
        assert!(stories.iter().all(|s| !s.is_complete()));
        assert_eq!(
            source.next_story(&stories).map(|s| s.id.as_str()),
            Some("1")
        );
        assert_eq!(source.fenced_checkboxes().expect("fenced"), 1);
    }

    #[test]
    fn native_parse_agrees_with_the_cli_fixture() {
        let repo = openspec_fixture_repo();
        let source = OpenSpecSource::new(repo.path(), "add-greeting").expect("source");
        let parsed = source.parse().expect("parse");
        let native: Vec<(&str, bool)> = parsed
            .stories
            .iter()
            .flat_map(|s| s.tasks.iter().map(|t| (t.text.as_str(), t.done)))
            .collect();
        let cli = cli_fixture(include_str!(
            "../../tests/fixtures/openspec/instructions-apply-add-greeting.json"
        ));
        let fenced_text = "this line sits in a code fence";
        let cli_tasks: Vec<(&str, bool)> = cli
            .tasks
            .iter()
            .filter(|t| t.description != fenced_text)
            .map(|t| (t.description.as_str(), t.done))
            .collect();
        assert_eq!(native, cli_tasks);
        assert_eq!(cli.tasks.len() - cli_tasks.len(), parsed.fenced_checkboxes);
        assert_eq!(cli.progress.total, native.len() + parsed.fenced_checkboxes);
        assert_eq!(
            cli.progress.complete,
            native.iter().filter(|(_, d)| *d).count()
        );
    }

    #[test]
    fn tidy_docs_is_complete() {
        let repo = openspec_fixture_repo();
        let source = OpenSpecSource::new(repo.path(), "tidy-docs").expect("source");
        let stories = source.load().expect("load");
        assert_eq!(stories.len(), 1);
        assert!(stories.iter().all(Story::is_complete));
        assert_eq!(source.next_story(&stories), None);
        let cli = cli_fixture(include_str!(
            "../../tests/fixtures/openspec/instructions-apply-tidy-docs.json"
        ));
        assert_eq!(cli.progress.total, stories[0].tasks.len());
        assert_eq!(cli.progress.complete, cli.progress.total);
    }

    #[test]
    fn load_rereads_the_file() {
        let repo = openspec_fixture_repo();
        let source = OpenSpecSource::new(repo.path(), "tidy-docs").expect("source");
        assert!(source.load().expect("load")[0].is_complete());
        write(
            repo.path(),
            "openspec/changes/tidy-docs/tasks.md",
            "## 1. Tidy\n- [x] 1.1 Fix typos\n- [ ] 1.2 Reflow\n",
        );
        assert!(!source.load().expect("reload")[0].is_complete());
    }

    #[test]
    fn context_is_proposal_design_then_sorted_specs() {
        let repo = openspec_fixture_repo();
        write(
            repo.path(),
            "openspec/changes/add-greeting/specs/alpha/spec.md",
            "## ADDED Requirements\n",
        );
        write(
            repo.path(),
            "openspec/changes/add-greeting/specs/notes.txt",
            "skip",
        );
        let source = OpenSpecSource::new(repo.path(), "add-greeting").expect("source");
        let files = source.context_files().expect("context");
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "openspec/changes/add-greeting/proposal.md",
                "openspec/changes/add-greeting/design.md",
                "openspec/changes/add-greeting/specs/alpha/spec.md",
                "openspec/changes/add-greeting/specs/greeting/spec.md",
                "openspec/config.yaml",
            ]
        );
        assert_eq!(
            files[0].content,
            include_str!(
                "../../tests/fixtures/openspec/repo/openspec/changes/add-greeting/proposal.md"
            )
        );
        assert!(files[3].content.contains("### Requirement: Greeting file"));
    }

    #[test]
    fn context_adds_other_change_files_and_the_project_file() {
        let repo = openspec_fixture_repo();
        write(
            repo.path(),
            "openspec/changes/add-greeting/tasks/details.md",
            "detail",
        );
        write(repo.path(), "openspec/project.md", "# Conventions\n");
        let source = OpenSpecSource::new(repo.path(), "add-greeting").expect("source");
        let files = source.context_files().expect("context");
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            &paths[paths.len() - 2..],
            [
                "openspec/changes/add-greeting/tasks/details.md",
                "openspec/project.md"
            ],
            "project.md is preferred over config.yaml"
        );
        assert!(!paths.iter().any(|p| p.ends_with("/tasks.md")));
    }

    #[test]
    fn context_skips_missing_optional_files() {
        let repo = openspec_fixture_repo();
        let source = OpenSpecSource::new(repo.path(), "tidy-docs").expect("source");
        let files = source.context_files().expect("context");
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "openspec/changes/tidy-docs/proposal.md",
                "openspec/config.yaml"
            ]
        );
    }

    #[test]
    fn done_instruction_names_story_and_file() {
        let repo = openspec_fixture_repo();
        let source = OpenSpecSource::new(repo.path(), "add-greeting").expect("source");
        let stories = source.load().expect("load");
        let instruction = source.done_instruction(&stories[1]);
        assert!(instruction.contains("story 2"), "{instruction}");
        assert!(
            instruction.contains("openspec/changes/add-greeting/tasks.md"),
            "{instruction}"
        );
        assert!(instruction.contains("[x]"), "{instruction}");
    }

    #[test]
    fn tasks_file_without_boxes_is_an_error() {
        let repo = openspec_fixture_repo();
        write(
            repo.path(),
            "openspec/changes/tidy-docs/tasks.md",
            "## 1. Tidy\n```\n- [ ] example only\n```\n",
        );
        let source = OpenSpecSource::new(repo.path(), "tidy-docs").expect("source");
        let error = source.load().expect_err("no boxes");
        assert!(
            matches!(error, StoriesError::NoCheckboxes { fenced: 1, .. }),
            "{error}"
        );
        assert!(
            error.to_string().contains("1 inside code fences"),
            "{error}"
        );
        assert!(error.hint().is_some());
    }

    #[test]
    fn duplicate_group_numbers_are_renamed_with_a_warning() {
        let repo = openspec_fixture_repo();
        write(
            repo.path(),
            "openspec/changes/tidy-docs/tasks.md",
            "## 1. A\n- [ ] a\n## 1. B\n- [ ] b\n",
        );
        let source = OpenSpecSource::new(repo.path(), "tidy-docs").expect("source");
        let set = source.load_set().expect("load");
        let ids: Vec<&str> = set.stories.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["1", "1-2"]);
        assert!(
            set.warnings[0].message.contains("\"1-2\""),
            "{}",
            set.warnings[0]
        );
    }

    #[test]
    fn removed_tasks_file_is_reported_as_such() {
        let repo = openspec_fixture_repo();
        let source = OpenSpecSource::new(repo.path(), "tidy-docs").expect("source");
        std::fs::remove_file(repo.path().join("openspec/changes/tidy-docs/tasks.md"))
            .expect("remove");
        let error = source.load().expect_err("gone");
        assert!(
            matches!(error, StoriesError::TasksFileMissing { .. }),
            "{error}"
        );
    }

    #[test]
    fn list_changes_skips_archive_and_files() {
        let repo = openspec_fixture_repo();
        write(repo.path(), "openspec/changes/README.md", "not a change");
        assert_eq!(
            list_changes(repo.path()).expect("list"),
            ["add-greeting", "tidy-docs"]
        );
        let empty = tempfile::tempdir().expect("temp dir");
        assert!(list_changes(empty.path()).expect("list").is_empty());
    }
}
