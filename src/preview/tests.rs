use super::*;
use crate::stories::tests::write;
use crate::stories::{MarkdownSource, WarningKind};

const PLAN: &str = "# Plan\n\n## Tasks\n\n### Phase 1: Setup\nWhy: a base to build on.\n- [x] scaffold\n### Phase 2: Parser\nIntro of phase two.\n- [ ] lexer\n  - keep comments as tokens\n- [partial] grammar\n```rust\nfn parse() {}\n```\nAcceptance: `parse(\"\")` is empty.\n## Notes\n- [ ] not work\n";

#[test]
fn preview_lists_stories_warnings_and_the_first_prompt() {
    let repo = tempfile::tempdir().expect("temp dir");
    write(repo.path(), "PLAN.md", PLAN);
    let preview = preview(
        repo.path(),
        "plan",
        None,
        None,
        Some(Path::new("PLAN.md")),
        PreviewOptions::default(),
    )
    .expect("preview");
    let outline: Vec<(&str, &str, usize, usize, StoryStatus)> = preview
        .stories
        .iter()
        .map(|s| (s.id.as_str(), s.title.as_str(), s.tasks, s.done, s.status))
        .collect();
    assert_eq!(
        outline,
        vec![
            ("phase-1", "Setup", 1, 1, StoryStatus::Done),
            ("phase-2", "Parser", 1, 0, StoryStatus::Next),
        ]
    );
    let kinds: Vec<(Option<usize>, WarningKind)> =
        preview.warnings.iter().map(|w| (w.line, w.kind)).collect();
    assert_eq!(
        kinds,
        vec![
            (Some(12), WarningKind::UnreadableBox),
            (Some(17), WarningKind::SkippedSection)
        ]
    );
    assert!(!preview.all_done);
    let prompt = preview.prompt.expect("a first prompt");
    for needle in [
        "story 2 of 2",
        "## Story phase-2: Parser",
        "Intro of phase two.",
        "  - keep comments as tokens",
        "fn parse() {}",
        "Acceptance: `parse(\"\")` is empty.",
        "### Phase 2: Parser",
        "## Tasks",
        "- [ ] lexer (line 10)",
        "- line 12: - [partial] grammar",
    ] {
        assert!(
            prompt.contains(needle),
            "{needle:?} missing from:\n{prompt}"
        );
    }
    // The whole file is context for a markdown source, but the skipped
    // section's box is no task of the story.
    assert!(!prompt.contains("- [ ] not work (line"));
}

#[test]
fn preview_prompt_is_the_loops_first_prompt() {
    let repo = tempfile::tempdir().expect("temp dir");
    write(repo.path(), "PLAN.md", PLAN);
    let source = MarkdownSource::new(repo.path(), Path::new("PLAN.md")).expect("source");
    let options = PreviewOptions {
        template: Some(
            "{{story_index}}/{{story_total}} {{story_id}} {{promise_complete}}\n{{tasks}}",
        ),
        promise_token: Some("DONE"),
        learnings: None,
        questions: true,
    };
    let preview = preview_source(&source, "plan", options).expect("preview");
    let stories = source.load().expect("load");
    let context = source.context_files().expect("context");
    let expected = prompt::render(
        options.template.expect("template"),
        &PromptInput {
            change: "plan",
            story: &stories[1],
            story_index: 2,
            story_total: 2,
            attempt: 1,
            source: &source,
            context_files: &context,
            retry: None,
            promise_token: "DONE",
            learnings: None,
            role: None,
            questions: true,
            answers: &[],
        },
    )
    .expect("render");
    assert_eq!(preview.prompt.as_deref(), Some(expected.as_str()));
    assert!(expected.starts_with("2/2 phase-2 <promise>DONE</promise>"));
}

#[test]
fn preview_serialises_as_one_object_and_changes_nothing() {
    let repo = tempfile::tempdir().expect("temp dir");
    write(repo.path(), "PLAN.md", PLAN);
    let source = MarkdownSource::new(repo.path(), Path::new("PLAN.md")).expect("source");
    let preview = preview_source(&source, "plan", PreviewOptions::default()).expect("preview");
    let json = serde_json::to_value(&preview).expect("json");
    let story = &json["stories"][1];
    assert_eq!(story["id"], "phase-2");
    assert_eq!(story["title"], "Parser");
    assert_eq!(story["tasks"], 1);
    assert_eq!(story["done"], 0);
    assert_eq!(story["status"], "next");
    assert_eq!(json["warnings"][0]["kind"], "unreadable_box");
    assert_eq!(json["warnings"][0]["line"], 12);
    assert!(json["prompt"].as_str().is_some_and(|p| p.contains("lexer")));
    let entries: Vec<_> = std::fs::read_dir(repo.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(entries, ["PLAN.md"]);
    assert_eq!(
        std::fs::read_to_string(repo.path().join("PLAN.md")).expect("read"),
        PLAN
    );
}

#[test]
fn preview_of_a_finished_file_has_no_prompt() {
    let repo = tempfile::tempdir().expect("temp dir");
    write(repo.path(), "prd.json", r#"[{"id": "A", "passes": true}]"#);
    let preview = preview(
        repo.path(),
        "x",
        None,
        Some(Path::new("prd.json")),
        None,
        PreviewOptions::default(),
    )
    .expect("preview");
    assert!(preview.all_done);
    assert_eq!(preview.prompt, None);
    assert_eq!(preview.stories[0].status, StoryStatus::Done);
}

#[test]
fn preview_refuses_a_file_without_tasks() {
    let repo = tempfile::tempdir().expect("temp dir");
    write(repo.path(), "PLAN.md", "# Plan\n\n### Task 1\n- do it\n");
    let error = preview(
        repo.path(),
        "x",
        None,
        None,
        Some(Path::new("PLAN.md")),
        PreviewOptions::default(),
    )
    .expect_err("no boxes");
    assert!(matches!(
        error,
        PreviewError::Stories(StoriesError::NoCheckboxes { .. })
    ));
    assert!(error.hint().is_some());
}
