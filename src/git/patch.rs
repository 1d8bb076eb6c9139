//! Patches as `git diff` writes them, so that `git apply` takes them: the
//! `diff --git` header with the file's mode (`new file mode`, `deleted file
//! mode`, `old mode`/`new mode`) and its `index` line, hunks whose headers
//! count lines as git does (`@@ -0,0 +1 @@` for a new file), the function
//! line git's default rule finds, and `\ No newline at end of file` where a
//! file ends without one. What `show --patch` prints and the loop screen's
//! Diff view shows.

use gix::diff::blob::unified_diff::{ConsumeHunk, ContextSize, DiffLineKind, HunkHeader};
use gix::diff::blob::{Algorithm, Diff, InternedInput, UnifiedDiff, sources};

use super::diff::ChangedFile;
use super::error::{GitFailure, OpError};
use super::ids::ObjectId;
use super::open::Repo;

/// Who a patch is for: the views, which name a binary file with its size
/// and read no blob over 4 MiB; or `git apply` (`show --patch`), which gets
/// what `git diff` writes and blobs up to git's own `core.bigFileThreshold`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatchFor {
    /// Blobs larger than this are named with their size instead of read.
    pub limit: usize,
    /// Every binary file is named with its size, not only the big ones.
    pub sizes: bool,
}

impl PatchFor {
    pub const VIEW: PatchFor = PatchFor {
        limit: 4 * 1024 * 1024,
        sizes: true,
    };
    pub const GIT: PatchFor = PatchFor {
        limit: 512 * 1024 * 1024,
        sizes: false,
    };
}

/// The bytes of git's function line, at most.
const FUNCTION_LINE_MAX: usize = 80;

impl Repo {
    /// `git show --format= <commit>` in spirit: what `commit` changed against
    /// its first parent (or the empty tree), as a unified patch. Read-only.
    pub fn commit_patch(&self, commit: ObjectId, to: PatchFor) -> Result<String, GitFailure> {
        let new_tree = self.commit_tree(commit)?;
        let old_tree = match self.first_parent(commit)? {
            Some(parent) => self.commit_tree(parent)?,
            None => self.repo.empty_tree().id,
        };
        self.tree_patch(old_tree, new_tree, to)
    }

    /// `git diff <base>` with untracked files included, as `git add -A`
    /// would see them: the worktree as it is now against `base`'s tree. The
    /// objects this takes are hashed in memory and never written, and the
    /// index is left alone, so a running loop is not disturbed.
    pub fn worktree_patch(&self, base: ObjectId) -> Result<String, OpError> {
        // Big files are named by their size, never read (see `blob.rs`).
        let mut scratch = self.in_memory();
        scratch.hashed_only = Some(Default::default());
        let old_tree = scratch.commit_tree(base)?;
        let new_tree = scratch.fingerprint()?;
        Ok(scratch.tree_patch(old_tree, new_tree, PatchFor::VIEW)?)
    }

    /// The unified patch from tree `old_tree` to tree `new_tree`, as `git
    /// diff` writes it, for `to`.
    pub(super) fn tree_patch(
        &self,
        old_tree: ObjectId,
        new_tree: ObjectId,
        to: PatchFor,
    ) -> Result<String, GitFailure> {
        let mut patch = String::new();
        for file in self.changed_files(old_tree, new_tree)? {
            self.file_patch(&file, to, &mut patch);
        }
        Ok(patch)
    }

    fn file_patch(&self, file: &ChangedFile, to: PatchFor, patch: &mut String) {
        let limit = to.limit;
        let path = &file.path;
        patch.push_str(&format!("diff --git a/{path} b/{path}\n"));
        let (old_mode, new_mode) = (file.old_mode, file.new_mode);
        match (old_mode, new_mode) {
            (None, Some(mode)) => patch.push_str(&format!("new file mode {mode:o}\n")),
            (Some(mode), None) => patch.push_str(&format!("deleted file mode {mode:o}\n")),
            (Some(old), Some(new)) if old != new => {
                patch.push_str(&format!("old mode {old:o}\nnew mode {new:o}\n"));
            }
            _ => {}
        }
        if file.old == file.new {
            // A mode change alone.
            return;
        }
        let (old_id, new_id) = (self.abbreviated(file.old), self.abbreviated(file.new));
        let (old_id, new_id) = same_length(old_id, new_id);
        match (old_mode, new_mode) {
            (Some(old), Some(new)) if old == new => {
                patch.push_str(&format!("index {old_id}..{new_id} {new:o}\n"));
            }
            _ => patch.push_str(&format!("index {old_id}..{new_id}\n")),
        }
        let from = match file.old {
            Some(_) => format!("a/{path}"),
            None => "/dev/null".to_owned(),
        };
        let to_path = match file.new {
            Some(_) => format!("b/{path}"),
            None => "/dev/null".to_owned(),
        };
        let old = file.old.map(|id| self.blob_text(id, limit));
        let new = file.new.map(|id| self.blob_text(id, limit));
        match (old, new) {
            (Some(None), _) | (_, Some(None)) => {
                let too_big = [file.old, file.new]
                    .into_iter()
                    .flatten()
                    .filter_map(|id| self.blob_size(id))
                    .any(|size| size > limit as u64);
                patch.push_str(&format!("Binary files {from} and {to_path} differ"));
                if too_big || to.sizes {
                    patch.push_str(&format!(" ({})", self.sizes(file)));
                }
                patch.push('\n');
            }
            (old, new) => {
                let old = old.flatten().unwrap_or_default();
                let new = new.flatten().unwrap_or_default();
                // An empty file added or removed has no hunk, and git
                // writes no file names for it.
                if old.is_empty() && new.is_empty() {
                    return;
                }
                patch.push_str(&format!("--- {from}\n+++ {to_path}\n"));
                patch.push_str(&hunks(&old, &new));
            }
        }
    }

