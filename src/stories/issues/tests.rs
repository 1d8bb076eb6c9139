use super::*;
use crate::stories::github;

const LISTED: &str = include_str!("../../../tests/fixtures/trackers/github/issue-list.json");

fn source(run_dir: &Path) -> IssueSource {
    let snapshot = github::parse("issue-list.json", LISTED, Some("ralph")).expect("parse");
    IssueSource::new("issues", run_dir, snapshot).expect("source")
}

fn tick_all(path: &Path) {
    let text = std::fs::read_to_string(path).expect("read");
    std::fs::write(path, text.replace("- [ ]", "- [x]")).expect("write");
}

#[test]
fn each_issue_is_a_story_with_the_tasks_of_its_body() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = source(&dir.path().join("run"));
    let stories = source.load().expect("load");
    let outline: Vec<(&str, &str, Vec<&str>)> = stories
        .iter()
        .map(|story| {
            (
                story.id.as_str(),
                story.title.as_str(),
                story.tasks.iter().map(|task| task.text.as_str()).collect(),
            )
        })
        .collect();
    assert_eq!(
        outline,
        [
            (
                "3",
                "Document the greeting",
                vec!["Add a Greeting section to the README"]
            ),
            (
                "5",
                "Fix the typo in the README",
                vec!["Resolve #5 as its description asks"]
            ),
            (
                "7",
                "Greet the user",
                vec!["Write `hello.txt` with the greeting", "Print it on start"]
            ),
        ]
    );
    assert_eq!(stories[0].depends_on, ["7"]);
    let description = stories[2].description.as_deref().expect("description");
    assert!(
        description.starts_with("GitHub issue #7 (labels: enhancement, ralph)\n\nWhoever runs"),
        "{description}"
    );
    assert_eq!(
        source.next_story(&stories).map(|s| s.id.as_str()),
        Some("5"),
        "#3 waits for #7"
    );
    assert!(!dir.path().join("run").exists(), "nothing written yet");
}

#[test]
fn the_tracking_file_is_written_when_the_run_begins_and_reread_on_every_load() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run_dir = dir.path().join("run");
    let source = source(&run_dir);
    source.begin().expect("begin");
    let tracking = run_dir.join(TRACKING_FILE);
    assert_eq!(source.tracking_file(), tracking);
    let text = std::fs::read_to_string(&tracking).expect("tracking file");
    assert!(text.contains("\n## 7: Greet the user\n\n- [ ] Write `hello.txt` with the greeting\n- [ ] Print it on start\n"), "{text}");
    assert!(!text.contains("an example"), "{text}");
    assert!(run_dir.join(SNAPSHOT_FILE).is_file());
    assert_eq!(
        std::fs::read_to_string(run_dir.join(CHECKPOINT_FILE)).expect("copy"),
        text
    );
    tick_all(&tracking);
    assert!(source.load().expect("load").iter().all(Story::is_complete));
    let resumed = IssueSource::resume(&run_dir).expect("resume");
    assert!(resumed.load().expect("load").iter().all(Story::is_complete));
    assert_eq!(resumed.kind(), SourceKind::Github);
}

#[test]
fn a_revert_takes_back_the_marks_made_since_the_checkpoint() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run_dir = dir.path().join("run");
    let source = source(&run_dir);
    source.begin().expect("begin");
    let tracking = run_dir.join(TRACKING_FILE);
    let before = std::fs::read_to_string(&tracking).expect("read");
    assert_eq!(source.tracking_change().expect("change"), None);
    tick_all(&tracking);
    let (old, new) = source
        .tracking_change()
        .expect("change")
        .expect("the file changed");
    assert_eq!(old, before);
    assert_ne!(new, before);
    source.reverted().expect("revert");
    assert_eq!(std::fs::read_to_string(&tracking).expect("read"), before);
    tick_all(&tracking);
    source.checkpointed().expect("checkpoint");
    assert_eq!(source.tracking_change().expect("change"), None);
    source.reverted().expect("revert");
    assert!(source.load().expect("load").iter().all(Story::is_complete));
}

#[test]
fn an_issue_whose_boxes_were_deleted_stays_a_story_that_cannot_be_done() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run_dir = dir.path().join("run");
    let source = source(&run_dir);
    source.begin().expect("begin");
    let tracking = run_dir.join(TRACKING_FILE);
    let text = std::fs::read_to_string(&tracking).expect("read");
    let cut = text
        .replace("- [ ] Resolve #5 as its description asks\n", "")
        .replace("- [ ]", "- [x]");
    std::fs::write(&tracking, cut).expect("write");
    let stories = source.load().expect("load");
    let five = stories.iter().find(|s| s.id == "5").expect("story 5");
    assert!(!five.is_complete());
    assert_eq!(five.title, "Fix the typo in the README");
}

#[test]
fn the_agent_is_told_the_heading_and_the_absolute_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run_dir = dir.path().join("run");
    let source = source(&run_dir);
    let stories = source.load().expect("load");
    let instruction = source.done_instruction(&stories[2]);
    assert!(
        instruction.starts_with(&format!(
            "tick each box under \"## 7: Greet the user\" in {}",
            run_dir.join(TRACKING_FILE).display()
        )),
        "{instruction}"
    );
    assert!(instruction.contains("record of #7"), "{instruction}");
}

#[test]
fn a_cycle_of_dependencies_is_refused() {
    let text = r##"[{"body":"Depends on #2","labels":[],"number":1,"state":"OPEN","title":"a"},{"body":"Depends on #1","labels":[],"number":2,"state":"OPEN","title":"b"}]"##;
    let snapshot = github::parse("f", text, None).expect("parse");
    let dir = tempfile::tempdir().expect("temp dir");
    let error = IssueSource::new("x", dir.path(), snapshot)
        .err()
        .expect("a cycle");
    assert_eq!(
        error.to_string(),
        "f: the issues wait on each other: #1 -> #2 -> #1"
    );
    let hint = error.hint().expect("a hint");
    assert!(hint.contains("\"Depends on\""), "{hint}");
    assert!(!hint.contains("dependsOn"), "{hint}");
}

#[test]
fn a_missing_record_is_named_on_resume() {
    let dir = tempfile::tempdir().expect("temp dir");
    let error = IssueSource::resume(dir.path()).err().expect("missing");
    assert!(error.to_string().contains(SNAPSHOT_FILE), "{error}");
    assert!(error.hint().is_some());
}

#[test]
fn headings_name_their_issue() {
    assert_eq!(heading_id("## 12: Add a greeting"), Some("12"));
    assert_eq!(heading_id("## bd-a3f8.1: Login"), Some("bd-a3f8.1"));
    assert_eq!(heading_id("- [ ] not a heading"), None);
}
