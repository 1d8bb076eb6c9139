//! Stories from any markdown checklist (`--tasks TODO.md`).
//!
//! For projects without OpenSpec or a prd.json: the same checklist rules as
//! OpenSpec's `tasks.md` apply (see [`checklist`](super::checklist)), so a
//! file can move between the two without surprises. The whole file is also
//! given as context, since prose around the boxes is often all the
//! specification there is.

use std::path::{Path, PathBuf};

use super::{
    ContextFile, SectionRules, SourceKind, StoriesError, Story, StorySet, StorySource, checklist,
    checklist_done_instruction, load_checklist, read_context_files, repo_relative_file,
    section_rules,
};

/// The stories of one markdown checklist file inside the repository.
#[derive(Debug, Clone)]
pub struct MarkdownSource {
    workdir: PathBuf,
    file: PathBuf,
    rules: SectionRules,
}

impl MarkdownSource {
    /// Binds to `file` (relative to `workdir`, or absolute inside it), with
    /// the `[stories]` rules of the root `ralph.toml`.
    pub fn new(workdir: &Path, file: &Path) -> Result<Self, StoriesError> {
        Ok(MarkdownSource {
            workdir: workdir.to_path_buf(),
            file: repo_relative_file(workdir, file)?,
            rules: section_rules(workdir, None),
        })
    }

    /// Uses `rules` to tell work from other sections.
    pub fn with_rules(mut self, rules: SectionRules) -> Self {
        self.rules = rules;
        self
    }
}

impl StorySource for MarkdownSource {
    fn kind(&self) -> SourceKind {
        SourceKind::Markdown
    }

    fn load(&self) -> Result<Vec<Story>, StoriesError> {
        self.load_set().map(|set| set.stories)
    }

    fn load_set(&self) -> Result<StorySet, StoriesError> {
        load_checklist(&self.workdir, &self.file, &self.rules).map(StorySet::from)
    }

    fn tracking_file(&self) -> &Path {
        &self.file
    }

    fn context_files(&self) -> Result<Vec<ContextFile>, StoriesError> {
        read_context_files(&self.workdir, std::slice::from_ref(&self.file))
    }

    fn done_instruction(&self, story: &Story) -> String {
        checklist_done_instruction(&self.file, story)
    }

    fn marked_done_in(&self, text: &str, story: &Story) -> Option<bool> {
        checklist::marked_done(text, &self.rules, &story.id)
    }

    fn fenced_checkboxes(&self) -> Result<usize, StoriesError> {
        load_checklist(&self.workdir, &self.file, &self.rules)
            .map(|parsed| parsed.fenced_checkboxes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stories::tests::write;

    const TODO: &str = "# TODO\n\n- [x] Write the parser\n  - [x] lexer\n- [ ] Ship it\n  - [ ] tag\n  - [x] notes\n";

    #[test]
    fn flat_list_gives_one_story_per_top_level_box() {
        let repo = tempfile::tempdir().expect("temp dir");
        write(repo.path(), "docs/TODO.md", TODO);
        let source = MarkdownSource::new(repo.path(), Path::new("docs/TODO.md")).expect("source");
        assert_eq!(source.kind(), SourceKind::Markdown);
        let stories = source.load().expect("load");
        let titles: Vec<&str> = stories.iter().map(|s| s.title.as_str()).collect();
        assert_eq!(titles, ["Write the parser", "Ship it"]);
        assert!(stories[0].is_complete());
        assert!(!stories[1].is_complete());
        let next = source.next_story(&stories).expect("next");
        assert_eq!((next.id.as_str(), next.tasks.len()), ("2", 3));
        assert_eq!(source.fenced_checkboxes().expect("fenced"), 0);
    }

    #[test]
    fn whole_file_is_the_context_and_the_tracking_file() {
        let repo = tempfile::tempdir().expect("temp dir");
        write(repo.path(), "TODO.md", TODO);
        let source =
            MarkdownSource::new(repo.path(), &repo.path().join("./TODO.md")).expect("source");
        assert_eq!(source.tracking_file(), Path::new("TODO.md"));
        let files = source.context_files().expect("context");
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].path, "TODO.md");
        assert_eq!(files[0].content, TODO);
        let stories = source.load().expect("load");
        let instruction = source.done_instruction(&stories[1]);
        assert!(
            instruction.contains("story 2 (\"Ship it\") in TODO.md"),
            "{instruction}"
        );
    }

    #[test]
    fn file_without_boxes_is_an_error() {
        let repo = tempfile::tempdir().expect("temp dir");
        write(repo.path(), "TODO.md", "# Nothing\n\n- a plain item\n");
        let source = MarkdownSource::new(repo.path(), Path::new("TODO.md")).expect("source");
        let error = source.load().expect_err("no boxes");
        assert!(
            matches!(error, StoriesError::NoCheckboxes { fenced: 0, .. }),
            "{error}"
        );
        assert!(
            error.to_string().starts_with("TODO.md has no checkbox"),
            "{error}"
        );
    }

    /// Issue 21, pattern 4: a file whose boxes all sit in sections that are
    /// not work is refused with what was found and what to do, in one
    /// sentence.
    #[test]
    fn issue_21_a_file_with_no_work_says_where_its_boxes_are() {
        let repo = tempfile::tempdir().expect("temp dir");
        let refusal = |text: &str| {
            write(repo.path(), "TODO.md", text);
            let source = MarkdownSource::new(repo.path(), Path::new("TODO.md")).expect("source");
            let error = source.load().expect_err("no work");
            assert!(matches!(error, StoriesError::NoWork { .. }), "{error}");
            assert_eq!(error.hint(), None, "the sentence says it all");
            error.to_string()
        };
        let done: String = (1..=200).map(|n| format!("- [x] task {n}\n")).collect();
        assert_eq!(
            refusal(&format!("# Plan\n\n## Current\n\n## Completed\n{done}")),
            "TODO.md: every one of the 200 tasks is already done, all of them under ## Completed; there is nothing left to work on, so add an open `- [ ]` task to give a run work"
        );
        assert_eq!(
            refusal("## ✅ Completed\n- [x] a\n## Done\n- [x] b\n"),
            "TODO.md: every one of the 2 tasks is already done, all of them under ## ✅ Completed and ## Done; there is nothing left to work on, so add an open `- [ ]` task to give a run work"
        );
        assert_eq!(
            refusal("## Completed\n- [x] a\n"),
            "TODO.md: its only task is already done, under ## Completed; there is nothing left to work on, so add an open `- [ ]` task to give a run work"
        );
        assert_eq!(
            refusal("## Validation Checklist\n- [x] a\n- [ ] b\n- [ ] c\n"),
            "TODO.md: its 3 tasks (2 still open) sit under ## Validation Checklist, which is not work; move the open tasks under a heading of their own, or add the section to `keep` under [stories] in ralph.toml"
        );
    }

    #[test]
    fn unreadable_file_names_its_path() {
        let repo = tempfile::tempdir().expect("temp dir");
        write(repo.path(), "TODO.md", TODO);
        let source = MarkdownSource::new(repo.path(), Path::new("TODO.md")).expect("source");
        std::fs::remove_file(repo.path().join("TODO.md")).expect("remove");
        let error = source.load().expect_err("gone");
        assert!(matches!(error, StoriesError::Io { .. }), "{error}");
        assert!(error.to_string().contains("TODO.md"), "{error}");
    }
}
