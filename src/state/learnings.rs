//! `learnings.md`: what the agents of a run learned, for the attempts after
//! them. Each attempt starts with no memory, and a failed attempt's work is
//! reverted, so the lesson ("the tests need `make db`", "chose X over Y
//! because…") would be lost with it. The file lives in the run's directory,
//! outside the worktree: no revert touches it, and it moves to history with
//! the rest of the run.
//!
//! Agents append to it. After each attempt, git-ralph puts a heading above
//! what that attempt appended, so that prompts can show the entries newest
//! first, within [`CAP`]. Nothing here knows about prompts or agents.

use std::path::Path;

/// The most of the file a prompt shows.
pub const CAP: usize = 8 * 1024;

/// Headings git-ralph writes start so; entries are split on them.
const HEADING: &str = "## Attempt ";

/// What a prompt shows of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excerpt {
    /// Entries, newest first, at most [`CAP`] bytes.
    pub text: String,
    /// The whole file's length in bytes.
    pub total_bytes: usize,
    /// Whether older entries (or the oldest part of one) were left out.
    pub truncated: bool,
}

/// The file's length, or 0 when it does not exist yet.
pub fn len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Make sure the file exists, so the agent can append to it.
pub fn create(path: &Path) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map(drop)
}

/// After an attempt: when the file grew past `before` bytes, and what was
/// there before is unchanged, head the addition with who wrote it. A file
/// the agent rewrote is left as it is.
pub fn label(path: &Path, before: u64, story: &str, attempt: u32) -> std::io::Result<bool> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(false);
    };
    let before = before as usize;
    if text.len() <= before || !text.is_char_boundary(before) {
        return Ok(false);
    }
    let (old, added) = text.split_at(before);
    if added.trim().is_empty() {
        return Ok(false);
    }
    let mut out = String::with_capacity(text.len() + 64);
    out.push_str(old);
    if !old.is_empty() && !old.ends_with("\n\n") {
        out.push_str(if old.ends_with('\n') { "\n" } else { "\n\n" });
    }
    out.push_str(&format!("{HEADING}{attempt} at story {story}\n\n"));
    out.push_str(added.trim_start_matches('\n'));
    if !out.ends_with('\n') {
        out.push('\n');
    }
    super::write_atomically(path, out.as_bytes())?;
    Ok(true)
}

/// The file's entries, newest first, within `cap` bytes.
pub fn excerpt(text: &str, cap: usize) -> Excerpt {
    let mut entries: Vec<&str> = Vec::new();
    let mut start = 0;
    for (offset, line) in line_starts(text) {
        if line.starts_with(HEADING) && offset > start {
            entries.push(&text[start..offset]);
            start = offset;
        }
    }
    entries.push(&text[start..]);
    let mut out = String::new();
    let mut truncated = false;
    for entry in entries.iter().rev() {
        let entry = entry.trim();
        if entry.is_empty() {
            continue;
        }
        let room = cap.saturating_sub(out.len());
        let needed = entry.len() + if out.is_empty() { 0 } else { 2 };
        if needed <= room {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(entry);
            continue;
        }
        truncated = true;
        if out.is_empty() {
            // The newest entry alone is too long: keep its beginning.
            let mut end = cap.min(entry.len());
            while !entry.is_char_boundary(end) {
                end -= 1;
            }
            out.push_str(&entry[..end]);
        }
        break;
    }
    Excerpt {
        text: out,
        total_bytes: text.len(),
        truncated,
    }
}

fn line_starts(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut offset = 0;
    text.split_inclusive('\n').map(move |line| {
        let at = offset;
        offset += line.len();
        (at, line)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_come_newest_first() {
        let text = "by hand\n\n## Attempt 1 at story 1\n\nuse make db\n\n## Attempt 2 at story 1\n\nchose X over Y\n";
        let excerpt = excerpt(text, CAP);
        assert_eq!(
            excerpt.text,
            "## Attempt 2 at story 1\n\nchose X over Y\n\n## Attempt 1 at story 1\n\nuse make db\n\nby hand"
        );
        assert!(!excerpt.truncated);
        assert_eq!(excerpt.total_bytes, text.len());
    }

    #[test]
    fn older_entries_give_way_to_the_cap() {
        let old = "x".repeat(100);
        let text = format!("## Attempt 1 at story 1\n{old}\n## Attempt 2 at story 1\nnew\n");
        let excerpt = excerpt(&text, 40);
        assert_eq!(excerpt.text, "## Attempt 2 at story 1\nnew");
        assert!(excerpt.truncated);
        let only = super::excerpt(&format!("## Attempt 1 at story 1\n{old}"), 40);
        assert_eq!(only.text.len(), 40);
        assert!(only.truncated);
    }

    #[test]
    fn an_empty_file_shows_nothing() {
        let excerpt = excerpt("", CAP);
        assert!(excerpt.text.is_empty());
        assert!(!excerpt.truncated);
    }

    #[test]
    fn an_attempts_addition_gets_its_heading() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("learnings.md");
        create(&path).unwrap();
        std::fs::write(&path, "use make db\n").unwrap();
        assert!(label(&path, 0, "1", 1).unwrap());
        let before = len(&path);
        std::fs::write(
            &path,
            format!("{}- chose X\n", std::fs::read_to_string(&path).unwrap()),
        )
        .unwrap();
        assert!(label(&path, before, "2", 1).unwrap());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "## Attempt 1 at story 1\n\nuse make db\n\n## Attempt 1 at story 2\n\n- chose X\n"
        );
        // Nothing added, or the file rewritten: left as it is.
        let now = len(&path);
        assert!(!label(&path, now, "2", 2).unwrap());
        std::fs::write(&path, "gone").unwrap();
        assert!(!label(&path, now, "2", 2).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "gone");
    }
}
