//! The classic fake "done": the agent ticks the story's boxes, claims
//! completion, and changes nothing else. These functions tell such a
//! change of the tracking file from real work, by content, not by size: a
//! markdown file compared line by line, where every changed line must be
//! the same checkbox with its mark toggled; a prd.json compared as JSON
//! with every `passes` field removed. What such a change is called lives
//! in [`crate::state::Flag`].

/// Whether `old` and `new` differ only in the marks of checkboxes.
pub fn only_boxes_ticked(old: &str, new: &str) -> bool {
    let old: Vec<&str> = old.split('\n').collect();
    let new: Vec<&str> = new.split('\n').collect();
    old.len() == new.len()
        && old
            .iter()
            .zip(&new)
            .all(|(a, b)| a == b || box_toggled(a, b))
}

/// Whether two prd.json texts are the same JSON once `passes` is gone.
/// Text that is not JSON is compared as it is.
pub fn only_passes_changed(old: &str, new: &str) -> bool {
    match (
        serde_json::from_str::<serde_json::Value>(old),
        serde_json::from_str::<serde_json::Value>(new),
    ) {
        (Ok(mut old), Ok(mut new)) => {
            drop_passes(&mut old);
            drop_passes(&mut new);
            old == new
        }
        _ => old == new,
    }
}

fn drop_passes(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.remove("passes");
            map.values_mut().for_each(drop_passes);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_passes),
        _ => {}
    }
}

/// The same checkbox line, with a different mark.
fn box_toggled(a: &str, b: &str) -> bool {
    match (checkbox(a), checkbox(b)) {
        (Some((head_a, mark_a, tail_a)), Some((head_b, mark_b, tail_b))) => {
            head_a == head_b && tail_a == tail_b && mark_a != mark_b
        }
        _ => false,
    }
}

/// A list item's checkbox as (everything up to `[`, the mark, everything
/// after `]`).
fn checkbox(line: &str) -> Option<(&str, char, &str)> {
    let rest = line.trim_start();
    let indent = line.len() - rest.len();
    let bullet = if rest.starts_with(['-', '*', '+']) {
        1
    } else {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 || !rest[digits..].starts_with(['.', ')']) {
            return None;
        }
        digits + 1
    };
    let after_bullet = &rest[bullet..];
    let spaces = after_bullet.len() - after_bullet.trim_start().len();
    if spaces == 0 {
        return None;
    }
    let open = indent + bullet + spaces;
    let mut chars = line[open..].chars();
    let (Some('['), Some(mark), Some(']')) = (chars.next(), chars.next(), chars.next()) else {
        return None;
    };
    if !matches!(mark, ' ' | 'x' | 'X') {
        return None;
    }
    Some((&line[..open], mark, &line[open + 3..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TASKS: &str = "# Tasks\n\n## 1. Greet\n\n- [ ] 1.1 Add hello.txt\n  * [ ] nested\n1. [ ] numbered\n\nSome text.\n";

    #[test]
    fn ticking_boxes_is_only_ticking() {
        let ticked = TASKS
            .replace("- [ ] 1.1", "- [x] 1.1")
            .replace("* [ ] nested", "* [X] nested")
            .replace("1. [ ] numbered", "1. [x] numbered");
        assert!(only_boxes_ticked(TASKS, &ticked));
        assert!(only_boxes_ticked(&ticked, TASKS), "unticking too");
        assert!(only_boxes_ticked(TASKS, TASKS));
    }

    #[test]
    fn any_other_edit_of_the_file_is_a_change() {
        let cases = [
            // The task's text changed along with its mark.
            TASKS.replace("- [ ] 1.1 Add hello.txt", "- [x] 1.1 Add hello.txt (done)"),
            // A line added.
            TASKS.replace("Some text.\n", "Some text.\nA note.\n"),
            // A plain line edited.
            TASKS.replace("Some text.", "Other text."),
            // A box changed into something that is not a box.
            TASKS.replace("- [ ] 1.1", "- [?] 1.1"),
            // The bullet changed.
            TASKS.replace("- [ ] 1.1", "* [x] 1.1"),
            // Line endings changed.
            TASKS.replace('\n', "\r\n"),
        ];
        for case in cases {
            assert!(!only_boxes_ticked(TASKS, &case), "{case:?}");
        }
        assert!(!only_boxes_ticked(
            "[ ] not a list item",
            "[x] not a list item"
        ));
    }

    #[test]
    fn a_prd_is_compared_without_its_passes() {
        let old = r#"{"project":"x","userStories":[{"id":"US-1","title":"A","passes":false}]}"#;
        let reformatted = "{\n  \"userStories\": [\n    {\"passes\": true, \"title\": \"A\", \"id\": \"US-1\"}\n  ],\n  \"project\": \"x\"\n}\n";
        assert!(only_passes_changed(old, reformatted));
        let retitled = reformatted.replace("\"A\"", "\"B\"");
        assert!(!only_passes_changed(old, &retitled));
        let noted = reformatted.replace("\"id\"", "\"notes\": \"done\", \"id\"");
        assert!(!only_passes_changed(old, &noted));
        assert!(!only_passes_changed("not json", "not json either"));
    }
}
