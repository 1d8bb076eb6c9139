//! Unit tests of the story sources, and the fixtures other modules'
//! tests share, kept in their own file so that the module stays short.

use super::*;
use std::fs;

/// Builds the OpenSpec fixture tree in a temporary directory, from files
/// compiled into the test binary so no test reads outside its own crate.
pub(crate) fn openspec_fixture_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let files: &[(&str, &str)] = &[
        (
            "openspec/config.yaml",
            include_str!("../../tests/fixtures/openspec/repo/openspec/config.yaml"),
        ),
        ("openspec/specs/.gitkeep", ""),
        ("openspec/changes/archive/.gitkeep", ""),
        (
            "openspec/changes/add-greeting/.openspec.yaml",
            include_str!(
                "../../tests/fixtures/openspec/repo/openspec/changes/add-greeting/.openspec.yaml"
            ),
        ),
        (
            "openspec/changes/add-greeting/proposal.md",
            include_str!(
                "../../tests/fixtures/openspec/repo/openspec/changes/add-greeting/proposal.md"
            ),
        ),
        (
            "openspec/changes/add-greeting/design.md",
            include_str!(
                "../../tests/fixtures/openspec/repo/openspec/changes/add-greeting/design.md"
            ),
        ),
        (
            "openspec/changes/add-greeting/tasks.md",
            include_str!(
                "../../tests/fixtures/openspec/repo/openspec/changes/add-greeting/tasks.md"
            ),
        ),
        (
            "openspec/changes/add-greeting/specs/greeting/spec.md",
            include_str!(
                "../../tests/fixtures/openspec/repo/openspec/changes/add-greeting/specs/greeting/spec.md"
            ),
        ),
        (
            "openspec/changes/tidy-docs/.openspec.yaml",
            include_str!(
                "../../tests/fixtures/openspec/repo/openspec/changes/tidy-docs/.openspec.yaml"
            ),
        ),
        (
            "openspec/changes/tidy-docs/proposal.md",
            include_str!(
                "../../tests/fixtures/openspec/repo/openspec/changes/tidy-docs/proposal.md"
            ),
        ),
        (
            "openspec/changes/tidy-docs/tasks.md",
            include_str!("../../tests/fixtures/openspec/repo/openspec/changes/tidy-docs/tasks.md"),
        ),
    ];
    for (relative, content) in files {
        write(dir.path(), relative, content);
    }
    dir
}

pub(crate) fn write(root: &Path, relative: &str, content: &str) {
    let path = root.join(relative);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("create parent dirs");
    }
    fs::write(path, content).expect("write fixture file");
}

const PRD: &str = r#"{"userStories": [{"id": "US-1", "title": "One", "passes": false}]}"#;

#[test]
fn detect_prefers_openspec_change_over_root_prd() {
    let repo = openspec_fixture_repo();
    write(repo.path(), "prd.json", PRD);
    let source = detect(repo.path(), "add-greeting", None, None, None).expect("detect");
    assert_eq!(source.kind(), SourceKind::OpenSpec);
    assert_eq!(
        source.tracking_file(),
        Path::new("openspec/changes/add-greeting/tasks.md")
    );
}

#[test]
fn detect_falls_back_to_root_prd() {
    let repo = tempfile::tempdir().expect("temp dir");
    write(repo.path(), "prd.json", PRD);
    let source = detect(repo.path(), "anything", None, None, None).expect("detect");
    assert_eq!(source.kind(), SourceKind::Prd);
    assert_eq!(source.tracking_file(), Path::new("prd.json"));
}

#[test]
fn detect_uses_flags_before_files() {
    let repo = openspec_fixture_repo();
    write(repo.path(), "TODO.md", "- [ ] a\n");
    write(repo.path(), "plan/prd.json", PRD);
    let by_tasks = detect(
        repo.path(),
        "add-greeting",
        None,
        Some(Path::new("plan/prd.json")),
        Some(Path::new("TODO.md")),
    )
    .expect("detect");
    assert_eq!(by_tasks.kind(), SourceKind::Markdown);
    assert_eq!(by_tasks.tracking_file(), Path::new("TODO.md"));

    let by_prd = detect(
        repo.path(),
        "add-greeting",
        None,
        Some(&repo.path().join("plan/prd.json")),
        None,
    )
    .expect("detect");
    assert_eq!(by_prd.kind(), SourceKind::Prd);
    assert_eq!(by_prd.tracking_file(), Path::new("plan/prd.json"));
}

#[test]
fn detect_honours_explicit_kind() {
    let repo = openspec_fixture_repo();
    write(repo.path(), "prd.json", PRD);
    let source = detect(
        repo.path(),
        "add-greeting",
        Some(SourceKind::Prd),
        None,
        None,
    )
    .expect("prd");
    assert_eq!(source.kind(), SourceKind::Prd);

    let error = detect(repo.path(), "x", Some(SourceKind::Markdown), None, None)
        .err()
        .expect("markdown without a file");
    assert!(matches!(error, StoriesError::MissingTasksPath));
    assert!(error.hint().expect("hint").contains("--tasks"));

    let error = detect(
        repo.path(),
        "add-greeting",
        Some(SourceKind::OpenSpec),
        Some(Path::new("prd.json")),
        None,
    )
    .err()
    .expect("conflict");
    assert!(matches!(
        error,
        StoriesError::ConflictingSource {
            kind: SourceKind::OpenSpec,
            flag: "--prd"
        }
    ));
}

