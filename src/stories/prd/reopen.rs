//! Put back what an attempt set in a story it was not given: the story's
//! progress fields (`passes`, `done`, `status`…) as they were before the
//! attempt, every other byte of the file as the attempt left it.

use std::path::Path;

use serde_json::Value;

use super::dialect::{PROGRESS_KEYS, story_entries};
use crate::stories::json_edit::{self, Step};

/// `after` with story `id`'s progress fields as `before` had them; `None`
/// when either text is not a prd.json git-ralph reads, or the story is
/// not in both.
pub fn reopen(before: &str, after: &str, id: &str) -> Option<String> {
    let path = Path::new("prd.json");
    let old: Value = serde_json::from_str(before).ok()?;
    let new: Value = serde_json::from_str(after).ok()?;
    let old_entries = story_entries(path, &old).ok()?;
    let new_entries = story_entries(path, &new).ok()?;
    let index_of = |entries: &super::dialect::Entries<'_>| {
        entries
            .stories(path)
            .iter()
            .position(|read| read.as_ref().is_ok_and(|read| read.story.id == id))
    };
    let (old_index, new_index) = (index_of(&old_entries)?, index_of(&new_entries)?);
    let old_entry = old_entries.entries[old_index].1.as_object()?;
    let new_entry = new_entries.entries[new_index].1.as_object()?;
    let mut text = after.to_owned();
    for key in PROGRESS_KEYS {
        if !new_entry.contains_key(*key) || old_entry.get(*key) == new_entry.get(*key) {
            continue;
        }
        let raw = match old_entry.get(*key) {
            Some(_) => {
                let mut old_path = old_entries.entries[old_index].0.clone();
                old_path.push(Step::Key(key));
                before[json_edit::span(before, &old_path)?].to_owned()
            }
            // Added by the attempt: not done.
            None if *key == "status" => "\"pending\"".to_owned(),
            None => "false".to_owned(),
        };
        let mut new_path = new_entries.entries[new_index].0.clone();
        new_path.push(Step::Key(key));
        text = json_edit::replace(&text, &new_path, &raw)?;
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_goes_back_and_the_rest_stays_as_the_attempt_left_it() {
        let before = "{\"userStories\": [\n  {\"id\": \"US-1\", \"passes\": false},\n  {\"id\": \"US-2\", \"passes\": false}\n]}\n";
        let after = "{\"userStories\": [\n  {\"id\": \"US-1\", \"passes\": true},\n  {\"id\": \"US-2\", \"passes\": true}\n]}\n";
        assert_eq!(
            reopen(before, after, "US-2").as_deref(),
            Some(
                "{\"userStories\": [\n  {\"id\": \"US-1\", \"passes\": true},\n  {\"id\": \"US-2\", \"passes\": false}\n]}\n"
            )
        );
    }

    #[test]
    fn a_status_word_goes_back_in_a_tasks_dialect() {
        let before = r#"{"tasks": [{"id": "001", "title": "A", "status": "pending"}, {"id": "002", "title": "B", "status": "pending"}]}"#;
        let after = r#"{"tasks": [{"id": "001", "title": "A", "status": "completed"}, {"id": "002", "title": "B", "status": "completed"}]}"#;
        let reopened = reopen(before, after, "002").expect("reopened");
        assert_eq!(
            reopened,
            r#"{"tasks": [{"id": "001", "title": "A", "status": "completed"}, {"id": "002", "title": "B", "status": "pending"}]}"#
        );
    }

    #[test]
    fn a_story_missing_on_either_side_is_none() {
        let text = r#"{"userStories": [{"id": "US-1", "passes": false}]}"#;
        assert_eq!(reopen(text, text, "US-9"), None);
        assert_eq!(reopen("not json", text, "US-1"), None);
    }
}