    /// `binary, 700 MB`, or `binary, 3 kB -> binary, 700 MB`.
    fn sizes(&self, file: &ChangedFile) -> String {
        [file.old, file.new]
            .into_iter()
            .flatten()
            .map(|id| match self.blob_size(id) {
                Some(size) => format!("binary, {}", super::blob::human_size(size)),
                None => "binary".to_owned(),
            })
            .collect::<Vec<_>>()
            .join(" -> ")
    }

    /// The object id as short as git would write it, or zeros for none.
    fn abbreviated(&self, id: Option<ObjectId>) -> String {
        match id {
            Some(id) => match self.repo.find_header(id) {
                Ok(_) => gix::prelude::ObjectIdExt::attach(id, &self.repo)
                    .shorten()
                    .map_or_else(|_| id.to_hex_with_len(7).to_string(), |p| p.to_string()),
                Err(_) => id.to_hex_with_len(7).to_string(),
            },
            None => String::new(),
        }
    }
}

/// An added or removed side's zeros as long as the other side's id.
fn same_length(old: String, new: String) -> (String, String) {
    let len = old.len().max(new.len()).max(7);
    let zeros = |id: String| if id.is_empty() { "0".repeat(len) } else { id };
    (zeros(old), zeros(new))
}

/// The hunks of a text change with three lines of context.
fn hunks(old: &str, new: &str) -> String {
    let input = InternedInput::new(sources::lines(old), sources::lines(new));
    let mut diff = Diff::compute(Algorithm::Myers, &input);
    diff.postprocess_lines(&input);
    let writer = GitHunks {
        old_lines: old.split_inclusive('\n').collect(),
        out: String::new(),
    };
    UnifiedDiff::new(&diff, &input, writer, ContextSize::symmetrical(3))
        .consume()
        .unwrap_or_default()
}

/// Writes hunks as git does.
struct GitHunks<'a> {
    /// The old file's lines, to find the function line above a hunk.
    old_lines: Vec<&'a str>,
    out: String,
}

impl ConsumeHunk for GitHunks<'_> {
    type Out = String;

    fn consume_hunk(
        &mut self,
        header: HunkHeader,
        lines: &[(DiffLineKind, &[u8])],
    ) -> std::io::Result<()> {
        self.out.push_str(&format!(
            "@@ -{} +{} @@",
            range(header.before_hunk_start, header.before_hunk_len),
            range(header.after_hunk_start, header.after_hunk_len)
        ));
        if let Some(function) = self.function_line(header.before_hunk_start) {
            self.out.push(' ');
            self.out.push_str(&function);
        }
        self.out.push('\n');
        for (kind, line) in lines {
            self.out.push(match kind {
                DiffLineKind::Context => ' ',
                DiffLineKind::Add => '+',
                DiffLineKind::Remove => '-',
            });
            let text = String::from_utf8_lossy(line);
            self.out.push_str(&text);
            if !text.ends_with('\n') {
                self.out.push_str("\n\\ No newline at end of file\n");
            }
        }
        Ok(())
    }

    fn finish(self) -> String {
        self.out
    }
}

impl GitHunks<'_> {
    /// git's default function line: the nearest line above the hunk that
    /// starts with a letter, `_` or `$`, cut to 80 bytes, without trailing
    /// white space.
    fn function_line(&self, hunk_start: u32) -> Option<String> {
        let above = (hunk_start as usize)
            .saturating_sub(1)
            .min(self.old_lines.len());
        let line = self.old_lines[..above].iter().rev().find(|line| {
            line.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$')
        })?;
        let mut end = line.len().min(FUNCTION_LINE_MAX);
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        Some(line[..end].trim_end().to_owned())
    }
}

/// `3`, `3,4`, or `2,0` for no line after line 2, as git counts.
fn range(start: u32, len: u32) -> String {
    match len {
        0 => format!("{},0", start.saturating_sub(1)),
        1 => start.to_string(),
        len => format!("{start},{len}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunk_headers_count_as_git_does() {
        assert_eq!(hunks("", "hello\n"), "@@ -0,0 +1 @@\n+hello\n");
        assert_eq!(hunks("hello\n", ""), "@@ -1 +0,0 @@\n-hello\n");
        assert_eq!(
            hunks("a\n", "a\nb"),
            "@@ -1 +1,2 @@\n a\n+b\n\\ No newline at end of file\n"
        );
        assert_eq!(
            hunks("a", "a\n"),
            "@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n"
        );
    }

    #[test]
    fn a_hunk_names_the_function_line_above_it() {
        let old = "fn main() {\n    let a = 1;\n    let b = 2;\n    let c = 3;\n    let d = 4;\n    let e = 5;\n}\n";
        let new = old.replace("let e = 5;", "let e = 6;");
        let patch = hunks(old, &new);
        assert!(
            patch.starts_with("@@ -3,5 +3,5 @@ fn main() {\n"),
            "{patch}"
        );
    }
}