#[test]
fn detect_without_any_source_says_what_it_looked_for() {
    let repo = tempfile::tempdir().expect("temp dir");
    let error = detect(repo.path(), "add-login", None, None, None)
        .err()
        .expect("nothing to find");
    let message = error.to_string();
    assert!(
        message.contains("openspec/changes/add-login/tasks.md"),
        "{message}"
    );
    assert!(message.contains("prd.json"), "{message}");
    let hint = error.hint().expect("hint");
    assert!(hint.contains("--prd") && hint.contains("--tasks"), "{hint}");
}

#[test]
fn detect_lists_existing_changes_when_the_change_is_missing() {
    let repo = openspec_fixture_repo();
    let error = detect(repo.path(), "add-login", None, None, None)
        .err()
        .expect("missing change");
    match &error {
        StoriesError::ChangeNotFound { existing, .. } => {
            assert_eq!(existing, &["add-greeting", "tidy-docs"]);
        }
        other => panic!("unexpected error: {other}"),
    }
    let hint = error.hint().expect("hint");
    assert!(hint.contains("add-greeting, tidy-docs"), "{hint}");
    assert!(!hint.contains("archive"), "{hint}");
}

#[test]
fn detect_reports_a_change_without_tasks() {
    let repo = openspec_fixture_repo();
    write(
        repo.path(),
        "openspec/changes/draft/proposal.md",
        "## Why\n",
    );
    let error = detect(repo.path(), "draft", None, None, None)
        .err()
        .expect("no tasks.md");
    assert!(
        matches!(error, StoriesError::TasksFileMissing { .. }),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("openspec/changes/draft/tasks.md")
    );
}

#[test]
fn change_names_that_could_escape_are_rejected() {
    for name in ["", "a/b", "a\\b", "..", "../x", "a..b", ".hidden", "a\nb"] {
        let error = validate_change_name(name).err();
        assert!(
            matches!(error, Some(StoriesError::InvalidChangeName { .. })),
            "{name:?} was accepted"
        );
    }
    for name in ["add-greeting", "v2_cleanup", "fix.parser"] {
        assert!(validate_change_name(name).is_ok(), "{name:?} was rejected");
    }
    let repo = openspec_fixture_repo();
    let error = detect(repo.path(), "../../etc", None, None, None)
        .err()
        .expect("rejected");
    assert!(matches!(error, StoriesError::InvalidChangeName { .. }));
}

#[test]
fn files_outside_the_repository_are_refused() {
    let outer = tempfile::tempdir().expect("temp dir");
    write(outer.path(), "TODO.md", "- [ ] a\n");
    let repo = outer.path().join("repo");
    fs::create_dir_all(&repo).expect("repo dir");
    let error = detect(&repo, "x", None, None, Some(Path::new("../TODO.md")))
        .err()
        .expect("outside");
    assert!(
        matches!(error, StoriesError::OutsideRepository { .. }),
        "{error}"
    );
    let error = detect(&repo, "x", None, None, Some(&outer.path().join("TODO.md")))
        .err()
        .expect("outside, absolute");
    assert!(
        matches!(error, StoriesError::OutsideRepository { .. }),
        "{error}"
    );
}

#[test]
fn missing_flag_files_are_reported_by_path() {
    let repo = tempfile::tempdir().expect("temp dir");
    let error = detect(repo.path(), "x", None, Some(Path::new("plan.json")), None)
        .err()
        .expect("missing");
    assert!(
        matches!(error, StoriesError::FileNotFound { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("plan.json"));
}

#[test]
fn completion_follows_the_flag_or_the_boxes() {
    let task = |done| Task {
        text: "t".into(),
        done,
        line: 1,
    };
    assert!(Story::from_tasks("1", "a", vec![task(true), task(true)]).is_complete());
    assert!(!Story::from_tasks("1", "a", vec![task(true), task(false)]).is_complete());
    assert!(!Story::from_tasks("1", "a", vec![]).is_complete());
    let mut story = Story::from_tasks("US-1", "a", vec![]);
    story.passes = Some(true);
    assert!(story.is_complete());
    story.passes = Some(false);
    assert!(!story.is_complete());
}

#[test]
fn source_kind_round_trips_through_text_and_serde() {
    for kind in SourceKind::ALL {
        assert_eq!(kind.to_string().parse::<SourceKind>().expect("parse"), kind);
        let json = serde_json::to_string(&kind).expect("serialize");
        assert_eq!(json, format!("\"{kind}\""));
        assert_eq!(
            serde_json::from_str::<SourceKind>(&json).expect("deserialize"),
            kind
        );
    }
    assert!("asana".parse::<SourceKind>().is_err());
}

#[test]
fn context_files_are_capped() {
    let repo = tempfile::tempdir().expect("temp dir");
    let big = "é".repeat(CONTEXT_FILE_LIMIT); // two bytes per char
    for name in ["a.md", "b.md", "c.md", "d.md", "e.md"] {
        write(repo.path(), name, &big);
    }
    write(repo.path(), "small.md", "tiny");
    let relatives: Vec<PathBuf> = [
        "a.md",
        "missing.md",
        "b.md",
        "c.md",
        "d.md",
        "e.md",
        "small.md",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    let files = read_context_files(repo.path(), &relatives).expect("read");
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["a.md", "b.md", "c.md", "d.md", "e.md", "small.md"]);
    for file in &files[..4] {
        assert!(file.content.contains("[truncated: "), "{}", file.path);
        assert!(file.content.len() < CONTEXT_FILE_LIMIT + 100);
    }
    assert!(files[4].content.starts_with("[truncated"));
    assert!(files[5].content.starts_with("[truncated"));
}
