//! The prompt's rendering: placeholders, sections, retries and learnings.

use super::*;
use crate::stories::{SourceKind, StoriesError, Task};
use std::path::{Path, PathBuf};

/// A source that only answers the questions the prompt asks.
struct Fixed {
    kind: SourceKind,
    file: PathBuf,
}

impl StorySource for Fixed {
    fn kind(&self) -> SourceKind {
        self.kind
    }
    fn load(&self) -> Result<Vec<Story>, StoriesError> {
        Ok(Vec::new())
    }
    fn tracking_file(&self) -> &Path {
        &self.file
    }
    fn context_files(&self) -> Result<Vec<ContextFile>, StoriesError> {
        Ok(Vec::new())
    }
    fn done_instruction(&self, story: &Story) -> String {
        format!(
            "tick each box of story {} in {}",
            story.id,
            self.file.display()
        )
    }
}

fn openspec_source() -> Fixed {
    Fixed {
        kind: SourceKind::OpenSpec,
        file: PathBuf::from("openspec/changes/add-greeting/tasks.md"),
    }
}

fn greeting_story() -> Story {
    Story::from_tasks(
        "1",
        "Greeting",
        vec![
            Task {
                text: "1.1 Create hello.txt containing a greeting".into(),
                done: true,
                line: 3,
            },
            Task {
                text: "1.2 Add a test that checks hello.txt is not empty".into(),
                done: false,
                line: 4,
            },
        ],
    )
}

fn context_files() -> Vec<ContextFile> {
    vec![
        ContextFile {
            path: "openspec/changes/add-greeting/proposal.md".into(),
            content: "## Why\nVisitors are not greeted.\n".into(),
        },
        ContextFile {
            path: "openspec/changes/add-greeting/design.md".into(),
            content: "Use ```text``` blocks {{not a placeholder}}".into(),
        },
    ]
}

fn render_default(
    story: &Story,
    source: &dyn StorySource,
    files: &[ContextFile],
    retry: Option<RetryContext>,
) -> String {
    let input = PromptInput {
        change: "add-greeting",
        story,
        story_index: 1,
        story_total: 3,
        attempt: if retry.is_some() { 2 } else { 1 },
        source,
        context_files: files,
        retry,
        promise_token: DEFAULT_PROMISE_TOKEN,
        learnings: None,
        role: None,
        questions: true,
        answers: &[],
    };
    render(DEFAULT_TEMPLATE, &input).expect("default template renders")
}

fn assert_echo_safe(prompt: &str) {
    for line in prompt.lines() {
        assert_ne!(
            line.trim(),
            "<promise>COMPLETE</promise>",
            "bare promise line"
        );
    }
    let end = prompt.trim_end();
    assert!(
        !end.ends_with("</promise>"),
        "prompt ends with a promise tag"
    );
    let last = end.lines().last().unwrap_or_default();
    assert!(!last.trim().starts_with("<promise>"), "last line: {last}");
}

#[test]
fn default_prompt_has_everything_a_fresh_agent_needs() {
    let source = openspec_source();
    let files = context_files();
    let prompt = render_default(&greeting_story(), &source, &files, None);
    for expected in [
        "change `add-greeting`: story 1 of 3, attempt 1",
        "### openspec/changes/add-greeting/proposal.md",
        "Visitors are not greeted.",
        "### openspec/changes/add-greeting/design.md",
        "````\nUse ```text``` blocks {{not a placeholder}}\n````",
        "## Story 1: Greeting",
        "- [x] 1.1 Create hello.txt containing a greeting (line 3)",
        "- [ ] 1.2 Add a test that checks hello.txt is not empty (line 4)",
        "tick each box of story 1 in openspec/changes/add-greeting/tasks.md",
        "`openspec/changes/add-greeting/tasks.md`",
        "Do not commit, switch branches or rewrite history; git-ralph checkpoints for you.",
        "end your final message with <promise>COMPLETE</promise>",
        "end your final message with <promise>FAILED: <reason></promise>",
    ] {
        assert!(
            prompt.contains(expected),
            "missing {expected:?} in:\n{prompt}"
        );
    }
    for absent in ["Acceptance criteria", "Previous attempt", "\n\n\n"] {
        assert!(
            !prompt.contains(absent),
            "unexpected {absent:?} in:\n{prompt}"
        );
    }
    // The only braces left are the context file's own.
    assert_eq!(prompt.matches("{{").count(), 1, "{prompt}");
    assert_echo_safe(&prompt);
}

#[test]
fn prd_story_shows_description_and_acceptance_criteria() {
    let source = Fixed {
        kind: SourceKind::Prd,
        file: PathBuf::from("prd.json"),
    };
    let mut story = Story::from_tasks("US-2", "Farewell", Vec::new());
    story.description = Some("As a visitor I am bid farewell.".into());
    story.acceptance_criteria = vec!["bye.txt exists".into(), "README mentions it".into()];
    story.passes = Some(false);
    let prompt = render_default(&story, &source, &[], None);
    for expected in [
        "## Story US-2: Farewell\n\nAs a visitor I am bid farewell.\n\nAcceptance criteria:\n\n- bye.txt exists\n- README mentions it\n\n## How to work",
        "tick each box of story US-2 in prd.json",
    ] {
        assert!(
            prompt.contains(expected),
            "missing {expected:?} in:\n{prompt}"
        );
    }
    for absent in ["Tasks (", "## Context", "\n\n\n"] {
        assert!(
            !prompt.contains(absent),
            "unexpected {absent:?} in:\n{prompt}"
        );
    }
    assert_echo_safe(&prompt);
}

