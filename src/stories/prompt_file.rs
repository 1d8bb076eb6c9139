//! Prompt mode's stand-in for a story list: the classic Ralph loop has no
//! stories, only one prompt repeated with a fresh agent until the contract
//! passes. It is one story that no file can mark done: the loop ends it when
//! the contract is met.

use std::path::{Path, PathBuf};

use super::{ContextFile, SourceKind, StoriesError, Story, StorySource};

pub struct PromptFileSource {
    file: PathBuf,
    relative: PathBuf,
    name: String,
}

impl PromptFileSource {
    /// `file` may be relative to `workdir` or absolute; it must exist.
    pub fn new(workdir: &Path, file: &Path, name: &str) -> Result<PromptFileSource, StoriesError> {
        let full = if file.is_absolute() {
            file.to_owned()
        } else {
            workdir.join(file)
        };
        if !full.is_file() {
            return Err(StoriesError::FileNotFound { path: full });
        }
        let relative = full
            .strip_prefix(workdir)
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| full.clone());
        Ok(PromptFileSource {
            file: full,
            relative,
            name: name.to_owned(),
        })
    }

    /// The prompt, read fresh for every attempt.
    pub fn text(&self) -> Result<String, StoriesError> {
        super::read_text(&self.file)
    }
}

impl StorySource for PromptFileSource {
    fn kind(&self) -> SourceKind {
        SourceKind::Prompt
    }

    fn load(&self) -> Result<Vec<Story>, StoriesError> {
        let mut story = Story::from_tasks("1", self.name.clone(), Vec::new());
        story.passes = Some(false);
        Ok(vec![story])
    }

    fn tracking_file(&self) -> &Path {
        &self.relative
    }

    fn context_files(&self) -> Result<Vec<ContextFile>, StoriesError> {
        Ok(Vec::new())
    }

    fn done_instruction(&self, _story: &Story) -> String {
        String::new()
    }
}
