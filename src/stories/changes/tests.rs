use super::*;
use crate::stories::checklist;

fn stories(text: &str) -> Vec<Story> {
    checklist::parse(text).stories
}

const LIST: &str = "## 1. One\n\n- [ ] 1.1 First\n- [ ] 1.2 Second\n\n## 2. Two\n\n- [ ] 2.1 Third\n\n## 3. Three\n\n- [ ] 3.1 Fourth\n";

#[test]
fn ticking_its_own_story_is_no_change() {
    let after = LIST
        .replace("- [ ] 1.1", "- [x] 1.1")
        .replace("- [ ] 1.2", "- [x] 1.2");
    assert_eq!(
        compare(&stories(LIST), &stories(&after), "1"),
        ListChanges::default()
    );
}

#[test]
fn ticks_in_other_stories_are_named_with_their_count() {
    let after = LIST
        .replace("- [ ] 1.1", "- [x] 1.1")
        .replace("- [ ] 2.1", "- [x] 2.1")
        .replace("- [ ] 3.1", "- [X] 3.1");
    let changes = compare(&stories(LIST), &stories(&after), "1");
    assert_eq!(
        changes.ticked_elsewhere,
        [
            TickedElsewhere {
                story: "2".into(),
                boxes: 1,
                lines: vec![8],
            },
            TickedElsewhere {
                story: "3".into(),
                boxes: 1,
                lines: vec![12],
            }
        ]
    );
    assert!(changes.broken.is_empty());
}

#[test]
fn a_removed_story_breaks_the_list() {
    let after = LIST.replace("## 3. Three\n\n- [ ] 3.1 Fourth\n", "");
    let changes = compare(&stories(LIST), &stories(&after), "1");
    assert_eq!(
        changes
            .broken
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["removed story 3 (Three)"]
    );
}

#[test]
fn a_removed_or_rewritten_task_breaks_it_even_in_its_own_story() {
    let after = LIST
        .replace("- [ ] 1.2 Second\n", "")
        .replace("2.1 Third", "2.1 Something easier");
    let changes = compare(&stories(LIST), &stories(&after), "1");
    let said: Vec<String> = changes.broken.iter().map(ToString::to_string).collect();
    assert_eq!(
        said,
        [
            "removed task 1.2 of story 1",
            "rewrote task 2.1 of story 2 (\"2.1 Third\" became \"2.1 Something easier\")"
        ]
    );
}

#[test]
fn an_inserted_task_is_added_not_everything_after_it_rewritten() {
    let after = LIST.replace(
        "- [ ] 1.1 First\n",
        "- [x] 1.1 First\n- [x] 1.1b Tests for it\n",
    );
    let changes = compare(&stories(LIST), &stories(&after), "1");
    assert!(changes.broken.is_empty(), "{changes:?}");
    assert_eq!(
        changes.added_tasks,
        [AddedTask {
            story: "1".into(),
            text: "1.1b Tests for it".into()
        }]
    );
}

#[test]
fn a_done_task_opened_again_in_another_story_breaks_the_list() {
    let before = LIST.replace("- [ ] 2.1", "- [x] 2.1");
    let changes = compare(&stories(&before), &stories(LIST), "1");
    assert_eq!(
        changes.broken,
        [Breakage::Reopened {
            story: "2".into(),
            task: "2.1 Third".into()
        }]
    );
    // In its own story, it may change its mind.
    let changes = compare(&stories(&before), &stories(LIST), "2");
    assert!(changes.broken.is_empty());
}

#[test]
fn a_new_story_is_reported_not_a_breakage() {
    let after = format!("{LIST}\n## 4. Four\n\n- [ ] 4.1 Fifth\n");
    let changes = compare(&stories(LIST), &stories(&after), "1");
    assert!(changes.broken.is_empty());
    assert_eq!(changes.added_stories, [("4".to_owned(), "Four".to_owned())]);
}

fn prd_story(id: &str, passes: bool) -> Story {
    Story {
        passes: Some(passes),
        acceptance_criteria: vec!["It works".into()],
        ..Story::from_tasks(id, format!("Story {id}"), Vec::new())
    }
}

#[test]
fn prd_passes_set_on_another_story_is_a_tick_elsewhere_and_criteria_are_words() {
    let before = [prd_story("US-1", false), prd_story("US-2", false)];
    let after = [prd_story("US-1", true), prd_story("US-2", true)];
    let changes = compare(&before, &after, "US-1");
    assert_eq!(
        changes.ticked_elsewhere,
        [TickedElsewhere {
            story: "US-2".into(),
            boxes: 1,
            lines: vec![],
        }]
    );
    let mut weakened = after.clone();
    weakened[0].acceptance_criteria = vec!["It compiles".into()];
    let changes = compare(&before, &weakened, "US-1");
    assert_eq!(
        changes.broken,
        [Breakage::RewroteStory {
            id: "US-1".into(),
            field: "acceptance criteria"
        }]
    );
}

#[test]
fn tasks_are_named_by_their_number_or_their_words() {
    assert_eq!(task_name("2.1 Create bye.txt"), "2.1");
    assert_eq!(task_name("Create bye.txt"), "\"Create bye.txt\"");
    assert_eq!(
        task_name("A very long task text that goes on and on and on"),
        "\"A very long task text that goes on and o…\""
    );
}