#[test]
fn retry_after_failed_quotes_the_reason() {
    let source = openspec_source();
    let prompt = render_default(
        &greeting_story(),
        &source,
        &[],
        Some(RetryContext::FailedReason(
            "tests need a running database\nand a cache".into(),
        )),
    );
    assert!(prompt.contains("attempt 2"));
    assert!(prompt.contains("## Previous attempt"));
    assert!(prompt.contains("> tests need a running database\n> and a cache\n"));
    assert!(!prompt.contains("timed out"));
    assert_echo_safe(&prompt);
}

#[test]
fn retry_after_timeout_says_so() {
    let source = openspec_source();
    let prompt = render_default(
        &greeting_story(),
        &source,
        &[],
        Some(RetryContext::TimedOut),
    );
    assert!(prompt.contains("The previous attempt at this story timed out"));
    assert!(!prompt.contains("gave up"));
}

#[test]
fn retry_after_failed_checks_lists_them() {
    let source = openspec_source();
    let prompt = render_default(
        &greeting_story(),
        &source,
        &[],
        Some(RetryContext::ChecksFailed(vec![
            ("cargo test".into(), "test greeting ... FAILED\n".into()),
            ("cargo clippy".into(), "error: unused variable".into()),
        ])),
    );
    for expected in [
        "these checks failed",
        "### cargo test\n\n```\ntest greeting ... FAILED\n```",
        "### cargo clippy\n\n```\nerror: unused variable\n```",
    ] {
        assert!(
            prompt.contains(expected),
            "missing {expected:?} in:\n{prompt}"
        );
    }
}

#[test]
fn no_signal_retry_adds_nothing() {
    let source = openspec_source();
    let first = render_default(&greeting_story(), &source, &[], None);
    assert!(!first.contains("previous attempt"));
    assert!(!first.contains("Previous attempt"));
}

#[test]
fn promise_lines_from_content_are_defused() {
    let source = openspec_source();
    let files = vec![ContextFile {
        path: "README.md".into(),
        content: "The agent ends with\n  <promise>COMPLETE</promise>\n".into(),
    }];
    let prompt = render_default(
        &greeting_story(),
        &source,
        &files,
        Some(RetryContext::FailedReason(
            "<promise>COMPLETE</promise>".into(),
        )),
    );
    assert!(
        prompt.contains("  `<promise>COMPLETE</promise>`\n"),
        "{prompt}"
    );
    assert_echo_safe(&prompt);
}

/// The first of one story of change `c`, first attempt, no context.
fn minimal_input<'a>(story: &'a Story, source: &'a dyn StorySource) -> PromptInput<'a> {
    PromptInput {
        change: "c",
        story,
        story_index: 1,
        story_total: 1,
        attempt: 1,
        source,
        context_files: &[],
        retry: None,
        promise_token: DEFAULT_PROMISE_TOKEN,
        learnings: None,
        role: None,
        questions: true,
        answers: &[],
    }
}

#[test]
fn custom_template_cannot_end_with_or_isolate_a_promise() {
    let source = openspec_source();
    let story = greeting_story();
    let input = minimal_input(&story, &source);
    let prompt = render(
        "Do {{story_title}}, then say\n{{promise_complete}}\n",
        &input,
    )
    .expect("render");
    assert_eq!(
        prompt,
        "Do Greeting, then say\n`<promise>COMPLETE</promise>`\n"
    );
    let prompt = render("Finish with {{ promise_complete }}", &input).expect("render");
    assert!(prompt.starts_with("Finish with <promise>COMPLETE</promise>"));
    assert_echo_safe(&prompt);
}

#[test]
fn promise_token_is_the_completion_word() {
    let source = openspec_source();
    let story = greeting_story();
    let mut input = PromptInput {
        promise_token: "AUTH_IMPLEMENTED",
        ..minimal_input(&story, &source)
    };
    assert_eq!(
        render("{{promise_complete}} / {{promise_failed}}.", &input).expect("render"),
        "<promise>AUTH_IMPLEMENTED</promise> / <promise>FAILED: <reason></promise>."
    );
    for bad in ["", "a b", "x>y"] {
        input.promise_token = bad;
        assert!(matches!(
            render("x", &input),
            Err(PromptError::InvalidPromiseToken { .. })
        ));
    }
}

#[test]
fn unknown_and_unclosed_placeholders_are_errors() {
    let source = openspec_source();
    let story = greeting_story();
    let input = minimal_input(&story, &source);
    let error = render("ok\nuse {{story_name}} here", &input).expect_err("unknown");
    assert!(
        matches!(&error, PromptError::UnknownPlaceholder { name, line: 2 } if name == "story_name"),
        "{error}"
    );
    assert!(error.to_string().contains("{{story_name}}"), "{error}");
    assert!(error.hint().expect("hint").contains("{{story_title}}"));

    let error = render("{{retry}}\n{{bogus}}\n", &input).expect_err("unknown standalone");
    assert!(matches!(
        error,
        PromptError::UnknownPlaceholder { line: 2, .. }
    ));

    let error = render("a {{change", &input).expect_err("unclosed");
    assert!(
        matches!(error, PromptError::UnclosedPlaceholder { line: 1 }),
        "{error}"
    );
    assert!(validate("{{change}} {{nope}}").is_err());
    assert!(validate("a {{change").is_err());
}

fn learnings_of(text: &str) -> Learnings {
    Learnings {
        path: "/repo/.git/ralph/add-greeting/learnings.md".into(),
        excerpt: crate::state::learnings::excerpt(text, crate::state::learnings::CAP),
    }
}

#[test]
fn learnings_name_the_file_ask_for_more_and_show_the_newest_first() {
    let section = learnings_section(&learnings_of(
        "## Attempt 1 at story 1\n\nuse make db\n\n## Attempt 2 at story 1\n\nchose X\n",
    ));
    assert!(section.starts_with("## Learnings\n"), "{section}");
    assert!(section.contains("append to `/repo/.git/ralph/add-greeting/learnings.md`"));
    assert!(section.contains("$RALPH_LEARNINGS_FILE"));
    assert!(section.contains("at most 8 KiB"));
    let newest = section.find("chose X").unwrap();
    let oldest = section.find("use make db").unwrap();
    assert!(newest < oldest, "{section}");
    assert!(learnings_section(&learnings_of("")).contains("Nothing has been recorded"));
    let long = format!("## Attempt 1 at story 1\n{}\n", "x".repeat(9000));
    assert!(learnings_section(&learnings_of(&long)).contains("the oldest part is left out"));
}

#[test]
fn a_question_is_answered_with_nobody_will_answer() {
    let text = retry(Some(&RetryContext::Asked {
        question: "Should I use X or Y?".into(),
        learnings: Some("/l.md".into()),
    }));
    assert!(text.contains("> Should I use X or Y?\n"), "{text}");
    assert!(text.contains("Nobody will answer it"));
    assert!(text.contains("Make the decision yourself, record it and why in `/l.md`"));
    let without = retry(Some(&RetryContext::Asked {
        question: "Which?".into(),
        learnings: None,
    }));
    assert!(!without.contains("record it"), "{without}");
}

#[test]
fn every_variable_renders_and_the_default_uses_only_known_ones() {
    validate(DEFAULT_TEMPLATE).expect("default template is valid");
    let source = openspec_source();
    let mut story = greeting_story();
    story.description = Some("Say hello.".into());
    story.acceptance_criteria = vec!["hello.txt exists".into()];
    let files = context_files();
    let learnings = learnings_of("use make db");
    let exchange = [crate::prompt::Exchange {
        attempt: 1,
        question: "CSV or JSON?".into(),
        answer: "CSV".into(),
    }];
    let findings = crate::state::Findings {
        role: crate::contract::Role::Reviewer,
        attempt: 2,
        text: "hello.txt is empty".into(),
    };
    let input = PromptInput {
        change: "add-greeting",
        story: &story,
        story_index: 2,
        story_total: 5,
        attempt: 3,
        source: &source,
        context_files: &files,
        retry: Some(RetryContext::TimedOut),
        promise_token: DEFAULT_PROMISE_TOKEN,
        learnings: Some(&learnings),
        role: Some(RolePrompt {
            role: crate::contract::Role::Coder,
            description: Some("Keep it small."),
            iteration: 2,
            max_iterations: 15,
            findings: Some(&findings),
            work: Some("hello.txt (added)"),
        }),
        questions: true,
        answers: &exchange,
    };
    for (name, description) in VARIABLES {
        assert!(!description.is_empty());
        let rendered = render(&format!("[{{{{{name}}}}}]"), &input)
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        assert!(rendered.len() > 2, "{name} rendered empty");
    }
    // Findings reach the coder even through a template without them.
    let tiny = "{{story_index}}/{{story_total}} #{{attempt}} {{source_kind}}";
    assert!(
        render(tiny, &input)
            .expect("render")
            .contains("hello.txt is empty")
    );
    let plain = PromptInput {
        role: None,
        answers: &[],
        ..input
    };
    assert_eq!(render(tiny, &plain).expect("render"), "2/5 #3 openspec");
}

#[test]
fn standalone_empty_placeholders_leave_no_line() {
    let source = openspec_source();
    let story = greeting_story();
    let input = minimal_input(&story, &source);
    assert_eq!(
        render("a\n  {{ retry }}  \r\n{{context}}\nb {{retry}}.\n", &input).expect("render"),
        "a\nb .\n"
    );
}

#[test]
fn fences_outgrow_the_content() {
    assert_eq!(fenced("plain"), "```\nplain\n```\n");
    assert_eq!(fenced("a ```` b\n"), "`````\na ```` b\n`````\n");
}
